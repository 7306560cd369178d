#!/usr/bin/env python3
"""The store's device tier on a real GPU: CUDA tensors held by reference, measured and checked.

    python bench/gpu/device_tier.py --json OUT [--reps 21]     (bench/gpu/run_all.py runs it)

Measures, on cuda:0 with a Wan 2.1 720p latent (19.4 MB):
  put_reference   LatentStore.put by reference, no host copy, vs torch.clone() on the device
  put_host_copy   put with a host copy (digest, spill) vs a plain .to("cpu")
  get             LatentStore.get of the device tensor (zero-copy views), per call
  verify          LatentStore.verify of a tensor put with a host copy
  in_place_write  the caller writes its tensor in place after the put, as a node downstream of the
                  Store could: is the change detected by verify, or are the stored bytes unchanged?
                  (the Store node's own path: host copy, no defensive clone; and the other two)
  streams         handover: a consumer on a side stream reads the stored tensor while the producer
                  stream is still writing it; lifetime: the slot is dropped while the consumer
                  stream still reads it and the memory is reused. Bit-identical or not, per trial.
  two_devices     put/get/verify of a cuda:1 tensor while cuda:0 is current (where there are two)
  async_copy      the host copy made asynchronous: a pinned buffer, non_blocking on a side stream
                  with an event, against a plain .to("cpu")

Interface: a consumer on another stream can only be safe if the store lets it wait for the
producer. This script looks for ``LatentStore.get(..., stream=s)`` (the stream s waits on the
event the store recorded at put, and s is recorded on the held clone, so the slot's memory is not
reused before s has passed the consumer's reads); a store without that parameter (main before the
keep-alive) is read with a plain get under ``torch.cuda.stream(s)``. Which one was used is
recorded in the JSON.

Every figure is CUDA-synchronised where work was queued; nothing is estimated; a measurement that
raises is recorded as such and the others still run. Refuses to run without CUDA.
"""

from __future__ import annotations

import argparse
import inspect
import json
import sys
import time
import traceback
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.gpu.cuda_required import require_cuda  # noqa: E402

LATENT_SHAPE = (1, 16, 21, 90, 160)  # Wan 2.1 720p, 81 frames: 19,353,600 bytes as float32
GET_CALLS = 2000
STREAM_TRIALS = 5
SPIN_CYCLES = 50_000_000  # torch.cuda._sleep: tens of milliseconds of a busy stream


def spin(torch, device) -> None:
    """Keep the current stream busy for a while (so a reader that does not wait reads too early)."""
    if hasattr(torch.cuda, "_sleep"):
        torch.cuda._sleep(SPIN_CYCLES)
        return
    a = torch.randn(2048, 2048, device=device)
    for _ in range(40):
        a = (a @ a) * 1e-4


def stream_interface():
    """How a consumer on another stream asks the store to wait for the producer, if the store can."""
    from zc_pack.zc_engine import LatentStore
    if "stream" in inspect.signature(LatentStore.get).parameters:
        return True, "LatentStore.get(tag, stream=consumer): the store makes the consumer stream wait"
    return False, ("LatentStore.get has no stream parameter: the consumer reads the views with a plain get "
                   "under its current stream")


def get_for(store, tag: str, consumer, with_stream: bool):
    return store.get(tag, stream=consumer) if with_stream else store.get(tag)


