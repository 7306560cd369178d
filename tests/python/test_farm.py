"""The farm tier (zc_farm) against a real Redis server started by the tests: shots crossing
between workers that share nothing but Redis, the newest N kept per tag, chunked values, Redis
stopped in the middle of a publish, a partitioned worker whose local numbers another worker
took, a corrupted blob, the events, passwords, and two processes racing 500 puts each."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time

import pytest
import torch

from conftest import REPO, same_bits
from redis_server import RedisServer, TcpProxy, skip_reason
from zc_pack.zc_continuity import lineage
from zc_pack.zc_engine import CorruptFile, LatentStore

pytestmark = pytest.mark.skipif(skip_reason() is not None, reason=skip_reason() or "")

TAG = "film"


@pytest.fixture
def workers(server, new_farm):
    """make(name, **config) -> a Farm on its own store and spill folder; all closed at the end."""

    def make(name, url=None, store_dir=None, on_event=None, **options):
        return new_farm(url or server.url, name, store_dir=store_dir, on_event=on_event, **options)

    return make


def shot(seed: int, shape=(1, 16, 3, 16, 16)) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def lineage_of(parent: int, latent: torch.Tensor) -> str:
    from zc_pack.zc_engine import digest_tensor
    tail = digest_tensor(latent[:, :, -1:])
    return lineage.record(lineage.marker(parent_tag=TAG, parent_generation=parent, tail_frames=1,
                                         tail_digest=tail, used_digest=tail, adapter="temporal_inpaint", trim=1))


def record_of(server, generation: int) -> dict:
    raw = server.client().hgetall(f"zc:tag:{TAG}:shot:{generation}")
    return {k.decode(): v.decode() for k, v in raw.items()}


def test_a_shot_crosses_between_workers_bit_identical(workers, server):
    a, b = workers("host-a:1"), workers("host-b:2")
    first = shot(1)
    meta = {"family": "wan21", lineage.LINEAGE_KEY: lineage_of(7, first)}
    assert a.put(TAG, {"latent_tensor": first}, meta) == 1
    assert a.wait_published(10)
    pulled = b.pull(TAG)
    assert pulled.imported and pulled.record.worker == "host-a:1" and pulled.record.generation == 1
    got = b.store.get(TAG, verify=True)
    assert got.generation == 1 and same_bits(got.tensors["latent_tensor"], first)
    assert got.meta["family"] == "wan21" and got.meta[lineage.LINEAGE_KEY] == meta[lineage.LINEAGE_KEY]
    assert got.meta["farm_worker"] == "host-a:1" and got.meta["farm_numbered"] == "farm"
    assert b.pull(TAG) is None  # nothing newer
    second = shot(2)
    assert b.put(TAG, {"latent_tensor": second}, {"family": "wan21"}) == 2  # numbered above what B holds
    assert b.wait_published(10)
    assert a.newest_published(TAG)[0] == 2
    assert a.pull(TAG).record.worker == "host-b:2"
    assert same_bits(a.store.get(TAG).tensors["latent_tensor"], second)
    record = record_of(server, 2)
    assert record["worker"] == record["published_by"] == "host-b:2" and record["format"] == "zc-farm-1"
    assert json.loads(record["tensors"])[0]["digest"] == a.store.get(TAG).info["latent_tensor"].digest


def test_values_are_chunked_and_redis_keeps_the_newest_n(workers, server):
    a = workers("a", keep=3, chunk_bytes=64 << 10)
    for index in range(1, 11):
        a.put(TAG, {"latent_tensor": shot(index, (1, 16, 5, 32, 32))})
    assert a.wait_published(20)
    client = server.client()
    assert [int(g) for g in client.zrange(f"zc:tag:{TAG}:shots", 0, -1)] == [8, 9, 10]
    for generation in range(1, 8):
        assert not client.exists(f"zc:tag:{TAG}:shot:{generation}", f"zc:tag:{TAG}:blob:{generation}")
    size = int(record_of(server, 10)["size"])
    chunks = client.lrange(f"zc:tag:{TAG}:blob:10", 0, -1)
    assert size > 5 * (64 << 10) and len(chunks) == -(-size // (64 << 10))
    assert max(len(c) for c in chunks) == 64 << 10 and sum(len(c) for c in chunks) == size
    assert not list(client.scan_iter("zc:tag:*:upload:*"))  # no publish left half-way
    assert int(client.get(f"zc:tag:{TAG}:next")) == 10


def test_redis_stopped_mid_publish_then_started_nothing_lost(workers, server, monkeypatch, caplog):
    from zc_pack.zc_farm import transfer

    a = workers("a", chunk_bytes=64 << 10)
    b = workers("b")
    sent = []
    original = transfer.send_chunk

    def send_then_stop(client, key, chunk, first):
        original(client, key, chunk, first)
        sent.append(len(chunk))
        if len(sent) == 2:  # the publish of generation 1 is under way: the server dies
            server.stop()

    monkeypatch.setattr(transfer, "send_chunk", send_then_stop)
    caplog.set_level(logging.INFO, logger="zerocopy_continuity")
    shots = {1: shot(11, (1, 16, 4, 32, 32))}
    assert a.put(TAG, {"latent_tensor": shots[1]}) == 1  # allocated by Redis, published in the background
    assert not a.wait_published(1.5)  # the publish cannot land: Redis is gone
    assert len(sent) == 2
    for generation, seed in ((2, 12), (3, 13)):  # the worker goes on locally
        shots[generation] = shot(seed, (1, 16, 4, 32, 32))
        assert a.put(TAG, {"latent_tensor": shots[generation]}) == generation
    assert a.store.get(TAG, 3).meta["farm_numbered"] == "local"
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING and "unreachable" in r.getMessage()]
    assert len(warnings) == 1, [r.getMessage() for r in warnings]  # once, not per shot
    monkeypatch.setattr(transfer, "send_chunk", original)
    server.start()  # empty: this test's server keeps nothing across a restart
    assert a.wait_published(20)
    assert any("reachable again" in r.getMessage() for r in caplog.records)
    assert [int(g) for g in server.client().zrange(f"zc:tag:{TAG}:shots", 0, -1)] == [1, 2, 3]
    for generation, latent in shots.items():  # every shot landed, bit-identical, from a worker
        b.pull(TAG, generation)                # that shares nothing with A but Redis
        assert same_bits(b.store.get(TAG, generation, verify=True).tensors["latent_tensor"], latent)
        assert same_bits(a.store.get(TAG, generation, verify=True).tensors["latent_tensor"], latent)
    assert not list(server.client().scan_iter("zc:tag:*:upload:*"))


def test_a_partitioned_worker_never_overwrites_or_is_confused(workers, server, caplog):
    """B loses its network; both workers store shot 2 of the film; B also stores shot 3 (continuing
    its own 2). When B is back, A's 2 stays the farm's 2; B's shots are published under new farm
    numbers whose records name their local ones, and B's chain stays a chain."""
    proxy = TcpProxy(server.port).start()
    a, b = workers("a"), workers("b", url=proxy.url)
    a.put(TAG, {"latent_tensor": shot(1)})
    assert a.wait_published(10)
    b.pull(TAG)
    proxy.cut()
    b2, b3 = shot(22), shot(23)
    assert b.put(TAG, {"latent_tensor": b2}) == 2  # numbered locally: Redis unreachable for B
    assert b.put(TAG, {"latent_tensor": b3}, {lineage.LINEAGE_KEY: lineage_of(2, b2)}) == 3
    a2 = shot(21)
    assert a.put(TAG, {"latent_tensor": a2}) == 2  # numbered by Redis
    assert a.wait_published(10)
    caplog.set_level(logging.INFO, logger="zerocopy_continuity")
    proxy.restore()
    assert b.wait_published(20)
    client = server.client()
    assert [int(g) for g in client.zrange(f"zc:tag:{TAG}:shots", 0, -1)] == [1, 2, 4, 5]
    assert record_of(server, 2)["worker"] == "a"
    four, five = record_of(server, 4), record_of(server, 5)
    assert (four["worker"], four["renumbered_from"]) == ("b", "2")
    assert (five["worker"], five["renumbered_from"]) == ("b", "3")
    assert json.loads(five["meta"])["farm_lineage_parent_was"] == "2"
    assert json.loads(json.loads(five["meta"])[lineage.LINEAGE_KEY])["parent_generation"] == 4
    assert sum("another shot; stored again as generation" in r.getMessage() for r in caplog.records) == 2
    # B keeps its own 2 and 3 as they were, and holds the copies as 4 and 5
    assert same_bits(b.store.get(TAG, 2).tensors["latent_tensor"], b2)
    assert same_bits(b.store.get(TAG, 3).tensors["latent_tensor"], b3)
    assert same_bits(b.store.get(TAG, 4).tensors["latent_tensor"], b2)
    assert b.store.get(TAG, 4).meta["farm_renumbered_from"] == "2"
    # the farm's 2 (A's) is never taken for B's own 2, and never imported over it
    assert b.pull(TAG, 2) is None and same_bits(b.store.get(TAG, 2).tensors["latent_tensor"], b2)
    # A continues B's newest (5): a copy of B's 3, its lineage pointing at the farm's 4
    assert a.pull(TAG).record.generation == 5
    continued = a.store.get(TAG, verify=True)
    assert same_bits(continued.tensors["latent_tensor"], b3)
    assert json.loads(continued.meta[lineage.LINEAGE_KEY])["parent_generation"] == 4
    # ... and the pull of 5 imported its parent 4 with it (the film's ancestors come along)
    assert 4 in a.store.generations(TAG) and a.pull(TAG, 4) is None
    assert same_bits(a.store.get(TAG, 4).tensors["latent_tensor"], b2)
    assert same_bits(a.store.get(TAG, 2).tensors["latent_tensor"], a2)
    proxy.cut()


