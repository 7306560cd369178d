"""The measuring helpers every section shares (bench/common.py) and the rows the engine and overhead
sections compute from their figures. The figures here are made up to drive the row logic; no
timing is measured or asserted."""

from __future__ import annotations

import gc
import weakref

import pytest
import torch

from bench import common
from bench.common import FAIL, INFO, NOT_MEASURED, PASS, Probe, interleaved, rotation
from bench.sections import engine, overhead

# --------------------------------------------------------------------------- interleaving


def test_the_order_rotates_so_every_side_takes_every_place():
    orders = [rotation(i, ["a", "b", "c"]) for i in range(3)]
    assert orders == [["a", "b", "c"], ["b", "c", "a"], ["c", "a", "b"]]
    assert [rotation(i, ["x", "y"]) for i in range(2)] == [["x", "y"], ["y", "x"]]  # two sides: alternating


def test_interleaved_sleeps_the_idle_gap_before_every_timed_call_untimed(monkeypatch):
    events = []
    monkeypatch.setattr(common.time, "sleep", lambda s: events.append(("sleep", s)))
    sides = {"a": lambda: events.append("a"), "b": lambda: events.append("b")}
    out = interleaved(sides, 2, lambda name, _: events.append(f"after {name}"),
                      before=lambda name: events.append(f"before {name}"), idle=0.3)
    assert events == ["before a", ("sleep", 0.3), "a", "after a", "before b", ("sleep", 0.3), "b", "after b",
                      "before b", ("sleep", 0.3), "b", "after b", "before a", ("sleep", 0.3), "a", "after a"]
    assert {k: len(v) for k, v in out.items()} == {"a": 2, "b": 2}


def test_without_an_idle_gap_nothing_sleeps(monkeypatch):
    monkeypatch.setattr(common.time, "sleep", lambda s: pytest.fail("slept"))
    interleaved({"a": lambda: None}, 3)


def test_a_sides_result_is_freed_before_the_next_side_runs():
    """Sides that allocate (clone vs put) must each find the memory the other freed."""
    class Buffer:
        pass
    alive = []

    def make():
        buffer = Buffer()
        alive.append(weakref.ref(buffer))
        return buffer

    def check():
        gc.collect()
        assert all(ref() is None for ref in alive), "the previous side's result is still alive"
    interleaved({"make": make, "check": check}, 4)


def test_a_probe_reads_its_counters_around_each_call():
    counter = iter(range(100))
    probe = Probe(lambda: (next(counter), 10))
    interleaved({"a": lambda: None, "b": lambda: None}, 3, probe=probe)
    assert probe.deltas == {"a": [(1, 0)] * 3, "b": [(1, 0)] * 3}


# --------------------------------------------------------------------------- engine rows


def summary(value, reps=5):
    return {"median": value, "min": value, "max": value, "reps": reps}


def engine_figures(*, put_ratio=1.0, get_s=12e-6, digest_ratio=0.6, disk_ratio=0.8, growth=0, cold=True):
    put = {"shape": [1, 16, 128, 128], "bytes": 1 << 20,
           "seconds": {k: summary(1e-4) for k in ("clone", "put", "add_copy", "memcpy", "digest")},
           "cpu_time_ratio_per_rep": summary(put_ratio), "page_faults_per_op_median": {"clone": 0, "put": 0,
                                                                                        "add_copy": 0},
           "ratio_per_rep": summary(put_ratio), "ratio_of_medians": put_ratio, "wall_over_cpu_median": 1.0,
           "bandwidth_GBps": {k: 10.0 for k in ("clone", "put", "add_copy", "memcpy", "digest")}}
    restore = {"seconds": {k: summary(0.1) for k in ("dd", "restore", "file_read_prefaulted")},
               "ratio_per_rep": summary(disk_ratio), "dd_read_Bps_median": 2e9, "restore_Bps_median": 1.6e9,
               "file_read_prefaulted_Bps_median": 1.7e9}
    return {
        "E1a": {**put, "shape": [1, 16, 21, 90, 160], "bytes": 19_353_600}, "E1b": put,
        "E2": {"calls_per_rep": 10, "sizes": {label: {"get_seconds": summary(get_s * (2 if i == 3 else 1)),
                                                      "p99_seconds": get_s, "release_seconds_median": 1e-6}
                                              for i, (label, _) in enumerate(engine.GET_SIZES)}},
        "E3": {"bytes": 1 << 30, "in_cache_bytes": 1 << 20, "ratio_per_rep": summary(digest_ratio),
               "bandwidth_Bps": {"digest": summary(6e9), "memcpy": summary(11e9)}, "digest_equals_reference": True},
        "E4a": {"ratio_per_rep": summary(disk_ratio), "spill_write_Bps_median": 1.4e9, "dd_write_Bps_median": 1.7e9},
        "E4b": {"drop_caches": cold, "why_not_dropped": None if cold else "not permitted (needs root)",
                **({"cold": restore} if cold else {}), "warm": restore},
        "E5": {"rss_after_warmup": 100 << 20, "rss_after_cycles": (100 << 20) + growth, "slot_bytes": 1 << 20,
               "stats_at_end": {"slots": 4, "retained_bytes": 0}, "seconds_per_cycle": 1e-4,
               "page_faults_per_cycle": 0},
        "E6": {"bytes": 256 << 20, "seconds": {"fresh": summary(0.1), "prefaulted": summary(0.03)},
               "fault_ns_per_byte": 0.27, "fault_ns_per_4k_page": 1100.0},
    }