class DeviceTier:
    """The measurements, on ``device`` (cuda:0). ``torch`` is passed in so that the test suite can run
    this plumbing with a fake of torch.cuda on the CPU (tests/python/test_bench_gpu_tools.py)."""

    def __init__(self, torch, reps: int, device=None):
        from zc_pack.zc_engine import LatentStore
        self.torch, self.reps = torch, reps
        self.device = device if device is not None else torch.device("cuda", 0)
        self.store = LatentStore(depth=4)
        self.x = torch.randn(LATENT_SHAPE, device=self.device)
        self.with_stream, self.interface_note = stream_interface()

    def synced(self, fn):
        def call():
            value = fn()
            self.torch.cuda.synchronize()
            return value
        return call

    def put_reference(self) -> dict:
        from bench.common import interleaved
        sides = {"put": self.synced(lambda: self.store.put("ref", {"latent": self.x}, host_copy=False)),
                 "clone": self.synced(self.x.clone)}
        interleaved(sides, 3, self.drop_after)
        t = interleaved(sides, self.reps, self.drop_after)
        return {"put_s": t["put"], "clone_s": t["clone"]}

    def put_host_copy(self) -> dict:
        from bench.common import interleaved
        sides = {"put": self.synced(lambda: self.store.put("host", {"latent": self.x}, host_copy=True)),
                 "to_cpu": self.synced(lambda: self.x.to("cpu"))}
        interleaved(sides, 3, self.drop_after)
        t = interleaved(sides, self.reps, self.drop_after)
        return {"put_s": t["put"], "to_cpu_s": t["to_cpu"]}

    def drop_after(self, name: str, value) -> None:
        if name == "put":
            for tag in self.store.tags():
                self.store.drop(tag)

    def get(self) -> dict:
        from bench.common import median
        self.store.put("get", {"latent": self.x}, host_copy=False)
        for _ in range(200):
            self.store.get("get")
        samples = []
        for _ in range(GET_CALLS):
            t0 = time.perf_counter()
            shot = self.store.get("get")
            samples.append(time.perf_counter() - t0)
            del shot
        self.store.drop("get")
        ordered = sorted(samples)
        return {"calls": GET_CALLS, "median_s": median(samples), "p99_s": ordered[int(0.99 * (len(ordered) - 1))]}

    def verify(self) -> dict:
        from bench.common import interleaved
        self.store.put("verify", {"latent": self.x}, host_copy=True)
        t = interleaved({"verify": self.synced(lambda: self.store.verify("verify"))}, self.reps)
        self.store.drop("verify")
        return {"verify_s": t["verify"], "what": "LatentStore.verify of a tensor put with a host copy"}

    def in_place_write(self) -> dict:
        from zc_pack.zc_engine import CorruptFile
        torch = self.torch
        out = {}
        for name, options in (("node_path", {"host_copy": True}),
                              ("defensive_clone", {"host_copy": True, "defensive_clone": True}),
                              ("no_host_copy", {"host_copy": False})):
            x = torch.randn(LATENT_SHAPE, device=self.device)
            before = x.clone()
            self.store.put("inplace", {"latent": x}, **options)
            x.add_(1.0)  # a later node writes its input in place
            torch.cuda.synchronize()
            used = self.store.get("inplace").tensors["latent"]
            unchanged = bool(torch.equal(used, before))
            try:
                self.store.verify("inplace")
                verify = "passed"
            except CorruptFile:
                verify = "raised CorruptFile"
            self.store.drop("inplace")
            outcome = "isolated" if unchanged else ("detected" if verify != "passed" else "undetected")
            out[name] = {"outcome": outcome, "options": options,
                         "detail": f"stored bytes {'unchanged' if unchanged else 'changed'}, verify {verify}"}
        return out

    def streams(self) -> dict:
        torch = self.torch
        handover = lifetime = 0
        for trial in range(STREAM_TRIALS):
            handover += self.handover_trial(trial)
            lifetime += self.lifetime_trial(trial)
        return {"trials": STREAM_TRIALS, "handover_identical": handover, "lifetime_identical": lifetime,
                "interface": self.interface_note, "spin": "torch.cuda._sleep" if hasattr(torch.cuda, "_sleep")
                else "matmul loop"}

    def handover_trial(self, trial: int) -> bool:
        """The producer stream is still writing when the consumer stream reads the stored tensor."""
        torch = self.torch
        source = torch.randn(LATENT_SHAPE, device=self.device)
        target = torch.zeros_like(source)  # what a reader that does not wait would see
        torch.cuda.synchronize()
        producer, consumer = torch.cuda.Stream(), torch.cuda.Stream()
        with torch.cuda.stream(producer):
            spin(torch, self.device)
            target.copy_(source)
            self.store.put(f"handover{trial}", {"latent": target}, host_copy=False)
        with torch.cuda.stream(consumer):
            shot = get_for(self.store, f"handover{trial}", consumer, self.with_stream)
            seen = shot.tensors["latent"].clone()
        torch.cuda.synchronize()
        identical = bool(torch.equal(seen, source))
        del shot
        self.store.drop(f"handover{trial}")
        return identical

    def lifetime_trial(self, trial: int) -> bool:
        """The slot is dropped (and its memory reused) while the consumer stream still reads it."""
        torch = self.torch
        source = torch.randn(LATENT_SHAPE, device=self.device)
        held = source.clone()
        torch.cuda.synchronize()
        self.store.put(f"lifetime{trial}", {"latent": held}, host_copy=False)
        del held
        consumer = torch.cuda.Stream()
        with torch.cuda.stream(consumer):
            shot = get_for(self.store, f"lifetime{trial}", consumer, self.with_stream)
            spin(torch, self.device)
            seen = shot.tensors["latent"].clone()  # queued behind the spin
        del shot
        self.store.drop(f"lifetime{trial}")
        junk = torch.full(LATENT_SHAPE, 7.0, device=self.device)  # likely reuses the freed block
        torch.cuda.synchronize()
        del junk
        return bool(torch.equal(seen, source))

    def two_devices(self) -> dict:
        torch = self.torch
        if torch.cuda.device_count() < 2:
            return {"not_measured": f"one GPU (torch.cuda.device_count() == {torch.cuda.device_count()}): "
                                    "no second device"}
        from zc_pack.zc_engine import CorruptFile
        with torch.cuda.device(0):
            x1 = torch.randn(LATENT_SHAPE, device="cuda:1")
            self.store.put("two", {"latent": x1}, host_copy=True)
            seen = self.store.get("two").tensors["latent"]
            identical = bool(torch.equal(seen.cpu(), x1.cpu()))
            try:
                self.store.verify("two")
                verified = True
            except CorruptFile:
                verified = False
            self.store.drop("two")
        return {"devices": f"tensor on cuda:1 ({torch.cuda.get_device_name(1)}), current device cuda:0",
                "identical": identical, "verified": verified}

    def async_copy(self) -> dict:
        from bench.common import interleaved
        torch = self.torch
        pinned = torch.empty(LATENT_SHAPE, dtype=self.x.dtype, pin_memory=True)
        side = torch.cuda.Stream()
        caller, done = [], []

        def copy_async():
            t0 = time.perf_counter()
            side.wait_stream(torch.cuda.current_stream())  # the copy starts after what produced x
            with torch.cuda.stream(side):
                pinned.copy_(self.x, non_blocking=True)
                event = torch.cuda.Event()
                event.record(side)
            t1 = time.perf_counter()
            event.synchronize()
            return t1 - t0, time.perf_counter() - t0

        def collect(name: str, value) -> None:
            if name == "async":
                caller.append(value[0])
                done.append(value[1])
        sides = {"plain": lambda: self.x.to("cpu"), "async": copy_async}
        interleaved(sides, 3)
        t = interleaved(sides, self.reps, collect)
        return {"plain_s": t["plain"], "caller_s": caller, "done_s": done,
                "identical": bool(torch.equal(pinned, self.x.cpu()))}

    def close(self) -> None:
        self.store.close()