def published_blob(workers, server, seed: int):
    """host-a:1 publishes one shot of `seed` as generation 1 of TAG.
    -> (the worker host-b:2, a Redis client, the blob's key, the blob's bytes)."""
    a, b = workers("host-a:1"), workers("host-b:2")
    a.put(TAG, {"latent_tensor": shot(seed)}, {"family": "wan21"})
    assert a.wait_published(10)
    client = server.client()
    blob = f"zc:tag:{TAG}:blob:1"
    return b, client, blob, client.lindex(blob, 0)


def test_a_corrupted_blob_is_refused_and_nothing_local_changes(workers, server, tmp_path):
    b, client, blob, good = published_blob(workers, server, seed=5)
    bad = good[:-3] + bytes([good[-3] ^ 0x01]) + good[-2:]  # one bit of the last tensor bytes
    client.lset(blob, 0, bad)
    with pytest.raises(CorruptFile) as caught:
        b.pull(TAG)
    message = str(caught.value)
    for words in ("tag 'film' generation 1", "host-a:1", "does not match its digest", "nothing was stored"):
        assert words in message
    assert b.store.generations(TAG) == [] and not list((tmp_path / "spill-host-b:2").glob("film@*"))
    # the same damage with the record's blob digest made to match: the engine's tensor digest refuses it
    from zc_pack.zc_engine.store import digest_bytes
    client.hset(f"zc:tag:{TAG}:shot:1", "blob_digest", digest_bytes(bad))
    with pytest.raises(CorruptFile) as caught:
        b.pull(TAG)
    assert "refused by the engine" in str(caught.value) and "host-a:1" in str(caught.value)
    assert b.store.generations(TAG) == [] and not list((tmp_path / "spill-host-b:2").glob("film@*"))


