"""The device tier's torch side: what the C engine cannot do for tensors it holds by reference.

The engine never touches device memory (it links no CUDA): a device tensor enters the store
as a DLPack reference, with a host copy when it must be digested or spilled. What makes that
correct is done here, with torch:

- **A private clone** (``hold``): the caller's tensor is cloned on its device, on its current
  stream, so no later in-place write by the caller (or by a node downstream of the Store,
  which passes the original on) can change what was stored; the host copy is made from that
  clone, so the digest covers the bytes the store hands out.
- **The ready event**: recorded on the producing stream after the clone; a consumer that asks
  the store for the tensor on another stream (DLPack's ``__dlpack__(stream=...)``) waits on it
  first (``wait_ready``), so it never reads before the clone is complete.
- **The right device**: DLPack export of a tensor on cuda:1 while cuda:0 is current raises in
  torch; every export here runs under ``torch.cuda.device(tensor.device)``.
- **The host copy** (``host_copy``): into a pinned buffer from a small pool, ``non_blocking``
  on a side stream that waits only for the clone's event (not for everything queued on the
  device); the caller waits for that copy's event before the engine copies and digests it.
- **The memory outlives the consumer's reads**: a consumer that reads a stored tensor on its
  own stream and then lets go (or the slot is dropped) while those reads are still queued
  would give the block back to torch's caching allocator too early, and ``record_stream`` does
  nothing on the tensor ``from_dlpack`` built for it. So the stream is recorded on the held
  clone itself (``dlpack.kept_tensor``: the engine's reference keeps that torch tensor
  reachable until its deleter runs): the allocator then reuses the block only after that
  stream has passed every read queued before the free.

The CUDA paths cannot run without a GPU: bench/gpu/device_tier.py checks them on one, and the
CPU tests drive their stream choices with fakes of torch's CUDA streams.
"""

from __future__ import annotations

import contextlib
import threading
from collections import OrderedDict

import torch

EVENTS_KEPT = 4096  # ready events by device address; a stale one only makes a wait instant
PINNED_KEPT = 4  # pinned host buffers kept for reuse, by size

_lock = threading.Lock()
_ready: "OrderedDict[int, torch.cuda.Event]" = OrderedDict()
_pinned: "OrderedDict[tuple, torch.Tensor]" = OrderedDict()
_copy_streams: dict[int, object] = {}


def is_cuda(tensor: torch.Tensor) -> bool:
    return tensor.device.type == "cuda"


def on_device(tensor: torch.Tensor):
    """A context that makes tensor's device current (CUDA), so DLPack export works for any GPU."""
    if is_cuda(tensor):
        return torch.cuda.device(tensor.device)
    return contextlib.nullcontext()


def hold(tensor: torch.Tensor, *, clone: bool = True) -> torch.Tensor:
    """The tensor the store keeps: a private clone on the tensor's device (unless the caller
    promises no writer), with its ready event recorded on the producing stream."""
    held = tensor.detach().clone() if clone else tensor.detach()
    if is_cuda(held):
        with torch.cuda.device(held.device):
            event = torch.cuda.Event()
            event.record(torch.cuda.current_stream(held.device))
        with _lock:
            _ready[held.data_ptr()] = event
            _ready.move_to_end(held.data_ptr())
            while len(_ready) > EVENTS_KEPT:
                _ready.popitem(last=False)
    return held


def consumer_stream(stream, device_index: int):
    """The torch stream that a DLPack ``stream`` argument names on a CUDA device, or None for
    -1 (the consumer synchronises itself). None and 1 are the legacy default stream, 2 the
    per-thread one, another int a raw stream handle; a torch stream object passes through."""
    if stream is None or stream == 1:
        return torch.cuda.default_stream(device_index)
    if stream == -1:
        return None
    if isinstance(stream, int):
        return torch.cuda.ExternalStream(stream, device=device_index)
    return stream


def wait_ready(data_ptr: int, stream, held: torch.Tensor | None = None) -> None:
    """Make a consumer's stream (a DLPack ``stream`` argument: an int handle or a torch stream)
    wait until the stored tensor at ``data_ptr`` is complete, and record that stream on the held
    clone (``held``) so its memory is not reused before the stream's reads are done."""
    with _lock:
        event = _ready.get(data_ptr)
    if stream == 0:  # DLPack forbids 0 (ambiguous): wait on the host, record nothing
        if event is not None:
            event.synchronize()
        return
    on_cuda = held is not None and is_cuda(held)
    if event is None and not on_cuda:
        return  # nothing to wait for, nothing to record
    index = held.device.index if on_cuda and held.device.index is not None else torch.cuda.current_device()
    target = consumer_stream(stream, index)
    if target is None:
        return
    if event is not None:
        target.wait_event(event)
    if on_cuda:
        held.record_stream(target)


def _pinned_buffer(like: torch.Tensor) -> torch.Tensor:
    key = (tuple(like.shape), like.dtype)
    with _lock:
        buffer = _pinned.pop(key, None)
    if buffer is None:
        buffer = torch.empty(like.shape, dtype=like.dtype, pin_memory=True)
    return buffer


def give_back(buffer: torch.Tensor) -> None:
    """Return a host copy's pinned buffer to the pool once the engine has copied it."""
    if not buffer.is_pinned():
        return
    with _lock:
        _pinned[(tuple(buffer.shape), buffer.dtype)] = buffer
        while len(_pinned) > PINNED_KEPT:
            _pinned.popitem(last=False)


def host_copy(held: torch.Tensor) -> torch.Tensor:
    """A host copy of a held device tensor, complete when this returns: pinned, copied
    non_blocking on a side stream that waits only for the clone (CUDA); ``.to("cpu")`` elsewhere."""
    if not is_cuda(held):
        return held.detach().to("cpu", copy=True)
    with torch.cuda.device(held.device):
        index = held.device.index if held.device.index is not None else torch.cuda.current_device()
        stream = _copy_streams.get(index)
        if stream is None:
            stream = _copy_streams[index] = torch.cuda.Stream(held.device)
        with _lock:
            ready = _ready.get(held.data_ptr())
        buffer = _pinned_buffer(held)
        if ready is not None:
            stream.wait_event(ready)
        else:
            stream.wait_stream(torch.cuda.current_stream(held.device))
        with torch.cuda.stream(stream):
            buffer.copy_(held, non_blocking=True)
            done = torch.cuda.Event()
            done.record(stream)
        done.synchronize()
    return buffer
