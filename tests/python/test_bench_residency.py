"""The residency benchmark section's pure parts: rows from measured figures, the
NOT MEASURED paths, and the plumbing of the GPU check (a fake check script stands in
for tools/gpu/residency_check.py). The measuring itself needs ComfyUI:
tests/integration/test_bench_residency.py."""

from __future__ import annotations

import json
import os
import textwrap
import time
from pathlib import Path

import pytest

from bench.common import FAIL, INFO, NOT_MEASURED, PASS, Context
from bench.sections import residency


def shot(n, *, loaded, offloads, load_s=0.001):
    return {"shot": n, "load_calls": 1, "load_s": load_s, "bytes_loaded": loaded, "patcher_loads": int(loaded > 0),
            "unload_calls": offloads, "partial_unload_calls": 0, "bytes_freed": 0, "resident_after": 0,
            "tracked_after": not offloads, "kept_by_lock": 0, "run_s": 0.02, "vae_phase_s": 0.001}


def cpu_figures(*, pinned_reloads=0, pinned_offloads=0, control_evicted=True, locked=True, shots=4):
    size = 1000
    unpinned = [shot(i, loaded=size if (i == 1 or control_evicted) else 0, offloads=int(control_evicted))
                for i in range(1, shots + 1)]
    pinned = [shot(i, loaded=size if (i == 1 or i <= 1 + pinned_reloads) else 0,
                   offloads=int(i <= pinned_offloads), load_s=0.00003) for i in range(1, shots + 1)]
    return {"comfyui": "test", "model": "m.safetensors", "model_file_bytes": size, "shots_per_film": shots,
            "unpinned": {"pinned": False, "model_bytes": size, "shots": unpinned},
            "pinned": {"pinned": True, "model_bytes": size, "locked": locked, "pin_report": "ZeroCopyVRAMPin: X",
                       "shots": pinned}}


def by_id(rows):
    return {r.id: r for r in rows}


def test_cpu_rows_pass_when_the_pin_saves_every_reload():
    rows = by_id(residency.cpu_rows(cpu_figures()))
    assert rows["R1"].result == PASS and rows["R1"].measured.startswith("4 vs 0")
    assert rows["R2"].result == PASS and rows["R2"].measured.startswith("3 (") and " vs 0 (0 B)" in rows["R2"].measured
    assert rows["R3"].result == INFO


def test_cpu_rows_fail_when_the_pinned_film_reloads_or_the_lock_was_refused():
    rows = by_id(residency.cpu_rows(cpu_figures(pinned_reloads=1, pinned_offloads=1)))
    assert rows["R1"].result == FAIL and rows["R2"].result == FAIL
    rows = by_id(residency.cpu_rows(cpu_figures(locked=False)))
    assert rows["R1"].result == FAIL and "did not lock" in rows["R1"].measured


def test_cpu_rows_claim_nothing_when_the_control_was_never_evicted():
    rows = by_id(residency.cpu_rows(cpu_figures(control_evicted=False)))
    assert rows["R1"].result == INFO and rows["R2"].result == INFO
    assert "control was not evicted" in rows["R1"].measured


def test_without_comfyui_and_gpu_every_row_is_not_measured(tmp_path):
    ctx = Context(mode="smoke", out_dir=tmp_path, tmp_dir=tmp_path, comfyui_path=None)
    section = residency.run(ctx)
    assert [r.id for r in section.rows] == ["R1", "R2", "R3", "R4", "R5"]
    assert all(r.result == NOT_MEASURED for r in section.rows)
    assert all(r.measured == residency.NEEDS_COMFYUI for r in section.rows[:3])
    assert all(r.measured == residency.NO_GPU for r in section.rows[3:])
    assert section.plots == [] and "not measured" in section.details.lower()
    json.dumps(section.to_json())


def test_gpu_smoke_mode_and_missing_comfyui_are_reasons_not_estimates(tmp_path):
    smoke = Context(mode="smoke", out_dir=tmp_path, tmp_dir=tmp_path, comfyui_path=tmp_path, cuda=True)
    assert "smoke mode" in residency.measure_gpu(smoke)["not_measured"]
    no_comfy = Context(mode="full", out_dir=tmp_path, tmp_dir=tmp_path, comfyui_path=None, cuda=True)
    assert "COMFYUI_PATH" in residency.measure_gpu(no_comfy)["not_measured"]


FAKE_CHECK = """
import json, os, sys
args = sys.argv[1:]
opt = lambda name: args[args.index(name) + 1]
allocator = opt("--allocator")
backend = "cudaMallocAsync" if allocator == "cudaMallocAsync" else "native"
MODE = {mode!r}
def run(locked):
    shots = []
    for i in range(1, int(opt("--shots")) + 1):
        moved = 0 if (locked and i > 1) else 100
        if MODE == "locked-reloads":
            moved = 100
        figures = {{"reserved": 300, "allocated": 200}}
        if backend == "native":
            figures.update(inactive_split=10, alloc_retries=0, segments=3,
                           expandable_segments=3 if os.environ.get("PYTORCH_CUDA_ALLOC_CONF") else 0)
        else:
            figures["memory_stats_nonzero"] = {{"reserved_bytes.all.current": 300}}
        shots.append({{"shot": i, "load_calls": 1, "load_s": 0.4 if moved else 0.0001, "bytes_loaded": moved,
                      "bytes_copied_into_vbar": None, "resident_after_vae": 100 if locked else 0,
                      "vae_phase": "whole", "allocator": figures}})
    return {{"mode": "classic", "locked": locked, "backend": backend, "shots": shots, "model_bytes": 100,
            "device": "Fake GPU", "pressure_bytes": 50}}
env = {{n: os.environ.get(n) for n in ("PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF", "COMFYUI_PATH")}}
json.dump({{"runs": [run(False), run(True)], "env_seen": env, "args": args}}, open(opt("--json"), "w"))
"""


