"""The engine's film (zc_engine.film): a tag's shots, takes and chosen line read from its spill
files, the choices file, and a property over random trees of takes and random pins.

Files are written the way the store writes them (safetensors with zc.* metadata and XXH3 digests,
the lineage JSON of zc_continuity.lineage), so the film is read exactly as from a spill folder.
"""
from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
xxhash = pytest.importorskip("xxhash")
st_torch = pytest.importorskip("safetensors.torch")
hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from zc_pack.zc_engine import InvalidInput, NotFound  # noqa: E402
from zc_pack.zc_engine.film import choose_take, clear_choices, describe_film, has_choices  # noqa: E402

TAG = "film"


def digest(t: torch.Tensor) -> str:
    raw = t.contiguous().flatten().view(torch.uint8).numpy().tobytes()
    return "xxh3:" + xxhash.xxh3_64(raw, seed=0).hexdigest()


def latent_of(gen: int, frames: int = 3) -> torch.Tensor:
    return (torch.arange(2 * frames * 4, dtype=torch.float32) + 1000 * gen).reshape(1, 2, frames, 2, 2)


def write_shot(folder: Path, gen: int, parent: int | None = None, *, tag: str = TAG, kind: str | None = None,
               latent: torch.Tensor | None = None, tail: str | None = None, parent_tag: str | None = None):
    latent = latent_of(gen) if latent is None else latent
    meta = {"zc.format": "zerocopy-continuity/1", "zc.tag": tag, "zc.generation": str(gen),
            "zc.digest.latent_tensor": digest(latent)}
    if kind:
        meta["kind"] = kind
    if parent is not None:
        tail = tail or digest(latent_of(parent)[:, :, -1:])
        meta["lineage"] = json.dumps({"version": 1, "parent_tag": parent_tag or tag, "parent_generation": parent,
                                      "tail_frames": 1, "tail_digest": tail, "used_digest": tail,
                                      "adapter": "first_frame", "trim": 4, "prompt": f"shot {gen}",
                                      "seed": gen * 7})
    st_torch.save_file({"latent_tensor": latent}, str(folder / f"{tag}@{gen:020d}.latent"), metadata=meta)


def shots_by_gen(film: dict) -> dict:
    return {s["generation"]: s for s in film["shots"]}


def test_round_trip_line_takes_pins_and_verification(tmp_path):
    write_shot(tmp_path, 1, kind="start_image")
    write_shot(tmp_path, 2, 1)
    write_shot(tmp_path, 3, 2)
    write_shot(tmp_path, 4, 2)
    write_shot(tmp_path, 5, 4)
    film = describe_film(tmp_path, TAG, verify=True)
    assert film["verified"] and film["ok"], film["problems"]
    assert film["line"] == [1, 2, 4, 5] and film["end"] == film["newest"] == 5 and film["anchor"] == 1
    shots = shots_by_gen(film)
    assert shots[1]["kind"] == "start_image" and shots[1]["shot"] == 0 and shots[1]["hop"] == "root"
    assert (shots[3]["take"], shots[3]["takes"], shots[3]["state"]) == (1, 2, "alternative")
    assert shots[5]["seed"] == 35 and shots[5]["prompt"] == "shot 5" and shots[5]["frames"] == 3
    assert shots[5]["shape"] == [1, 2, 3, 2, 2] and shots[5]["hop"] == "ok" and shots[5]["file"] == "ok"
    assert shots[5]["digest"] == digest(latent_of(5))
    assert not has_choices(tmp_path, TAG) and describe_film(tmp_path, TAG)["end"] == 5

    choose_take(tmp_path, TAG, 3)
    assert has_choices(tmp_path, TAG)
    film = describe_film(tmp_path, TAG)
    # the chosen take and its ancestors: the line passes through it
    assert film["pins"] == [1, 2, 3] and film["line"] == [1, 2, 3] and film["end"] == 3
    assert shots_by_gen(film)[5]["state"] == "stale"
    stored = json.loads((tmp_path / f".zc-film-{TAG}.json").read_text())
    assert stored == {"version": 1, "tag": TAG, "chosen": [1, 2, 3]}
    clear_choices(tmp_path, TAG)
    assert not has_choices(tmp_path, TAG) and describe_film(tmp_path, TAG)["end"] == 5


def test_a_parent_with_another_tail_fails_its_hop(tmp_path):
    write_shot(tmp_path, 1)
    write_shot(tmp_path, 2, 1)
    write_shot(tmp_path, 1, latent=latent_of(9))  # rewritten: its own digest is right
    film = describe_film(tmp_path, TAG, verify=True)
    assert not film["ok"]
    two = shots_by_gen(film)[2]
    assert two["hop"] == "bad" and two["file"] == "ok"
    assert two["problem"].startswith("shot 2 (generation 2): the hop from generation 1: tail digest xxh3:")
    assert describe_film(tmp_path, TAG)["ok"]  # unverified: nothing is broken


def test_errors_are_the_engine_classes(tmp_path):
    write_shot(tmp_path, 1)
    with pytest.raises(NotFound, match="nosuch"):
        describe_film(tmp_path, "nosuch")
    with pytest.raises(NotFound, match="77"):
        choose_take(tmp_path, TAG, 77)
    with pytest.raises(InvalidInput):
        describe_film(tmp_path, "bad/tag")
    with pytest.raises(InvalidInput):
        choose_take(tmp_path, TAG, 0)


@st.composite
def trees(draw):
    n = draw(st.integers(1, 10))
    parents = [0]  # generation 1 is a root
    for gen in range(2, n + 1):
        parents.append(draw(st.integers(0, gen - 1)))  # 0: another root (a take of the first shot)
    pins = draw(st.lists(st.integers(1, n), max_size=4))
    return parents, pins


