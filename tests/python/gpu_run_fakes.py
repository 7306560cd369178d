"""FAKES of what the GPU command's children write, for tests that run without a GPU.

None of these numbers was measured: they are made up to drive the code that plans the runs,
merges their JSON and builds the benchmark's GPU rows and README table
(bench/gpu/run_all.py, bench/sections/gpu.py). Each builder returns the JSON a child writes
(bench/gpu/device_tier.py, residency_check.py, overhead_gpu.py, padding_gpu.py), shaped as the
child writes it.
FakeTorch stands in for the few torch.cuda figures run_all.py records about the machine.
"""

from __future__ import annotations

import types

FAKE_GPU = "Fake GPU (test fake, not a measurement)"
MIB = 1 << 20


def fake_device_tier(*, in_place="detected", handover=5, lifetime=5, devices=1, reps=3) -> dict:
    two = ({"not_measured": "one GPU (torch.cuda.device_count() == 1): no second device"} if devices < 2 else
           {"devices": "tensor on cuda:1 (Fake GPU), current device cuda:0", "identical": True, "verified": True})
    return {
        "device": FAKE_GPU, "device_count": devices, "torch": "fake", "allocator_backend": "native", "reps": reps,
        "latent": {"shape": [1, 16, 21, 90, 160], "bytes": 19_353_600},
        "interface": {"get_stream": False, "note": "LatentStore.get has no stream parameter (fake)"},
        "put_reference": {"put_s": [2e-5] * reps, "clone_s": [1e-4] * reps},
        "put_host_copy": {"put_s": [5e-3] * reps, "to_cpu_s": [4e-3] * reps},
        "get": {"calls": 10, "median_s": 2e-5, "p99_s": 3e-5},
        "verify": {"verify_s": [1e-3] * reps, "what": "LatentStore.verify of a tensor put with a host copy"},
        "in_place_write": {
            "node_path": {"outcome": in_place, "options": {"host_copy": True}, "detail": "fake"},
            "defensive_clone": {"outcome": "isolated", "options": {}, "detail": "fake"},
            "no_host_copy": {"outcome": "undetected", "options": {}, "detail": "fake"}},
        "streams": {"trials": 5, "handover_identical": handover, "lifetime_identical": lifetime,
                    "interface": "plain get (fake)", "spin": "fake"},
        "two_devices": two,
        "async_copy": {"plain_s": [4e-3] * reps, "caller_s": [3e-5] * reps, "done_s": [1e-3] * reps,
                       "identical": True},
    }


def fake_shot(n: int, *, moved: int, locked: bool, backend: str, expandable: bool, reload: dict | None = None,
              dynamic: bool = False) -> dict:
    figures = {"reserved": 300 * MIB, "allocated": 200 * MIB}
    if backend == "native":
        figures.update(inactive_split=MIB, alloc_retries=0, segments=3, expandable_segments=3 if expandable else 0)
    else:
        figures["memory_stats_nonzero"] = {"reserved_bytes.all.current": 300 * MIB}
    return {"shot": n, "load_calls": 1, "load_s": 0.4 if moved else 1e-4,
            "bytes_loaded": 0 if dynamic else moved, "bytes_copied_into_vbar": moved if dynamic else None,
            "sample_s": 0.1, "resident_after_sample": 100 * MIB, "resident_after_vae": 100 * MIB if locked else 0,
            "vae_phase": "whole", "allocator": figures, "reload": reload}


def fake_residency_check(*, backend="cudaMallocAsync", expandable=False, locked_reloads=0, shots=10,
                         dynamic=False, skipped: str | None = None) -> dict:
    def film(locked: bool) -> dict:
        if skipped:
            return {"mode": "dynamic" if dynamic else "classic", "locked": locked, "skipped": skipped, "shots": []}
        out = []
        for n in range(1, shots + 1):
            moves = n == 1 or not locked or n <= 1 + locked_reloads
            reload = None
            if locked and n == 1:
                reload = {"reason": "first load", "causes": ["first_load"], "detail": "fake", "bytes": 100 * MIB}
            elif locked and moves:
                reload = {"reason": "patch change", "causes": ["patch_change"], "detail": "fake", "bytes": 100 * MIB}
            out.append(fake_shot(n, moved=100 * MIB if moves else 0, locked=locked, backend=backend,
                                 expandable=expandable, reload=reload, dynamic=dynamic))
        return {"mode": "dynamic" if dynamic else "classic", "locked": locked, "backend": backend, "shots": out,
                "model_bytes": 100 * MIB, "device": FAKE_GPU, "pressure_bytes": 50 * MIB, "dynamic_vram": dynamic}
    return {"gpu": FAKE_GPU, "options": {}, "runs": [film(False), film(True)], "seconds": 1.0}


