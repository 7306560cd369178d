"""The startup self-check: every ComfyUI internal the pack relies on, checked once at load.

Each *part* of the pack that leans on a ComfyUI internal has a contract here (a function and the
parameters the pack's wrapper binds, a class and the attributes it reads). A part whose contract
is not met is turned off, with one log line that names the internal, what was found and what the
part does instead; the rest of the pack runs. A part whose internal is simply absent from this
ComfyUI (a latent format of a model it cannot load, an optional V3 feature) is reported "absent",
which is no fault. Nothing here is a version test: each contract is read from the objects.

The parts and what "off" means:

- ``v3_nodes``: the ``comfy_api`` io features the node definitions use. Off: no node is registered.
- ``residency_lock``: the memory-manager functions the residency lock wraps (classic.py). Off:
  ZeroCopyVRAMPin passes the model through unlocked and its report says why.
- ``residency_dynamic``: the two dynamic-VRAM attributes (dynamic_hooks.py). Off: models under
  dynamic VRAM are not locked (classic models still are). Absent without comfy-aimdo.
- ``nested_tensor``: ``comfy.nested_tensor.NestedTensor`` (audio-video latents). Off: a Store or
  Handoff given an audio-video latent stops with this reason instead of failing mid-shot.
- ``latent_formats``: the ``comfy.latent_formats`` classes the families name. A broken one turns
  its family off (the Handoff says so); a missing one is absent (no such model loads here).
- ``advanced_inputs``: V3 inputs accept ``advanced=True``. Absent: every input is shown.

``run(...)`` takes the ComfyUI modules as arguments so the unit tests can hand it a deliberately
broken one; ``result()`` runs it once against the real ComfyUI.
"""

from __future__ import annotations

import inspect
import threading
from dataclasses import asdict, dataclass, field

from .. import zc_log as log

ON, OFF, ABSENT = "on", "off", "absent"


@dataclass(frozen=True)
class Part:
    name: str
    label: str
    state: str  # ON, OFF or ABSENT
    detail: str = ""  # what was checked (on), what is wrong and what the pack does instead (off)


@dataclass
class SelfCheck:
    parts: list[Part] = field(default_factory=list)
    broken_formats: dict[str, str] = field(default_factory=dict)  # latent format name -> problem
    absent_formats: list[str] = field(default_factory=list)

    def part(self, name: str) -> Part | None:
        return next((p for p in self.parts if p.name == name), None)

    def enabled(self, name: str) -> bool:
        part = self.part(name)
        return part is None or part.state != OFF

    def reason(self, name: str) -> str:
        part = self.part(name)
        return part.detail if part is not None and part.state == OFF else ""

    @property
    def off(self) -> list[Part]:
        return [p for p in self.parts if p.state == OFF]

    def as_dict(self) -> dict:
        return {"ok": not self.off, "off": [p.name for p in self.off],
                "parts": [asdict(p) for p in self.parts],
                "broken_latent_formats": dict(self.broken_formats),
                "absent_latent_formats": list(self.absent_formats)}


# ------------------------------------------------------------------------ contract helpers

def _signature(func):
    try:
        return inspect.signature(func)
    except (TypeError, ValueError):
        return None


def _params_problem(owner: str, func, leading: tuple[str, ...], *, method: bool = False) -> str | None:
    """None if func can be called with ``leading`` as its first positional parameters (by name,
    or through *args), else what is wrong. ``method``: a first parameter (self) is skipped."""
    if func is None or not callable(func):
        return f"{owner} is missing"
    signature = _signature(func)
    if signature is None:
        return None  # a builtin or C function: nothing readable to contradict the contract
    params = list(signature.parameters.values())
    if method:
        if not params:
            return f"{owner}{signature} takes no self"
        params = params[1:]
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    var_args = any(p.kind is p.VAR_POSITIONAL for p in params)
    for index, name in enumerate(leading):
        if index < len(positional):
            if positional[index].name != name:
                return (f"{owner}{signature}: parameter {index + 1} is {positional[index].name!r}, "
                        f"expected {name!r}")
        elif not var_args:
            return f"{owner}{signature} has no parameter {name!r}"
    required = [p for p in positional[len(leading):] if p.default is p.empty]
    required += [p for p in params if p.kind is p.KEYWORD_ONLY and p.default is p.empty]
    if required:
        return f"{owner}{signature} requires {', '.join(p.name for p in required)}, which ComfyUI's callers do not pass"
    return None


