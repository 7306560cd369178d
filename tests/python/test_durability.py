"""zc_nodes.durability: shots on disk before a prompt is recorded as done, stop signals that
write them first and then do what the handler before did, and a spill failure told where the
user looks (log line, spill_failed event for the Store's badge, a toast), never in silence.

Faults are real: the write fails because the process's file-size limit (RLIMIT_FSIZE, with
SIGXFSZ ignored) makes it fail with EFBIG, in a child process so pytest's own files are not
limited; signals are real signals sent to a real child process.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from zc_pack.zc_nodes import durability

REPO = Path(__file__).resolve().parents[2]
POSIX_ONLY = pytest.mark.skipif(os.name == "nt", reason="skipped: POSIX signals and RLIMIT_FSIZE")


def _latent(seed: int):
    import torch
    return {"latent_tensor": torch.randn(1, 16, 3, 32, 32, generator=torch.Generator().manual_seed(seed))}


def test_the_prompt_end_writes_the_stored_shots_before_the_history_records_it(held_store, tmp_path):
    seen = {}

    class Queue:  # stands in for execution.PromptQueue: the method ComfyUI's worker calls
        def task_done(self, item_id, history_result, status=None, process_item=None):
            seen["files"] = sorted(p.name for p in (tmp_path / "spill").glob("*.latent"))
            seen["args"] = (item_id, history_result, status, process_item)

    assert durability._wrap_task_done(Queue)
    assert durability._wrap_task_done(Queue)  # once only
    generation = held_store.put("film", _latent(1), spill=True)
    durability.note_stored("film", generation, "7")
    assert list((tmp_path / "spill").glob("*.latent")) == []  # held back by the delay
    Queue().task_done(3, {"outputs": {}}, status="ok", process_item=None)
    assert seen["files"] == [f"film@{generation:020d}.latent"]
    assert seen["args"] == (3, {"outputs": {}}, "ok", None)


def test_a_prompt_that_stored_nothing_costs_no_flush(held_store, monkeypatch):
    calls = []
    monkeypatch.setattr(held_store, "flush", lambda: calls.append(1))
    assert durability.make_durable() is True
    assert calls == []


FAILING_SPILL = textwrap.dedent("""
    import json, resource, signal, sys
    sys.path.insert(0, sys.argv[1])
    import torch
    from zc_pack.zc_engine import LatentStore
    from zc_pack import zc_log as log
    from zc_pack.zc_nodes import durability, runtime, ui_events
    import logging
    lines = []
    class Keep(logging.Handler):
        def emit(self, record):
            lines.append((record.levelname, record.getMessage()))
    log.logger.addHandler(Keep())
    log.logger.setLevel(logging.INFO)
    sent = []
    ui_events.send = lambda event, data: sent.append((event, data)) or True
    store = LatentStore(spill_dir=sys.argv[2], spill_delay_ms=60000)
    runtime._store = store
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    old = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (1024, old[1]))
    latent = {"latent_tensor": torch.randn(1, 16, 3, 32, 32)}
    generation = store.put("film", latent, spill=True)
    durability.note_stored("film", generation, "12")
    ok = durability.make_durable()
    listing = store.describe()
    kept = torch.equal(store.get("film", generation).tensors["latent_tensor"], latent["latent_tensor"])
    resource.setrlimit(resource.RLIMIT_FSIZE, old)
    healed = durability.make_durable()
    print(json.dumps({"ok": ok, "healed": healed, "generation": generation, "lines": lines,
                      "sent": sent, "kept": kept, "memory_only": listing["stats"]["memory_only"],
                      "problem": listing["spill_problem"],
                      "files": sorted(p.name for p in store.spill_dir.glob("*.latent"))}))
    store.close()
