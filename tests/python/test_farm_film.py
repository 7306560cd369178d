"""A farm worker's film stays whole and its numbers never name two shots.
Two workers (two LatentStores on two spill folders) and one real redis-server (redis_server.py):
continuing another worker's shot brings the film's ancestors along, so `zc film` verifies on
each worker's folder; ZeroCopyFilmAssemble refuses a film it cannot assemble whole (or, asked to,
joins what verifies and says so); generations from Redis are exact up to 2^63-1, a counter that
is no number is repaired with a warning, and after Redis lost its data a number naming two
different shots is refused with a warning, never imported silently."""

from __future__ import annotations

import importlib
import logging
import subprocess
import sys
from unittest import mock

import pytest
import torch

import comfy_api_standin
from conftest import REPO, same_bits
from redis_server import skip_reason
from zc_pack.zc_continuity import lineage
from zc_pack.zc_engine import digest_tensor

pytestmark = pytest.mark.skipif(skip_reason() is not None, reason=skip_reason() or "")

TAG = "film"
ZC = REPO / "build" / "zc"


@pytest.fixture
def workers(server, new_farm):
    """make(name, **config) -> a Farm on its own store and spill folder, its warnings collected
    in farm.shown (what the browser would show); all closed at the end."""

    def make(name, **options):
        shown = []
        farm = new_farm(server.url, name,
                        on_warning=lambda title, message, fields: shown.append((title, message, fields)), **options)
        farm.shown = shown
        return farm

    return make


def shot(seed: int) -> torch.Tensor:
    return torch.randn(1, 16, 3, 8, 8, generator=torch.Generator().manual_seed(seed))


def continuing(parent: int, parent_latent: torch.Tensor) -> dict:
    tail = digest_tensor(parent_latent[:, :, -1:])
    return {lineage.LINEAGE_KEY: lineage.record(lineage.marker(
        parent_tag=TAG, parent_generation=parent, tail_frames=1, tail_digest=tail, used_digest=tail,
        adapter="temporal_inpaint", trim=1))}


def zc_film(store) -> subprocess.CompletedProcess:
    store.flush()
    return subprocess.run([str(ZC), "film", str(store.spill_dir), TAG], capture_output=True, text=True, timeout=60)


needs_zc = pytest.mark.skipif(not ZC.is_file(), reason=f"no zc tool at {ZC} (make build/zc)")


def film_of(farm, count: int, start: tuple[int, torch.Tensor] | None = None, seed: int = 100):
    """count shots stored by farm, each continuing the one before (or start). {generation: latent}."""
    made = {}
    parent = start
    for index in range(count):
        latent = shot(seed + index)
        generation = farm.put(TAG, {"latent_tensor": latent}, continuing(*parent) if parent else {})
        made[generation] = latent
        parent = (generation, latent)
    assert farm.wait_published(20)
    return made


# -- item 3: the film's ancestors come along ---------------------------------------------------

@needs_zc
def test_continuing_another_workers_shot_imports_its_ancestors_so_the_film_verifies_everywhere(workers):
    a, b = workers("a"), workers("b")
    first = film_of(a, 1)  # A stores the film's first shot
    assert b.pull(TAG).record.generation == 1
    rest = film_of(b, 8, start=(1, first[1]))  # B continues it 8 times: a 9-shot film (Redis keeps 8)
    assert sorted(rest) == list(range(2, 10))
    pulled = a.pull(TAG)  # A continues B's newest
    assert pulled.imported and pulled.record.generation == 9
    assert sorted(a.store.generations(TAG)) == list(range(1, 10))
    for generation, latent in {**first, **rest}.items():
        assert same_bits(a.store.get(TAG, generation, verify=True).tensors["latent_tensor"], latent)
    for farm in (a, b):
        done = zc_film(farm.store)
        assert done.returncode == 0, done.stdout + done.stderr
        assert done.stdout.splitlines()[-1] == "film film: 9 shots on the line, all hops verified"
    assert a.shown == [] and b.shown == []


def test_an_ancestor_redis_no_longer_holds_is_reported_not_silent(workers, caplog):
    a, b = workers("a", keep=3), workers("b", keep=3)
    film_of(b, 6)
    caplog.set_level(logging.INFO, logger="zerocopy_continuity")
    assert a.pull(TAG).record.generation == 6
    assert sorted(a.store.generations(TAG)) == [4, 5, 6]  # what Redis still holds of the line
    (title, message, fields), = a.shown
    assert fields == {"tag": TAG, "generation": 3} and "lacks its first shots" in title
    for words in ("generation 3", "ZEROCOPY_REDIS_KEEP", "neither on this worker nor in Redis"):
        assert words in message
    assert any(message in r.getMessage() and r.levelno == logging.WARNING for r in caplog.records)