def fake_overhead_result(key: str, label: str, *, ours=1e-3, file=1e-2, memcpy=9e-4, vae=1.0, reps=3) -> dict:
    return {"key": key, "label": label, "bytes": MIB, "no_vae": "", "video": [1], "audio": None, "device": "fake",
            "idle_s": 0.3, "reps": reps, "ours": [ours] * reps, "file": [file] * reps, "memcpy": [memcpy] * reps,
            "ours_vs_file": ours / file, "ours_vs_memcpy": ours / memcpy,
            "vae": {"fakevae": {"times": [vae], "ours": [ours], "reps": 1, "ours_vs_vae": ours / vae, "steps": []}},
            "store_part": ours / 2, "handoff_part": ours / 2, "ours_plus_spill": ours * 2, "ours_once": ours}


def fake_overhead(flags: str, *, ours=1e-3, memcpy=9e-4) -> dict:
    from bench.sections import overhead
    results = [fake_overhead_result(s.key, s.label, ours=ours, memcpy=memcpy) for s in overhead.SHAPES]
    return {"flags": flags, "comfyui": "fake", "latent_device": "cuda:0" if flags == "gpu-only" else "cpu",
            "vae_device": "cuda:0", "torch_device": "cuda:0", "gpu": FAKE_GPU, "allocator_backend": "cudaMallocAsync",
            "via_nodes": True, "reps": 3, "idle_s": 0.3, "results": results, "seconds": 1.0}


def fake_padding_gpu(*, default_dtype="bfloat16", error: str | None = None, reps=3) -> dict:
    def encode(dtype: str, first: float) -> dict:
        if error is not None and dtype == default_dtype:
            return {"dtype": dtype, "error": error}
        return {"dtype": dtype, "device": "cuda:0", "first_s": first, "seconds": [first] + [first / 2] * (reps - 1),
                "latent_shape": [1, 16, 21, 60, 104], "peak_bytes": 3 << 30}
    encodes = {"comfy_default": encode(default_dtype, 2.0)}
    encodes["float32"] = ({"dtype": "float32", "same_as": "comfy_default"} if default_dtype == "float32"
                          else encode("float32", 4.0))
    return {"gpu": FAKE_GPU, "comfyui": "fake", "width": 832, "height": 480, "length": 81, "reps": reps,
            "vae_width": 96, "weights": "fake", "encodes": encodes, "seconds": 1.0}


def fake_results() -> dict:
    """What each fake child writes, by the key the fake child script picks (see test_bench_gpu_tools.py)."""
    return {"device": fake_device_tier(),
            "cudaMallocAsync": fake_residency_check(backend="cudaMallocAsync"),
            "native": fake_residency_check(backend="native"),
            "native_expandable": fake_residency_check(backend="native", expandable=True),
            "dynamic": fake_residency_check(backend="cudaMallocAsync", dynamic=True),
            "gpu-only": fake_overhead("gpu-only"), "default": fake_overhead("default"),
            "padding": fake_padding_gpu()}


class FakeTorch:
    """A FAKE of the torch attributes bench/gpu/run_all.py records about the machine."""

    def __init__(self, names=(FAKE_GPU,)):
        props = [types.SimpleNamespace(name=n, total_memory=80 << 30, major=9, minor=0) for n in names]
        self.__version__ = "0.0-fake"
        self.version = types.SimpleNamespace(cuda="0.0-fake")
        self.backends = types.SimpleNamespace(cudnn=types.SimpleNamespace(is_available=lambda: True,
                                                                          version=lambda: 1))
        self.cuda = types.SimpleNamespace(device_count=lambda: len(props), get_device_properties=lambda i: props[i])