def measure(torch, reps: int, device=None) -> dict:
    tier = DeviceTier(torch, reps, device)
    out = {"device": torch.cuda.get_device_name(0), "device_count": torch.cuda.device_count(),
           "torch": torch.__version__, "allocator_backend": torch.cuda.get_allocator_backend(), "reps": reps,
           "latent": {"shape": list(LATENT_SHAPE), "bytes": tier.x.numel() * tier.x.element_size()},
           "interface": {"get_stream": tier.with_stream, "note": tier.interface_note}}
    try:
        for name in ("put_reference", "put_host_copy", "get", "verify", "in_place_write", "streams",
                     "two_devices", "async_copy"):
            print(f"device_tier: {name}", flush=True)
            try:
                out[name] = getattr(tier, name)()
            except Exception as exc:  # noqa: BLE001 - recorded in its row, never hidden
                traceback.print_exc()
                out[name] = {"error": f"{type(exc).__name__}: {exc}"}
            torch.cuda.synchronize()
    finally:
        tier.close()
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", type=Path, required=True, help="where the figures go")
    ap.add_argument("--reps", type=int, default=21, help="repetitions of each timed comparison")
    args = ap.parse_args(argv)
    torch = require_cuda("device_tier")
    started = time.perf_counter()
    out = measure(torch, args.reps)
    out["seconds"] = round(time.perf_counter() - started, 1)
    args.json.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
