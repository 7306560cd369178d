"""The two ComfyUI/comfy-aimdo attributes the dynamic-VRAM lock wraps.

- ``comfy_aimdo.model_vbar.vbars_reset_watermark_limits``: ComfyUI calls it
  after every node (execution.py) and it clears every VBAR's limit; the wrapper
  calls it, then re-applies the limits of locked models and takes the per-node
  evidence sample. ComfyUI's OOM handler runs after that reset, so the lock is
  in place (or released, per policy) when it calls unload_all_models().
- ``ModelPatcher.get_free_memory``: ComfyUI adds every resident VBAR byte to
  the free figure (they could be evicted); locked pages cannot, so the wrapper
  subtracts them. It changes nothing while no dynamic model is locked.

Both are installed only when dynamic VRAM is active (or when a test gives the
service a fake port and module).
"""

from __future__ import annotations

from . import comfy_memory
from .hooks import mark


def hook_specs(service, vbar_module=None) -> list[tuple[object, str, object]]:
    vbar_module = vbar_module if vbar_module is not None else comfy_memory.aimdo_vbar_module()
    specs = []
    if vbar_module is not None and hasattr(vbar_module, "vbars_reset_watermark_limits"):
        specs.append((vbar_module, "vbars_reset_watermark_limits",
                      lambda original: wrap_reset_watermark_limits(service, original)))
    try:
        classes = comfy_memory.patcher_classes()
    except ImportError:
        classes = []
    for cls in classes:
        if "get_free_memory" in cls.__dict__:
            specs.append((cls, "get_free_memory", lambda original: wrap_get_free_memory(service, original)))
    return specs


def wrap_reset_watermark_limits(service, original):
    def vbars_reset_watermark_limits(*args, **kwargs):
        result = original(*args, **kwargs)
        if service.registry:
            service.after_limits_reset()
        return result
    return mark(vbars_reset_watermark_limits, original)


def wrap_get_free_memory(service, original):
    def get_free_memory(self, device, *args, **kwargs):
        free = original(self, device, *args, **kwargs)
        if not service.registry:
            return free
        locked = service.locked_vbar_bytes(device)
        return max(0, free - locked) if locked else free
    return mark(get_free_memory, original)