CONFIG = {"bw_bytes": 1 << 30, "spill_mib": 256, "rss_cycles": 10_000, "drop_caches": True,
          "touch_bytes": 256 << 20}


def test_engine_rows_hold_every_goal_of_the_original_spec():
    rows = {r.id: r for r in engine.rows_for(engine_figures(), CONFIG)}
    assert list(rows) == ["E1a", "E1b", "E2", "E3", "E4a", "E4b", "E4c", "E5", "E6"]
    assert all(rows[i].result == PASS for i in ("E1a", "E1b", "E3", "E4a", "E4b", "E5"))
    assert rows["E4c"].result == INFO and rows["E6"].result == INFO
    assert rows["E2"].result == FAIL  # 256 MiB at twice the 4 KiB median: not flat (≤ 1.5)
    assert rows["E1b"].goal == "put ≤ 1.3 × clone" and rows["E3"].goal == "digest ≥ 0.5 × memcpy"


@pytest.mark.parametrize("change, row", [({"put_ratio": 1.31}, "E1b"), ({"digest_ratio": 0.49}, "E3"),
                                         ({"disk_ratio": 0.69}, "E4a"), ({"growth": (1 << 20) + 1}, "E5")])
def test_engine_rows_fail_past_their_goal(change, row):
    rows = {r.id: r for r in engine.rows_for(engine_figures(**change), CONFIG)}
    assert rows[row].result == FAIL


def test_engine_get_goal_is_fifty_microseconds_at_every_size():
    figures = engine_figures(get_s=30e-6)
    figures["E2"]["sizes"]["256 MiB"]["get_seconds"] = summary(51e-6)
    assert {r.id: r for r in engine.rows_for(figures, CONFIG)}["E2"].result == FAIL


def test_restore_without_a_page_cache_drop_says_so_and_has_no_warm_info_row():
    rows = {r.id: r for r in engine.rows_for(engine_figures(cold=False), CONFIG)}
    assert "(warm)" in rows["E4b"].figure and "not permitted" in rows["E4b"].measured and "E4c" not in rows


def test_a_figure_that_raised_is_a_fail_with_the_error():
    figures = engine_figures()
    figures["E3"] = {"error": "RuntimeError: boom"}
    row = {r.id: r for r in engine.rows_for(figures, CONFIG)}["E3"]
    assert row.result == FAIL and "boom" in row.measured


# --------------------------------------------------------------------------- overhead: memcpy and the hot path


def test_the_memcpy_side_copies_every_stream():
    streams = [torch.randn(3, 5), torch.randn(7)]
    copy = overhead.Memcpy(streams)
    copy()
    assert len(copy.pairs) == 2 and all(torch.equal(orig, dst) for (_, dst), orig in zip(copy.pairs, streams))


def shape_result(key, *, ours, file, memcpy, reps=5):
    label = next(s.label for s in overhead.SHAPES if s.key == key)
    return {"key": key, "label": label, "ours": [ours] * reps, "file": [file] * reps, "memcpy": [memcpy] * reps,
            "idle_s": overhead.IDLE_S, "reps": reps}


def test_hot_path_rows_check_the_three_goals_of_the_issue():
    results = [shape_result("wan21_720p", ours=2.0, file=20.0, memcpy=1.5),
               shape_result("flux_1024", ours=1.0, file=3.0, memcpy=0.2)]
    rows = {r.id: r for r in overhead.hot_path_rows(results, via_nodes=True)}
    assert [rows[i].result for i in ("H1", "H2", "H3")] == [PASS, PASS, PASS]
    assert rows["H1"].goal == "ours ≤ 0.2 × file route" and "SaveLatent→LoadLatent" in rows["H1"].figure
    assert rows["H2"].goal == "ours ≤ 1.5 × memcpy" and f"{overhead.IDLE_S:g} s idle" in rows["H2"].measured
    results = [shape_result("wan21_720p", ours=5.0, file=20.0, memcpy=1.5),
               shape_result("flux_1024", ours=2.0, file=3.0, memcpy=0.2)]
    rows = {r.id: r for r in overhead.hot_path_rows(results, via_nodes=False)}
    assert [rows[i].result for i in ("H1", "H2", "H3")] == [FAIL, FAIL, FAIL]
    assert "safetensors file + fsync" in rows["H1"].figure


def test_hot_path_rows_without_the_shape_say_not_measured():
    rows = overhead.hot_path_rows([{"key": "flux_1024", "label": "FLUX", "unavailable": "no FLUX here"}], True)
    assert [r.result for r in rows] == [NOT_MEASURED] * 3
    assert "no FLUX here" in rows[2].measured