def gpu_ctx(tmp_path, monkeypatch, mode="ok"):
    script = tmp_path / "fake_check.py"
    script.write_text(FAKE_CHECK.format(mode=mode))
    monkeypatch.setattr(residency, "GPU_CHECK", script)
    monkeypatch.setenv("PYTORCH_ALLOC_CONF", "garbage_collection_threshold:0.5")  # the user's: not passed on
    return Context(mode="full", out_dir=tmp_path, tmp_dir=tmp_path, comfyui_path=tmp_path / "ComfyUI", cuda=True)


def test_gpu_check_runs_once_per_allocator_setting_with_only_that_setting(tmp_path, monkeypatch):
    gpu = residency.measure_gpu(gpu_ctx(tmp_path, monkeypatch))
    settings = gpu["settings"]
    assert list(settings) == ["native", "native_expandable", "cudaMallocAsync"]
    seen = {k: s["check"]["env_seen"] for k, s in settings.items()}
    assert seen["native"]["PYTORCH_ALLOC_CONF"] is None and seen["native"]["PYTORCH_CUDA_ALLOC_CONF"] is None
    assert seen["native_expandable"] == {"PYTORCH_ALLOC_CONF": "expandable_segments:True",
                                         "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True",
                                         "COMFYUI_PATH": str(tmp_path / "ComfyUI")}
    assert seen["cudaMallocAsync"]["PYTORCH_CUDA_ALLOC_CONF"] is None
    args = settings["cudaMallocAsync"]["check"]["args"]
    assert args[args.index("--allocator") + 1] == "cudaMallocAsync" and args[args.index("--modes") + 1] == "classic"

    rows = by_id(residency.gpu_rows(gpu))
    assert rows["R4"].result == PASS and rows["R4"].measured.startswith("cudaMallocAsync")
    assert "moved 900 B vs 0 B" in rows["R4"].measured
    assert rows["R5"].result == INFO
    for label in ("native", "native + expandable_segments", "cudaMallocAsync"):
        assert label in rows["R5"].measured
    assert "expandable 3" in rows["R5"].measured and "backend cudaMallocAsync" in rows["R5"].measured
    details = residency.details(None, gpu)
    assert "`memory_stats()` after the last shot" in details and "| 10 |" in details
    json.dumps(gpu)


def test_gpu_rows_fail_when_the_locked_run_moves_weights(tmp_path, monkeypatch):
    gpu = residency.measure_gpu(gpu_ctx(tmp_path, monkeypatch, mode="locked-reloads"))
    assert by_id(residency.gpu_rows(gpu))["R4"].result == FAIL


def test_gpu_rows_refuse_figures_of_the_wrong_backend():
    run_ = {"mode": "classic", "locked": False, "backend": "native",
            "shots": [{"shot": 1, "load_s": 0.1, "bytes_loaded": 1, "allocator": {}}]}
    gpu = {"settings": {"cudaMallocAsync": {"label": "cudaMallocAsync", "expected_backend": "cudaMallocAsync",
                                            "check": {"runs": [run_, {**run_, "locked": True}]}}}}
    assert "not of this setting" in by_id(residency.gpu_rows(gpu))["R5"].measured


def test_gpu_check_past_its_budget_is_ended_with_everything_it_started(tmp_path, monkeypatch):
    pid_file = tmp_path / "grandchild.pid"
    script = tmp_path / "slow_check.py"
    script.write_text(textwrap.dedent(f"""
        import subprocess, sys, time
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        open({str(pid_file)!r}, "w").write(str(child.pid))
        time.sleep(60)
    """))
    monkeypatch.setattr(residency, "GPU_CHECK", script)
    monkeypatch.setitem(residency.GPU_BUDGET_S, "full", 7)
    monkeypatch.setattr(residency, "MIN_GPU_RUN_S", 6)
    ctx = Context(mode="full", out_dir=tmp_path, tmp_dir=tmp_path, comfyui_path=tmp_path, cuda=True)
    started = time.monotonic()
    gpu = residency.measure_gpu(ctx)
    assert time.monotonic() - started < 20
    settings = gpu["settings"]
    assert "no result within" in settings["native"]["not_measured"]
    assert "budget of this check was spent" in settings["cudaMallocAsync"]["not_measured"]
    pid = int(pid_file.read_text())
    for _ in range(50):  # the grandchild was killed with its group (it may linger briefly as a zombie)
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        if Path(f"/proc/{pid}/stat").is_file() and Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z":
            break
        time.sleep(0.1)
    else:
        pytest.fail("the GPU check's own child outlived the timeout")
    rows = by_id(residency.gpu_rows(gpu))
    assert rows["R4"].result == NOT_MEASURED and rows["R5"].result == NOT_MEASURED


def test_plot_writes_the_png(tmp_path):
    residency.plot(tmp_path / "residency.png", cpu_figures())
    assert (tmp_path / "residency.png").stat().st_size > 1000
    assert "| 1 |" in residency.details(cpu_figures(), {"not_measured": residency.NO_GPU})

