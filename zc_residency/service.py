"""The residency service: locks, the budget guard, the hooks that make ComfyUI
honour the locks, the dynamic-VRAM limits, and the per-run evidence.

One instance per process (``zc_residency.get_service()``): ComfyUI clones
V3 node classes per call, so the state lives here. Hooks are installed when
the first model is locked and removed, restoring ComfyUI's original objects,
when the last lock goes.
"""

from __future__ import annotations

import collections
import time
from dataclasses import dataclass, field

from .. import zc_log as log
from . import budget, causes, classic, comfy_memory, dynamic_hooks
from .budget import BudgetCheck
from .dynamic import ComfyAimdoPort, DynamicResidency
from .hooks import HookSet
from .load_evidence import OUTSIDE_RUN, RunEvidence, recopied_bytes, signature_snapshot
from .policy import DEFAULT_POLICY, Action, Policy, UnloadReason, action_for, classify_unload
from .reasons import OwnerHistory, Reload
from .registry import COLLECTED, LockRegistry, ResidencyLock
from .units import fmt_bytes, fmt_ms

LOADER_RAN_AGAIN = ("its node received a different model (the loader ran again, or the input changed); "
                    "the old model is unlocked so two copies are never kept resident")
DISABLED = "enable_pinning is off on its node"


@dataclass
class LockOutcome:
    locked: bool
    lock: ResidencyLock | None = None
    message: str = ""
    check: BudgetCheck | None = None
    released: list = field(default_factory=list)  # (label, reason) released by this call


