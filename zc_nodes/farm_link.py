"""The nodes' link to the farm tier (zc_farm): the process's one Farm, made on first use when a
Redis URL is configured, and the few calls the nodes make.

The URL comes from ComfyUI's settings panel (the web extension POSTs it to /zerocopy/farm) or,
when that is empty, from ``ZEROCOPY_REDIS_URL``; with neither, every call here is the local
store's own behaviour and redis-py is never imported. A farm that cannot start (redis-py missing,
a bad URL) is logged once and leaves the worker local. The calls:

    put(store, tag, tensors, meta)   the Store (and the Handoff's start image): farm-numbered put
    pull(tag, generation)            before a Handoff or Load reads: a newer shot from the farm, with
                                     the ancestors the local film lacks
    complete_film(tag)               before the film is assembled: the ancestors it lacks
    origin_notes(meta)               the certificate's line naming the worker a shot came from
    newer_published(tag, newest)     a fingerprint's look at the farm (one round trip at most)
    linked_state()                   the same for a linked tag (any tag's publish)
"""

from __future__ import annotations

import os
import threading

from . import runtime, ui_events
from .. import zc_log as log

_lock = threading.Lock()
_farm = None
_failure: str | None = None    # why the configured farm could not start (shown by status())
_settings_url: str | None = None  # from the settings panel; None or "": the environment's


def _configured_url() -> tuple[str, str | None]:
    """(where the URL comes from, the URL or None)."""
    if _settings_url:
        return "settings", _settings_url
    env = os.environ.get("ZEROCOPY_REDIS_URL", "").strip()
    return ("environment", env) if env else ("off", None)


def active():
    """The process's Farm, or None when no URL is configured or it could not start."""
    global _farm, _failure
    with _lock:
        if _farm is not None or _failure is not None:
            return _farm
        source, url = _configured_url()
        if url is None:
            return None
        try:
            from ..zc_farm import Farm, FarmConfig
            config = FarmConfig.from_env(url=url)
            _farm = Farm(runtime.store(), config, on_event=_on_farm_event, on_warning=_on_farm_warning)
        except Exception as exc:  # noqa: BLE001 - a farm that cannot start leaves the worker local
            _failure = f"{type(exc).__name__}: {exc}"
            log.error("farm: not started (%s, URL from the %s): %s; this worker stores and reads locally",
                      _redacted(url), source, _failure)
        return _farm


def configured() -> bool:
    """Whether a farm URL is set (settings or ZEROCOPY_REDIS_URL), running or not: the farm's
    advice is given only then."""
    return _configured_url()[1] is not None


def _redacted(url: str) -> str:
    from ..zc_farm import redact_url
    return redact_url(url)


def _on_farm_event(event: dict) -> None:
    """Another worker published a shot: every browser's sidebar lists the buffers again."""
    ui_events.send("zerocopy.buffers", {"reason": "farm", **{k: event.get(k) for k in
                                                             ("tag", "generation", "worker", "bytes")}})


def _on_farm_warning(title: str, message: str, fields: dict) -> None:
    """A farm warning (already in the log) as a toast in every browser."""
    warn = getattr(ui_events, "warn", None)
    if warn is not None:
        warn(title, message, **fields)
    else:
        ui_events.send("zerocopy.warning", {"title": title, "message": message, **fields})


def configure(url: str | None) -> dict:
    """Use ``url`` from now on ('' or None: the environment's ZEROCOPY_REDIS_URL, or no farm).
    The running Farm is closed (its pending publishes wait for the next one) when the URL changes.
    Raises FarmConfigError for a URL that is not a Redis URL (from the settings panel, a unix://
    URL must name an existing socket, and no query may name a file: config.check_url)."""
    global _settings_url, _failure
    from ..zc_farm.config import check_url
    url = check_url(url, "the Redis URL", from_settings=True) if url else None
    with _lock:
        changed = url != _settings_url
        _settings_url = url
    if changed:
        close()
        with _lock:
            _failure = None
    active()
    return status()


def status() -> dict:
    source, url = _configured_url()
    farm = active()
    if farm is not None:
        return {**farm.status(), "source": source}
    return {"enabled": False, "source": source, "url": _redacted(url) if url else None,
            "reason": _failure or "no Redis URL: set ZEROCOPY_REDIS_URL or the ZeroCopy farm setting"}


def listing() -> list[dict]:
    farm = active()
    return farm.listing() if farm is not None else []


def put(store, tag: str, tensors, meta: dict, digests: dict | None = None, seam=None) -> int:
    """Store a new shot (spilled): numbered by the farm and published when one is configured.
    ``digests`` receives the stored tensors' digests by name; ``seam`` (a SeamRequest) is measured
    as the put builds the shot (LatentStore.put)."""
    farm = active()
    if farm is None:
        return store.put(tag, tensors, meta, spill=True, digests=digests, seam=seam)
    return farm.put(tag, tensors, meta, spill=True, digests=digests, seam=seam)


def pull(tag: str, generation: int = 0) -> list[str]:
    """Before reading tag: import the farm's newer shot (or the given generation the local store
    lacks). Returns notes for the certificate or the Load's info: a shot the farm published that
    Redis no longer holds (evicted), with the cause; [] without a farm. CorruptFile when the
    farm's bytes fail a digest (nothing stored locally)."""
    farm = active()
    notes: list[str] = []
    if farm is not None:
        farm.pull(tag, generation, notes=notes)
    return notes


def complete_film(tag: str) -> int:
    """Before a film is read whole (the Assemble node): import the ancestors of the tag's newest
    shot that this worker lacks and the farm holds. How many were imported (0 without a farm)."""
    farm = active()
    return farm.complete(tag) if farm is not None else 0


def origin_notes(meta: dict) -> list[str]:
    """Certificate lines for a shot another worker made (its farm metadata says which)."""
    from ..zc_farm import identity
    worker = meta.get(identity.WORKER_KEY)
    farm = active()
    own = farm.config.worker_id if farm is not None else None
    if not worker or worker == own:
        return []
    notes = [f"from worker {worker} via the farm"]
    if meta.get(identity.RENUMBERED_FROM_KEY):
        notes.append(f"numbered {meta[identity.RENUMBERED_FROM_KEY]} on worker {worker} while Redis was "
                     "unreachable; renumbered by the farm because another shot took that number")
    return notes


def newer_published(tag: str, local_newest: int) -> tuple[int, str] | None:
    """(generation, digest) of the farm's newest shot of tag when it is newer than local_newest."""
    farm = active()
    found = farm.newest_published(tag) if farm is not None else None
    return found if found is not None and found[0] > local_newest else None


def linked_state() -> str:
    """A fingerprint part for a linked tag: how many shots the farm has seen published."""
    farm = active()
    count = farm.published_count() if farm is not None else None
    return "" if count is None else f";farm:{count}"


def wait_published(timeout: float) -> bool:
    """True once every shot this worker stored is published (tests, scripts, shutdown)."""
    farm = active()
    return True if farm is None else farm.wait_published(timeout)


def close() -> None:
    """Close the Farm (before the store it publishes from); the next use opens a new one."""
    global _farm, _failure
    with _lock:
        farm, _farm = _farm, None
        _failure = None
    if farm is not None:
        farm.close()