# -- item 3: the assembly never shrinks in silence ---------------------------------------------

@pytest.fixture
def assemble_node(monkeypatch):
    """The pack's ZeroCopyFilmAssemble and its modules, loaded as a package with a stand-in for
    ComfyUI's comfy_api (no ComfyUI here); its VAE decode gives one frame per latent frame."""
    for name, module in comfy_api_standin.modules("zc_assemble_pack").items():
        monkeypatch.setitem(sys.modules, name, module)
    node = importlib.import_module("zc_assemble_pack.zc_nodes.film_assemble_node")
    calls = sys.modules["zc_assemble_pack.zc_nodes.comfy_calls"]
    monkeypatch.setattr(calls, "vae_decode", lambda vae, latent: torch.zeros(latent.shape[2], 2, 2, 3))
    monkeypatch.setattr(calls, "progress_bar", lambda total: mock.MagicMock())
    yield node, sys.modules["zc_assemble_pack.zc_nodes.runtime"], sys.modules["zc_assemble_pack.zc_nodes.farm_link"]
    comfy_api_standin.forget("zc_assemble_pack")


def test_the_assembly_refuses_a_film_with_a_missing_shot_or_joins_what_verifies_when_asked(
        workers, assemble_node, monkeypatch):
    node, runtime, farm_link = assemble_node
    a, b = workers("a", keep=3), workers("b", keep=3)
    film_of(b, 6)  # a 6-shot film; Redis keeps its newest 3
    a.pull(TAG)
    monkeypatch.setattr(runtime, "store", lambda: a.store)
    monkeypatch.setattr(farm_link, "complete_film", a.complete)  # the node asks the farm first
    monkeypatch.setattr(farm_link, "configured", lambda: True)  # the farm's advice is given
    Assemble = node.ZeroCopyFilmAssemble
    with pytest.raises(Exception) as caught:
        Assemble.execute(buffer_tag=TAG, vae=object())
    message = str(caught.value)
    assert type(caught.value).__name__ == "ContinuityError"
    for words in ("film 'film' is not whole on this worker", "generation 4 (not on the line): it continues generation 3",
                  "has no spill file", "ZEROCOPY_REDIS_KEEP", "assemble_incomplete", "nothing was assembled"):
        assert words in message, message
    images, audio, info = Assemble.execute(buffer_tag=TAG, vae=object(), assemble_incomplete=True)
    assert info.splitlines()[0].startswith("ZeroCopy film 'film': 3 shots (INCOMPLETE: 1 shot(s) could not be "
                                           "placed), 7 frames")
    assert "LEFT OUT (assemble_incomplete is on): generation 4 (not on the line): it continues generation 3" in info
    # B holds the whole film: there the strict node joins all 6
    monkeypatch.setattr(runtime, "store", lambda: b.store)
    monkeypatch.setattr(farm_link, "complete_film", b.complete)
    images, audio, info = Assemble.execute(buffer_tag=TAG, vae=object())
    assert info.splitlines()[0].startswith("ZeroCopy film 'film': 6 shots, 13 frames") and "LEFT OUT" not in info


def test_the_assembly_fetches_the_ancestors_it_lacks_when_the_farm_still_holds_them(
        workers, assemble_node, monkeypatch, tmp_path):
    node, runtime, farm_link = assemble_node
    a, b = workers("a"), workers("b")
    made = film_of(b, 5)
    wanted = b.store.export_shot(TAG, 5)  # A got the newest alone (as an older pack's pull did)
    a.store.import_shot(TAG, 5, wanted)
    monkeypatch.setattr(runtime, "store", lambda: a.store)
    monkeypatch.setattr(farm_link, "complete_film", a.complete)
    images, audio, info = node.ZeroCopyFilmAssemble.execute(buffer_tag=TAG, vae=object())
    assert info.splitlines()[0].startswith("ZeroCopy film 'film': 5 shots, 11 frames")
    assert sorted(a.store.generations(TAG)) == sorted(made)


# -- item 6: numbers from Redis ----------------------------------------------------------------