class ResidencyService:
    def __init__(self, *, port=None, vbar_module=None, comfy_hooks: bool = True, comfy=None):
        self.comfy = comfy if comfy is not None else comfy_memory  # tests pass a fake
        self.registry = LockRegistry()
        self.hooks = HookSet()
        self.dynamic = DynamicResidency(port if port is not None else ComfyAimdoPort())
        self.vbar_module = vbar_module  # tests pass a fake comfy_aimdo.model_vbar
        self.comfy_hooks = comfy_hooks  # False: unit tests without ComfyUI
        self.last_run_id: str | None = None
        self.events: collections.deque = collections.deque(maxlen=32)  # (unix time, text)
        self._released_now: list | None = None
        self.publisher = None  # callable(dict): set by the node layer to reach the web UI
        self.history = OwnerHistory()  # per node: the model it last locked (why a new one reloads)
        self.registry.on_removed.append(self._on_removed)

    # ---------------------------------------------------------------- the node's API

    def lock(self, patcher, owner: str, *, policy: Policy = DEFAULT_POLICY,
             headroom_bytes: int = 0) -> LockOutcome:
        """Lock patcher's model for owner, if it fits the budget; otherwise release whatever
        owner held and say why. Idempotent for the same model."""
        self._released_now = []
        try:
            return self._lock(patcher, owner, policy, headroom_bytes)
        finally:
            self._released_now = None

    def _lock(self, patcher, owner, policy, headroom_bytes) -> LockOutcome:
        base = getattr(patcher, "model", None)
        device = getattr(patcher, "load_device", None)
        if base is None or device is None or not callable(getattr(patcher, "model_size", None)):
            self.registry.release_owner(owner, "its node received something that is not a model")
            return LockOutcome(False, None, (
                f"not locked: the model input is a {type(patcher).__name__}, not a ComfyUI model patcher "
                "(no .model / .load_device / .model_size); connect a MODEL output such as a loader's"),
                released=self._take_released())
        dynamic = self.comfy.is_dynamic_patcher(patcher)
        weight_bytes = int(patcher.model_size())
        others = sum(lock.weight_bytes for lock in self.registry.locks()
                     if lock.base is not base and lock.owners != {owner} and str(lock.device) == str(device))
        check = budget.check(weight_bytes=weight_bytes, reserve_bytes=self.comfy.inference_reserve(),
                             headroom_bytes=int(headroom_bytes), other_locked_bytes=others,
                             total_bytes=self.comfy.total_memory(device), device=str(device))
        label = type(base).__name__
        if not check.fits:
            self.registry.release_owner(owner, "its node's budget check failed")
            message = f"{label}: {check.refusal()}"
            log.warning("residency: %s", message)
            self._event(message)
            return LockOutcome(False, None, message, check, released=self._take_released())
        existing = self.registry.find(base)
        identity = self.comfy.model_identity(patcher)
        lock = self.registry.acquire(base, owner, label=label, device=device, dynamic=dynamic,
                                     weight_bytes=weight_bytes, policy=policy, headroom_bytes=headroom_bytes,
                                     moved_reason=LOADER_RAN_AGAIN)
        if existing is not lock:  # a new lock: what this node held before says why it will load
            lock.identity = identity
            for cause in self.history.causes_for(owner, base, identity, self.comfy.cache_mode()):
                lock.reasons.add(cause)
        self.history.remember(owner, lock.base_ref, identity)
        self._install_hooks()
        if dynamic:
            if lock.evidence.signatures is None:  # baseline: only copies from now on count
                lock.evidence.signatures = signature_snapshot(base.named_modules())[0]
            self.dynamic.protect(lock)
        verb = "still locked" if existing is lock else "locked"
        message = f"{verb}: {lock.describe()}; budget {check.arithmetic()}"
        if existing is not lock:
            log.info("residency: %s", message)
            self._event(message)
        return LockOutcome(True, lock, message, check, released=self._take_released())

    def release_owner(self, owner: str, reason: str = DISABLED) -> ResidencyLock | None:
        return self.registry.release_owner(owner, reason)

    def release_all(self, reason: str = "all residency locks released") -> int:
        return self.registry.release_all(reason)

    # ----------------------------------------------------------- used by the wrappers

    def run_id(self) -> str:
        """The queue run of the node running now (evidence key)."""
        try:
            prompt_id = self.comfy.executing_prompt_id()
        except Exception:  # noqa: BLE001 - evidence then goes to "outside a queue run"
            prompt_id = None
        if prompt_id:
            self.last_run_id = prompt_id
            return prompt_id
        return OUTSIDE_RUN

    def protecting(self, base) -> ResidencyLock | None:
        lock = self.registry.find(base)
        return lock if lock is not None and not lock.yielding else None

    def protected_loaded_models(self, device) -> list:
        """ComfyUI's LoadedModel entries (on device, or anywhere if None) of protected models."""
        protected = []
        for loaded in self.comfy.current_loaded_models():
            patcher = loaded.model
            if patcher is None or self.protecting(getattr(patcher, "model", None)) is None:
                continue
            if device is None or loaded.device == device:
                protected.append(loaded)
        return protected

    def note_kept(self, loaded_models) -> None:
        run_id = self.run_id()
        for loaded in loaded_models:
            lock = self.registry.find(getattr(loaded.model, "model", None))
            if lock is not None:
                lock.evidence.run(run_id).free_memory_kept += 1

    def note_refused(self, lock: ResidencyLock, what: str) -> None:
        lock.evidence.run(self.run_id()).unload_refusals += 1
        log.debug("residency: %s refused for locked %s (0 bytes freed, entry kept)", what, lock.label)

    def before_locked_load(self, lock: ResidencyLock, patcher, forced: bool = False) -> None:
        """Just before ComfyUI loads a locked model: note what this load will do that we can see
        (re-patch the weights, top up a partial load). Once per load call (never per sampling
        step): a few attribute reads and, when there is something to note, one small record."""
        base = getattr(patcher, "model", None)
        state = self.comfy.patch_state(patcher)
        current = self.comfy.weights_patch_id(base)
        noticed = None
        if state is not None and current is not None and current is not comfy_memory.NOT_RECORDED \
                and (current != state.uuid or forced):
            # ComfyUI's own test (partially_load): the weights carry another patch set, or are forced
            before = lock.reasons.patch_state
            noticed = causes.patch_change(before if before is not None and before.uuid == current else None,
                                          state, forced=forced and current == state.uuid)
        elif not lock.dynamic and getattr(base, "model_lowvram", False):
            loaded = int(getattr(base, "model_loaded_weight_memory", 0) or 0)
            if 0 < loaded < lock.weight_bytes:
                noticed = causes.partial_top_up(loaded, lock.weight_bytes)
        lock.reasons.at_load_call(noticed, state)

    def after_locked_load(self, lock: ResidencyLock, patcher, run: RunEvidence, seconds: float,
                          bytes_moved: int) -> None:
        try:
            run.loaded_after = int(patcher.loaded_size())
        except Exception:  # noqa: BLE001 - unknown rather than wrong
            run.loaded_after = None
        run.last_load_unix = time.time()
        if lock.dynamic:  # its reloads are the VBAR copies, counted after the node (after_limits_reset)
            self._publish(lock)
            lock.evidence.touched = True
            self.dynamic.protect(lock)
            return
        reload = None
        if bytes_moved > 0 or lock.reasons.repatch_noticed:
            reload = lock.reasons.explain(bytes_moved, lock.device, run.last_load_unix)
            lock.evidence.note_reload(run, reload, seconds)
        else:
            lock.reasons.nothing_moved()
        self._publish(lock)
        log.info("residency: locked %s, %s: load call %s, %s moved onto %s; %s of %s loaded%s",
                 lock.describe(), "run " + run.run_id[:8] if run.run_id != OUTSIDE_RUN else OUTSIDE_RUN,
                 fmt_ms(seconds), fmt_bytes(bytes_moved), lock.device, fmt_bytes(run.loaded_after),
                 fmt_bytes(lock.weight_bytes), _why(reload))

    def after_limits_reset(self) -> None:
        """After ComfyUI cleared every VBAR limit (once per node): put ours back and take the
        dynamic evidence sample for models that ran in that node."""
        locks = [lock for lock in self.registry.locks() if lock.dynamic]
        self.dynamic.reapply(lock for lock in locks if not lock.yielding)
        for lock in locks:
            if not lock.evidence.touched or lock.base is None:
                continue
            lock.evidence.touched = False
            signatures, sizes = signature_snapshot(lock.base.named_modules())
            moved = recopied_bytes(lock.evidence.signatures, signatures, sizes)
            lock.evidence.signatures = signatures
            run = lock.evidence.run(self.last_run_id)
            run.bytes_recopied += moved
            reload = None
            if moved or lock.reasons.repatch_noticed:
                reload = lock.reasons.explain(moved, lock.device, time.time())
                lock.evidence.note_reload(run, reload, 0.0)
            else:
                lock.reasons.nothing_moved()
            self._publish(lock)
            locked, resident, staged = self.dynamic.resident(lock)
            log.info("residency: locked %s, %s; VBAR %s resident of %s staged, %s of it under the limit%s",
                     lock.describe(), run.summary(True), fmt_bytes(resident), fmt_bytes(staged),
                     fmt_bytes(locked), _why(reload))

    def locked_vbar_bytes(self, device) -> int:
        return self.dynamic.locked_resident_bytes(self.registry.locks(), device)

    def apply_unload_policy(self, caller_names, exception) -> list[ResidencyLock]:
        """Decide, per lock, what an unload_all_models() call does to it; returns the locks
        stepping aside for this call (end_step_aside puts them back)."""
        reason = classify_unload(caller_names, exception, self.comfy.is_oom)
        stepped = []
        for lock in self.registry.locks():
            action = action_for(lock.policy, reason, lock.ooms_survived)
            if action is Action.STEP_ASIDE:
                lock.yielding = True
                if self._loaded_now(lock):  # an unloaded model is not unloaded by it: nothing to explain
                    lock.reasons.add(causes.explicit_free(lock.policy.value))
                if lock.dynamic:
                    self.dynamic.unprotect(lock)
                stepped.append(lock)
                self._say(f"{lock.label} steps aside for {reason.value} (policy {lock.policy.value}): it is "
                          "unloaded now and held again once ComfyUI reloads it")
            elif action is Action.RELEASE:
                if self._loaded_now(lock):  # only OOM recovery releases
                    lock.reasons.add(causes.oom_recovery(lock.policy.value))
                self.registry.release(lock, f"released for {reason.value} (policy {lock.policy.value}), "
                                            "so ComfyUI can recover; run its node again (toggle "
                                            "enable_pinning) to lock it again")
            elif reason is UnloadReason.OOM:
                lock.ooms_survived += 1
                self._say(f"{lock.label} held through {reason.value} (policy {lock.policy.value}); "
                          "another OOM recovery releases it", warning=True)
            elif reason is UnloadReason.END_OF_PROMPT:
                self._say(f"{lock.label} held through {reason.value}", debug=True)
            else:
                self._say(f"{lock.label} held through {reason.value} (policy {lock.policy.value})")
        return stepped

    def end_step_aside(self, stepped: list[ResidencyLock]) -> None:
        for lock in stepped:
            lock.yielding = False
            if lock.dynamic and self.registry.find(lock.base) is lock:
                self.dynamic.protect(lock)

    # -------------------------------------------------------------------- internals

    def _loaded_now(self, lock: ResidencyLock) -> bool:
        """Whether ComfyUI counts any of the locked model as loaded (classic bytes, dynamic
        force-loaded bytes or resident VBAR pages)."""
        base = lock.base
        if base is None:
            return False
        if int(getattr(base, "model_loaded_weight_memory", 0) or 0) > 0:
            return True
        return lock.dynamic and self.dynamic.resident(lock)[1] > 0

    def _install_hooks(self) -> None:
        if not self.comfy_hooks:
            specs = dynamic_hooks.hook_specs(self, self.vbar_module) if self.vbar_module is not None else []
        else:
            specs = classic.hook_specs(self)
            if self.vbar_module is not None or self.dynamic.port.enabled() or any(
                    lock.dynamic for lock in self.registry.locks()):
                specs += dynamic_hooks.hook_specs(self, self.vbar_module)
        for owner, name, make in specs:
            self.hooks.install(owner, name, make)

    def _uninstall_hooks(self) -> None:
        left = self.hooks.uninstall_all()
        if left:
            self._say(f"another pack wrapped {', '.join(left)} after us; our wrappers stay in its chain, "
                      "inert while nothing is locked", debug=True)

    def _on_removed(self, lock: ResidencyLock, reason: str) -> None:
        # Its nodes remember what it had not explained yet, for a later lock of theirs.
        self.history.lock_removed(lock.base_ref, lock.reasons.pending, collected=reason == COLLECTED)
        if lock.dynamic and lock.base is not None:
            try:
                self.dynamic.unprotect(lock)
            except Exception as exc:  # noqa: BLE001 - never let a release fail ComfyUI's call
                log.error("residency: could not clear the VBAR limit of %s: %s", lock.label, exc)
        self._say(f"{lock.label} unlocked: {reason}", warning=UnloadReason.OOM.value in reason)
        if self._released_now is not None:
            self._released_now.append((lock.label, reason))
        if not self.registry:
            self._uninstall_hooks()

    def _take_released(self) -> list:
        return list(self._released_now or [])

    def _say(self, text: str, *, warning: bool = False, debug: bool = False) -> None:
        self._event(text)
        if warning:
            log.warning("residency: %s", text)
        elif debug:
            log.debug("residency: %s", text)
        else:
            log.info("residency: %s", text)

    def _publish(self, lock: ResidencyLock) -> None:
        """Tell the publisher (the web UI, when a server runs) about a lock's new evidence."""
        if self.publisher is None:
            return
        try:
            from .report import lock_state
            self.publisher(lock_state(self, lock))
        except Exception as exc:  # noqa: BLE001 - a UI message must never fail a load
            log.debug("residency: could not publish: %s", exc)

    def _event(self, text: str) -> None:
        self.events.append((time.time(), text))


def _why(reload: Reload | None) -> str:
    """The log line's tail: why this load moved bytes."""
    if reload is None:
        return ""
    return f"; {'loaded' if reload.is_first_load else 'reloaded'} because: {reload.detail}"
