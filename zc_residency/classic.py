"""The wrappers that keep a locked model resident through ComfyUI's memory
manager (classic model management, and the paths dynamic VRAM shares with it).

Every eviction path ComfyUI has ends in one of these, looked up through the
module or class attribute at call time, so wrapping the attribute reaches
ComfyUI's own callers:

- ``comfy.model_management.free_memory``: a locked model's LoadedModel entry is
  added to ``keep_loaded``; ComfyUI then frees what it can elsewhere. Nothing is
  popped from ``current_loaded_models`` that was not unloaded.
- ``comfy.model_management.unload_all_models``: the lock's policy decides, by
  caller (explicit free, OOM recovery, --disable-smart-memory, another pack),
  whether it holds, steps aside for this call, or is released (policy.py).
- ``ModelPatcher.partially_unload`` (and subclasses that override it, such as
  ModelPatcherDynamic): returns 0 for a locked model, which is true: nothing was
  freed. This covers the reuse path in load_models_gpu that shrinks an already
  loaded model with a negative budget (partially_load -> partially_unload).
- ``LoadedModel.model_unload``: returns False ("not unloaded", also true) for a
  locked model, so a direct caller can neither detach it nor pop its entry.

Two more wrappers only measure (load_evidence.py): ``LoadedModel.model_load`` (time,
and, just before ComfyUI loads, what the load will do that explains a reload:
reasons.py) and ``ModelPatcher.load`` (bytes). Every wrapper returns straight to the
original when no model is locked, and does nothing for a model that is not.
"""

from __future__ import annotations

import inspect
import sys
import threading
import time

from . import comfy_memory
from .hooks import mark

_inside = threading.local()  # ids of models inside a measured ModelPatcher.load (nested subclass calls)


def hook_specs(service) -> list[tuple[object, str, object]]:
    """(owner, attribute, make_wrapper) for every classic hook this ComfyUI has."""
    mm = comfy_memory.model_management()
    loaded_model = comfy_memory.loaded_model_class()
    specs = [
        (mm, "free_memory", lambda original: wrap_free_memory(service, original)),
        (mm, "unload_all_models", lambda original: wrap_unload_all_models(service, original)),
        (loaded_model, "model_unload", lambda original: wrap_model_unload(service, original)),
        (loaded_model, "model_load", lambda original: wrap_model_load(service, original)),
    ]
    for cls in comfy_memory.patcher_classes():
        if "partially_unload" in cls.__dict__:
            specs.append((cls, "partially_unload", lambda original: wrap_partially_unload(service, original)))
        if "load" in cls.__dict__:
            specs.append((cls, "load", lambda original: wrap_patcher_load(service, original)))
    return specs


def _keep_loaded_binder(original):
    """How to read `device` and replace `keep_loaded` in a free_memory call. ComfyUI's signature
    (memory_required, device, keep_loaded=[], ...) has grown keyword arguments over time, and
    another pack may have wrapped it with (*args, **kwargs): then the positional convention is used."""
    try:
        signature = inspect.signature(original)  # follows __wrapped__ through functools.wraps
    except (TypeError, ValueError):
        signature = None
    if signature is not None and {"device", "keep_loaded"} <= set(signature.parameters):
        def bind(args, kwargs):
            bound = signature.bind(*args, **kwargs)

            def rebuilt(keep):
                bound.arguments["keep_loaded"] = keep
                return bound.args, bound.kwargs
            return bound.arguments.get("device"), bound.arguments.get("keep_loaded"), rebuilt
        return bind

    def bind_positional(args, kwargs):
        device = args[1] if len(args) > 1 else kwargs.get("device")
        keep = args[2] if len(args) > 2 else kwargs.get("keep_loaded")

        def rebuilt(new_keep):
            if len(args) > 2:
                return (*args[:2], new_keep, *args[3:]), kwargs
            return args, {**kwargs, "keep_loaded": new_keep}
        return device, keep, rebuilt
    return bind_positional


