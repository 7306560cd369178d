"""The residency registry: identity by the underlying model, weak references, owners."""

from __future__ import annotations

import gc

import pytest

from zc_pack.zc_residency.policy import Policy
from zc_pack.zc_residency.registry import COLLECTED, LockRegistry


class BaseModel:  # stands in for comfy.model_base.BaseModel: any weak-referenceable object
    pass


class Patcher:  # stands in for ModelPatcher: clones share .model
    def __init__(self, model):
        self.model = model


def acquire(registry, base, owner="node:1", **kw):
    return registry.acquire(base, owner, label="WAN21", device="cuda:0", dynamic=False, weight_bytes=100, **kw)


@pytest.fixture
def removed():
    return []


@pytest.fixture
def registry(removed):
    reg = LockRegistry()
    reg.on_removed.append(lambda lock, reason: removed.append((lock.label, reason)))
    return reg


def test_clones_share_the_lock_of_their_base_model(registry):
    base = BaseModel()
    original, lora_clone = Patcher(base), Patcher(base)
    lock = acquire(registry, original.model)
    assert registry.find(lora_clone.model) is lock and not lock.yielding
    assert registry.find(BaseModel()) is None and registry.find(None) is None


def test_acquire_is_idempotent_and_updates_settings(registry):
    base = BaseModel()
    first = acquire(registry, base, policy=Policy.YIELD, headroom_bytes=1)
    second = acquire(registry, base, policy=Policy.SURVIVE_FREE, headroom_bytes=2)
    assert first is second and len(registry) == 1
    assert second.policy is Policy.SURVIVE_FREE and second.headroom_bytes == 2


def test_the_registry_never_keeps_a_model_alive(registry, removed):
    base = BaseModel()
    acquire(registry, base)
    del base
    gc.collect()
    assert not registry and removed == [("WAN21", COLLECTED)]


def test_an_owner_holding_a_new_model_releases_the_old_one(registry, removed):
    old, new = BaseModel(), BaseModel()
    acquire(registry, old, moved_reason="loader ran again")
    acquire(registry, new, moved_reason="loader ran again")
    assert registry.find(old) is None and registry.find(new) is not None
    assert removed == [("WAN21", "loader ran again")]


def test_a_shared_lock_stays_until_its_last_owner_lets_go(registry, removed):
    base = BaseModel()
    acquire(registry, base, owner="node:1")
    acquire(registry, base, owner="node:2")
    assert registry.release_owner("node:1", "off") is None and registry.find(base) is not None
    assert registry.release_owner("node:2", "off").label == "WAN21" and not registry
    assert registry.release_owner("node:3", "off") is None
    assert removed == [("WAN21", "off")]


def test_yielding_lock_is_found_but_not_protected(registry):
    base = BaseModel()
    lock = acquire(registry, base)
    lock.yielding = True
    assert registry.find(base) is lock and lock.yielding


def test_release_and_release_all(registry, removed):
    a, b = BaseModel(), BaseModel()
    lock_a = acquire(registry, a, owner="1")
    acquire(registry, b, owner="2")
    assert registry.release(lock_a, "oom") and not registry.release(lock_a, "again")
    assert registry.release_all("teardown") == 1 and not registry
    assert registry.release_owner("2", "gone") is None  # the owners went with their locks
    assert removed == [("WAN21", "oom"), ("WAN21", "teardown")]