def _first(problems) -> str | None:
    return next((p for p in problems if p), None)


# ------------------------------------------------------------------------------ the checks

def check_v3(io) -> Part:
    label = "V3 node definitions (comfy_api io)"
    if io is None:
        return Part("v3_nodes", label, OFF, "comfy_api.latest.io could not be imported; no ZeroCopy node is registered")
    needed = ("ComfyNode", "Schema", "NodeOutput", "Hidden", "Custom", "Int", "Float", "String", "Boolean",
              "Combo", "Latent", "Model", "Vae", "Clip", "Image", "Conditioning", "Audio")
    missing = [name for name in needed if not hasattr(io, name)]
    problem = f"io lacks {', '.join(missing)}" if missing else None
    if problem is None:
        fields = getattr(io.Schema, "__dataclass_fields__", None)
        wanted = ("node_id", "display_name", "category", "description", "inputs", "outputs", "hidden",
                  "is_output_node")
        if fields is not None and not set(wanted) <= set(fields):
            problem = f"io.Schema has no field {', '.join(sorted(set(wanted) - set(fields)))}"
    if problem is None:
        hidden = [name for name in ("unique_id", "prompt") if not hasattr(io.Hidden, name)]
        problem = f"io.Hidden lacks {', '.join(hidden)}" if hidden else None
    if problem is None:
        params = _signature(io.NodeOutput.__init__)
        if params is not None and "ui" not in params.parameters and not any(
                p.kind is p.VAR_KEYWORD for p in params.parameters.values()):
            problem = f"io.NodeOutput{params} takes no ui="
    if problem is None:
        problem = _first(f"io.ComfyNode.{name} is missing" for name in ("define_schema", "execute")
                         if not hasattr(io.ComfyNode, name))
    if problem:
        return Part("v3_nodes", label, OFF, f"{problem}; no ZeroCopy node is registered")
    return Part("v3_nodes", label, ON, "ComfyNode, Schema (is_output_node, hidden), NodeOutput(ui=), Custom, "
                                       "Hidden.unique_id/prompt and the input types used")


def check_residency_lock(mm, patcher_cls) -> Part:
    label = "VRAM residency lock (ZeroCopyVRAMPin)"
    if mm is None or patcher_cls is None:
        return Part("residency_lock", label, OFF, "comfy.model_management or comfy.model_patcher could not be "
                                                  "imported; ZeroCopyVRAMPin passes the model through unlocked")
    loaded = getattr(mm, "LoadedModel", None)
    problem = _first([
        _params_problem("model_management.free_memory", getattr(mm, "free_memory", None),
                        ("memory_required", "device", "keep_loaded")),
        _params_problem("model_management.unload_all_models", getattr(mm, "unload_all_models", None), ()),
        _params_problem("model_management.get_total_memory", getattr(mm, "get_total_memory", None), ()),
        None if isinstance(getattr(mm, "current_loaded_models", None), list)
        else "model_management.current_loaded_models is not a list",
        None if loaded is not None else "model_management.LoadedModel is missing",
    ])
    if problem is None:
        problem = _first([
            None if hasattr(loaded, "model") else "LoadedModel.model (the patcher) is missing",
            _params_problem("LoadedModel.model_unload", getattr(loaded, "model_unload", None),
                            ("memory_to_free",), method=True),
            _params_problem("LoadedModel.model_load", getattr(loaded, "model_load", None),
                            ("lowvram_model_memory", "force_patch_weights"), method=True),
            _params_problem("ModelPatcher.partially_unload", getattr(patcher_cls, "partially_unload", None),
                            ("device_to", "memory_to_free"), method=True),
            _params_problem("ModelPatcher.load", getattr(patcher_cls, "load", None), (), method=True),
            None if callable(getattr(patcher_cls, "model_size", None)) else "ModelPatcher.model_size is missing",
        ])
    if problem:
        return Part("residency_lock", label, OFF, f"{problem}; ZeroCopyVRAMPin passes the model through unlocked")
    return Part("residency_lock", label, ON, "free_memory(memory_required, device, keep_loaded), unload_all_models, "
                                             "LoadedModel.model_unload/model_load, ModelPatcher.partially_unload/load")


