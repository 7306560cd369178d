"""Every comfy.* / comfy_aimdo.* / execution lookup the residency lock needs.

Imported lazily, so the rest of the residency package (registry, policy,
budget, evidence, dynamic logic) stays importable and testable without
ComfyUI. Capabilities are detected by feature: a function or flag that is
absent means "this ComfyUI does not have it", never an error.
"""

from __future__ import annotations

import hashlib
import sys

from .causes import UNKNOWN_CACHE_MODE, CacheMode, ModelIdentity, PatchState, dtype_name


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
    return bool(getattr(memory_management, "aimdo_enabled", False))


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


def cache_mode():
    """ComfyUI's node-cache mode as its launch flags select it (main.py's mapping), or
    UNKNOWN_CACHE_MODE. Read from comfy.cli_args.args by feature: the flags that exist here."""
    try:
        from comfy.cli_args import args
    except ImportError:
        return UNKNOWN_CACHE_MODE
    if getattr(args, "cache_none", False):
        return CacheMode("none", "none, --cache-none: every node runs again each time")
    lru = getattr(args, "cache_lru", 0) or 0
    if lru > 0:
        return CacheMode("LRU", f"LRU, --cache-lru {lru}: the last {lru} node outputs are kept")
    if getattr(args, "cache_classic", False):
        return CacheMode("classic", "classic, --cache-classic (or --high-ram): running another workflow "
                                    "drops this one's outputs")
    ram = getattr(args, "cache_ram", None)
    if isinstance(ram, (list, tuple)):  # thresholds list: RAM pressure is this ComfyUI's default
        flag = f"--cache-ram {' '.join(f'{v:g}' for v in ram)}" if ram else "the default"
        return CacheMode("RAM pressure", f"RAM pressure ({flag}): outputs are dropped when RAM runs short, "
                                         "other workflows' models first")
    if isinstance(ram, (int, float)) and ram > 0:
        return CacheMode("RAM pressure", f"RAM pressure, --cache-ram {ram:g}: outputs are dropped when RAM "
                                         "runs short")
    if isinstance(ram, (int, float)):  # a single threshold, 0 = off: classic is this ComfyUI's default
        return CacheMode("classic", "classic (the default here): running another workflow drops this one's "
                                    "outputs")
    return UNKNOWN_CACHE_MODE


NOT_RECORDED = object()  # the weights' patch set is not recorded by this ComfyUI


def weights_patch_id(base):
    """The patch set the weights carry now (ComfyUI's current_weight_patches_uuid: None when
    unpatched), or NOT_RECORDED."""
    return getattr(base, "current_weight_patches_uuid", NOT_RECORDED)


def patch_state(patcher):
    """The patch set this patcher puts on the weights, or None where ComfyUI has no patches_uuid.
    O(1): dict sizes and one lookup."""
    uuid = getattr(patcher, "patches_uuid", None)
    if uuid is None:
        return None
    object_patches = getattr(patcher, "object_patches", None) or {}
    return PatchState(uuid, len(getattr(patcher, "patches", None) or ()), len(object_patches),
                      len(getattr(patcher, "weight_wrapper_patches", None) or ()),
                      dtype_name(object_patches.get("manual_cast_dtype")))


def model_identity(patcher):
    """What the loader built: weight and compute dtype of the BaseModel, and, where ComfyUI
    records it (cached_patcher_init, 2026), the loader function with its arguments."""
    base = getattr(patcher, "model", None)
    try:
        dtype = dtype_name(base.get_dtype())
    except Exception:  # noqa: BLE001 - a model that cannot say has an unknown dtype
        dtype = None
    compute = dtype_name(getattr(base, "manual_cast_dtype", None))
    init = getattr(patcher, "cached_patcher_init", None)
    file = key = None
    if isinstance(init, tuple) and len(init) >= 2 and isinstance(init[1], tuple):
        paths = [a.replace("\\", "/") for a in init[1] if isinstance(a, str) and ("/" in a or "\\" in a)]
        file = paths[0].rsplit("/", 1)[-1] if paths else None  # the first path argument: the model file
        factory = getattr(init[0], "__qualname__", repr(init[0]))
        try:  # a digest: the arguments hold paths and option dicts, compared as their repr
            key = hashlib.sha256(f"{factory}{init[1:]!r}".encode()).hexdigest()[:16]
        except Exception:  # noqa: BLE001 - arguments without a usable repr: not comparable
            key = None
    return ModelIdentity(dtype, compute, file, key)
