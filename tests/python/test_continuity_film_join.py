"""Joining decoded clips: trims dropped, crossfades at the seams, audio at its own rate; the
incremental joiner (one batch, filled a clip at a time) gives join_frames' frames bit for bit."""

from __future__ import annotations

import pytest
import torch

from zc_pack.zc_continuity import ContinuityError
from zc_pack.zc_continuity.film_join import (
    FrameJoiner,
    join_audio,
    join_frames,
    joined_length,
    pixel_frames,
    seam_trims,
    shot_range,
)


def clip(value: float, frames: int) -> torch.Tensor:
    return torch.full((frames, 2, 3, 3), float(value))


def test_trims_are_dropped_and_frame_counts_add_up():
    clips = [clip(1, 9), clip(2, 9), clip(3, 9)]
    film = join_frames(clips, [0, 1, 5])
    assert film.shape[0] == 9 + 8 + 4  # the sum of the clips minus the trims
    assert film[:9].eq(1).all() and film[9:17].eq(2).all() and film[17:].eq(3).all()


def test_a_crossfade_blends_the_seam_linearly():
    film = join_frames([clip(0, 5), clip(4, 5)], [1, 1], crossfade=3)
    assert film.shape[0] == 5 + 4 - 3
    seam = film[2:5, 0, 0, 0].tolist()
    assert seam == pytest.approx([1.0, 2.0, 3.0])  # 0 -> 4 in quarters
    assert film[:2].eq(0).all() and film[5:].eq(4).all()


def test_audio_joins_at_its_own_rate():
    waves = [torch.full((1, 2, 100), 1.0), torch.full((1, 2, 100), 2.0)]
    joined = join_audio(waves, [0, 2], samples_per_frame=10)
    assert joined.shape == (1, 2, 180) and joined[..., :100].eq(1).all() and joined[..., 100:].eq(2).all()


def test_bad_input_is_named():
    with pytest.raises(ContinuityError, match="no clip to join"):
        join_frames([], [])
    with pytest.raises(ContinuityError, match="clip 2 has 3 frames but its trim is 3"):
        join_frames([clip(1, 3), clip(2, 3)], [0, 3])
    with pytest.raises(ContinuityError, match="does not join"):
        join_frames([clip(1, 3), torch.zeros(3, 4, 3, 3)], [0, 0])
    with pytest.raises(ContinuityError, match="2 trims for 1 clips"):
        join_frames([clip(1, 3)], [0, 0])
    with pytest.raises(ContinuityError, match="not an IMAGE batch"):
        join_frames([torch.zeros(2, 2)], [0])


def test_the_range_of_shots_and_their_trims():
    line = [{"generation": g, "trim": t} for g, t in ((2, 0), (3, 1), (7, 5))]
    assert [s["generation"] for s in shot_range(line, 1, 0)] == [2, 3, 7]
    assert [s["generation"] for s in shot_range(line, 2, 2)] == [3]
    assert seam_trims(shot_range(line, 2, 3), -1) == [0, 5]  # the first shot joined keeps every frame
    assert seam_trims(line, 4) == [0, 4, 4]
    for first, last in ((0, 0), (4, 0), (2, 1), (1, 4)):
        with pytest.raises(ContinuityError, match="not on the film's line of 3 shots"):
            shot_range(line, first, last)
    with pytest.raises(ContinuityError, match="holds no shot"):
        shot_range([], 1, 0)


# -- the incremental joiner --------------------------------------------------------------------

def noisy(seed: int, frames: int, dtype=torch.float32) -> torch.Tensor:
    return torch.rand((frames, 2, 3, 3), generator=torch.Generator().manual_seed(seed)).to(dtype)


def joined_one_at_a_time(clips, trims, crossfade=0, total=None):
    counts = [c.shape[0] for c in clips]
    joiner = FrameJoiner(joined_length(counts, trims, crossfade) if total is None else total, trims, crossfade)
    for clip in clips:
        joiner.add(clip)
    return joiner, joiner.result()


@pytest.mark.parametrize("counts, trims, crossfade", [
    ([9], [0], 0),  # one clip
    ([9, 9, 9], [0, 1, 5], 0),  # cuts with trims
    ([5, 5], [1, 1], 3),  # a crossfade
    ([81, 81, 81], [0, 4, 4], 8),  # Wan-like shots
    ([6, 2, 2, 7], [0, 0, 1, 0], 4),  # the fade reaches back past the last (short) clip
    ([3, 10], [0, 0], 8),  # the fade is longer than the film so far
    ([4, 3], [0, 2], 5),  # ... and than the clip's kept frames
])
def test_the_joiner_gives_join_frames_frames(counts, trims, crossfade):
    clips = [noisy(seed, n) for seed, n in enumerate(counts)]
    expected = join_frames(clips, trims, crossfade)
    joiner, film = joined_one_at_a_time(clips, trims, crossfade)
    assert torch.equal(film, expected) and film.dtype == expected.dtype
    assert joiner.grown == 0 and joiner.capacity == film.shape[0] == joined_length(counts, trims, crossfade)


