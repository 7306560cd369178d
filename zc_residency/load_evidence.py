"""Per-run load evidence for a locked model: how long ComfyUI spent loading it
and how many bytes it put onto the device in each queue run.

"Zero reload" is shown by these figures, not asserted: a locked model that
stayed resident shows load calls that took microseconds and moved 0 bytes.

What is measured, and where:
  load_calls, load_seconds  LoadedModel.model_load for this model (host wall
                            time of ComfyUI's load call, everything included:
                            unpatching, re-patching, moving weights)
  bytes_loaded              growth of the model's loaded-weight count inside
                            ModelPatcher.load (classic: weights moved onto the
                            load device; dynamic VRAM: the small weights ComfyUI
                            force-loads each time it prepares the model)
  bytes_recopied            dynamic VRAM only: weights whose VBAR signature
                            changed since the last check, i.e. that were copied
                            into VRAM (again) during the run; a weight copied
                            twice between two checks counts once (a lower bound)
  free_memory_kept          free_memory() calls that had this model on the
                            device and were told to keep it
  unload_refusals           partially_unload()/model_unload() calls refused
  reloads                   the loads that moved bytes (or re-patched), each with its
                            causes (reasons.py): why the run reloaded
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field

from .reasons import Reload
from .units import fmt_bytes, fmt_ms

OUTSIDE_RUN = "outside a queue run"
RUNS_KEPT = 16
RELOADS_PER_RUN = 3  # a run normally loads a locked model once; more are counted, the first kept


@dataclass
class RunEvidence:
    run_id: str
    load_calls: int = 0
    load_seconds: float = 0.0
    bytes_loaded: int = 0
    bytes_recopied: int = 0
    free_memory_kept: int = 0
    unload_refusals: int = 0
    loaded_after: int | None = None  # bytes ComfyUI counts as loaded after the last load call
    last_load_unix: float | None = None
    reloads: list[Reload] = field(default_factory=list)
    more_reloads: int = 0  # reloads beyond RELOADS_PER_RUN in this run

    @property
    def bytes_moved(self) -> int:
        return self.bytes_loaded + self.bytes_recopied

    def summary(self, dynamic: bool) -> str:
        run = self.run_id if self.run_id == OUTSIDE_RUN else f"run {self.run_id[:8]}"
        moved = f"{fmt_bytes(self.bytes_loaded)} loaded"
        if dynamic:
            moved += f" + {fmt_bytes(self.bytes_recopied)} copied into VBAR pages"
        calls = f"{self.load_calls} load call{'s' if self.load_calls != 1 else ''}"
        parts = [f"{run}: {calls} ({fmt_ms(self.load_seconds)}), {moved}"]
        if self.free_memory_kept:
            parts.append(f"kept through {self.free_memory_kept} free_memory call"
                         f"{'s' if self.free_memory_kept != 1 else ''}")
        if self.unload_refusals:
            parts.append(f"{self.unload_refusals} unload request{'s' if self.unload_refusals != 1 else ''}"
                         " refused")
        if self.reloads:
            why = "; ".join(reload.short for reload in self.reloads)
            more = f" (+{self.more_reloads} more)" if self.more_reloads else ""
            parts.append(f"{'loaded' if self.reloads[0].is_first_load else 'reloaded'}: {why}{more}")
        return ", ".join(parts)

    def add_reload(self, reload: Reload) -> None:
        if len(self.reloads) < RELOADS_PER_RUN:
            self.reloads.append(reload)
        else:
            self.more_reloads += 1


@dataclass
class LockEvidence:
    runs: OrderedDict[str, RunEvidence] = field(default_factory=OrderedDict)
    signatures: dict | None = None  # dynamic: module name -> VBAR signature bytes at the last check
    touched: bool = False  # dynamic: loaded since the last check
    last_reload: tuple | None = None  # (unix time, seconds, bytes) of the last load call that moved bytes
    last_reload_why: Reload | None = None  # its causes

    def note_reload(self, run: RunEvidence, reload: Reload, seconds: float) -> None:
        """A load that moved bytes (or re-patched), with its causes."""
        run.add_reload(reload)
        self.last_reload = (reload.unix, seconds, reload.moved_bytes)
        self.last_reload_why = reload

    def run(self, run_id: str | None) -> RunEvidence:
        run_id = run_id or OUTSIDE_RUN
        record = self.runs.get(run_id)
        if record is None:
            record = self.runs[run_id] = RunEvidence(run_id)
            while len(self.runs) > RUNS_KEPT:
                self.runs.popitem(last=False)
        return record

    def recent(self, count: int = 5) -> list[RunEvidence]:
        return list(self.runs.values())[-count:]

    def as_dict(self, dynamic: bool) -> dict:
        """JSON-ready: the recent runs and the last reload."""
        runs = [{"run": r.run_id, "load_calls": r.load_calls, "load_s": round(r.load_seconds, 6),
                 "bytes_loaded": r.bytes_loaded, "bytes_copied_into_vbar": r.bytes_recopied if dynamic else None,
                 "free_memory_kept": r.free_memory_kept, "unload_refusals": r.unload_refusals,
                 "loaded_after": r.loaded_after, "reload_reasons": [x.short for x in r.reloads],
                 "reload_causes": [x.kinds for x in r.reloads], "summary": r.summary(dynamic)}
                for r in self.recent(RUNS_KEPT)]
        out = {"runs": runs, "last_reload_unix": None, "last_reload_s": None, "last_reload_bytes": None,
               "last_reload_reason": None, "last_reload_detail": None, "last_reload_causes": None}
        if self.last_reload is not None:
            out["last_reload_unix"], out["last_reload_s"], out["last_reload_bytes"] = self.last_reload
        if self.last_reload_why is not None:
            why = self.last_reload_why
            out.update(last_reload_reason=why.short, last_reload_detail=why.detail,
                       last_reload_causes=why.kinds)
        return out


def signature_snapshot(modules: Iterable[tuple[str, object]]) -> tuple[dict, dict]:
    """(signatures, sizes) of the modules that ComfyUI staged in a VBAR.

    ComfyUI's dynamic loader gives each staged module ``_v = (vbar, address, size)``
    and, after each use, ``_v_signature``: aimdo's per-page serial numbers for the
    range. A page that was evicted and faulted again gets a new serial, so a changed
    signature means the weight was copied into VRAM again."""
    signatures, sizes = {}, {}
    for name, module in modules:
        staged = getattr(module, "__dict__", {}).get("_v")
        if staged is None:
            continue
        signature = module.__dict__.get("_v_signature")
        signatures[name] = None if signature is None else bytes(memoryview(signature))
        try:
            sizes[name] = int(staged[2])
        except (TypeError, IndexError, ValueError):
            sizes[name] = 0
    return signatures, sizes


def recopied_bytes(previous: dict | None, current: dict, sizes: dict) -> int:
    """Bytes of weights whose signature changed from previous to current (a weight
    that has a signature now and had none, or another one, before)."""
    previous = previous or {}
    moved = 0
    for name, signature in current.items():
        if signature is not None and previous.get(name) != signature:
            moved += sizes.get(name, 0)
    return moved
