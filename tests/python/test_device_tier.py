"""The device tier's torch side (zc_engine.device) where it can run without a GPU: the private
hold, the host copy, the consumer wait, and the no-leak ordering of a by-reference put. The CUDA
paths (events, pinned copies on a side stream, two devices) are measured by tools/gpu/run_all.py
on a GPU; none was available for these tests."""

from __future__ import annotations

import gc

import pytest
import torch

from zc_engine import LatentStore, device


def storage_ref(tensor: torch.Tensor):
    """A weak reference to a tensor's storage (torch's own), which expires when the storage is freed."""
    return tensor.untyped_storage()._weak_ref()


def test_hold_is_a_private_clone_unless_the_caller_promises_no_writer():
    original = torch.arange(6.0)
    held = device.hold(original)
    original.add_(100)
    assert held.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    assert device.hold(original, clone=False).data_ptr() == original.data_ptr()


def test_host_copy_on_the_cpu_is_a_plain_copy_and_waits_are_no_ops_without_an_event():
    x = torch.randn(3, 4)
    copy = device.host_copy(x)
    assert torch.equal(copy, x) and copy.data_ptr() != x.data_ptr()
    device.wait_ready(x.data_ptr(), None)
    device.wait_ready(12345, 7)  # no event recorded at that address: nothing to wait for
    device.give_back(copy)  # not pinned: not kept


@pytest.mark.parametrize("what", ["host_copy", "describe the host copy"])
def test_a_failing_put_by_reference_leaks_nothing(monkeypatch, what):
    from zc_engine import dlpack

    def broken(*args, **kwargs):
        raise RuntimeError("copy failed")

    if what == "host_copy":
        monkeypatch.setattr(device, "host_copy", broken)
    else:  # the step right before the engine call: must come before the capsule is consumed
        monkeypatch.setattr(dlpack, "borrowed_dltensor", broken)
    x = torch.randn(64)
    storage = storage_ref(x)
    with LatentStore() as store:
        with pytest.raises(RuntimeError, match="copy failed"):
            store.put_by_reference("t", {"latent_tensor": x}, host_copy=True)
        assert store.stats()["slots"] == 0
        del x
        gc.collect()
        assert torch.UntypedStorage._expired(storage)  # no consumed capsule is left holding it


def test_by_reference_put_holds_the_storage_until_the_slot_goes():
    x = torch.randn(64)
    storage = storage_ref(x)
    with LatentStore() as store:
        store.put_by_reference("t", {"latent_tensor": x}, host_copy=True)
        expected = x.clone()
        del x
        gc.collect()
        assert not torch.UntypedStorage._expired(storage)  # the store holds it
        shot = store.get("t", verify=True)
        assert torch.equal(shot.tensors["latent_tensor"], expected)
        del shot
        store.drop("t")
        gc.collect()
        assert torch.UntypedStorage._expired(storage)  # the deleter ran exactly when the slot went
