"""No shot lost, and never in silence, on a real ComfyUI server (``main.py --cpu``).

Each test starts a server whose custom_nodes/ links this pack and the test nodes, queues real
prompts over HTTP (ZCTestSeededLatent -> ZeroCopyLatentStore, 4.4 MB a shot), and then does to
it what users' machines do:

- a stop signal (SIGTERM, SIGHUP) sent right after the Store's log line, while the prompt is
  still running (a ZCTestHold node keeps it busy): the shot is on disk afterwards;
- SIGKILL right after /history says success: the shot is on disk and verifies;
- a full disk: the spill folder on a real 20 MiB tmpfs (mounted by the test; skipped with the
  reason where this process may not mount). Ten shots: retention frees older files, so the newest
  reach the disk and a restart finds the newest generation. Then the disk filled by a foreign
  file and a new film (nothing of its own to prune): its shot is pinned in memory, the log says
  NOT ON DISK with tag, generation, folder and cause, the listing marks it memory-only without
  showing the folder, and once space is free again the next prompt writes it;
- the spill folder removed mid-run: it is created again and the next shot lands there.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
import urllib.request
import uuid
from pathlib import Path

import pytest
from comfy_server import Server, get

REPO = Path(__file__).resolve().parents[2]
ZC = REPO / "build" / "zc"
SHOT = {"channels": 16, "frames": 3, "height": 152, "width": 152}  # 4.43 MB of float32
TAG = "durable_film"
WAIT_S = 60


def _base(tmp_path: Path) -> Path:
    base = tmp_path / "comfy_base"
    (base / "custom_nodes").mkdir(parents=True)
    os.symlink(REPO, base / "custom_nodes" / "ComfyUI-ZeroCopy-Continuity")
    os.symlink(REPO / "tools" / "standins" / "zc_test_nodes", base / "custom_nodes" / "zc_test_nodes")
    return base


@pytest.fixture
def start(tmp_path, comfyui):
    """start(spill=None) -> a ready Server; every one started is stopped at the end."""
    if not (REPO / "build" / "libzc.so").is_file():
        pytest.skip("skipped: the C engine is not built (make)")
    started = []
    base = _base(tmp_path)

    def run(spill: Path | None = None, name: str = "server") -> Server:
        srv = Server(base, tmp_path / f"{name}-{len(started)}.log", spill=spill)
        started.append(srv)
        srv.wait_ready()
        return srv

    yield run
    for srv in started:
        if srv.process.poll() is None:
            srv.stop()
        else:
            srv.log.close()


def _post(url: str, body: dict) -> dict:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def _prompt(seed: int, hold_s: float = 0.0, tag: str = TAG) -> dict:
    graph = {
        "1": {"class_type": "ZCTestSeededLatent", "inputs": {"seed": seed, "scale": 1.0, "shift": 0.0, **SHOT}},
        "2": {"class_type": "ZeroCopyLatentStore", "inputs": {"samples": ["1", 0], "buffer_tag": tag}},
    }
    if hold_s:
        graph["3"] = {"class_type": "ZCTestHold", "inputs": {"samples": ["2", 0], "seconds": hold_s}}
    return graph


def queue(srv: Server, seed: int, hold_s: float = 0.0, tag: str = TAG) -> str:
    return _post(srv.url + "/prompt", {"prompt": _prompt(seed, hold_s, tag), "client_id": uuid.uuid4().hex})["prompt_id"]


def wait_success(srv: Server, prompt_id: str) -> dict:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:  # bounded, 50 ms apart
        status, _, body = get(f"{srv.url}/history/{prompt_id}")
        entry = json.loads(body).get(prompt_id) if status == 200 else None
        if entry and entry.get("status", {}).get("completed") is not None:
            assert entry["status"]["status_str"] == "success", entry["status"]
            return entry
        time.sleep(0.05)
    raise AssertionError(f"prompt {prompt_id} did not finish in {WAIT_S} s:\n{srv.tail()}")


def wait_log(srv: Server, text: str, after: int = 0) -> int:
    """Wait until the server's log holds text (past offset after); its offset."""
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:  # bounded, 5 ms apart: the signal must follow at once
        srv.log.flush()
        found = srv.log_path.read_text(errors="replace").find(text, after)
        if found >= 0:
            return found
        if srv.process.poll() is not None:
            break
        time.sleep(0.005)
    raise AssertionError(f"{text!r} not in the server log:\n{srv.tail()}")


def spill_files(spill: Path, tag: str = TAG) -> list[str]:
    return sorted(p.name for p in spill.glob(f"{tag}@*.latent"))


def generation_of(name: str) -> int:
    return int(name.split("@")[1].split(".")[0])


