"""ZeroCopyVRAMPin: keep a model resident across queue runs through ComfyUI's
memory manager, report the CUDA allocator, and show per-run reload evidence
(what moved, and why)."""

from __future__ import annotations

from .api_version import io

from . import self_check, ui_events
from .. import zc_log as log
from ..zc_residency import get_service
from ..zc_residency.cuda_allocator import inspect_and_tune
from ..zc_residency.comfy_memory import dynamic_vram_enabled, is_dynamic_patcher
from ..zc_residency.policy import DEFAULT_POLICY, POLICY_NAMES, parse_policy
from ..zc_residency.report import lock_state, node_report
from ..zc_residency.service import DISABLED, LockOutcome

DEFAULT_HEADROOM_GB = 4.0
GIB = 1 << 30
OWNER_PREFIX = "ZeroCopyVRAMPin:"


def _publish_state(state: dict) -> None:
    """A lock's state to the web UI, addressed to each ZeroCopyVRAMPin node that owns it."""
    for owner in state.get("owners", []):
        if owner.startswith(OWNER_PREFIX):
            ui_events.notify_residency(state, node=owner[len(OWNER_PREFIX):])


class ZeroCopyVRAMPin(io.ComfyNode):
    @classmethod
    def define_schema(cls):
        return io.Schema(
            node_id="ZeroCopyVRAMPin",
            display_name="ZeroCopy VRAM Pin (residency lock)",
            category="CineFlux/CUDA",
            description=(
                "Keeps this model's weights in VRAM across queue runs, so shot N+1 starts without reloading "
                "them. Works through ComfyUI's own memory manager (classic and dynamic VRAM): ComfyUI keeps "
                "counting the memory truthfully and frees other models instead. The lock follows LoRA and "
                "patch clones of the model, is released when the loader produces a new model, and is only "
                "taken if the weights plus ComfyUI's inference reserve plus the headroom fit the device. "
                "The report shows the budget, the allocator and, per queue run, the time spent loading the "
                "model, the bytes moved (0 B when it stayed resident) and why it was loaded again (a "
                "LoRA/patch or dtype change, ComfyUI's cache dropping the model, an explicit free, OOM "
                "recovery, or no cause this pack can see)."),
            inputs=[
                io.Model.Input("model", tooltip="The diffusion model to keep resident (a loader's MODEL output, "
                                                "or a LoRA/patched clone of it)."),
                io.Boolean.Input("enable_pinning", default=True,
                                 tooltip="On: lock the model resident in VRAM. Off: release this node's lock "
                                         "and let ComfyUI manage the model as usual."),
                io.Boolean.Input("tune_allocator", default=False,
                                 tooltip="Report the CUDA allocator (backend and the fragmentation figures it "
                                         "provides) and, where PyTorch allows it at runtime (native backend), "
                                         "switch on expandable_segments, keeping your other allocator options. "
                                         "On ComfyUI's default cudaMallocAsync backend nothing is changed; the "
                                         "report says which launch setting would do it."),
                io.Combo.Input("residency_policy", options=POLICY_NAMES, default=DEFAULT_POLICY.value,
                               optional=True,
                               tooltip="What the lock does when ComfyUI unloads every model. yield (default): "
                                       "steps aside for an explicit free (Unload Models button, POST /free), "
                                       "then holds again once reloaded; released by out-of-memory recovery. "
                                       "survive_free: also holds through an explicit free. "
                                       "survive_free_and_oom: also holds through one OOM recovery (a second "
                                       "releases it, so it never loops)."),
                io.Float.Input("vram_headroom_gb", default=DEFAULT_HEADROOM_GB, min=0.0, max=4096.0, step=0.25,
                               optional=True,
                               tooltip="VRAM (GiB) to keep free beside the locked weights, on top of ComfyUI's "
                                       "inference reserve (0.8 GiB + --reserve-vram): sampler activations, the "
                                       "text encoder, VAE decode. If weights + reserve + headroom do not fit "
                                       "the device, nothing is locked and the report says why."),
            ],
            outputs=[
                io.Model.Output(display_name="model", tooltip="The input model, passed through (the same object)."),
                io.String.Output(display_name="report",
                                 tooltip="Lock state, budget, policy, allocator figures and per-run evidence "
                                         "(load time, bytes moved, why a reload happened)."),
            ],
            hidden=[io.Hidden.unique_id],
        )

    @classmethod
    def validate_inputs(cls, residency_policy=DEFAULT_POLICY.value, vram_headroom_gb=DEFAULT_HEADROOM_GB):
        try:
            parse_policy(residency_policy)
        except ValueError as exc:
            return str(exc)
        if vram_headroom_gb is not None and vram_headroom_gb < 0:
            return f"vram_headroom_gb is {vram_headroom_gb}; expected 0 or more GiB"
        return True

    @classmethod
    def execute(cls, model, enable_pinning=True, tune_allocator=False, residency_policy=DEFAULT_POLICY.value,
                vram_headroom_gb=DEFAULT_HEADROOM_GB) -> io.NodeOutput:
        policy = parse_policy(residency_policy)
        owner = f"{OWNER_PREFIX}{cls.hidden.unique_id if cls.hidden is not None else 'unknown'}"
        residency = get_service()
        outcome = None
        off = self_check.refusal("residency_lock") or (
            self_check.refusal("residency_dynamic") if is_dynamic_patcher(model) else "")
        if enable_pinning and off:  # the startup self-check found the wrapped internals changed
            released = residency.release_owner(owner, off)
            outcome = LockOutcome(False, message=f"not locked: {off}",
                                  released=[(released.label, off)] if released else [])
        elif enable_pinning:
            outcome = residency.lock(model, owner, policy=policy, headroom_bytes=int(vram_headroom_gb * GIB))
        else:
            released = residency.release_owner(owner, DISABLED)
            outcome = LockOutcome(False, released=[(released.label, DISABLED)] if released else [])
        dynamic = dynamic_vram_enabled()
        allocator = None
        if tune_allocator:
            device = getattr(model, "load_device", None)
            allocator = inspect_and_tune(device, tune=True, dynamic_vram=dynamic)
            for line in allocator.lines:
                log.info("%s", line)
        report = node_report(residency, outcome, model, enabled=enable_pinning, policy=policy,
                             dynamic_vram=dynamic, allocator=allocator)
        cls._publish(residency, outcome, enable_pinning, report)
        return io.NodeOutput(model, report)

    @classmethod
    def _publish(cls, residency, outcome, enabled, report) -> None:
        """The node's state to the web UI; later loads of the locked model publish their evidence."""
        residency.publisher = _publish_state
        if outcome is not None and outcome.locked:
            state = lock_state(residency, outcome.lock)
        else:
            state = {"state": "off" if not enabled else "not locked", "resident": False,
                     "reason": outcome.message if outcome is not None else ""}
        ui_events.notify_residency(state, report=report)
