"""A Redis that evicts the farm's keys, said where it matters. Real redis-server
processes: one with ``--maxmemory 2mb --maxmemory-policy allkeys-lru`` filled until it evicts a
published shot, one keeping every key, one whose CONFIG command is renamed away.

- At connect the farm reads the eviction policy and says once, in the log and the farm status
  (GET /zerocopy/farm's ``eviction``), that Redis may evict its keys, or that it cannot check.
- A worker whose published shot Redis evicted says which shot and why (evicted, with the policy)
  in its pull's notes (what the Load's info and the Handoff's certificate show), in the NotFound
  a Load or Handoff raises when it has nothing else, and once in the log.
- The farm's epoch key evicted is said as eviction, once, not as "Redis lost its data".
"""

from __future__ import annotations

import logging
import time

import pytest
import torch

from redis_server import RedisServer, skip_reason
from zc_pack.zc_engine import NotFound

pytestmark = pytest.mark.skipif(skip_reason() is not None, reason=skip_reason() or "")

EVICTING = ["--maxmemory", "2mb", "--maxmemory-policy", "allkeys-lru"]
FILLERS = 80  # 80 shots of 200 KiB through a 2 MiB Redis: eviction within the first dozen
SMALL = (1, 16, 2, 20, 20)  # 50 KiB: fills Redis gradually


def shot(seed: int, shape=(1, 16, 2, 40, 40)) -> torch.Tensor:  # 200 KiB
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


@pytest.fixture
def farms(new_farm):
    """make(server, name) -> a Farm on its own store; all closed at the end."""

    def make(server, name, on_event=None, **options):
        return new_farm(server.url, name, on_event=on_event, **options)

    return make


@pytest.fixture
def servers(tmp_path):
    started = []

    def start(name, options=()):
        server = RedisServer(tmp_path / name, options=options).start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


def warnings_of(caplog, words):
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING and words in r.getMessage()]


def test_an_evicting_redis_is_said_once_at_connect_and_in_the_status(servers, farms, caplog):
    server = servers("evicting", EVICTING)
    farm = farms(server, "a")
    assert farm.status()["eviction"]["checked"] is False  # not connected yet: nothing said
    with caplog.at_level(logging.INFO):
        assert farm.newest_published("film") is None  # the first contact
        assert farm.newest_published("film") is None
        farm.connection.mark_down("a test", OSError("cut"))  # an outage and back: read again,
        farm.connection.retry_at = 0                         # said again only if it changed
        assert farm.newest_published("film") is None
    said = warnings_of(caplog, "may evict the farm's keys")
    assert len(said) == 1, said
    assert "maxmemory-policy allkeys-lru, maxmemory 2 MiB" in said[0] and "noeviction" in said[0]
    eviction = farm.status()["eviction"]
    assert eviction["message"] and said[0].endswith(eviction.pop("message"))
    assert eviction == {"checked": True, "policy": "allkeys-lru", "maxmemory_bytes": 2 << 20, "may_evict": True}


def test_a_redis_that_keeps_every_key_is_not_warned_about(servers, farms, caplog):
    server = servers("keeping", ["--maxmemory", "2mb", "--maxmemory-policy", "noeviction"])
    farm = farms(server, "a")
    with caplog.at_level(logging.INFO):
        assert farm.newest_published("film") is None
    assert warnings_of(caplog, "evict") == []
    assert farm.status()["eviction"] == {"checked": True, "policy": "noeviction", "maxmemory_bytes": 2 << 20,
                                         "may_evict": False, "message": None}
    assert any("evicts no key of the farm's" in r.getMessage() for r in caplog.records)


def test_a_redis_whose_config_command_is_renamed_cannot_be_checked_and_says_so(servers, farms, caplog):
    server = servers("no-config", EVICTING + ["--rename-command", "CONFIG", ""])
    farm = farms(server, "a")
    with caplog.at_level(logging.INFO):
        assert farm.newest_published("film") is None
    said = warnings_of(caplog, "cannot check whether Redis")
    assert len(said) == 1 and "CONFIG GET is refused" in said[0] and "noeviction" in said[0], said
    eviction = farm.status()["eviction"]
    assert eviction["checked"] is False and eviction["may_evict"] is None and said[0].endswith(eviction["message"])
    assert farm.status()["connected"] is True  # the farm works all the same