def check_residency_dynamic(patcher_classes, vbar_module) -> Part:
    label = "residency lock under dynamic VRAM"
    problem = _first(_params_problem(f"{cls.__name__}.get_free_memory", cls.__dict__["get_free_memory"],
                                     ("device",), method=True)
                     for cls in patcher_classes or () if "get_free_memory" in cls.__dict__)
    if problem is None and vbar_module is not None:
        problem = _params_problem("comfy_aimdo.model_vbar.vbars_reset_watermark_limits",
                                  getattr(vbar_module, "vbars_reset_watermark_limits", None), ())
    if problem:
        return Part("residency_dynamic", label, OFF, f"{problem}; models under dynamic VRAM are not locked")
    if vbar_module is None:
        return Part("residency_dynamic", label, ABSENT, "comfy-aimdo is not loaded here: dynamic VRAM is not used")
    return Part("residency_dynamic", label, ON, "vbars_reset_watermark_limits, ModelPatcher.get_free_memory(device)")


def check_nested_tensor(nested_module, torch) -> Part:
    label = "audio-video latents (comfy.nested_tensor.NestedTensor)"
    off = "; audio-video latents (LTX-2 AV, MiniMax H3 AV) are refused with this reason"
    cls = getattr(nested_module, "NestedTensor", None)
    if cls is None:
        return Part("nested_tensor", label, OFF, f"comfy.nested_tensor.NestedTensor is missing{off}")
    try:
        streams = [torch.zeros(1, 2, 3, 2, 2), torch.ones(1, 3, 4)]
        joined = cls(streams)
        back = list(joined.unbind())
        ok = bool(getattr(joined, "is_nested", False)) and len(back) == 2 and all(
            a.shape == b.shape and torch.equal(a, b) for a, b in zip(back, streams))
        problem = None if ok else "NestedTensor(streams).unbind() does not give the streams back (or is_nested is False)"
    except Exception as exc:  # noqa: BLE001 - any failure is a broken contract
        problem = f"NestedTensor([video, audio]) failed: {type(exc).__name__}: {exc}"
    if problem:
        return Part("nested_tensor", label, OFF, problem + off)
    return Part("nested_tensor", label, ON, "NestedTensor(streams), is_nested, unbind()")


def check_latent_formats(latent_formats, names) -> tuple[Part, dict[str, str], list[str]]:
    label = "latent formats the families name (comfy.latent_formats)"
    broken, absent = {}, []
    for name in names:
        cls = getattr(latent_formats, name, None)
        if cls is None:
            absent.append(name)
            continue
        try:
            fmt = cls()
            channels = getattr(fmt, "latent_channels", None)
            if not isinstance(channels, int) or channels <= 0:
                broken[name] = f"latent_channels is {channels!r}"
            elif not callable(getattr(fmt, "process_in", None)) or not callable(getattr(fmt, "process_out", None)):
                broken[name] = "process_in/process_out missing"
        except Exception as exc:  # noqa: BLE001
            broken[name] = f"{name}() failed: {type(exc).__name__}: {exc}"
    if broken:
        detail = "; ".join(f"{k}: {v}" for k, v in broken.items())
        return Part("latent_formats", label, OFF, f"{detail}; the families of these formats are off"), broken, absent
    detail = f"{len(names) - len(absent)} formats: latent_channels, process_in/out"
    if absent:
        detail += f"; not in this ComfyUI (no such model loads here): {', '.join(absent)}"
    return Part("latent_formats", label, ON, detail), broken, absent


