"""bench/gpu/import_results.py: the files the GPU machine returns become the G rows and the README.

Every JSON document below is a HAND-WRITTEN FIXTURE, not a measurement: its figures are made up to
drive the merge and the row logic (and say so in their names). No timing is asserted.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from bench.gpu import import_results, run_all

REPO = Path(__file__).resolve().parents[2]
FIXTURE_GPU = "FIXTURE GPU (hand-written test fixture, not a measurement)"
MACHINE = {"gpus": [{"index": 0, "name": FIXTURE_GPU, "memory_bytes": 1 << 30, "capability": "0.0"}],
           "driver": "fixture-driver", "torch": "fixture-torch", "cuda": "fixture-cuda", "cudnn": 0,
           "cpu": "fixture", "cores": 1, "memory": "fixture", "os": "fixture", "python": "fixture",
           "git": "fixture", "comfyui": {"path": "/fixture/ComfyUI", "version": "0.0-fixture",
                                         "commit": "f1x7ure0000000000000000000000000000000000"}}
# The device tier's result, as bench/gpu/device_tier.py writes it: FIXTURE figures.
DEVICE_TIER = {
    "device": FIXTURE_GPU, "device_count": 1, "torch": "fixture", "allocator_backend": "native", "reps": 1,
    "latent": {"shape": [1, 16, 21, 90, 160], "bytes": 19_353_600},
    "interface": {"get_stream": False, "note": "fixture"},
    "put_reference": {"put_s": [1e-5], "clone_s": [1e-4]},
    "put_host_copy": {"put_s": [1e-3], "to_cpu_s": [2e-3]},
    "get": {"calls": 1, "median_s": 1e-5, "p99_s": 2e-5},
    "verify": {"verify_s": [1e-3], "what": "fixture"},
    "in_place_write": {"node_path": {"outcome": "detected", "options": {}, "detail": "fixture"}},
    "streams": {"trials": 1, "handover_identical": 1, "lifetime_identical": 1, "interface": "fixture",
                "spin": "fixture"},
    "two_devices": {"not_measured": "one GPU (fixture)"},
    "async_copy": {"plain_s": [2e-3], "caller_s": [1e-5], "done_s": [1e-3], "identical": True},
}
# Row P3's run, as bench/gpu/padding_gpu.py writes it: FIXTURE figures.
PADDING_GPU = {
    "gpu": FIXTURE_GPU, "comfyui": "0.0-fixture", "width": 832, "height": 480, "length": 81, "reps": 2,
    "vae_width": 96, "weights": "fixture", "seconds": 1.0,
    "encodes": {"comfy_default": {"dtype": "bfloat16", "device": "cuda:0", "first_s": 1.25, "seconds": [1.25, 0.5],
                                  "latent_shape": [1, 16, 21, 60, 104], "peak_bytes": 1 << 30},
                "float32": {"dtype": "float32", "error": "RuntimeError: fixture"}},
}


def part(name: str, runs: dict) -> dict:
    return {"format": run_all.FORMAT, "written_by": "FIXTURE", "date_utc": "2026-01-01T00:00:00+00:00",
            "mode": "full", "budget_s": 480, "elapsed_s": 1.0, "machine": MACHINE, "runs": runs, "part": name}


def returned(folder: Path) -> Path:
    """What device_run.sh would return from a run ended by its limit during residency_dynamic (FIXTURE)."""
    folder.mkdir()
    (folder / "gpu-1-device_tier.json").write_text(json.dumps(part("device_tier", {  # P3's run joins it
        "device_tier": {"label": "fixture", "status": "measured", "seconds": 1.0, "exit": 0, "result": DEVICE_TIER},
        "padding_gpu": {"label": "fixture", "status": "measured", "seconds": 1.0, "exit": 0, "result": PADDING_GPU}})))
    (folder / "gpu-2-residency_classic_cudaMallocAsync.json").write_text(json.dumps(part(
        "residency_classic_cudaMallocAsync", {
            "residency_prepare": {"label": "fixture", "status": "measured", "seconds": 1.0, "exit": 0},
            "residency_classic_cudaMallocAsync": {"label": "fixture", "status": "not_measured", "seconds": 150.0,
                                                  "reason": "no result within 150 s (fixture)"}})))
    (folder / "device_run.log").write_text(
        "device_run: FIXTURE log\nrun_all: device_tier: device tier (up to 120 s)\nrun_all: device_tier: measured\n"
        "run_all: residency_dynamic: residency, dynamic VRAM (comfy-aimdo) (up to 150 s)\n")
    return folder


def test_the_returned_files_merge_into_one_document_and_what_did_not_finish_says_why(tmp_path):
    doc = import_results.merge_folder(returned(tmp_path / "out"))
    assert list(doc["runs"])[:len(run_all.ORDER)] == list(run_all.ORDER)
    assert doc["runs"]["device_tier"]["status"] == "measured"
    assert doc["runs"]["residency_classic_cudaMallocAsync"]["reason"] == "no result within 150 s (fixture)"
    assert "started on the GPU machine" in doc["runs"]["residency_dynamic"]["reason"]
    assert "not reached" in doc["runs"]["overhead_gpu_only"]["reason"]
    assert doc["machine"]["gpus"][0]["name"] == FIXTURE_GPU and len(doc["returned"]["files"]) == 3


def test_one_command_fills_the_g_rows_the_readme_and_the_machine(tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    shutil.copy(REPO / "bench" / "results" / "bench.json", results / "bench.json")
    readme = tmp_path / "README.md"
    shutil.copy(REPO / "README.md", readme)
    env = {k: v for k, v in os.environ.items() if k != "COMFYUI_PATH"}
    done = subprocess.run([sys.executable, str(REPO / "bench" / "gpu" / "import_results.py"),
                           str(returned(tmp_path / "out")), "--results", str(results), "--readme", str(readme)],
                          capture_output=True, text=True, timeout=300, env=env, cwd=REPO)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    rows = {line.split("|")[1].strip(): line for line in (results / "bench.md").read_text().splitlines()
            if line.startswith(("| G", "| P3 "))}
    assert "**PASS**" in rows["G1c"] and "10.0 µs" in rows["G1c"]
    assert "**FAIL**" in rows["P3"] and "(bfloat16): 1.25 s the first time" in rows["P3"]  # float32 raised
    assert "raised RuntimeError: fixture" in rows["P3"] and "| P3 |" in readme.read_text()
    assert "NOT MEASURED" in rows["G7"] and "did not finish" in rows["G7"]
    assert "NOT MEASURED" in rows["G10a"] and "not reached" in rows["G10a"]
    assert "NOT MEASURED" in rows["G6"] and "no result within 150 s" in rows["G6"]
    text = readme.read_text()
    assert FIXTURE_GPU in text and "f1x7ure0000" in text and "fixture-driver" in text
    assert json.loads((results / "gpu.json").read_text())["runs"]["residency_dynamic"]["status"] == "not_measured"


def test_bench_reads_the_returned_folder_itself(tmp_path):
    from bench.common import Context
    from bench.sections import gpu
    ctx = Context(mode="smoke", out_dir=tmp_path, tmp_dir=tmp_path, comfyui_path=None, vae_path=None, cuda=False,
                  gpu_json=returned(tmp_path / "out"))
    doc, why = gpu.load(ctx)
    assert why == "" and doc["runs"]["device_tier"]["status"] == "measured"
    empty = tmp_path / "empty"
    empty.mkdir()
    ctx.gpu_json = empty
    doc, why = gpu.load(ctx)
    assert doc is None and "holds no gpu-*.json" in why