def test_a_worker_whose_published_shot_was_evicted_names_it_and_why(servers, farms, caplog, monkeypatch):
    server = servers("evicting", EVICTING)
    a, b = farms(server, "worker-a"), farms(server, "worker-b")
    redis = server.client()
    first = shot(1)
    assert a.put("mA", {"latent_tensor": first}, {"family": "wan21"}) == 1
    assert a.wait_published(10)
    assert redis.exists("zc:tag:mA:shot:1", "zc:tag:mA:blob:1") == 2
    evicted = False
    with caplog.at_level(logging.INFO):
        for index in range(FILLERS):  # other films fill Redis: real eviction, least recently used first
            a.put(f"fill{index}", {"latent_tensor": shot(100 + index)}, {"family": "wan21"})
            a.wait_published(10)
            if redis.exists("zc:tag:mA:shot:1", "zc:tag:mA:blob:1") < 2:
                evicted = True
                break
        assert evicted, f"Redis evicted nothing of tag mA in {FILLERS} shots: {redis.info('stats')['evicted_keys']}"
        assert int(redis.info("stats")["evicted_keys"]) > 0
        # worker B asks for the evicted shot: pull says which shot and why
        notes: list[str] = []
        assert b.pull("mA", 1, notes=notes) is None
        [note] = notes
        assert "tag 'mA' generation 1" in note and "evicted" in note, note
        assert "maxmemory-policy allkeys-lru, maxmemory 2 MiB" in note and "noeviction" in note, note
        # the Load and the Handoff read through film_view.continue_from: its NotFound carries the note
        from zc_pack.zc_nodes import farm_link, film_view
        monkeypatch.setattr(farm_link, "active", lambda: b)
        with pytest.raises(NotFound) as raised:
            film_view.continue_from(b.store, "mA", 1)
        assert "generation 1" in str(raised.value) and "evicted" in str(raised.value)
        with pytest.raises(NotFound) as raised:  # the newest: the farm's index names the shot it lost
            film_view.continue_from(b.store, "mA", 0)
        assert "evicted" in str(raised.value), str(raised.value)
    # the log: B said it once as a warning (the later asks at info), A never blamed a lost data set
    gone = warnings_of(caplog, "tag 'mA' generation 1")
    assert len(gone) == 1, gone
    assert warnings_of(caplog, "lost its data") == []
    assert len(warnings_of(caplog, "may evict the farm's keys")) == 2  # each worker, once, at connect
    assert len(warnings_of(caplog, "epoch key")) <= 2  # an evicted epoch: said as eviction, once a worker
    assert b.status()["counts"].get("evicted", 0) + b.status()["counts"].get("missing", 0) >= 1


def test_a_shot_still_held_when_a_newer_one_was_evicted_is_continued_with_the_note(servers, farms, monkeypatch):
    """The newest path: B holds generation 1, the farm's generation 2 is evicted: B continues from 1
    and its notes (the certificate's, the Load's info) say why not from 2. B knows 2 was published
    from the farm's index or, when Redis evicted that too, from the commit event it heard."""
    server = servers("evicting", EVICTING)
    heard = []
    a, b = farms(server, "worker-a"), farms(server, "worker-b", on_event=heard.append)
    redis = server.client()
    a.put("mA", {"latent_tensor": shot(1, SMALL)}, {"family": "wan21"})
    assert a.wait_published(10) and b.pull("mA") is not None  # B holds generation 1
    deadline = time.monotonic() + 10
    while not heard and time.monotonic() < deadline:  # B's subscriber is listening
        a.put("warm", {"latent_tensor": shot(3, SMALL)}, {"family": "wan21"})
        a.wait_published(10)
        time.sleep(0.1)
    assert heard, "worker B's subscriber heard no commit within 10 s"
    a.put("mA", {"latent_tensor": shot(2, SMALL)}, {"family": "wan21"})
    assert a.wait_published(10)
    while not any(e["tag"] == "mA" and e["generation"] == 2 for e in heard) and time.monotonic() < deadline:
        time.sleep(0.05)
    for index in range(FILLERS):
        b.newest_published("mA")  # B's Handoff fingerprint looks at the tag's index every prompt
        a.put(f"fill{index}", {"latent_tensor": shot(100 + index, SMALL)}, {"family": "wan21"})
        a.wait_published(10)
        if redis.exists("zc:tag:mA:shot:2", "zc:tag:mA:blob:2") < 2:
            break
    else:
        pytest.fail("Redis evicted nothing of tag mA generation 2")
    from zc_pack.zc_nodes import farm_link, film_view
    monkeypatch.setattr(farm_link, "active", lambda: b)
    bundle, notes = film_view.continue_from(b.store, "mA", 0)
    assert bundle.generation == 1
    assert any("generation 2" in n and "evicted" in n for n in notes), notes
