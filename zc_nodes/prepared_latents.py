"""The next shot's empty latent, filled between shots instead of during the Handoff.

Every hop the Handoff makes the new shot's latent and its noise mask fresh: 19 MB and 1.2 MB
for a Wan 2.1 720p, 81-frame shot, filled with the latent format's "empty" value except for the
tail frames. Filling fresh memory is the largest part of a Handoff on the CPU (its page faults
more than its writes), and it is the same work every hop of a film: the same canvas, the same
fill. So after a Handoff takes one, a background thread prepares the next one of the same
shape and fill while the shot renders (minutes), and the next Handoff takes it ready. The
preparation starts when the Handoff has finished (``deferred``), so it never competes with the
Handoff's own work for the memory bus.

What is handed out is always exactly what ``fresh_latents.filled`` would have made: a tensor of that
shape, dtype and fill that no one else holds (it is popped under the lock, once, and only
ever written by the thread that made it, before it was published). A shape seen for the first
time is filled by the Handoff itself, as before. Only CPU tensors of at least
``MIN_BYTES`` are prepared (smaller ones cost microseconds; device tensors are filled by
the device). The memory is bounded: at most ``MAX_KEPT`` prepared tensors and
``max_bytes`` together (``$ZEROCOPY_PREPARED_MB``, default 512; 0 turns the preparing off),
the least recently asked for go first, and ``release()`` gives them all back when ComfyUI
is short of RAM.

A fill is usually a few values (one per channel), compared by value. Wan I2V's concat image is
a copy of a whole cached latent (the gray padding, 8 MiB at 480p): that fill is a *constant*
(``fresh_latents.filled(..., constant=True)``: its owner never writes it), known by identity, and the
prepared copy's entry keeps a reference to it, so no other tensor can take its identity while
the entry lives (the reference may keep an evicted cache entry alive until the entry goes too).
"""

from __future__ import annotations

import collections
import contextlib
import os
import queue
import threading

import torch

from .. import zc_log as log

MIN_BYTES = 1 << 20
MAX_KEPT = 4
MAX_FILL_VALUES = 4096
"""A fill of more values is prepared only when it is a constant: comparing and copying it on every
request would cost what preparing saves."""
DEFAULT_MAX_MB = 512


def default_max_bytes() -> int:
    env = os.environ.get("ZEROCOPY_PREPARED_MB")
    if env is None or env == "":
        return DEFAULT_MAX_MB << 20
    try:
        mb = int(env)
    except ValueError:
        raise ValueError(f"ZEROCOPY_PREPARED_MB={env!r} is not a whole number of MiB; set it to "
                         f"e.g. {DEFAULT_MAX_MB}, or 0 to fill every new latent in the Handoff") from None
    if mb < 0:
        raise ValueError(f"ZEROCOPY_PREPARED_MB={mb} is negative; use 0 to turn preparing off")
    return mb << 20


def _key(shape: tuple, value: torch.Tensor, constant: bool = False) -> tuple:
    """What makes two requests the same: shape, dtype, and the fill's own shape and values; for a
    constant fill (a whole latent its owner never writes) the fill's identity instead of its
    values (the entry keeps a reference to it, so no other tensor can take that identity)."""
    if constant:
        return (shape, value.dtype, tuple(value.shape), "constant", id(value))
    return (shape, value.dtype, tuple(value.shape), tuple(value.reshape(-1).tolist()))


