"""Colour anchor: per-channel statistics and the affine match to the anchor's."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from zc_pack.zc_continuity import ContinuityError, color, resample_frames


@st.composite
def latents(draw, rank=5):
    c = draw(st.integers(1, 6))
    shape = (draw(st.integers(1, 2)), c) + tuple(draw(st.integers(2, 5)) for _ in range(rank - 2))
    seed = draw(st.integers(0, 2**16))
    g = torch.Generator().manual_seed(seed)
    scale = torch.rand(c, generator=g) * 3 + 0.1
    shift = torch.randn(c, generator=g) * 2
    view = (1, c) + (1,) * (rank - 2)
    return torch.randn(shape, generator=g) * scale.view(view) + shift.view(view)


@given(x=latents())
@settings(max_examples=50, deadline=None)
def test_channel_stats_are_per_channel(x):
    stats = color.channel_stats(x)
    for c in range(x.shape[1]):
        values = x[:, c].double().flatten()
        assert torch.isclose(stats.mean[c].double(), values.mean(), atol=1e-5)
        assert torch.isclose(stats.std[c].double(), values.std(unbiased=False), atol=1e-5)
    assert stats.mean.dtype == torch.float32 and stats.channels == x.shape[1]


@given(shot=latents(), anchor=latents())
@settings(max_examples=50, deadline=None)
def test_matching_a_whole_shot_gives_the_anchor_statistics(shot, anchor):
    if anchor.shape[1] != shot.shape[1]:
        anchor = anchor[:, :1].expand(anchor.shape[0], shot.shape[1], *anchor.shape[2:])
    current, target = color.channel_stats(shot), color.channel_stats(anchor)
    before = shot.clone()
    matched = color.match_channel_stats(shot, current, target)
    got = color.channel_stats(matched)
    assert torch.allclose(got.mean, target.mean, atol=1e-4)
    assert torch.allclose(got.std, target.std, atol=1e-4, rtol=1e-4)
    assert torch.equal(shot, before) and matched.dtype == shot.dtype


@given(x=latents())
@settings(max_examples=30, deadline=None)
def test_own_statistics_change_nothing_much_and_commute_with_resampling(x):
    stats = color.channel_stats(x)
    assert torch.allclose(color.match_channel_stats(x, stats, stats), x, atol=1e-5)
    other = color.ChannelStats(stats.mean + 0.5, stats.std * 1.5)
    a = resample_frames(color.match_channel_stats(x, stats, other), 7, 3)
    b = color.match_channel_stats(resample_frames(x, 7, 3), stats, other)
    assert torch.allclose(a, b, atol=1e-4)  # per-channel affine: before or after a resize


def test_flat_channels_are_only_shifted():
    x = torch.ones(1, 2, 3, 2, 2)
    x[:, 1] = torch.randn(3, 2, 2)
    current = color.channel_stats(x)
    anchor = color.ChannelStats(torch.tensor([5.0, 0.0]), torch.tensor([2.0, 1.0]))
    out = color.match_channel_stats(x, current, anchor)
    assert torch.allclose(out[:, 0], torch.full((1, 3, 2, 2), 5.0))


def test_bad_statistics_are_refused():
    x = torch.randn(1, 3, 2, 2, 2)
    good = color.channel_stats(x)
    with pytest.raises(ContinuityError, match="has 2 channels, the latent 3"):
        color.match_channel_stats(x, good, color.ChannelStats(torch.zeros(2), torch.ones(2)))
    with pytest.raises(ContinuityError, match="non-finite"):
        color.match_channel_stats(x, good, color.ChannelStats(torch.tensor([0.0, float("nan"), 0.0]),
                                                              torch.ones(3)))
    with pytest.raises(ContinuityError, match="no channel axis"):
        color.channel_stats(torch.zeros(4, 4))
    assert color.stats_equal(good, color.channel_stats(x.clone()))