def check_advanced(io) -> Part:
    label = "folded expert inputs (V3 advanced=True)"
    init = getattr(getattr(io, "Input", None), "__init__", None)
    params = _signature(init) if init is not None else None
    if params is not None and "advanced" in params.parameters:
        return Part("advanced_inputs", label, ON, "io.Input(advanced=...): the Handoff folds its expert inputs")
    return Part("advanced_inputs", label, ABSENT, "io.Input takes no advanced=: every input is shown")


def family_format_names() -> list[str]:
    from ..zc_continuity import families
    names: list[str] = []
    for spec in families.known_families():
        names.extend(n for n in spec.latent_format_names if n not in names)
    return names


def run(*, io, mm, patcher_cls, patcher_classes, vbar_module, nested_module, latent_formats, torch,
        format_names) -> SelfCheck:
    """Check every part against the given modules (None: could not be imported)."""
    result = SelfCheck()
    result.parts.append(check_v3(io))
    result.parts.append(check_residency_lock(mm, patcher_cls))
    result.parts.append(check_residency_dynamic(patcher_classes, vbar_module))
    result.parts.append(check_nested_tensor(nested_module, torch))
    part, result.broken_formats, result.absent_formats = check_latent_formats(latent_formats, format_names)
    result.parts.append(part)
    result.parts.append(check_advanced(io))
    return result


def _import(name: str):
    import importlib
    try:
        return importlib.import_module(name)
    except Exception:  # noqa: BLE001 - absent or broken: the check says which part is off
        return None


def run_against_comfy() -> SelfCheck:
    """Check this process's ComfyUI."""
    import torch

    from .api_version import comfy_api
    from ..zc_residency import comfy_memory

    patcher_module = _import("comfy.model_patcher")
    try:
        classes = comfy_memory.patcher_classes()
    except Exception:  # noqa: BLE001
        classes = []
    return run(io=getattr(comfy_api(), "io", None), mm=_import("comfy.model_management"),
               patcher_cls=getattr(patcher_module, "ModelPatcher", None), patcher_classes=classes,
               vbar_module=comfy_memory.aimdo_vbar_module(), nested_module=_import("comfy.nested_tensor"),
               latent_formats=_import("comfy.latent_formats"), torch=torch, format_names=family_format_names())


_result: SelfCheck | None = None
_lock = threading.Lock()


def report(check: SelfCheck) -> None:
    """One log line per part that is off; one summary line."""
    for part in check.off:
        log.error("self-check: %s is OFF: %s", part.label, part.detail)
    on = [p.name for p in check.parts if p.state == ON]
    absent = [p.name for p in check.parts if p.state == ABSENT]
    log.info("self-check: on: %s%s%s", ", ".join(on) or "nothing",
             f"; absent here: {', '.join(absent)}" if absent else "",
             f"; OFF: {', '.join(p.name for p in check.off)}" if check.off else "")


def result() -> SelfCheck:
    """The process's self-check, run (and logged) on first use: at load, from the extension."""
    global _result
    with _lock:
        if _result is None:
            try:
                _result = run_against_comfy()
            except Exception as exc:  # noqa: BLE001 - the check itself must never stop the pack
                log.error("self-check could not run (%s); every part stays on", exc)
                _result = SelfCheck()
            report(_result)
        return _result


def set_result(check: SelfCheck | None) -> None:
    """Replace the process's result (tests)."""
    global _result
    with _lock:
        _result = check


def enabled(name: str) -> bool:
    return result().enabled(name)


def refusal(name: str) -> str:
    """'' if the part is on, else the sentence to raise or report."""
    reason = result().reason(name)
    part = result().part(name)
    return f"{part.label} is off (ZeroCopy startup self-check): {reason}" if reason and part else ""
