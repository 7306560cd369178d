"""The benchmark's GPU rows (bench/sections/gpu.py) from the document bench/gpu/run_all.py writes, and
the README table made from them. The documents are FAKES (gpu_run_fakes.py): made-up figures that
drive the row logic, never measurements. No timing is asserted."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import gpu_run_fakes as fakes
from bench.common import FAIL, INFO, NOT_MEASURED, PASS, Context
from bench.sections import gpu
from tools import update_readme_bench
from bench.gpu import run_all

REPO = Path(__file__).resolve().parents[2]


def measured(result: dict) -> dict:
    return {"label": "fake", "status": "measured", "seconds": 1.0, "exit": 0, "result": result}


def document(**runs) -> dict:
    """A run_all document with every run measured from the fakes, unless given otherwise."""
    base = {"device_tier": measured(fakes.fake_device_tier()),
            "padding_gpu": measured(fakes.fake_padding_gpu()),
            "residency_prepare": {"label": "fake", "status": "measured", "seconds": 1.0, "exit": 0},
            "residency_classic_cudaMallocAsync": measured(fakes.fake_residency_check(backend="cudaMallocAsync")),
            "residency_dynamic": measured(fakes.fake_residency_check(dynamic=True)),
            "overhead_gpu_only": measured(fakes.fake_overhead("gpu-only")),
            "overhead_default": measured(fakes.fake_overhead("default")),
            "residency_classic_native": measured(fakes.fake_residency_check(backend="native")),
            "residency_classic_native_expandable": measured(fakes.fake_residency_check(backend="native",
                                                                                      expandable=True))}
    base.update(runs)
    opts = type("Opts", (), {"mode": "full", "budget_s": 480})()
    machine = run_all.machine_record(fakes.FakeTorch(), None)
    return run_all.document(machine, opts, base, 400.0)


def by_id(rows):
    return {r.id: r for r in rows}


def test_without_a_gpu_run_every_gpu_row_is_not_measured_with_the_reason(tmp_path):
    section = gpu.run(Context(mode="full", out_dir=tmp_path, tmp_dir=tmp_path, comfyui_path=None))
    assert [r.id for r in section.rows] == list(gpu.ROWS)
    assert all(r.result == NOT_MEASURED and r.measured == gpu.NOT_RUN for r in section.rows)
    assert section.data["about"].startswith("NOT MEASURED")
    json.dumps(section.to_json())
    on_a_gpu = gpu.run(Context(mode="full", out_dir=tmp_path, tmp_dir=tmp_path, comfyui_path=None, cuda=True))
    assert all(r.measured == gpu.NOT_RUN_HERE for r in on_a_gpu.rows)  # never "no GPU" where there is one


def test_a_file_that_is_not_a_gpu_document_measures_nothing(tmp_path):
    path = tmp_path / "gpu.json"
    path.write_text(json.dumps({"format": "something else"}))
    section = gpu.run(Context(mode="full", out_dir=tmp_path, tmp_dir=tmp_path, comfyui_path=None, gpu_json=path))
    assert all(r.result == NOT_MEASURED and "not a zerocopy-gpu-bench" in r.measured for r in section.rows)


def test_a_complete_fake_run_fills_every_row():
    rows = by_id(gpu.rows_for(document()))
    assert list(rows) == list(gpu.ROWS)
    assert not [r for r in rows.values() if r.result == NOT_MEASURED and r.id != "G4"]
    assert rows["G4"].result == NOT_MEASURED and "no second device" in rows["G4"].measured  # one fake GPU
    assert rows["G1c"].result == PASS and rows["G2"].result == PASS and rows["G3"].result == PASS
    assert rows["G6"].result == PASS and "cudaMallocAsync" in rows["G6"].measured
    assert rows["G7"].result == PASS and rows["G8"].result == INFO
    assert "no reload after shot 1 (shot 1: first load)" in rows["G8"].measured
    for label in ("cudaMallocAsync", "native —", "native + expandable_segments"):
        assert label in rows["G9"].measured
    assert "expandable 3" in rows["G9"].measured
    assert rows["G10a"].result == PASS and rows["G10c"].result == PASS and rows["G11b"].result == PASS
    assert "latents on cuda:0" in rows["G10a"].measured and "latents on cpu" in rows["G11a"].measured
    assert rows["P3"].result == INFO and "832x480, 81 frames" in rows["P3"].measured
    assert "(bfloat16): 2.00 s the first time" in rows["P3"].measured and "(float32): 4.00 s" in rows["P3"].measured
    assert "then 1.00 s (median of 2)" in rows["P3"].measured and "latent 1x16x21x60x104" in rows["P3"].measured


def test_the_padding_encode_row_says_what_raised_and_what_comfyui_chose():
    raised = by_id(gpu.rows_for(document(padding_gpu=measured(fakes.fake_padding_gpu(error="OutOfMemoryError: x")))))
    assert raised["P3"].result == FAIL and "raised OutOfMemoryError: x" in raised["P3"].measured
    assert "(float32): 4.00 s" in raised["P3"].measured  # the other dtype still measured
    same = by_id(gpu.rows_for(document(padding_gpu=measured(fakes.fake_padding_gpu(default_dtype="float32")))))
    assert same["P3"].result == INFO and "the same run (ComfyUI chose float32)" in same["P3"].measured
    cut = by_id(gpu.rows_for(document(padding_gpu={"label": "fake", "status": "not_measured", "seconds": 120.0,
                                                   "reason": "no result within 120 s"})))
    assert cut["P3"].result == NOT_MEASURED and "no result within 120 s" in cut["P3"].measured


def test_what_the_gpu_run_found_wrong_is_a_fail():
    doc = document(device_tier=measured(fakes.fake_device_tier(in_place="undetected", lifetime=3)),
                   residency_classic_cudaMallocAsync=measured(fakes.fake_residency_check(locked_reloads=2)),
                   overhead_gpu_only=measured(fakes.fake_overhead("gpu-only", ours=8e-4, memcpy=4e-4)))
    rows = by_id(gpu.rows_for(doc))
    assert rows["G2"].result == FAIL and "undetected" in rows["G2"].measured
    assert rows["G3"].result == FAIL and "3/5" in rows["G3"].measured
    assert rows["G6"].result == FAIL and "shot 2: patch change" in rows["G8"].measured
    assert rows["G10a"].result == PASS  # 0.8 ms vs 10 ms file: ≤ 0.1
    assert rows["G10c"].result == FAIL  # 0.8 ms vs 0.4 ms memcpy: over 1.5×


def test_runs_the_command_could_not_finish_say_so_and_claim_nothing():
    doc = document(
        device_tier={"label": "fake", "status": "failed", "seconds": 3.0, "reason": "exited 1 without a result: boom"},
        residency_dynamic=measured(fakes.fake_residency_check(dynamic=True, skipped="comfy-aimdo unavailable")),
        residency_classic_native={"label": "fake", "status": "not_measured", "reason": "the time budget was spent"},
        overhead_default={"label": "fake", "status": "not_measured", "reason": "needs COMFYUI_PATH"})
    rows = by_id(gpu.rows_for(doc))
    assert all(rows[rid].result == FAIL and "boom" in rows[rid].measured for rid in gpu.SOURCES["device_tier"])
    assert rows["G7"].result == NOT_MEASURED and "comfy-aimdo unavailable" in rows["G7"].measured
    assert "native: not measured (the time budget was spent)" in rows["G9"].measured
    assert all(rows[rid].result == NOT_MEASURED and "COMFYUI_PATH" in rows[rid].measured
               for rid in gpu.SOURCES["overhead_default"])
    assert rows["G6"].result == PASS  # cudaMallocAsync still measured


def test_figures_of_another_backend_than_the_setting_asked_are_refused():
    doc = document(residency_classic_cudaMallocAsync=measured(fakes.fake_residency_check(backend="native")))
    assert "not of this setting" in by_id(gpu.rows_for(doc))["G9"].measured


def test_every_run_that_fills_rows_is_one_the_command_plans():
    planned = set(run_all.ORDER)
    assert set(gpu.SOURCES) - {"residency"} <= planned
    assert {name for name, _, _ in gpu.ALLOCATOR_RUNS} | {gpu.DYNAMIC_RUN} <= planned
    assert gpu.GPU_FORMAT == run_all.FORMAT


def test_a_recorded_gpu_document_becomes_the_readme_tables_gpu_rows(tmp_path):
    """Smoke run (no GPU), then the GPU document merged in with --update, then the README block."""
    out = tmp_path / "results"
    program = [sys.executable, str(REPO / "bench" / "run.py"), "--out", str(out)]
    env = {k: v for k, v in os.environ.items() if k != "COMFYUI_PATH"}
    first = subprocess.run(program + ["--smoke", "--only", "residency", "gpu"], capture_output=True, text=True,
                           timeout=300, env=env)
    assert first.returncode == 0, first.stderr[-2000:]
    gpu_json = tmp_path / "gpu.json"
    gpu_json.write_text(json.dumps(document()))
    second = subprocess.run(program + ["--only", "gpu", "--update", "--gpu-json", str(gpu_json)],
                            capture_output=True, text=True, timeout=300, env=env)
    assert second.returncode == 0, second.stderr[-2000:]
    doc = json.loads((out / "bench.json").read_text())
    assert [s["name"] for s in doc["sections"]] == ["residency", "gpu"]  # residency kept from the first run
    assert doc["mode"] == "smoke" and "re-run with --update" in doc["machine"]["updated"]
    block = update_readme_bench.generated_block(out / "bench.md")
    assert f"- GPU rows (G): cuda:0 {fakes.FAKE_GPU}" in block and "- Updated (UTC)" in block
    g6 = next(line for line in block.splitlines() if line.startswith("| G6 |"))
    assert "**PASS**" in g6 and "| R1 |" in block
    readme = (REPO / "README.md").read_text()
    new = update_readme_bench.updated_readme(readme, out / "bench.md")
    assert new.count(update_readme_bench.START) == 1 and "| G10c |" in new
    shutil.rmtree(out)
