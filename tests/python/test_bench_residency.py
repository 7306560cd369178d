"""The residency benchmark section's pure parts: rows from measured figures and the NOT MEASURED
paths. The measuring itself needs ComfyUI: tests/integration/test_bench_sections.py; its GPU rows
are the gpu section's (tests/python/test_bench_gpu_rows.py)."""

from __future__ import annotations

import json

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


def test_without_comfyui_every_row_is_not_measured(tmp_path):
    ctx = Context(mode="smoke", out_dir=tmp_path, tmp_dir=tmp_path, comfyui_path=None)
    section = residency.run(ctx)
    assert [r.id for r in section.rows] == ["R1", "R2", "R3"]
    assert all(r.result == NOT_MEASURED and r.measured == residency.NEEDS_COMFYUI for r in section.rows)
    assert section.plots == [] and "not measured" in section.details.lower()
    assert "bench/gpu/run_all.py" in section.details  # where its GPU rows come from
    json.dumps(section.to_json())


def test_plot_writes_the_png(tmp_path):
    residency.plot(tmp_path / "residency.png", cpu_figures())
    assert (tmp_path / "residency.png").stat().st_size > 1000
    assert "| 1 |" in residency.details(cpu_figures())

