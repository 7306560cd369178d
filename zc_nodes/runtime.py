"""The pack's one LatentStore, shared by every node instance.

ComfyUI clones V3 node classes per call, so state cannot live on the class:
it lives here, created on first use. The spill directory survives restarts:
``$ZEROCOPY_SPILL_DIR`` or ``<ComfyUI user dir>/zerocopy_continuity/spill``.
Budgets: ``$ZEROCOPY_HOST_BUDGET_MB`` (default: a quarter of RAM, at most
16 GiB), ``$ZEROCOPY_DEVICE_BUDGET_MB`` (default: an eighth of the GPU, at most
8 GiB) and ``$ZEROCOPY_DEPTH`` (slots kept per tag, default 4). Nothing here
is POSIX-only: RAM comes from psutil (which ComfyUI depends on) on every OS.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

_lock = threading.Lock()
_store = None
# What the Store nodes of this process stored into, for their fingerprints: the tag of each node
# (by ComfyUI node id; a linked tag is unknown when ComfyUI asks a fingerprint) and every tag
# stored into (for ComfyUI versions that give a fingerprint no node id). Bounded like a cache.
_last_tag_by_node: dict[str, str] = {}
_tags_stored: dict[str, None] = {}
_MAX_REMEMBERED = 1024
_on_open: list = []  # called with the store each time it opens (store_wiring)
_before_reset: list = []  # called before reset() closes the store (store_wiring)


def default_spill_dir() -> Path:
    env = os.environ.get("ZEROCOPY_SPILL_DIR")
    if env:
        return Path(env)
    try:
        import folder_paths
        return Path(folder_paths.get_user_directory()) / "zerocopy_continuity" / "spill"
    except Exception:
        # Outside ComfyUI: the user's cache folder (%LOCALAPPDATA% on Windows).
        cache = os.environ.get("LOCALAPPDATA") if os.name == "nt" else None
        return (Path(cache) if cache else Path.home() / ".cache") / "zerocopy_continuity" / "spill"


def physical_memory_bytes() -> int | None:
    """Installed RAM: psutil where it is (always inside ComfyUI), else POSIX sysconf, else
    None (a development environment on Windows without psutil)."""
    try:
        import psutil
        return int(psutil.virtual_memory().total)
    except Exception:  # ImportError, or a sandbox that hides /proc
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):  # AttributeError: Windows has no os.sysconf
        return None


def default_host_budget() -> int:
    env = os.environ.get("ZEROCOPY_HOST_BUDGET_MB")
    if env:
        return int(env) * (1 << 20)
    total = physical_memory_bytes() or 16 << 30
    return min(total // 4, 16 << 30)


def default_device_budget() -> int:
    """Device-tier bytes the store may hold (shots kept on a GPU, the ``--gpu-only`` path):
    ``$ZEROCOPY_DEVICE_BUDGET_MB``, else an eighth of the first CUDA device's memory, at most
    8 GiB; 0 (no limit) where there is no CUDA device, since nothing is held on one then."""
    env = os.environ.get("ZEROCOPY_DEVICE_BUDGET_MB")
    if env:
        return int(env) * (1 << 20)
    try:
        import torch
        if not torch.cuda.is_available():
            return 0
        total = torch.cuda.get_device_properties(0).total_memory
    except Exception:  # noqa: BLE001 - no device information: no limit rather than a wrong one
        return 0
    return min(total // 8, 8 << 30)


def store():
    """The shared LatentStore (created, and its spill directory indexed, on first use). What the
    pack does when it opens (memory given back when ComfyUI needs it, the exit flush, the log
    line, the rejected files' report) is registered with ``on_open`` by store_wiring."""
    global _store
    with _lock:
        if _store is None:
            from ..zc_engine import LatentStore
            _store = LatentStore(depth=int(os.environ.get("ZEROCOPY_DEPTH", "4")),
                                 host_budget_bytes=default_host_budget(),
                                 device_budget_bytes=default_device_budget(), spill_dir=default_spill_dir())
            for opened in _on_open:
                opened(_store)
        return _store


def on_open(call) -> None:
    """Call ``call(store)`` each time the shared store opens (under the store's lock, in the order
    registered)."""
    _on_open.append(call)


def before_reset(call) -> None:
    """Call ``call()`` each time reset() is about to close the shared store, in the order registered."""
    _before_reset.append(call)


def store_if_open():
    """The shared LatentStore if it was opened, else None (never opens one). Lock-free (one
    reference read): a signal handler calls it, and may interrupt the main thread inside _lock."""
    return _store


def _remember(table: dict, key, value) -> None:
    table.pop(key, None)
    table[key] = value
    while len(table) > _MAX_REMEMBERED:
        table.pop(next(iter(table)))


def remember_store(node_id, tag: str) -> None:
    """Record that the Store node ``node_id`` (None when ComfyUI gives none) stored into ``tag``."""
    with _lock:
        _remember(_tags_stored, tag, None)
        if node_id is not None:
            _remember(_last_tag_by_node, str(node_id), tag)


def last_tag_stored_by(node_id) -> str | None:
    with _lock:
        return _last_tag_by_node.get(str(node_id)) if node_id is not None else None


def was_stored_into(tag: str) -> bool:
    """Whether a Store node of this process stored into ``tag`` (recently)."""
    with _lock:
        return tag in _tags_stored


def reset(spill_dir: str | os.PathLike | None = None) -> None:
    """Close the shared store (flushing spills); the next use opens a fresh one.

    With spill_dir, the next store uses that directory (tests, and users who
    move their spill directory at runtime). What registered with ``before_reset`` goes first (the
    farm link: it publishes from the store)."""
    global _store
    for closing in _before_reset:
        closing()
    with _lock:
        if _store is not None:
            _store.close()
            _store = None
        if spill_dir is not None:
            os.environ["ZEROCOPY_SPILL_DIR"] = str(spill_dir)
