"""Which causes explain a reload of a locked model.

A reload is a load of the locked model that moved bytes onto its device (classic:
ComfyUI's loaded-weight count grew; dynamic VRAM: weights were copied into VBAR
pages again) or re-patched its weights. Its causes come from:

- what the load-call wrapper noticed just before ComfyUI loaded: the weights carry
  another patch set (LoRA/patch or compute-dtype change), a partially loaded model
  being topped up, or this being the lock's first load (which is not a reload);
- pending events that made the lock let go of a loaded model: an explicit free it
  stepped aside for, an OOM recovery that released it, ComfyUI's cache dropping the
  model object, the node receiving another model (dtype change, other file). They
  wait for the next load that moves bytes (or re-patches), and explain it;
- nothing: bytes moved and none of the above explains it. That is said as such.

A load call that moves nothing (and re-patches nothing) explains nothing: what it
noticed is dropped, pending events keep waiting. State is bounded: PENDING_KEPT
causes per lock, and one record per node for the OWNERS_KEPT nodes seen last.
"""

from __future__ import annotations

import collections
import threading
import weakref
from dataclasses import dataclass, field

from .causes import FIRST_LOAD, CacheMode, Cause, CauseKind, ModelIdentity, PatchState, model_change, unseen

PENDING_KEPT = 4
NOTICED_KEPT = 3
OWNERS_KEPT = 64
REPATCH_KINDS = (CauseKind.PATCH_CHANGE, CauseKind.DTYPE_CHANGE)  # noticed at a load call: weights re-patched


@dataclass(frozen=True)
class Reload:
    """One load that moved bytes (or re-patched), with its causes in the order they happened."""
    causes: tuple[Cause, ...]
    moved_bytes: int
    unix: float

    @property
    def short(self) -> str:
        return " + ".join(cause.short for cause in self.causes)

    @property
    def detail(self) -> str:
        return "; then ".join(cause.detail for cause in self.causes)

    @property
    def kinds(self) -> list[str]:
        return [cause.kind.value for cause in self.causes]

    @property
    def is_first_load(self) -> bool:
        return self.causes == (FIRST_LOAD,)


class LockReasons:
    """Per lock: pending causes, what the current load call noticed, the last reload."""

    def __init__(self):
        self.pending: collections.deque[Cause] = collections.deque(maxlen=PENDING_KEPT)
        self.noticed: list[Cause] = []
        self.first_load = True
        self.patch_state: PatchState | None = None  # the patch set last loaded through this lock
        self.repatch_noticed = False
        self.last: Reload | None = None

    def add(self, cause: Cause) -> None:
        """An event that made the lock let go of the model (explains the next reload)."""
        if not self.pending or self.pending[-1] != cause:
            self.pending.append(cause)

    def at_load_call(self, noticed: Cause | None, patch_state: PatchState | None) -> None:
        """Just before ComfyUI loads the model: what the wrapper saw, and the patch set now loaded."""
        if noticed is not None:
            self.noticed.append(noticed)
            self.repatch_noticed = self.repatch_noticed or noticed.kind in REPATCH_KINDS
        if self.first_load:
            self.noticed.append(FIRST_LOAD)
            self.first_load = False
        del self.noticed[:-NOTICED_KEPT]
        if patch_state is not None:
            self.patch_state = patch_state

    def explain(self, moved_bytes: int, device, unix: float) -> Reload:
        """The causes of a load that moved moved_bytes (or re-patched); clears what it used."""
        causes = list(self.pending) + [cause for cause in self.noticed if cause is not FIRST_LOAD]
        if not causes:
            causes = [FIRST_LOAD] if FIRST_LOAD in self.noticed else [unseen(moved_bytes, device)]
        self.pending.clear()
        self.nothing_moved()
        self.last = Reload(tuple(causes), int(moved_bytes), unix)
        return self.last

    def nothing_moved(self) -> None:
        """The load moved nothing and re-patched nothing: what it noticed explains nothing."""
        self.noticed.clear()
        self.repatch_noticed = False


@dataclass
class OwnerRecord:
    base_ref: weakref.ref  # the lock's own weak reference to the model (compared with `is`)
    identity: ModelIdentity
    pending: list[Cause] = field(default_factory=list)  # left on the lock when it was removed
    collected: bool = False  # ComfyUI dropped that model object


class OwnerHistory:
    """Per node: the model it last locked, so a new lock can say why it holds a new model."""

    def __init__(self, kept: int = OWNERS_KEPT):
        self.kept = kept
        self._records: collections.OrderedDict[str, OwnerRecord] = collections.OrderedDict()
        # lock_removed also runs from the registry's weakref callback, i.e. inside whatever
        # garbage collection frees the model, possibly on this thread while it holds the lock.
        self._mutex = threading.RLock()

    def __len__(self) -> int:
        return len(self._records)

    def clear(self) -> None:
        with self._mutex:
            self._records.clear()

    def causes_for(self, owner: str, base, identity: ModelIdentity, cache: CacheMode) -> list[Cause]:
        """The causes a new lock of base for owner starts with (explaining its first reload)."""
        with self._mutex:
            record = self._records.get(owner)
        if record is None:
            return []
        if record.base_ref() is base:  # the same model locked again (after an OOM release, say)
            return list(record.pending)
        # A dead model's pending events led to the new one (e.g. an explicit free, then the
        # cache dropped it); a live one's are about a model this node no longer uses.
        causes = list(record.pending) if record.collected else []
        causes.append(model_change(record.identity, identity, collected=record.collected, cache=cache))
        return causes[-PENDING_KEPT:]

    def remember(self, owner: str, base_ref: weakref.ref, identity: ModelIdentity) -> None:
        with self._mutex:
            self._records[owner] = OwnerRecord(base_ref, identity)
            self._records.move_to_end(owner)
            while len(self._records) > self.kept:
                self._records.popitem(last=False)

    def lock_removed(self, base_ref: weakref.ref, pending, *, collected: bool) -> None:
        """A lock went: its nodes' records keep its unexplained causes (and whether ComfyUI
        dropped the model object)."""
        with self._mutex:
            records = list(self._records.values())
        for record in records:
            if record.base_ref is base_ref:
                record.pending = list(pending)[-PENDING_KEPT:]
                record.collected = record.collected or collected
