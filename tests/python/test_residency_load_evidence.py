"""Per-run evidence: summaries, the run cap, and VBAR signature comparison."""

from __future__ import annotations

import ctypes

from residency_fakes import PAGE, FakeModule

from zc_pack.zc_residency.load_evidence import (
    OUTSIDE_RUN,
    RUNS_KEPT,
    LockEvidence,
    RunEvidence,
    recopied_bytes,
    signature_snapshot,
)


def test_summary_of_a_run_that_moved_nothing():
    run = RunEvidence("0123456789abcdef", load_calls=1, load_seconds=0.00004, free_memory_kept=2)
    assert run.summary(False) == ("run 01234567: 1 load call (0.04 ms), 0 B loaded, "
                                  "kept through 2 free_memory calls")
    assert RunEvidence(OUTSIDE_RUN, unload_refusals=1).summary(True) == (
        "outside a queue run: 0 load calls (0.00 ms), 0 B loaded + 0 B copied into VBAR pages, "
        "1 unload request refused")


def test_runs_are_capped_oldest_first():
    evidence = LockEvidence()
    for i in range(RUNS_KEPT + 3):
        evidence.run(f"run-{i}").load_calls += 1
    assert len(evidence.runs) == RUNS_KEPT and next(iter(evidence.runs)) == "run-3"
    assert [r.run_id for r in evidence.recent(2)] == [f"run-{RUNS_KEPT + 1}", f"run-{RUNS_KEPT + 2}"]
    assert evidence.run(None) is evidence.run(OUTSIDE_RUN)


def test_signatures_compare_by_value_including_ctypes_arrays():
    signature = (ctypes.c_uint32 * 2)(7, 9)
    modules = {"a": FakeModule(PAGE, signature), "b": FakeModule(2 * PAGE, None), "c": object()}
    current, sizes = signature_snapshot(modules.items())
    assert set(current) == {"a", "b"} and current["b"] is None and sizes == {"a": PAGE, "b": 2 * PAGE}
    assert recopied_bytes(None, current, sizes) == PAGE  # first look: what has a signature was copied
    assert recopied_bytes(current, dict(current), sizes) == 0
    changed = dict(current, a=bytes((ctypes.c_uint32 * 2)(8, 9)), b=b"\x01")
    assert recopied_bytes(current, changed, sizes) == 3 * PAGE


def test_as_dict_is_json_ready():
    import json
    evidence = LockEvidence()
    evidence.run("r1").bytes_loaded = 5
    evidence.last_reload = (1.0, 0.5, 5)
    data = evidence.as_dict(dynamic=False)
    json.dumps(data)
    assert data["last_reload_bytes"] == 5 and data["runs"][0]["bytes_copied_into_vbar"] is None