def wrap_free_memory(service, original):
    bind = _keep_loaded_binder(original)

    def free_memory(*args, **kwargs):
        if not service.registry:
            return original(*args, **kwargs)
        try:
            device, keep, rebuilt = bind(args, kwargs)
        except TypeError:
            return original(*args, **kwargs)  # let ComfyUI raise its own error for a bad call
        keep = list(keep or ())
        extra = [lm for lm in service.protected_loaded_models(device) if not any(lm is k for k in keep)]
        if not extra:
            return original(*args, **kwargs)
        service.note_kept(extra)
        new_args, new_kwargs = rebuilt(keep + extra)
        return original(*new_args, **new_kwargs)
    return mark(free_memory, original)


def _caller_names(depth: int = 6) -> list[str]:
    frame = sys._getframe(2)  # the caller of the wrapper
    names = []
    while frame is not None and len(names) < depth:
        names.append(frame.f_code.co_name)
        frame = frame.f_back
    return names


def wrap_unload_all_models(service, original):
    def unload_all_models(*args, **kwargs):
        if not service.registry:
            return original(*args, **kwargs)
        stepped_aside = service.apply_unload_policy(_caller_names(), sys.exc_info()[1])
        try:
            return original(*args, **kwargs)
        finally:
            service.end_step_aside(stepped_aside)
    return mark(unload_all_models, original)


def wrap_model_unload(service, original):
    def model_unload(self, *args, **kwargs):
        if service.registry:
            patcher = self.model
            lock = service.protecting(getattr(patcher, "model", None))
            if lock is not None:
                service.note_refused(lock, "LoadedModel.model_unload")
                return False
        return original(self, *args, **kwargs)
    return mark(model_unload, original)


def wrap_partially_unload(service, original):
    def partially_unload(self, *args, **kwargs):
        if service.registry:
            lock = service.protecting(getattr(self, "model", None))
            if lock is not None:
                service.note_refused(lock, f"{type(self).__name__}.partially_unload")
                return 0
        return original(self, *args, **kwargs)
    return mark(partially_unload, original)


def wrap_model_load(service, original):
    def model_load(self, *args, **kwargs):
        if not service.registry:
            return original(self, *args, **kwargs)
        patcher = self.model
        lock = service.registry.find(getattr(patcher, "model", None))
        if lock is None:
            return original(self, *args, **kwargs)
        run = lock.evidence.run(service.run_id())
        bytes_before = run.bytes_loaded
        forced = args[1] if len(args) > 1 else kwargs.get("force_patch_weights", False)
        service.before_locked_load(lock, patcher, bool(forced))
        start = time.perf_counter()
        try:
            result = original(self, *args, **kwargs)
        except BaseException:
            run.load_calls += 1
            run.load_seconds += time.perf_counter() - start
            raise
        seconds = time.perf_counter() - start
        run.load_calls += 1
        run.load_seconds += seconds
        service.after_locked_load(lock, patcher, run, seconds, run.bytes_loaded - bytes_before)
        return result
    return mark(model_load, original)


def wrap_patcher_load(service, original):
    def load(self, *args, **kwargs):
        if not service.registry:
            return original(self, *args, **kwargs)
        base = getattr(self, "model", None)
        lock = service.registry.find(base)
        inside = getattr(_inside, "ids", None)
        if inside is None:
            inside = _inside.ids = set()
        if lock is None or id(base) in inside:
            return original(self, *args, **kwargs)
        before = int(getattr(base, "model_loaded_weight_memory", 0) or 0)
        inside.add(id(base))
        try:
            return original(self, *args, **kwargs)
        finally:
            inside.discard(id(base))
            after = int(getattr(base, "model_loaded_weight_memory", 0) or 0)
            # Dynamic loads first drop their force-loaded weights (restore_loaded_backups),
            # then load them again: everything counted after the call was moved by it.
            moved = after if comfy_memory.is_dynamic_patcher(self) else max(0, after - before)
            lock.evidence.run(service.run_id()).bytes_loaded += moved
    return mark(load, original)
