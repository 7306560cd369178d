"""The store gives memory back when ComfyUI needs it.

ComfyUI has two places where it makes room, and both are attributes looked up at call time:

- ``comfy.memory_management.extra_ram_release(target, free_active=False)``: called before
  ComfyUI pins host memory (model loading, RAM-pressure caching) to keep ``target`` bytes of
  RAM free; its release callback is the RAM-pressure cache's. The wrapper first releases
  host memory of the pack (the next latents prepared ahead, then the store's recycled buffers,
  then spilled shots no view holds) when the machine has less than ``target`` available, then
  calls ComfyUI's.
- ``comfy.model_management.free_memory(memory_required, device, ...)``: called before a model
  or a VAE is loaded onto a device. When ``device`` has less than ``memory_required`` free, the
  wrapper first releases the store's device-tier shots that are safely on disk.

Nothing is lost: only what a later get can restore from its spill file leaves. The wrappers
are installed once, on the store's first use, through the residency lock's hook mechanism
(marked apart, so both features may wrap ``free_memory``), and measure only when ComfyUI is
already short of memory.
"""

from __future__ import annotations

from . import prepared_latents
from .. import zc_log as log
from ..zc_residency.hooks import HookSet, mark

MARKER = "__zc_store_release_hook__"
_hooks = HookSet(MARKER)


def _available_ram() -> int | None:
    try:
        import psutil
        return int(psutil.virtual_memory().available)
    except Exception:  # noqa: BLE001 - unknown: release nothing rather than guess
        return None


def wrap_extra_ram_release(store_of, original):
    def extra_ram_release(target, *args, **kwargs):
        freed = 0
        available = _available_ram()
        store = store_of()
        if store is not None and available is not None and target and available < target:
            try:
                freed = prepared_latents.release_all()
                if freed < int(target) - available:
                    freed += store.trim(int(target) - available - freed)
            except Exception as exc:  # noqa: BLE001 - ComfyUI's own release must still run
                log.warning("the store could not release host memory: %s", exc)
            if freed:
                log.info("released %d MiB of the store's host memory (RAM below ComfyUI's headroom)",
                         freed >> 20)
        return original(target, *args, **kwargs)
    return mark(extra_ram_release, original, MARKER)


def wrap_free_memory(store_of, free_of, original):
    def free_memory(memory_required, device, *args, **kwargs):
        store = store_of()
        if store is not None and getattr(device, "type", None) not in (None, "cpu"):
            try:
                short = int(memory_required) - int(free_of(device))
                if short > 0:
                    freed = store.trim(short, device=True)
                    if freed:
                        log.info("released %d MiB of the store's device shots on %s (ComfyUI needs room)",
                                 freed >> 20, device)
            except Exception as exc:  # noqa: BLE001 - never fail ComfyUI's own call
                log.warning("the store could not release device memory: %s", exc)
        return original(memory_required, device, *args, **kwargs)
    return mark(free_memory, original, MARKER)


def install(store_of) -> list[str]:
    """Wrap ComfyUI's release points (where this ComfyUI has them); returns what was wrapped.
    ``store_of()`` gives the store to release from, or None (then nothing is released)."""
    try:
        import comfy.memory_management as memory
        import comfy.model_management as models
    except ImportError:
        return []
    if hasattr(memory, "extra_ram_release"):
        _hooks.install(memory, "extra_ram_release", lambda o: wrap_extra_ram_release(store_of, o))
    get_free = getattr(models, "get_free_memory", None)
    if get_free is not None and hasattr(models, "free_memory"):
        _hooks.install(models, "free_memory", lambda o: wrap_free_memory(store_of, get_free, o))
    return [hook.label for hook in _hooks.installed()]


def uninstall() -> None:
    _hooks.uninstall_all()