def test_a_wrong_projection_still_gives_the_right_frames():
    clips, trims = [noisy(seed, n) for seed, n in enumerate((9, 9, 9))], [0, 1, 1]
    expected = join_frames(clips, trims, 2)
    short, film = joined_one_at_a_time(clips, trims, 2, total=10)  # too few: the batch grows per clip
    assert torch.equal(film, expected) and short.grown == 2 and short.capacity == expected.shape[0]
    long, film = joined_one_at_a_time(clips, trims, 2, total=40)  # too many: the frames joined
    assert torch.equal(film, expected) and long.grown == 0 and long.capacity == 40
    ahead = FrameJoiner(5, trims, 2)  # told of a newer projection: one growth, straight to it
    ahead.add(clips[0])
    ahead.expect(expected.shape[0])
    for clip in clips[1:]:
        ahead.add(clip)
    assert torch.equal(ahead.result(), expected) and ahead.grown == 1


def test_clips_of_another_dtype_join_as_join_frames_promotes_them():
    clips, trims = [noisy(1, 6, torch.float16), noisy(2, 6), noisy(3, 6, torch.bfloat16)], [0, 1, 1]
    expected = join_frames(clips, trims, 3)
    _, film = joined_one_at_a_time(clips, trims, 3)
    assert film.dtype == expected.dtype == torch.float32 and torch.equal(film, expected)


def test_the_joiner_names_bad_input_as_join_frames_does():
    with pytest.raises(ContinuityError, match="no clip to join"):
        FrameJoiner(0, []).result()
    joiner = FrameJoiner(6, [0, 3])
    joiner.add(clip(1, 3))
    with pytest.raises(ContinuityError, match="clip 2 has 3 frames but its trim is 3"):
        joiner.add(clip(2, 3))
    joiner = FrameJoiner(6, [0, 0])
    joiner.add(clip(1, 3))
    with pytest.raises(ContinuityError, match=r"clip 2 of shape \[3, 4, 3, 3\] does not join \[3, 2, 3, 3\]"):
        joiner.add(torch.zeros(3, 4, 3, 3))
    with pytest.raises(ContinuityError, match="2 trims for 1 clips"):
        joiner.result()
    joiner.add(clip(2, 3))
    with pytest.raises(ContinuityError, match="2 trims for 3 clips"):
        joiner.add(clip(3, 3))
    with pytest.raises(ContinuityError, match="not an IMAGE batch"):
        FrameJoiner(2, [0]).add(torch.zeros(2, 2))
    with pytest.raises(ContinuityError, match="not a floating-point dtype"):
        FrameJoiner(2, [0]).add(torch.zeros(2, 2, 3, 3, dtype=torch.uint8))


def test_random_films_join_alike_one_clip_at_a_time():
    """A property over random films (seeded, so cheap and repeatable): counts, trims, crossfade and
    a projection that may be off, the joiner equals join_frames bit for bit."""
    rng = torch.Generator().manual_seed(36)

    def pick(low, high):
        return int(torch.randint(low, high + 1, (1,), generator=rng))

    for case in range(200):
        counts = [pick(1, 12) for _ in range(pick(1, 5))]
        trims = [0] + [pick(0, n - 1) for n in counts[1:]]
        crossfade = pick(0, 6)
        clips = [noisy(case * 10 + k, n) for k, n in enumerate(counts)]
        exact = joined_length(counts, trims, crossfade)
        expected = join_frames(clips, trims, crossfade)
        assert expected.shape[0] == exact, (counts, trims, crossfade)
        _, film = joined_one_at_a_time(clips, trims, crossfade, total=max(exact + pick(-6, 6), 0))
        assert torch.equal(film, expected), (counts, trims, crossfade)


def test_pixel_frames_are_projected_from_the_shots_decoded():
    wan, ltx = [(21, 81)], [(16, 121)]
    assert [pixel_frames(t, wan) for t in (21, 11, 1, 41)] == [81, 41, 1, 161]  # 1 + (T - 1) x 4
    assert [pixel_frames(t, ltx) for t in (16, 9, 1)] == [121, 65, 1]  # 1 + (T - 1) x 8
    assert pixel_frames(3, [(1, 1)]) == 3  # one latent frame known: in proportion (checked by the caller)
    assert pixel_frames(11, [(1, 1), (21, 81)]) == 41  # two lengths known: the line through them
    assert pixel_frames(5, [(1, 4)]) == 20  # an image family: frames per latent frame
    with pytest.raises(ContinuityError, match="no decoded shot"):
        pixel_frames(3, [])
