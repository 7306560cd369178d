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

What is not done (and cannot be tested without a GPU here): a consumer that reads a view on a
side stream and frees it while its reads are still queued gives the storage back to torch's
caching allocator early, because ``record_stream`` has no effect on tensors built by
``from_dlpack``; the pack's own nodes read on ComfyUI's one stream, where this cannot happen.
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


def wait_ready(data_ptr: int, stream) -> None:
    """Make a consumer's stream (a DLPack ``stream`` argument: an int handle or a torch stream)
    wait until the stored tensor at ``data_ptr`` is complete."""
    if stream is None:
        return
    with _lock:
        event = _ready.get(data_ptr)
    if event is None:
        return
    if isinstance(stream, int):
        if stream in (0, -1):  # DLPack: -1 = no synchronisation, 0 = the legacy default stream
            if stream == 0:
                event.synchronize()
            return
        stream = torch.cuda.ExternalStream(stream)
    stream.wait_event(event)


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