def expected_line(parents: list[int], pins: list[int]) -> list[int]:
    """The line after choosing each of pins in turn: a choice pins the take and its ancestors (the
    line passes through it), keeps the pins below it that the line followed, and drops the rest."""
    n = len(parents)
    children = {g: [c for c in range(1, n + 1) if parents[c - 1] == g] for g in range(0, n + 1)}
    newest = {}
    for g in range(n, 0, -1):
        newest[g] = max([g] + [newest[c] for c in children[g]])

    def line_of(pinned):
        line, at = [], 0
        while children[at]:
            group = children[at]
            chosen = [c for c in group if c in pinned]
            at = chosen[0] if chosen else max(group, key=lambda c: newest[c])
            line.append(at)
        return line

    def ancestors(g):  # g and every ancestor, root first
        path = []
        while g:
            path.insert(0, g)
            g = parents[g - 1]
        return path

    pinned: list[int] = []
    for p in pins:
        before = line_of(set(pinned))
        pinned = ancestors(p) + [q for q in pinned if q in before and p in ancestors(q) and q != p]
        assert p in line_of(set(pinned))  # the model itself: the line passes through the choice
    return line_of(set(pinned))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(trees())
def test_random_trees_of_takes_and_pins(tree):
    parents, pins = tree
    with tempfile.TemporaryDirectory() as d:
        folder = Path(d)
        for gen, parent in enumerate(parents, start=1):
            write_shot(folder, gen, parent or None)
        for p in pins:
            choose_take(folder, TAG, p)
        film = describe_film(folder, TAG)
        shots = shots_by_gen(film)
        line = film["line"]
        assert line == expected_line(parents, pins)
        if pins:
            assert pins[-1] in line and set(film["pins"]) <= set(line)  # the last choice, no pin ignored
        assert line and shots[line[0]]["parent"] == 0
        for a, b in zip(line, line[1:]):
            assert shots[b]["parent"] == a
        assert not [s for s in film["shots"] if s["parent"] == line[-1]]  # a leaf
        for s in film["shots"]:
            assert s["state"] in ("line", "alternative", "stale")
            assert (s["state"] == "line") == (s["generation"] in line)
        if not pins:
            assert film["end"] == film["newest"] == len(parents)


def test_audio_span_xxh64_tails_and_image_latents_are_checked(tmp_path):
    """An audio tail digest is checked against its span of latent_tensor_1; a recorded xxh64:
    tail is recomputed with XXH64; a 4-D latent's tail is its last images (axis 0)."""
    video, audio = latent_of(1), torch.arange(80, dtype=torch.float32).reshape(1, 8, 10)
    meta = {"zc.format": "zerocopy-continuity/1", "zc.tag": TAG, "zc.generation": "1",
            "zc.digest.latent_tensor": digest(video), "zc.digest.latent_tensor_1": digest(audio)}
    st_torch.save_file({"latent_tensor": video, "latent_tensor_1": audio},
                       str(tmp_path / f"{TAG}@{1:020d}.latent"), metadata=meta)

    def child(gen, audio_digest, tail=None):
        tail = tail or digest(video[:, :, -1:])
        lineage = {"version": 1, "parent_tag": TAG, "parent_generation": 1, "tail_frames": 1,
                   "tail_digest": tail, "used_digest": tail, "adapter": "a", "trim": 0, "prompt": "",
                   "audio_tail_digest": audio_digest, "audio_used_digest": audio_digest,
                   "audio_axis": 2, "audio_start": 7, "audio_count": 3}
        latent = latent_of(gen)
        st_torch.save_file({"latent_tensor": latent}, str(tmp_path / f"{TAG}@{gen:020d}.latent"),
                           metadata={"zc.format": "zerocopy-continuity/1", "zc.tag": TAG,
                                     "zc.generation": str(gen), "zc.digest.latent_tensor": digest(latent),
                                     "lineage": json.dumps(lineage)})

    raw = video[:, :, -1:].contiguous().flatten().view(torch.uint8).numpy().tobytes()
    child(2, digest(audio[:, :, 7:10]), tail="xxh64:" + xxhash.xxh64(raw, seed=0).hexdigest())
    child(3, digest(audio[:, :, 6:9]))
    shots = shots_by_gen(describe_film(tmp_path, TAG, verify=True))
    assert shots[2]["hop"] == "ok", shots[2]["problem"]
    assert shots[3]["hop"] == "bad" and "audio tail digest" in shots[3]["problem"]

    images = tmp_path / "images"
    images.mkdir()
    image = (torch.arange(3 * 4 * 2 * 2, dtype=torch.float32)).reshape(3, 4, 2, 2)
    write_shot(images, 1, latent=image)
    write_shot(images, 2, 1, tail=digest(image[-2:]))
    lineage = json.loads(st_torch.safe_open(str(images / f"{TAG}@{2:020d}.latent"), "pt").metadata()["lineage"])
    lineage["tail_frames"] = 2
    latent = latent_of(2)
    st_torch.save_file({"latent_tensor": latent}, str(images / f"{TAG}@{2:020d}.latent"),
                       metadata={"zc.format": "zerocopy-continuity/1", "zc.tag": TAG, "zc.generation": "2",
                                 "zc.digest.latent_tensor": digest(latent), "lineage": json.dumps(lineage)})
    film = describe_film(images, TAG, verify=True)
    assert film["ok"], film["problems"]
    assert shots_by_gen(film)[1]["frames"] == 3


def test_clearing_without_choices_writes_nothing(tmp_path):
    write_shot(tmp_path, 1)
    clear_choices(tmp_path, TAG)
    assert not (tmp_path / f".zc-film-{TAG}.json").exists()
    clear_choices(tmp_path, "no_files_here")
    assert not has_choices(tmp_path, "no_files_here")
