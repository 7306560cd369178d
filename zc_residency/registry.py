"""The registry of residency locks, keyed by the underlying model object.

Identity is ComfyUI's BaseModel (``patcher.model``), not the ModelPatcher: a
LoRA or other patch clone is a new patcher around the same BaseModel, so the
lock covers every clone. A loader that runs again builds a new BaseModel,
which is a different key.

The registry holds the model *weakly*. A strong reference could not save a
reload: once ComfyUI's cache lets go of a model, no node can receive that
object again (its loader builds a new one), so holding it would only keep a
second copy resident. When ComfyUI drops the model, the lock goes with it and
the listeners are told why.

Each lock has owners (the nodes that asked for it, by node id); a node that
receives a different model moves its ownership, and a lock without owners is
released.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field

from .causes import ModelIdentity
from .load_evidence import LockEvidence
from .policy import DEFAULT_POLICY, Policy
from .reasons import LockReasons

COLLECTED = "ComfyUI released the model object (its cache no longer holds it; a loader that runs " \
            "again builds a new one), so its lock is gone too"


@dataclass(eq=False)
class ResidencyLock:
    key: int
    base_ref: weakref.ref
    label: str  # the model's class name, for reports
    device: object  # the patcher's load device
    dynamic: bool  # ModelPatcherDynamic (comfy-aimdo VBAR) rather than classic
    weight_bytes: int
    policy: Policy = DEFAULT_POLICY
    headroom_bytes: int = 0
    owners: set = field(default_factory=set)
    yielding: bool = False  # stepping aside for one explicit free
    ooms_survived: int = 0
    vbar_limit_bytes: int = 0  # dynamic: the watermark limit last applied (0: none yet)
    evidence: LockEvidence = field(default_factory=LockEvidence)
    reasons: LockReasons = field(default_factory=LockReasons)  # why its reloads happened
    identity: ModelIdentity | None = None  # what the loader built (dtype, file), read when locked

    @property
    def base(self):
        return self.base_ref()

    def describe(self) -> str:
        mode = "dynamic VRAM (comfy-aimdo VBAR)" if self.dynamic else "classic memory management"
        return f"{self.label} on {self.device}, {mode}"


Listener = Callable[[ResidencyLock, str], None]


class LockRegistry:
    """Locks by model. Thread-safe; listeners run outside the registry's lock."""

    def __init__(self):
        self._mutex = threading.RLock()
        self._locks: dict[int, ResidencyLock] = {}
        self._owner_key: dict[str, int] = {}
        self.on_added: list[Listener] = []
        self.on_removed: list[Listener] = []

    def __len__(self) -> int:
        return len(self._locks)

    def __bool__(self) -> bool:
        return bool(self._locks)

    def locks(self) -> list[ResidencyLock]:
        with self._mutex:
            return list(self._locks.values())

    def find(self, base) -> ResidencyLock | None:
        """The lock of this BaseModel, or None (also for None and non-models)."""
        if base is None or not self._locks:
            return None
        lock = self._locks.get(id(base))
        if lock is not None and lock.base_ref() is base:
            return lock
        return None

    def acquire(self, base, owner: str, *, label: str, device, dynamic: bool, weight_bytes: int,
                policy: Policy = DEFAULT_POLICY, headroom_bytes: int = 0,
                moved_reason: str = "its node now holds another model") -> ResidencyLock:
        """Lock base for owner (idempotent). An owner holds one lock at a time: if it held
        another model, that lock loses the owner (and is released when no owner is left)."""
        removed: list[tuple[ResidencyLock, str]] = []
        added = None
        with self._mutex:
            old_key = self._owner_key.get(owner)
            if old_key is not None and old_key != id(base):
                removed.extend(self._drop_owner_locked(owner, moved_reason))
            lock = self.find(base)
            if lock is None:
                key = id(base)
                lock = ResidencyLock(key, weakref.ref(base, self._collected_callback(key)), label, device,
                                     dynamic, int(weight_bytes), policy, int(headroom_bytes))
                self._locks[key] = lock
                added = lock
            lock.owners.add(owner)
            lock.policy, lock.headroom_bytes = policy, int(headroom_bytes)
            lock.weight_bytes, lock.device, lock.dynamic = int(weight_bytes), device, dynamic
            self._owner_key[owner] = lock.key
        self._notify(removed)
        if added is not None:
            for listener in list(self.on_added):
                listener(added, "locked")
        return lock

    def release_owner(self, owner: str, reason: str) -> ResidencyLock | None:
        """Drop owner's claim; returns the lock if that released it."""
        with self._mutex:
            removed = self._drop_owner_locked(owner, reason)
        self._notify(removed)
        return removed[0][0] if removed else None

    def release(self, lock: ResidencyLock, reason: str) -> bool:
        """Release lock whoever owns it; False if it was not registered."""
        with self._mutex:
            if self._locks.get(lock.key) is not lock:
                return False
            self._remove_locked(lock)
        self._notify([(lock, reason)])
        return True

    def release_all(self, reason: str) -> int:
        with self._mutex:
            removed = [(lock, reason) for lock in list(self._locks.values())]
            for lock, _ in removed:
                self._remove_locked(lock)
        self._notify(removed)
        return len(removed)

    # -- internals (called with _mutex held) --

    def _drop_owner_locked(self, owner: str, reason: str) -> list[tuple[ResidencyLock, str]]:
        key = self._owner_key.pop(owner, None)
        lock = self._locks.get(key) if key is not None else None
        if lock is None:
            return []
        lock.owners.discard(owner)
        if lock.owners:
            return []
        self._remove_locked(lock)
        return [(lock, reason)]

    def _remove_locked(self, lock: ResidencyLock) -> None:
        self._locks.pop(lock.key, None)
        for owner in [o for o, k in self._owner_key.items() if k == lock.key]:
            del self._owner_key[owner]

    def _collected_callback(self, key: int):
        def collected(ref):
            with self._mutex:
                lock = self._locks.get(key)
                if lock is None or lock.base_ref is not ref:
                    return
                self._remove_locked(lock)
            self._notify([(lock, COLLECTED)])
        return collected

    def _notify(self, removed: list[tuple[ResidencyLock, str]]) -> None:
        for lock, reason in removed:
            for listener in list(self.on_removed):
                listener(lock, reason)