class PreparedLatents:
    """Fresh filled tensors, made on a background thread and handed out once each."""

    def __init__(self, max_bytes: int | None = None, empty=None):
        self.max_bytes = default_max_bytes() if max_bytes is None else max_bytes
        # how a new tensor is allocated (the node layer passes fresh_latents.empty, which adds the
        # huge-page hint); torch.empty by default
        self._empty = empty or (lambda shape, dtype, device: torch.empty(shape, dtype=dtype, device=device))
        self._lock = threading.Lock()
        # key -> (the prepared tensor, the constant it was made from, or None for a fill of values)
        self._ready: collections.OrderedDict[tuple, tuple[torch.Tensor, object]] = collections.OrderedDict()
        self._jobs: queue.Queue = queue.Queue()
        self._thread: threading.Thread | None = None
        self._deferred: list | None = None  # requests made inside deferred(), not yet queued
        self.served = 0   # requests answered with a prepared tensor
        self.missed = 0   # requests of a preparable size that found none ready

    # -- the alloc hook ----------------------------------------------------
    def __call__(self, shape: tuple, value: torch.Tensor, constant: bool = False) -> torch.Tensor | None:
        """``zc_continuity.fresh_latents.filled``'s source: the prepared tensor for (shape, value), or None.
        ``constant``: the caller promises nobody writes ``value`` (fresh_latents.filled's ``constant``):
        it is known by identity and referenced, not copied."""
        if value.device.type != "cpu" or self.max_bytes <= 0:
            return None
        nbytes = value.element_size() * _numel(shape)
        if nbytes < MIN_BYTES or nbytes > self.max_bytes:
            return None
        if not constant and value.numel() > MAX_FILL_VALUES:
            return None
        key = _key(shape, value, constant)
        with self._lock:
            entry = self._ready.pop(key, None)
            # a constant's entry keeps the tensor it was copied from: found under this identity,
            # it is a copy of this very tensor
            ready = entry[0] if entry is not None and entry[1] is (value if constant else None) else None
            if ready is not None:
                self.served += 1
            else:
                self.missed += 1
        # the one after this, made meanwhile: a fill of a few values is made again from the values
        # in its key (the caller may write its own tensor), a constant is kept by reference
        self._schedule(key, shape, value.detach() if constant else None, value if constant else None)
        return ready

    @contextlib.contextmanager
    def deferred(self):
        """Hold back the preparations asked for inside the block until it ends: the Handoff's own
        copies must not share the memory bus (and the second core) with them."""
        with self._lock:
            outer, self._deferred = self._deferred, (self._deferred if self._deferred is not None else [])
        try:
            yield
        finally:
            with self._lock:
                jobs, self._deferred = self._deferred, outer
            if outer is None:
                for job in jobs:
                    self._queue(*job)

    def _schedule(self, key: tuple, shape: tuple, value: torch.Tensor | None, keep: object) -> None:
        with self._lock:
            if self._deferred is not None:
                self._deferred.append((key, shape, value, keep))
                return
        self._queue(key, shape, value, keep)

    def _queue(self, key: tuple, shape: tuple, value: torch.Tensor | None, keep: object) -> None:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._work, name="zerocopy-prepare",
                                                daemon=True)
                self._thread.start()
        self._jobs.put((key, shape, value, keep))

    def _work(self) -> None:
        while True:
            key, shape, value, keep = self._jobs.get()
            try:
                with self._lock:
                    wanted = key not in self._ready
                if wanted:
                    if value is None:  # a fill of values: (shape, dtype, its shape, its values)
                        value = torch.tensor(key[3], dtype=key[1]).reshape(key[2])
                    out = self._empty(shape, dtype=value.dtype, device=value.device)
                    out.copy_(value.expand(shape))
                    with self._lock:
                        self._ready[key] = (out, keep)
                        self._trim()
            except Exception as exc:  # noqa: BLE001 - out of memory here only costs the next hop time
                log.warning("could not prepare the next latent %s: %s", list(shape), exc)
            finally:
                self._jobs.task_done()

    def _trim(self) -> None:
        """Oldest first, down to the count and byte bounds (lock held)."""
        while self._ready and (len(self._ready) > MAX_KEPT or self._bytes() > self.max_bytes):
            self._ready.popitem(last=False)

    def _bytes(self) -> int:
        return sum(t.numel() * t.element_size() for t, _ in self._ready.values())

    # -- control -----------------------------------------------------------
    def wait(self) -> None:
        """Return when every requested preparation is done (tests, the benchmark's untimed part)."""
        self._jobs.join()

    def release(self) -> int:
        """Drop every prepared tensor; returns the bytes given back."""
        with self._lock:
            freed = self._bytes()
            self._ready.clear()
        return freed


def _numel(shape: tuple) -> int:
    n = 1
    for d in shape:
        n *= int(d)
    return n


_pool: PreparedLatents | None = None
_pool_lock = threading.Lock()


def pool(empty=None) -> PreparedLatents:
    """The process's pool, created on first use (``empty``: its allocator, see PreparedLatents).
    The caller registers it as ``zc_continuity.fresh_latents``' prepared source."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = PreparedLatents(empty=empty)
        return _pool


def release_all() -> int:
    """Give back what the process's pool holds (nothing when it was never used); bytes freed."""
    with _pool_lock:
        current = _pool
    return current.release() if current is not None else 0