def test_a_blob_whose_record_changed_is_refused_naming_the_field(workers, server, tmp_path):
    """One byte of the shot's header changed in Redis (its dtype F32 -> I32, the blob's digest made
    to match): the engine's record digest refuses the import, naming the tensor and the field."""
    b, client, blob, good = published_blob(workers, server, seed=6)
    at = good.index(b'"latent_tensor":{"dtype":"F32"') + len(b'"latent_tensor":{"dtype":"')
    bad = good[:at] + b"I" + good[at + 1:]
    client.lset(blob, 0, bad)
    from zc_pack.zc_engine.store import digest_bytes
    client.hset(f"zc:tag:{TAG}:shot:1", "blob_digest", digest_bytes(bad))
    with pytest.raises(CorruptFile) as caught:
        b.pull(TAG)
    message = str(caught.value)
    for words in ("refused by the engine", "host-a:1", 'tensor "latent_tensor" dtype is I32, was F32',
                  "nothing written"):
        assert words in message, message
    assert b.store.generations(TAG) == [] and not list((tmp_path / "spill-host-b:2").glob("film@*"))


def test_other_workers_shots_are_heard(workers):
    heard = []
    a = workers("a", on_event=heard.append)
    b = workers("b")
    time.sleep(0.3)  # A's subscriber is listening
    a.put(TAG, {"latent_tensor": shot(1)})
    b.put(TAG, {"latent_tensor": shot(2)})
    assert a.wait_published(10) and b.wait_published(10)
    deadline = time.monotonic() + 5
    while not heard and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [(e["tag"], e["generation"], e["worker"]) for e in heard] == [(TAG, 2, "b")]  # not its own


