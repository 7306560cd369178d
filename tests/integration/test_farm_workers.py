"""The farm tier through real ComfyUI graphs: two worker processes, each running ComfyUI in-process
in its own base folder with its own spill folder, sharing nothing but a Redis server the test
starts, alternate the 20 shots of one film (the tiny random-weight Wan 2.1 DiT, ZCTest* text
encoder stand-ins). Every Handoff continues the shot the *other* worker stored, bit for bit, and
its certificate names that worker; a Load on one worker runs again when the other stores."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "python"))
from redis_server import RedisServer, skip_reason  # noqa: E402

SHOTS = 20
ANSWER = "ZC-FARM-ANSWER "


class WorkerProcess:
    def __init__(self, name: str, base: Path, redis_url: str, unet: Path, vae: Path):
        self.name = name
        env = dict(os.environ, ZEROCOPY_REDIS_URL=redis_url, ZEROCOPY_WORKER_ID=name,
                   ZEROCOPY_SPILL_DIR=str(base / "spill"), PYTHONUNBUFFERED="1")
        env.pop("ZEROCOPY_REDIS_PASSWORD", None)
        self.log = open(base / "worker.log", "w")
        self.proc = subprocess.Popen([sys.executable, str(HERE / "farm_worker.py"), str(base), str(unet), str(vae)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, text=True,
                                     env=env, cwd=str(base))
        self.lines: list[str] = []
        self.base = base

    def answer(self, timeout: float = 300) -> dict:
        result: dict = {}

        def read():
            for line in self.proc.stdout:
                if line.startswith(ANSWER):
                    result.update(json.loads(line[len(ANSWER):]))
                    return
                self.lines.append(line)

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        reader.join(timeout)
        assert result, f"worker {self.name} gave no answer (exit {self.proc.poll()}); log: " \
                       f"{(self.base / 'worker.log').read_text()[-3000:]}"
        assert "error" not in result, f"worker {self.name}: {result['error']}"
        return result

    def send(self, **command) -> dict:
        self.proc.stdin.write(json.dumps(command) + "\n")
        self.proc.stdin.flush()
        return self.answer()

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.send(op="quit")
            except (AssertionError, OSError):
                pass
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.log.close()


@pytest.fixture
def farm_workers(tmp_path, tiny_wan21_t2v, wan21_vae):
    reason = skip_reason()
    if reason:
        pytest.skip(reason)
    server = RedisServer(tmp_path / "redis").start()
    made = []
    try:
        for name in ("host-a:101", "host-b:202"):
            base = tmp_path / name.replace(":", "-")
            base.mkdir()
            made.append(WorkerProcess(name, base, server.url, tiny_wan21_t2v.path, wan21_vae.path))
        for worker in made:
            assert worker.answer()["ready"]
        yield made, server
    finally:
        for worker in made:
            worker.close()
        server.stop()


def test_two_workers_alternate_twenty_shots_bit_identical(farm_workers):
    (a, b), server = farm_workers
    first = a.send(op="first", seed=3)
    assert first["generation"] == 1 and first["published"]
    previous, previous_worker = first, a
    load_before = b.send(op="load")  # B reads the film through the farm before storing any of it
    assert load_before["ran"] and "from worker host-a:101 via the farm" in load_before["info"]
    assert load_before["tail"] == first["stored_tail"]
    generations = [first["generation"]]
    for number in range(2, SHOTS + 1):
        worker = b if previous_worker is a else a
        shot = worker.send(op="next", seed=10 + number)
        assert shot["handoff_ran"], f"shot {number}: the Handoff on {worker.name} did not run again"
        # the tail handed to this shot is the other worker's stored shot's tail, bit for bit
        assert shot["handoff_head"] == previous["stored_tail"], f"shot {number} on {worker.name}"
        assert len(base64.b64decode(shot["handoff_head"])) == 16 * 8 * 8 * 4
        info = shot["info"]
        assert f"ZeroCopy handoff: tag 'farm_film', generation {previous['generation']}\n" in info, info
        assert f"note: stored latent {previous['digest']} verified against its digest" in info, info
        assert "bit-identical: yes" in info, info
        assert f"from worker {previous_worker.name} via the farm" in info, info
        assert shot["published"]
        generations.append(shot["generation"])
        previous, previous_worker = shot, worker
    assert generations == list(range(1, SHOTS + 1))  # one number per shot, from Redis
    load_after = b.send(op="load")  # the same Load graph: runs again, now on the newest shot
    assert load_after["ran"] and load_after["tail"] == previous["stored_tail"]
    client = server.client()
    assert int(client.get("zc:tag:farm_film:next")) == SHOTS
    kept = [int(g) for g in client.zrange("zc:tag:farm_film:shots", 0, -1)]
    assert kept == list(range(SHOTS - 7, SHOTS + 1))  # ZEROCOPY_REDIS_KEEP's default, 8
    workers_of = {int(g): client.hget(f"zc:tag:farm_film:shot:{g}", "worker").decode() for g in kept}
    assert workers_of == {g: ("host-a:101" if g % 2 else "host-b:202") for g in kept}
    # the farm link as the REST API and the sidebar see it
    status = b.send(op="farm")
    assert (status["enabled"], status["source"], status["worker"], status["connected"], status["pending"]) == \
        (True, "environment", "host-b:202", True, 0)
    assert status["counts"]["fetched"] == SHOTS // 2 and status["counts"]["allocated"] == SHOTS // 2
    assert [(t["tag"], t["generation"], t["worker"]) for t in status["tags"]] == [("farm_film", SHOTS, "host-b:202")]
    assert b.send(op="farm", url="")["source"] == "environment"  # the settings panel's empty value
