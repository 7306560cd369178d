"""Choosing a take makes the film follow it: the chosen line passes through the chosen
take, its ancestors are chosen with it, a take that cannot be on any line is refused with the
reason, the answer says the line that results, and choices made at once by many threads and
processes leave pins the line always passes through, the last choice winning."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import film_shots
import pytest

from zc_pack.zc_engine import LatentStore
from zc_pack.zc_engine import film as engine_film
from zc_pack.zc_engine.errors import InvalidState

TAG = "film"
REPO = Path(__file__).resolve().parents[2]


def put_shot(store: LatentStore, seed: int, parent: int | None = None, *, parent_tag: str = TAG) -> int:
    """One shot of TAG (continuing ``parent``'s last latent frame when given); its generation."""
    return film_shots.put_shot(store, TAG, seed, parent, parent_tag=parent_tag)


def takes_film(spill: Path) -> None:
    """1 -> 2 -> 3, and a second take 4 of shot 2 (from 1) continued by 5."""
    with LatentStore(spill_dir=spill) as store:
        assert put_shot(store, 1) == 1
        assert put_shot(store, 2, 1) == 2
        assert put_shot(store, 3, 2) == 3
        assert put_shot(store, 4, 1) == 4
        assert put_shot(store, 5, 4) == 5
        store.flush()


def states(doc: dict) -> dict[int, str]:
    return {s["generation"]: s["state"] for s in doc["shots"]}


def test_choosing_take_3_makes_the_line_pass_through_it_and_choosing_4_back(spill_dir):
    takes_film(spill_dir)
    assert engine_film.describe_film(spill_dir, TAG)["line"] == [1, 4, 5]  # the newest
    # Before: 200 with pins [3], the line stayed [1, 4, 5] and 3 was marked stale.
    doc = engine_film.choose(spill_dir, TAG, 3)
    assert doc["line"] == [1, 2, 3] and doc["end"] == 3
    assert doc["pins"] == [1, 2, 3]  # the chosen take and its ancestors
    assert doc["choice"] == {"generation": 3, "on_line": True, "note": None}
    assert states(doc) == {1: "line", 2: "line", 3: "line", 4: "alternative", 5: "stale"}
    assert doc["problems"] == []
    doc = engine_film.choose(spill_dir, TAG, 4)
    assert doc["line"] == [1, 4, 5] and doc["pins"] == [1, 4]
    assert states(doc)[3] == "stale" and states(doc)[2] == "alternative"
    # What a Handoff continues from: the end of the chosen line.
    assert engine_film.describe_film(spill_dir, TAG)["end"] == 5
    engine_film.choose(spill_dir, TAG, 3)
    assert engine_film.describe_film(spill_dir, TAG)["end"] == 3
    with LatentStore(spill_dir=spill_dir) as store:
        from zc_pack.zc_nodes import film_view
        bundle, notes = film_view.newest(store, TAG)
        assert bundle.generation == 3 and "generation 3 ends the chosen line" in notes[0]


def test_choosing_an_ancestor_keeps_the_line_below_it(spill_dir):
    takes_film(spill_dir)
    engine_film.choose(spill_dir, TAG, 3)
    doc = engine_film.choose(spill_dir, TAG, 2)
    assert doc["line"] == [1, 2, 3] and doc["pins"] == [1, 2, 3]
    doc = engine_film.choose(spill_dir, TAG, 0)
    assert doc["line"] == [1, 4, 5] and doc["pins"] == [] and doc["choice"]["on_line"] is True


def test_a_pin_file_of_an_older_engine_is_followed_through_its_ancestors(spill_dir):
    takes_film(spill_dir)
    choices = engine_film.choices_file(spill_dir, TAG)
    choices.write_text(json.dumps({"version": 1, "tag": TAG, "chosen": [3]}))
    assert engine_film.describe_film(spill_dir, TAG)["line"] == [1, 2, 3]
    choices.write_text(json.dumps({"version": 1, "tag": TAG, "chosen": [3, 4]}))  # the later one wins
    doc = engine_film.describe_film(spill_dir, TAG)
    assert doc["line"] == [1, 4, 5]
    assert any("generation 3 is pinned, but a later choice took generation 4" in p for p in doc["problems"])


def test_a_take_that_cannot_be_on_any_line_is_refused_with_the_reason(spill_dir):
    with LatentStore(spill_dir=spill_dir) as store:
        put_shot(store, 1)
        lost = put_shot(store, 2, 1)
        child = put_shot(store, 3, lost)
        store.flush()
    (spill_dir / f"{TAG}@{lost:020d}.latent").unlink()  # 3's parent is gone: 3 is broken
    with pytest.raises(InvalidState) as err:
        engine_film.choose(spill_dir, TAG, child)
    assert f"generation {child} of tag \"{TAG}\" cannot be on the chosen line" in str(err.value)
    assert f"generation {lost}" in str(err.value) and "no spill file" in str(err.value)
    assert not engine_film.has_choices(spill_dir, TAG)


def test_the_choose_route_answers_the_line_and_refuses_a_broken_take(tmp_path):
    pytest.importorskip("aiohttp", reason="skipped: aiohttp not installed (ComfyUI's web server)")
    import aiohttp
    from web_api_helpers import SyncClient

    from zc_pack.zc_nodes.api import routes
    spill = tmp_path / "spill"
    takes_film(spill)

    class Film:
        def describe(self, tag, verify=False):
            return engine_film.describe_film(spill, tag, verify=verify)

        def choose(self, tag, generation):
            return engine_film.choose(spill, tag, generation)

    services = routes.Services(store=lambda: None, projection_for=lambda meta, channels: None,
                               residency_report=lambda: {"available": False}, notify=None, film=Film())
    app = aiohttp.web.Application()
    routes.add_to_app(app, services)
    client = SyncClient(app)
    try:
        status, doc = client.json("POST", f"/zerocopy/film/{TAG}/choose", json={"generation": 3})
        assert status == 200 and doc["line"] == [1, 2, 3] and doc["pins"] == [1, 2, 3]
        assert doc["choice"]["on_line"] is True
        (spill / f"{TAG}@{2:020d}.latent").unlink()
        status, body = client.json("POST", f"/zerocopy/film/{TAG}/choose", json={"generation": 3})
        assert status == 409 and body["error"] == "invalid_state" and "cannot be on the chosen line" in body["message"]
    finally:
        client.close()


# ---- many choices at once ----

CHOICES = (2, 3, 4, 5, 6)
CHILD = """
import json, sys, time
from zc_pack.zc_engine import film
spill, order = sys.argv[1], json.loads(sys.argv[2])
out = []
for g in order:
    start = time.time()
    doc = film.choose(spill, "film", g)
    out.append({"g": g, "start": start, "end": time.time(), "line": doc["line"], "pins": doc["pins"],
                "choice": doc["choice"]})
print(json.dumps(out))
"""


def choose_timed(spill: Path, g: int) -> dict:
    start = time.time()
    doc = engine_film.choose(spill, TAG, g)
    return {"g": g, "start": start, "end": time.time(), "line": doc["line"], "pins": doc["pins"],
            "choice": doc["choice"]}


def test_many_choices_at_once_never_leave_a_pin_the_line_ignores(spill_dir):
    """8 threads and 2 processes choose 160 takes at once. The invariant: each answer's line passes
    through every pin it shows (the pins are one chain), and through the take that answer chose
    unless another choice, made while it ran, came after it; then the line passes through that
    one, and the answer says so. The last choice wins."""
    takes_film(spill_dir)
    with LatentStore(spill_dir=spill_dir) as store:
        assert put_shot(store, 6, 2) == 6  # a third take below 2: 1 -> 2 -> 6
        store.flush()
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    orders = [[CHOICES[(i * 3 + k) % len(CHOICES)] for i in range(30)] for k in range(2)]
    children = [subprocess.Popen([sys.executable, "-c", CHILD, str(spill_dir), json.dumps(order)],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
                for order in orders]
    barrier = threading.Barrier(8)

    def worker(k: int) -> list[dict]:
        barrier.wait()
        return [choose_timed(spill_dir, CHOICES[(i + k) % len(CHOICES)]) for i in range(12)]

    with ThreadPoolExecutor(8) as pool:
        answers = [a for part in pool.map(worker, range(8)) for a in part]
    for child in children:
        out, err = child.communicate(timeout=300)
        assert child.returncode == 0, err
        answers += json.loads(out)
    assert len(answers) == 8 * 12 + 2 * 30
    overtaken = 0
    for a in answers:
        assert set(a["pins"]) <= set(a["line"]), a  # no pin the line ignores
        assert a["line"][0] == 1 and len(a["line"]) == 3
        if a["g"] in a["line"]:
            assert a["choice"] == {"generation": a["g"], "on_line": True, "note": None}
            continue
        overtaken += 1
        assert a["choice"]["on_line"] is False and "another choice made at the same time" in a["choice"]["note"]
        # The line it shows passes through a choice that another caller made while it ran.
        assert any(b is not a and b["g"] in a["line"] and b["start"] < a["end"] and b["end"] > a["start"]
                   for b in answers), a
    assert overtaken < len(answers)  # most answers show their own choice
    final = engine_film.describe_film(spill_dir, TAG)
    assert set(final["pins"]) <= set(final["line"]) and final["problems"] == []
    # The last choice wins: one more, alone, and the line passes through it.
    for g in (3, 6, 5):
        doc = engine_film.choose(spill_dir, TAG, g)
        assert g in doc["line"] and g in engine_film.describe_film(spill_dir, TAG)["line"]