def test_a_counter_set_to_2_to_the_60_gives_every_shot_its_own_exact_number(workers, server):
    base = 1 << 60
    server.client().set(f"zc:tag:{TAG}:next", str(base))
    a, b = workers("a"), workers("b")
    given = {}
    for index in range(3):
        for farm in (a, b):
            latent = shot(index * 2 + len(given))
            given[farm.put(TAG, {"latent_tensor": latent})] = (farm, latent)
    assert sorted(given) == [base + n for n in range(1, 7)]  # each once: no double arithmetic
    assert a.wait_published(10) and b.wait_published(10)
    client = server.client()
    assert sorted(int(g) for g in client.zrange(f"zc:tag:{TAG}:shots", 0, -1)) == sorted(given)
    assert int(client.get(f"zc:tag:{TAG}:next")) == base + 6
    assert a.newest_published(TAG)[0] == base + 6
    for generation, (maker, latent) in given.items():
        other = b if maker is a else a
        assert other.pull(TAG, generation).record.generation == generation
        assert same_bits(other.store.get(TAG, generation, verify=True).tensors["latent_tensor"], latent)
    assert a.shown == [] and b.shown == []


@pytest.mark.parametrize("value", ["banana", "-5", "0", "1e3", "99999999999999999999", "9223372036854775808",
                                   " 7"])
def test_a_counter_that_is_no_generation_is_repaired_with_a_warning_naming_key_and_value(workers, server, value,
                                                                                         caplog):
    a = workers("a")
    film_of(a, 2)
    server.client().set(f"zc:tag:{TAG}:next", value)
    caplog.set_level(logging.WARNING, logger="zerocopy_continuity")
    assert a.put(TAG, {"latent_tensor": shot(9)}) == 3  # above what the farm and the worker know
    (title, message, fields), = a.shown
    assert f"Redis key zc:tag:{TAG}:next held {value!r}" in message and "1..9223372036854775807" in message
    assert any(message in r.getMessage() for r in caplog.records)
    assert server.client().get(f"zc:tag:{TAG}:next") == b"3"


def test_a_counter_at_the_highest_generation_refuses_with_a_clear_error(workers, server):
    from zc_pack.zc_engine import GenerationExists

    a = workers("a")
    server.client().set(f"zc:tag:{TAG}:next", str((1 << 63) - 1))
    with pytest.raises(GenerationExists, match="has used every farm generation"):
        a.put(TAG, {"latent_tensor": shot(1)})


@needs_zc
def test_after_redis_lost_its_data_a_number_naming_two_shots_is_refused_with_a_warning(workers, server, caplog):
    """A and B share a film; A stores 4 and 5 which B never pulls; Redis is flushed (as a restart
    without persistence would); B, knowing less, numbers its own 4 and 5 (and 6 on top). A must
    not import B's 6, whose parent 5 is on A another shot, nor B's 4 over its own."""
    a, b = workers("a"), workers("b")
    made = film_of(a, 3)
    assert b.pull(TAG).record.generation == 3 and sorted(b.store.generations(TAG)) == [1, 2, 3]
    film_of(a, 2, start=(3, made[3]), seed=200)  # A's 4 and 5
    server.client().flushall()
    caplog.set_level(logging.WARNING, logger="zerocopy_continuity")
    b_film = film_of(b, 3, start=(3, made[3]), seed=300)  # B's 4, 5 and 6: 4 and 5 clash with A's
    assert sorted(b_film) == [4, 5, 6]
    assert any("lost its data" in m for _, m, _ in b.shown)  # B noticed at its first allocation
    assert a.pull(TAG) is None  # the farm's 6 continues B's 5, not A's: refused
    assert sorted(a.store.generations(TAG)) == [1, 2, 3, 4, 5], sorted(__import__("os").listdir(a.store.spill_dir))
    messages = [m for _, m, _ in a.shown]
    assert any("lost its data" in m for m in messages)
    clash = [m for m in messages if "generation 6 in Redis continues the farm's generation 5" in m]
    assert clash and "this worker's generation 5 is another shot" in clash[0]
    assert a.pull(TAG, 4) is None  # the farm's 4 (B's) is never imported over A's own 4
    assert not same_bits(a.store.get(TAG, 4).tensors["latent_tensor"], b_film[4])
    done = zc_film(a.store)  # A's film is its own, whole
    assert done.returncode == 0, done.stdout
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert "lost its data" in text and "another shot" in text
    # A numbers above everything it holds, and B then finds the clash too instead of importing it
    a7 = a.put(TAG, {"latent_tensor": shot(7)}, continuing(5, a.store.get(TAG, 5).tensors["latent_tensor"]))
    assert a7 == 7 and a.wait_published(10)
    assert b.pull(TAG) is None and 7 not in b.store.generations(TAG)
    assert any("generation 7 in Redis continues the farm's generation 5" in m for _, m, _ in b.shown)
