"""The residency report: the text ZeroCopyVRAMPin returns as its second output."""

from __future__ import annotations

from .policy import DESCRIPTIONS, Policy
from .units import fmt_bytes

HEADER = "ZeroCopyVRAMPin"


def resident_now(service, lock, patcher) -> str:
    """What is loaded right now, by ComfyUI's own count."""
    if lock is None:
        return ""
    if lock.dynamic:
        locked, resident, staged = service.dynamic.resident(lock)
        if not staged:
            return ("resident now: nothing staged yet (dynamic VRAM prepares the model at its first load; "
                    "its watermark limit is applied then)")
        return (f"resident now: {fmt_bytes(resident)} of {fmt_bytes(staged)} staged VBAR bytes in VRAM, "
                f"limit {fmt_bytes(lock.vbar_limit_bytes)} ({fmt_bytes(locked)} of it resident)")
    try:
        loaded = int(patcher.loaded_size())
    except Exception:  # noqa: BLE001 - no figure rather than a wrong one
        return ""
    if loaded <= 0:
        return (f"resident now: not loaded yet ({fmt_bytes(lock.weight_bytes)} to load); the first run that "
                "uses it loads it, and later runs keep it")
    return f"resident now: {fmt_bytes(loaded)} of {fmt_bytes(lock.weight_bytes)} loaded on {lock.device}"


def node_report(service, outcome, patcher, *, enabled: bool, policy: Policy, dynamic_vram: bool,
                allocator=None) -> str:
    lines = []
    lock = outcome.lock if outcome is not None else None
    if not enabled:
        lines.append(f"{HEADER}: OFF (enable_pinning is off); the model is passed through and ComfyUI "
                     "manages it as usual")
    elif outcome is not None and outcome.locked:
        lines.append(f"{HEADER}: LOCKED {lock.describe()}")
    else:
        lines.append(f"{HEADER}: NOT LOCKED; the model is passed through unchanged")
        if outcome is not None and outcome.message:
            lines.append(outcome.message)
    for label, reason in (outcome.released if outcome is not None else []):
        lines.append(f"released {label}: {reason}")
    mode = "on" if dynamic_vram else "off"
    if lock is not None:
        lines.append(f"memory management: dynamic VRAM is {mode} in this process; this model is "
                     f"{'dynamic (VBAR watermark limit)' if lock.dynamic else 'classic (ModelPatcher)'}")
        lines.append(f"policy {policy.value}: {DESCRIPTIONS[policy]}; --disable-smart-memory and other "
                     "packs' unload_all_models() calls are held; a cleared node cache releases it")
        if outcome.check is not None:
            lines.append(f"budget: {outcome.check.arithmetic()}")
        now = resident_now(service, lock, patcher)
        if now:
            lines.append(now)
        runs = lock.evidence.recent(5)
        if runs:
            lines.append("evidence per queue run (oldest first):")
            lines.extend("  " + run.summary(lock.dynamic) for run in runs)
        why = lock.evidence.last_reload_why
        if why is not None:
            lines.append(f"last {'load' if why.is_first_load else 'reload'} "
                         f"({fmt_bytes(why.moved_bytes)} moved): {why.detail}")
        else:
            lines.append("evidence: no run has loaded it since it was locked; the log gets one line per "
                         "load of a locked model (time and bytes moved)")
    else:
        lines.append(f"memory management: dynamic VRAM is {mode} in this process")
    if allocator is not None:
        lines.extend(allocator.lines)
    return "\n".join(lines)


def lock_state(service, lock) -> dict:
    """One lock as plain JSON values (the web UI's badge and the /zerocopy/residency route)."""
    state = {"state": "locked", "resident": None, "model": lock.label, "device": str(lock.device),
             "mode": "dynamic" if lock.dynamic else "classic", "policy": lock.policy.value,
             "owners": sorted(lock.owners), "weight_bytes": lock.weight_bytes,
             "headroom_bytes": lock.headroom_bytes, "stepping_aside": lock.yielding,
             "ooms_survived": lock.ooms_survived}
    if lock.dynamic:
        locked, resident, staged = service.dynamic.resident(lock)
        state.update(vbar_limit_bytes=lock.vbar_limit_bytes, vbar_resident_bytes=resident,
                     vbar_locked_resident_bytes=locked, vbar_staged_bytes=staged,
                     resident=bool(staged) and locked >= min(staged, lock.vbar_limit_bytes or staged))
    else:
        runs = lock.evidence.recent(1)
        loaded = runs[-1].loaded_after if runs else None
        state.update(loaded_bytes=loaded, resident=loaded is not None and loaded >= lock.weight_bytes)
    state.update(lock.evidence.as_dict(lock.dynamic))
    return state


def report(service) -> dict:
    """Every lock of ``service`` (the process's, ``get_service()``), the process's memory-management
    mode and recent lock events, as JSON values. Used by the pack's web API (GET
    /zerocopy/residency), from another thread than ComfyUI's worker: containers are copied
    (list(...)) before they are iterated."""
    from . import comfy_memory
    locks = [lock_state(service, lock) for lock in service.registry.locks()]
    try:
        dynamic = comfy_memory.dynamic_vram_enabled()
    except Exception:  # noqa: BLE001 - unknown, reported as null
        dynamic = None
    out = {"state": "locked" if locks else "not locked", "locks": locks, "dynamic_vram": dynamic,
           "hooks_installed": [hook.label for hook in service.hooks.installed()],
           "events": [{"unix": t, "text": text} for t, text in list(service.events)]}
    if len(locks) == 1:  # the UI's single-lock fields
        for key in ("resident", "last_reload_unix", "last_reload_s", "last_reload_bytes",
                    "last_reload_reason", "last_reload_detail", "last_reload_causes"):
            out[key] = locks[0].get(key)
    return out