""")


@POSIX_ONLY
def test_a_spill_that_fails_is_told_in_the_log_on_the_badge_and_in_a_toast(tmp_path):
    spill = tmp_path / "spill"
    proc = subprocess.run([sys.executable, "-c", FAILING_SPILL, str(REPO), str(spill)],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.splitlines()[-1])
    gen = out["generation"]
    assert out["ok"] is False and out["kept"] and out["memory_only"] == 1
    errors = [text for level, text in out["lines"] if level == "ERROR"]
    assert len(errors) == 1, out["lines"]
    assert f"film generation {gen}" in errors[0] and str(spill) in errors[0]
    assert os.strerror(27) in errors[0]  # EFBIG: "File too large", the real cause
    events = {event: data for event, data in out["sent"]}
    failed = events[durability.FAILED_EVENT]
    assert failed["node"] == "12" and failed["tag"] == "film" and failed["generation"] == gen
    assert str(spill) not in failed["message"] and "<spill folder>/" in failed["message"]
    toast = events["zerocopy.warning"]
    assert toast["severity"] == "error" and "NOT saved to disk" in toast["title"]
    # the toast is the user's: the folder they set, the cause, what a restart does, the fitting fix
    assert f"spill folder {spill}:" in toast["message"], toast["message"]
    assert "File too large" in toast["message"] and "a restart of ComfyUI loses them" in toast["message"]
    assert "file-size limit" in toast["message"] and "free space" not in toast["message"]
    assert ".zc-tmp-" not in toast["message"]
    # The limit lifted: the next prompt end writes the pinned shot and says so.
    assert out["healed"] is True
    assert out["files"] == [f"film@{gen:020d}.latent"]
    assert any("on disk again" in text for _, text in out["lines"])
    assert "zerocopy.buffers" in events


SIGNAL_CHILD = textwrap.dedent("""
    import os, signal, sys, time
    sys.path.insert(0, sys.argv[1])
    import torch
    from zc_pack.zc_engine import LatentStore
    from zc_pack.zc_nodes import durability, runtime
    mode = sys.argv[3]
    marker = os.path.join(sys.argv[2], "previous-handler-saw")
    if mode == "chain":
        def previous(signum, frame):  # ComfyUI's or another pack's handler, installed first
            files = sorted(f for f in os.listdir(os.path.join(sys.argv[2], "spill")) if f.endswith(".latent"))
            open(marker, "w").write(",".join(files))
            sys.exit(0)
        signal.signal(signal.SIGTERM, previous)
    elif mode == "ignore":
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
    print(",".join(durability.install_signal_handlers()), flush=True)
    store = LatentStore(spill_dir=os.path.join(sys.argv[2], "spill"), spill_delay_ms=60000)
    runtime._store = store
    generation = store.put("film", {"latent_tensor": torch.randn(1, 16, 3, 32, 32)}, spill=True)
    durability.note_stored("film", generation, None)
    print("stored", generation, flush=True)
    for _ in range(600):  # at most 60 s: the test's signal ends it long before
        time.sleep(0.1)
    print("still running", flush=True)
    store.close()
""")


def _child(tmp_path, mode):
    proc = subprocess.Popen([sys.executable, "-c", SIGNAL_CHILD, str(REPO), str(tmp_path), mode],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    installed = proc.stdout.readline().strip().split(",")
    assert proc.stdout.readline().startswith("stored 1"), proc.stderr.read()
    return proc, installed


def _spilled(tmp_path):
    """The complete spill files (a write in progress is a ".zc-tmp-*" file until its rename)."""
    return sorted(p.name for p in (tmp_path / "spill").glob("film@*.latent"))


@POSIX_ONLY
@pytest.mark.parametrize("sig", [signal.SIGTERM, getattr(signal, "SIGHUP", signal.SIGTERM)])
def test_a_stop_signal_writes_the_shot_then_takes_the_default_action(tmp_path, sig):
    proc, installed = _child(tmp_path, "default")
    assert {"SIGTERM", "SIGHUP"} <= set(installed)
    proc.send_signal(sig)
    assert proc.wait(timeout=60) == -sig  # the default action: ended by the signal, as before
    assert _spilled(tmp_path) == [f"film@{1:020d}.latent"]


@POSIX_ONLY
def test_a_stop_signal_writes_the_shot_before_the_previous_handler_runs(tmp_path):
    proc, _ = _child(tmp_path, "chain")
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 0  # the previous handler's own exit
    assert (tmp_path / "previous-handler-saw").read_text() == f"film@{1:020d}.latent"


@POSIX_ONLY
def test_an_ignored_signal_stays_ignored_after_the_shot_is_written(tmp_path):
    proc, _ = _child(tmp_path, "ignore")
    proc.send_signal(signal.SIGHUP)
    deadline_files = []
    for _ in range(100):  # at most 10 s for the handler to write the file
        deadline_files = _spilled(tmp_path)
        if deadline_files:
            break
        time.sleep(0.1)
    assert deadline_files == [f"film@{1:020d}.latent"]
    assert proc.poll() is None  # still running: the user had ignored SIGHUP
    proc.kill()
    proc.wait(timeout=30)


def test_signal_handlers_are_installed_only_from_the_main_thread():
    import threading
    result = []
    thread = threading.Thread(target=lambda: result.append(durability.install_signal_handlers()))
    thread.start()
    thread.join()
    assert result == [[]]


def test_the_listing_never_names_a_generation_that_exists_nowhere():
    from zc_pack.zc_nodes.api.buffers import buffers_doc
    description = {"spill_dir": "/srv/x/spill", "spill_problem": 'the spill of tag "f" generation 9 failed: '
                   'cannot create "/srv/x/spill/.zc-tmp-1-f@00000000000000000009.latent": No space left on device',
                   "tags": [{"tag": "f", "depth": 4, "last_generation": 10, "disk_generations": [3, 4],
                             "slots": [{"generation": 9, "spill": "failed", "tensors": [], "meta": {}}]}],
                   "stats": {"memory_only": 1}}
    doc = buffers_doc(description)
    entry = doc["buffers"][0]
    assert entry["newest_generation"] == 9  # 10 was handed out, but that shot exists nowhere
    assert entry["memory_only"] == [9] and entry["slots"][0]["spill"] == "failed"
    assert "/srv/x" not in doc["spill_problem"] and "No space left on device" in doc["spill_problem"]