def test_a_password_is_used_and_never_shown(tmp_path, caplog):
    from zc_pack.zc_farm import Farm, FarmConfig

    srv = RedisServer(tmp_path / "redis-pw", password="s3cret-pw").start()
    caplog.set_level(logging.DEBUG, logger="zerocopy_continuity")
    try:
        with LatentStore(spill_dir=tmp_path / "s") as store:
            url = f"redis://:s3cret-pw@127.0.0.1:{srv.port}/0"
            farm = Farm(store, FarmConfig(url=url, worker_id="w", retry_s=0.2))
            assert farm.put(TAG, {"latent_tensor": shot(1)}) == 1 and farm.wait_published(10)
            assert farm.status()["url"] == f"redis://:***@127.0.0.1:{srv.port}/0"
            farm.close()
            wrong = Farm(store, FarmConfig(url=url.replace("s3cret-pw", "wrong-pw"), worker_id="w"))
            assert wrong.put(TAG, {"latent_tensor": shot(2)}) == 2  # refused: numbered locally
            assert wrong.status()["connected"] is False and "wrong-pw" not in str(wrong.status())
            wrong.close(timeout=0.2)
    finally:
        srv.stop()
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert "unreachable" in text and "s3cret-pw" not in text and "wrong-pw" not in text


def test_with_redis_down_a_lookup_costs_nothing(workers, server):
    a = workers("a", retry_s=30)
    a.put(TAG, {"latent_tensor": shot(1)})
    assert a.wait_published(10)
    server.stop()
    start = time.perf_counter()
    assert a.newest_published(TAG) is None  # the first look finds Redis gone
    first = time.perf_counter() - start
    start = time.perf_counter()
    for _ in range(100):
        assert a.newest_published(TAG) is None and a.pull(TAG) is None
    assert first < 1.5 and time.perf_counter() - start < 0.5
    assert a.put(TAG, {"latent_tensor": shot(2)}) == 2  # local numbering, no wait


def test_a_restarted_worker_publishes_what_redis_lacks(workers, server, tmp_path):
    """Shots stored while Redis was down, by a process that ended before it came back, are
    published by the next process on that spill folder when it uses the tag."""
    folder = tmp_path / "spill-a"
    a = workers("a", store_dir=folder)
    a.put(TAG, {"latent_tensor": shot(1)})
    assert a.wait_published(10)
    server.stop()
    later = {2: shot(2), 3: shot(3)}
    for generation, latent in later.items():
        assert a.put(TAG, {"latent_tensor": latent}) == generation
    a.close(timeout=0.5)
    a.store.close()
    server.start()
    a_again = workers("a-restarted", store_dir=folder)
    assert a_again.pull(TAG) is None  # the tag's first use: Redis has nothing newer than this folder
    assert a_again.wait_published(20)
    b = workers("b")
    for generation, latent in later.items():
        b.pull(TAG, generation)
        assert same_bits(b.store.get(TAG, generation).tensors["latent_tensor"], latent)
        assert record_of(server, generation)["worker"] == "a"


RACER = """
import sys, torch
from zc_pack.zc_engine import LatentStore
from zc_pack.zc_farm import Farm, FarmConfig
url, spill, name, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
with LatentStore(spill_dir=spill) as store:
    farm = Farm(store, FarmConfig(url=url, worker_id=name, keep=8))
    sys.stdin.readline()  # start together
    for index in range(count):
        print(farm.put("race", {"latent_tensor": torch.full((64,), float(index))}), flush=True)
    assert farm.wait_published(120)
    farm.close()
"""


def test_two_workers_racing_500_puts_each_on_one_tag_get_unique_generations(server, tmp_path):
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    procs = [subprocess.Popen([sys.executable, "-c", RACER, server.url, str(tmp_path / f"race-{w}"), w, "500"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=env) for w in ("w1", "w2")]
    for proc in procs:
        proc.stdin.write("go\n")
        proc.stdin.flush()
    given = {}
    for name, proc in zip(("w1", "w2"), procs):
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        numbers = [int(line) for line in out.split()]
        assert len(numbers) == 500 and numbers == sorted(numbers)
        for number in numbers:
            assert number not in given, f"generation {number} given to {given.get(number)} and {name}"
            given[number] = name
    assert sorted(given) == list(range(1, 1001))
    assert set(given.values()) == {"w1", "w2"}
    client = server.client()
    assert int(client.get("zc:tag:race:next")) == 1000
    published = [int(g) for g in client.zrange("zc:tag:race:shots", 0, -1)]
    assert 1000 in published and len(published) <= 8  # the newest landed; Redis keeps at most 8
    for generation in published:  # each record names the worker Redis gave the number to
        assert client.hget(f"zc:tag:race:shot:{generation}", "worker").decode() == given[generation]
