"""The benchmark program runs end to end and writes well-formed results (bench/run.py --smoke).

No figure is judged here (speed goals belong to the benchmark's own run, never to a timed
test); this checks that the program works on a fresh checkout without ComfyUI or a GPU: every
section runs (the engine's in its own child process), the JSON, Markdown and PNG files come
out, rows that need ComfyUI or a GPU say NOT MEASURED with the reason, and the latent
handoff's drift is exactly zero.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench")
    env = {k: v for k, v in os.environ.items() if k != "COMFYUI_PATH"}
    proc = subprocess.run([sys.executable, str(REPO / "bench" / "run.py"), "--smoke", "--out", str(out)],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return out, json.loads((out / "bench.json").read_text()), proc


def test_every_section_ran_and_wrote_its_files(smoke_run):
    out, doc, _ = smoke_run
    assert [s["name"] for s in doc["sections"]] == ["engine", "overhead", "drift", "residency", "scale",
                                                    "padding", "farm", "film", "gpu"]
    assert doc["failures"] == []
    for section in doc["sections"]:
        assert section["rows"], section["name"]
        for plot in section["plots"]:
            assert (out / plot).read_bytes()[:8] == PNG_MAGIC, plot
    md = (out / "bench.md").read_text()
    assert "| # | Figure | Goal | Measured | Result |" in md and "ComfyUI: not used" in md


def says_why_not_measured(row: dict) -> bool:
    m = row["measured"]
    return m.startswith("not measured") or "COMFYUI_PATH" in m or "GPU" in m or "--vae" in m


def test_rows_without_comfyui_or_gpu_say_not_measured_and_why(smoke_run):
    _, doc, _ = smoke_run
    rows = {r["id"]: r for s in doc["sections"] for r in s["rows"]}
    assert all(r["result"] in ("PASS", "FAIL", "INFO", "NOT MEASURED") for r in rows.values())
    not_measured = [r for r in rows.values() if r["result"] == "NOT MEASURED"]
    assert not_measured and all(says_why_not_measured(r) for r in not_measured), not_measured
    residency = next(s for s in doc["sections"] if s["name"] == "residency")
    assert all(r["result"] == "NOT MEASURED" for r in residency["rows"])
    gpu = next(s for s in doc["sections"] if s["name"] == "gpu")
    assert gpu["rows"] and all(r["result"] == "NOT MEASURED" and "run_all.py has not run" in r["measured"]
                               for r in gpu["rows"])
    md = (smoke_run[0] / "bench.md").read_text()
    assert "- GPU rows (G): NOT MEASURED" in md


def test_the_engine_section_measured_every_figure_in_its_child_process(smoke_run):
    _, doc, _ = smoke_run
    engine = next(s for s in doc["sections"] if s["name"] == "engine")
    assert [r["id"] for r in engine["rows"]] == ["E1a", "E1b", "E2", "E3", "E4a", "E4b", "E5", "E6"]
    assert all(r["result"] in ("PASS", "FAIL", "INFO") for r in engine["rows"]), engine["rows"]
    figures = engine["data"]["figures"]
    assert not [fid for fid, f in figures.items() if "error" in f]
    assert engine["data"]["config"]["mode"] == "smoke" and not engine["data"]["config"]["drop_caches"]
    assert figures["E2"]["sizes"].keys() == {"4 KiB", "1 MiB", "19.4 MB", "256 MiB"}
    assert figures["E3"]["digest_equals_reference"] in (True, None)  # None: xxhash not installed
    assert "What was timed" in engine["details"]


def test_our_handoff_has_zero_drift_and_the_store_scales(smoke_run):
    _, doc, _ = smoke_run
    drift = next(s for s in doc["sections"] if s["name"] == "drift")
    assert drift["rows"][0]["result"] == "PASS", drift["rows"][0]
    overhead = next(s for s in doc["sections"] if s["name"] == "overhead")
    assert overhead["data"]["route_ours"] == "engine (no ComfyUI)"
    measured = [s for s in overhead["data"]["shapes"] if "error" not in s]
    assert measured and all(len(s["ours"]) == len(s["file"]) == len(s["memcpy"]) == s["reps"] for s in measured)
    assert all(s["idle_s"] == overhead["data"]["idle_s"] > 0 for s in measured)
    hot = [r for r in overhead["rows"] if r["id"].startswith("H")]
    assert [r["id"] for r in hot] == ["H1", "H2", "H3"]  # smoke mode has neither shape: not measured, and why
    assert all(r["result"] == "NOT MEASURED" and "not measured in this mode" in r["measured"] for r in hot)


def test_without_redis_server_the_farm_rows_say_not_measured_and_the_command(tmp_path):
    """A newcomer's machine has no redis-server; the farm rows are NOT MEASURED, say why
    and how to install it, and nothing fails. redis-server is really hidden: the program runs
    with a PATH of symlinks to every program but it."""
    from hidden_tools import NEWCOMER_LACKS, path_without

    env = {k: v for k, v in os.environ.items() if k != "COMFYUI_PATH"}
    env["PATH"] = path_without(NEWCOMER_LACKS, tmp_path / "bin")
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, str(REPO / "bench" / "run.py"), "--smoke", "--only", "farm", "gpu",
                           "--out", str(out)], capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    doc = json.loads((out / "bench.json").read_text())
    assert doc["failures"] == [] and [s["name"] for s in doc["sections"]] == ["farm", "gpu"]
    farm = next(s for s in doc["sections"] if s["name"] == "farm")
    assert [r["id"] for r in farm["rows"]] == ["F1", "F2", "F3"]
    for row in farm["rows"]:
        assert row["result"] == "NOT MEASURED" and says_why_not_measured(row), row
        assert row["measured"] == ("not measured: no redis-server "
                                   "(Debian: apt-get install redis-server; .ci/run installs it)"), row
