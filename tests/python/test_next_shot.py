"""film_view.continue_from: the one answer, for the Handoff and the Load, to "which stored shot
does this tag continue from", on a real LatentStore and the real engine film reader, with the
store passed in (never the pack's shared one): the newest, an asked generation, the chosen takes,
a newest that no longer verifies, and a tag with no shot."""

from __future__ import annotations

import pytest
from film_shots import put_shot

from zc_pack.zc_engine import LatentStore, NotFound
from zc_pack.zc_engine import film as engine_film
from zc_pack.zc_nodes import film_view, runtime

TAG = "next_shot"


@pytest.fixture
def store(tmp_path, monkeypatch):
    def no_shared_store():
        raise AssertionError("continue_from used the pack's shared store, not the one passed in")

    monkeypatch.setattr(runtime, "store", no_shared_store)
    with LatentStore(spill_dir=tmp_path / "spill") as s:
        yield s


def put(store, seed, parent=None):
    """One shot (continuing ``parent``'s last latent frame when given); its generation."""
    return put_shot(store, TAG, seed, parent)


def test_it_is_the_newest_or_the_generation_asked_for(store):
    first = put(store, 1)
    second = put(store, 2, parent=first)
    shot, notes = film_view.continue_from(store, TAG)
    assert (shot.generation, notes) == (second, [])
    shot, notes = film_view.continue_from(store, TAG, first)
    assert (shot.generation, notes) == (first, [])


def test_chosen_takes_are_followed_and_said(store):
    first = put(store, 1)
    take_a = put(store, 2, parent=first)
    take_b = put(store, 3, parent=first)  # a second take at the same place, the newest
    store.flush()
    engine_film.choose_take(store.spill_dir, TAG, take_a)
    shot, notes = film_view.continue_from(store, TAG)
    assert shot.generation == take_a
    assert len(notes) == 1 and f"generation {take_a} ends the chosen line" in notes[0]
    assert f"the newest stored is {take_b}" in notes[0]


def test_a_newest_that_fails_its_digest_is_skipped_and_said(store):
    first = put(store, 1)
    second = put(store, 2, parent=first)
    store.get(TAG, second).tensors["latent_tensor"].view(-1)[0] += 1  # the stored bytes change
    shot, notes = film_view.continue_from(store, TAG)
    assert shot.generation == first
    assert any(f"generation {second}" in n for n in notes)
    assert notes[-1] == f"used generation {first}, the newest that verifies"


def test_a_tag_without_shots_is_not_found(store):
    with pytest.raises(NotFound):
        film_view.continue_from(store, TAG)
    put(store, 1)
    with pytest.raises(NotFound):
        film_view.continue_from(store, TAG, 9)