def verify(path: Path) -> None:
    proc = subprocess.run([str(ZC), "verify", str(path)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("signame", ["SIGTERM", "SIGHUP"])
def test_a_stop_signal_right_after_a_store_loses_nothing(start, tmp_path, signame):
    spill = tmp_path / "spill"
    srv = start(spill)
    queue(srv, seed=1, hold_s=20)  # still running when the signal comes
    wait_log(srv, f"stored tag '{TAG}' generation 1")
    srv.process.send_signal(getattr(signal, signame))
    code = srv.process.wait(timeout=30)
    log = srv.tail(200)
    assert code == -getattr(signal, signame), f"ended with {code}, not by the signal's default action:\n{log}"
    assert "stored shots are on disk; stopping" in log, log
    assert spill_files(spill) == [f"{TAG}@{1:020d}.latent"], log
    verify(spill / spill_files(spill)[0])


def test_sigkill_after_history_says_success_loses_nothing(start, tmp_path):
    spill = tmp_path / "spill"
    srv = start(spill)
    wait_success(srv, queue(srv, seed=2))
    srv.process.kill()  # at once: no exit hook runs
    srv.process.wait(timeout=30)
    assert spill_files(spill) == [f"{TAG}@{1:020d}.latent"], srv.tail()
    verify(spill / spill_files(spill)[0])


def _mount_tmpfs(path: Path, mib: int) -> None:
    path.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("skipped: mounting a small tmpfs needs root (CI runs as root)")
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={mib}m", "tmpfs", str(path)],
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        pytest.skip(f"skipped: this machine may not mount a tmpfs ({proc.stderr.strip()})")


@pytest.fixture
def small_disk(tmp_path):
    disk = tmp_path / "disk"
    _mount_tmpfs(disk, 20)
    yield disk
    subprocess.run(["umount", "-l", str(disk)], capture_output=True, check=False)


def buffers(srv: Server) -> dict:
    return json.loads(get(srv.url + "/api/zerocopy/buffers")[2])


def test_a_full_disk_keeps_the_newest_shots_and_says_what_is_not_on_disk(small_disk, start):
    # small_disk first: set up before the servers, so it is unmounted after they stopped
    spill = small_disk / "spill"
    srv = start(spill)
    for seed in range(10):  # 10 x 4.4 MB into 20 MiB: retention frees the older files
        wait_success(srv, queue(srv, seed=100 + seed))
    names = spill_files(spill)
    assert [generation_of(n) for n in names] == [7, 8, 9, 10], (names, srv.tail())
    doc = next(b for b in buffers(srv)["buffers"] if b["tag"] == TAG)
    assert doc["newest_generation"] == 10 and doc["memory_only"] == []

    # The disk full again: this time a new film's shot, so retention has nothing of its own to free.
    other = "second_film"
    free = shutil.disk_usage(small_disk).free
    with open(small_disk / "someone_elses_file.bin", "wb") as junk:
        junk.write(b"\0" * (free - (1 << 20)))
    wait_success(srv, queue(srv, seed=200, tag=other))
    offset = wait_log(srv, "NOT ON DISK")
    line = srv.log_path.read_text(errors="replace")[offset:].splitlines()[0]
    assert f"{other} generation 1" in line and str(spill) in line, line
    assert "No space left on device" in line, line
    listing = buffers(srv)
    doc = next(b for b in listing["buffers"] if b["tag"] == other)
    assert doc["memory_only"] == [1] and doc["newest_generation"] == 1
    assert doc["slots"][0]["spill"] == "failed"
    assert "No space left on device" in listing["spill_problem"]
    assert str(spill) not in json.dumps(listing) and str(small_disk) not in json.dumps(listing)
    assert spill_files(spill, other) == []

    # The user makes room (the foreign file, and the first film cleared with its files): the next
    # prompt writes the pinned shot and its own.
    os.remove(small_disk / "someone_elses_file.bin")
    request = urllib.request.Request(f"{srv.url}/api/zerocopy/buffers/{TAG}?disk=true", method="DELETE")
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.status == 200
    wait_success(srv, queue(srv, seed=201, tag=other))
    assert [generation_of(n) for n in spill_files(spill, other)] == [1, 2], srv.tail()
    assert next(b for b in buffers(srv)["buffers"] if b["tag"] == other)["memory_only"] == []
    wait_log(srv, "every stored shot is on disk again")
    srv.stop()

    again = start(spill, "restarted")  # a restart finds the newest generation, not an old one
    docs = {b["tag"]: b for b in buffers(again)["buffers"]}
    assert TAG not in docs and docs[other]["newest_generation"] == 2, docs


def test_a_spill_folder_removed_mid_run_is_created_again(start, tmp_path):
    spill = tmp_path / "spill"
    srv = start(spill)
    wait_success(srv, queue(srv, seed=300))
    shutil.rmtree(spill)
    wait_success(srv, queue(srv, seed=301))
    assert spill_files(spill) == [f"{TAG}@{2:020d}.latent"], srv.tail()
    wait_log(srv, "was removed while ComfyUI ran; it was created again")
