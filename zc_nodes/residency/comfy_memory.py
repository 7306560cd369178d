"""Every comfy.* / comfy_aimdo.* / execution lookup the residency lock needs.

Imported lazily, so the rest of the residency package (registry, policy,
budget, evidence, dynamic logic) stays importable and testable without
ComfyUI. Capabilities are detected by feature: a function or flag that is
absent means "this ComfyUI does not have it", never an error.
"""

from __future__ import annotations

import sys


def model_management():
    import comfy.model_management
    return comfy.model_management


def patcher_classes() -> list[type]:
    """ModelPatcher and every subclass defined so far (ModelPatcherDynamic,
    other packs' patchers), base class first."""
    import comfy.model_patcher
    base = comfy.model_patcher.ModelPatcher
    found, todo = [], [base]
    while todo:
        cls = todo.pop(0)
        if cls in found:
            continue
        found.append(cls)
        todo.extend(cls.__subclasses__())
    return found


def loaded_model_class() -> type:
    return model_management().LoadedModel


def current_loaded_models() -> list:
    return model_management().current_loaded_models


def total_memory(device) -> int:
    return int(model_management().get_total_memory(device))


def inference_reserve() -> int:
    """ComfyUI's own floor for inference memory: 0.8 GiB + --reserve-vram."""
    mm = model_management()
    reserve = getattr(mm, "minimum_inference_memory", None)
    return int(reserve()) if reserve is not None else 0


def is_oom(exc: BaseException) -> bool:
    mm = model_management()
    check = getattr(mm, "is_oom", None)
    if check is not None:
        return bool(check(exc))
    return isinstance(exc, getattr(mm, "OOM_EXCEPTION", MemoryError))


def executing_prompt_id() -> str | None:
    """The prompt id of the node running now (None outside a node, or on a
    ComfyUI without execution contexts)."""
    try:
        from comfy_execution.utils import get_executing_context
    except ImportError:
        return None
    context = get_executing_context()
    return getattr(context, "prompt_id", None) if context is not None else None


def dynamic_vram_enabled() -> bool:
    """Whether ComfyUI runs dynamic VRAM (comfy-aimdo) in this process."""
    memory_management = sys.modules.get("comfy.memory_management")
    if memory_management is None:
        try:
            from comfy import memory_management
        except ImportError:  # ComfyUI before dynamic VRAM (2025)
            return False
    return bool(getattr(memory_management, "aimdo_enabled", False)
                or getattr(memory_management, "aimdo_allocator", None) is not None)


def is_dynamic_patcher(patcher) -> bool:
    is_dynamic = getattr(patcher, "is_dynamic", None)
    try:
        return bool(is_dynamic()) if callable(is_dynamic) else False
    except Exception:  # noqa: BLE001 - a patcher that cannot say is treated as classic
        return False


def aimdo_vbar_module():
    """comfy_aimdo.model_vbar when it is installed and its library is loaded, else None."""
    try:
        import comfy_aimdo.control
        import comfy_aimdo.model_vbar
    except ImportError:
        return None
    if getattr(comfy_aimdo.control, "lib", None) is None:
        return None
    return comfy_aimdo.model_vbar


def disable_smart_memory() -> bool:
    return bool(getattr(model_management(), "DISABLE_SMART_MEMORY", False))
