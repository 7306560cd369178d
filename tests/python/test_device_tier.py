"""The device tier's torch side (zc_engine.device) where it can run without a GPU: the private
hold, the host copy, the consumer wait, and the no-leak ordering of a by-reference put. The CUDA
paths (events, pinned copies on a side stream, two devices) are measured by bench/gpu/run_all.py
on a GPU; none was available for these tests."""

from __future__ import annotations

import contextlib
import gc

import pytest
import torch

from zc_pack.zc_engine import LatentStore, device


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
    from zc_pack.zc_engine import dlpack

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


class FakeStream:
    """Stands in for a torch.cuda stream (no GPU here): records what it was asked to wait on."""

    def __init__(self, name):
        self.name = name
        self.waited = []

    def wait_event(self, event):
        self.waited.append(event)


class FakeEvent:
    synchronized = 0

    def synchronize(self):
        self.synchronized += 1


class FakeCudaHeld:
    """Stands in for the held clone of a CUDA tensor: records the streams recorded on it."""

    def __init__(self):
        self.device = torch.device("cuda", 0)
        self.recorded = []

    def record_stream(self, stream):
        self.recorded.append(stream.name)


@pytest.fixture
def fake_cuda_streams(monkeypatch):
    default = FakeStream("legacy default")
    made = {}

    def external(handle, device=None):
        made[handle] = FakeStream(f"handle {handle} on {device}")
        return made[handle]

    monkeypatch.setattr(torch.cuda, "default_stream", lambda index=None: default)
    monkeypatch.setattr(torch.cuda, "ExternalStream", external)
    return default, made


def wait_with_an_event(stream, held) -> FakeEvent:
    """wait_ready for a stored tensor whose ready event is a fake; returns the event."""
    event, address = FakeEvent(), 0xDEAD00
    device._ready[address] = event
    try:
        device.wait_ready(address, stream, held)
    finally:
        device._ready.pop(address)
    return event


@pytest.mark.parametrize("stream, named", [(None, "legacy default"), (1, "legacy default"),
                                           (2, "handle 2 on 0"), (0x7F00, "handle 32512 on 0")])
def test_a_consumer_stream_waits_for_the_clone_and_is_recorded_on_it_with_fake_cuda_streams(
        fake_cuda_streams, stream, named):
    default, made = fake_cuda_streams
    held = FakeCudaHeld()
    event = wait_with_an_event(stream, held)
    target = default if named == "legacy default" else made[stream]
    assert target.name == named and target.waited == [event]
    assert held.recorded == [named]  # the allocator will not reuse the block before this stream is done


def test_a_torch_stream_object_is_used_as_it_is_and_recorded_even_without_an_event_with_fake_cuda_streams(
        fake_cuda_streams):
    held, consumer = FakeCudaHeld(), FakeStream("consumer")
    device.wait_ready(0xBEEF00, consumer, held)  # no ready event at that address (a stale entry went)
    assert consumer.waited == [] and held.recorded == ["consumer"]


@pytest.mark.parametrize("stream", [-1, 0])
def test_no_synchronisation_and_the_forbidden_zero_record_nothing_with_fake_cuda_streams(
        fake_cuda_streams, stream):
    held = FakeCudaHeld()
    event = wait_with_an_event(stream, held)
    assert held.recorded == []
    assert event.synchronized == (1 if stream == 0 else 0)  # 0 is ambiguous: wait on the host


def test_get_for_a_named_stream_exports_under_that_stream_with_a_fake_cuda_stream_context(monkeypatch):
    """torch.from_dlpack hands the current stream to the store's export: ``get(stream=s)`` makes s
    current for the export only (here a fake of torch.cuda.stream records that it did)."""
    entered = []

    @contextlib.contextmanager
    def fake_stream_context(stream):
        entered.append(stream)
        yield

    monkeypatch.setattr(torch.cuda, "stream", fake_stream_context)
    consumer = FakeStream("consumer")
    with LatentStore() as store:
        store.put("t", {"latent_tensor": torch.arange(4.0)})
        shot = store.get("t", stream=consumer)
        assert entered == [consumer] and shot.tensors["latent_tensor"].tolist() == [0.0, 1.0, 2.0, 3.0]
        store.get("t")
        assert entered == [consumer]  # no stream named: no context entered
