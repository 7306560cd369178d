"""Joining decoded clips: trims dropped, crossfades at the seams, audio at its own rate."""

from __future__ import annotations

import pytest
import torch

from zc_continuity import ContinuityError
from zc_continuity.film_join import join_audio, join_frames, seam_trims, shot_range


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
