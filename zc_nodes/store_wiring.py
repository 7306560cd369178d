"""What the node layer does around the shared store's life (runtime.py): when it opens, memory is
given back through ComfyUI's hooks (memory_release), its queued spills are flushed when Python
exits, the open is logged and the files the engine put aside are reported (durability); before
reset() closes it, the farm link stops publishing from it and the Loads' lineage is forgotten.

runtime.py holds only the store and its settings, so every module may import it; this module
imports the modules that act on it, and zc_nodes/__init__.py imports this one, so the wiring is
in place whichever node-layer module opens the store first."""

from __future__ import annotations

import atexit

from .. import zc_log as log
from . import durability, farm_link, load_lineage, memory_release, runtime

_exit_hook: list = []


def _opened(store) -> None:
    hooked = memory_release.install(runtime.store_if_open)  # None after reset(): nothing to release
    if not _exit_hook:
        atexit.register(_flush_at_exit)  # queued spills reach the disk when Python exits
        _exit_hook.append(True)
    log.info("latent store ready: spill directory %s, %d tags on disk%s", store.spill_dir,
             len(store.tags()), f"; gives memory back through {', '.join(hooked)}" if hooked else "")
    durability.report_rejected(store)  # planted, damaged or foreign files: kept, renamed aside


def _closing() -> None:
    farm_link.close()
    load_lineage.forget_all()  # what the Loads served was of the closed store


def _flush_at_exit() -> None:
    """Close the shared store at interpreter exit: its writer thread finishes the queued spills
    first (a shot stored just before ComfyUI quits is on disk for the next start)."""
    try:
        durability.make_durable("ComfyUI is exiting")  # says which shots could not be written
        runtime.reset()
    except Exception as exc:  # noqa: BLE001 - exiting anyway; say what could not be written
        log.error("the latent store could not finish its spills at exit: %s", exc)


runtime.on_open(_opened)
runtime.before_reset(_closing)
