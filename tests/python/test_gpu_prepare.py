"""The GPU run's preparation (bench/gpu/prepare_device.sh, carry.py, device_run.sh, run_all.py's
per-run files) and its dry run (bench/gpu/dry_run.sh), without a GPU. The dry run itself needs
.gpu-carry/ (made by prepare_device.sh, with the network) and a Python 3.12: skipped, with the
reason, where they are missing. Records and wheel names below are FAKES, not measurements."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from bench.gpu import carry, import_check, run_all

REPO = Path(__file__).resolve().parents[2]


def test_the_carry_list_reads_and_names_what_may_stay_out():
    wheels = carry.carry_wheels()
    names = {carry.canonical(n) for n, _, _ in wheels}
    assert {"comfy-aimdo", "comfy-kitchen", "torchsde", "spandrel", "kornia", "av", "blake3", "alembic",
            "sqlalchemy", "redis"} <= names
    assert len(names) == len(wheels)  # one version of each
    assert [n for n, _, pure in wheels if pure] == ["comfy-kitchen"]
    assert not names & carry.image_names()  # nothing the image already has
    assert {"comfy_angle", "OpenGL", "comfyui_frontend_package"} <= set(import_check.not_carried())


def test_the_wheel_check_finds_missing_extra_doubled_and_foreign_wheels(tmp_path):
    wanted = [("av", "18.1.0", False), ("comfy-kitchen", "0.2.31", True), ("redis", "8.1.0", False)]
    for name in ("av-18.1.0-cp311-abi3-manylinux_2_28_x86_64.whl", "comfy_kitchen-0.2.31-py3-none-any.whl",
                 "zerocopy_engine-0.4.0-py3-none-manylinux_2_34_x86_64.whl"):
        (tmp_path / name).write_bytes(b"")
    assert carry.check_wheels(tmp_path, wanted) == ["redis==8.1.0: no wheel"]
    (tmp_path / "redis-8.1.0-py3-none-any.whl").write_bytes(b"")
    (tmp_path / "redis-8.0.0-py3-none-any.whl").write_bytes(b"")
    (tmp_path / "blake3-1.0.11-cp313-cp313-win_amd64.whl").write_bytes(b"")
    problems = carry.check_wheels(tmp_path, wanted)
    assert any(p.startswith("blake3-1.0.11-cp313-cp313-win_amd64.whl: not a wheel CPython 3.12") for p in problems)
    assert any(p.startswith("redis==8.1.0: found") for p in problems)
    assert any("not in bench/gpu/carry-wheels.txt" in p for p in problems)


class _Opts:
    mode, budget_s = "full", 480


def test_each_run_lands_in_out_as_it_ends_and_at_most_eight_files_come_back(tmp_path):
    """run_all --each-dir: a file per run with a result, the moment its record is complete; with the log,
    at most 8 files (the GPU machine returns no more)."""
    children = [run_all.ChildRun(name, name, ["true"], None if name == "residency_prepare" else tmp_path / name, 10)
                for name in run_all.ORDER]
    each = run_all.EachRun(tmp_path / "out", {"gpus": []}, _Opts())
    with_result = 0
    for child in children:
        each(child, {"label": child.name, "status": "not_measured", "seconds": 0.0, "reason": "FAKE"})
        with_result += child.result is not None and child.name not in run_all.JOINS_PREVIOUS_FILE
        assert len(list((tmp_path / "out").iterdir())) == with_result  # written as each run ends
    each.flush()
    files = sorted((tmp_path / "out").iterdir())
    assert len(files) + 1 <= 8  # + device_run.log
    assert [f.name for f in files][0] == "gpu-1-device_tier.json"
    first = json.loads(files[0].read_text())  # padding_gpu (P3) joined the device tier's file
    assert list(first["runs"]) == ["device_tier", "padding_gpu"] and first["part"] == "device_tier"
    second = json.loads((tmp_path / "out" / "gpu-2-residency_classic_cudaMallocAsync.json").read_text())
    assert list(second["runs"]) == ["residency_prepare", "residency_classic_cudaMallocAsync"]
    assert second["format"] == run_all.FORMAT and not list((tmp_path / "out").glob("*.tmp"))


def test_device_run_needs_out_and_the_carried_folder(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "OUT"}
    done = subprocess.run(["bash", str(REPO / "bench" / "gpu" / "device_run.sh")], capture_output=True, text=True,
                          env=env, timeout=60)
    assert done.returncode == 3 and "set OUT" in done.stderr


@pytest.mark.skipif(not (REPO / ".gpu-carry" / "wheels").is_dir(),
                    reason="no .gpu-carry/: run COMFYUI_PATH=... bench/gpu/prepare_device.sh first (needs PyPI)")
def test_the_dry_run_proves_the_carried_set_complete():
    """A Python 3.12 stand-in for the image, the carried wheels installed as on the GPU machine: ComfyUI
    imports, the pack's five nodes register, --plan lists every run, device_run.sh exits 2 in one line."""
    done = subprocess.run(["bash", str(REPO / "bench" / "gpu" / "dry_run.sh")], capture_output=True, text=True,
                          timeout=1500)
    if done.returncode == 77:
        pytest.skip(done.stdout.strip().splitlines()[-1])
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    out = done.stdout
    assert "device_run.sh: exit 2, one line: device_run: no CUDA device" in out
    assert "5 nodes registered" in out and f"{len(run_all.ORDER)} of {len(run_all.ORDER)} runs listed" in out
