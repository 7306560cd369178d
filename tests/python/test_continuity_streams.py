"""Audio-video streams: the audio layout check, the rate, and the audio tail aligned with the
video tail at the cut, placed and masked exactly in the new stream."""

from __future__ import annotations

from fractions import Fraction

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from zc_pack.zc_continuity import (LTX2, MINIMAX_H3, WAN21, ContinuityError, aligned_tail_frames,
                           overlap_pixel_frames, pixel_frames, streams)


def bits(t):
    return t.contiguous().view(torch.int32)


@given(k=st.integers(0, 40))
@settings(max_examples=41, deadline=None)
def test_h3_audio_length_is_comfyui_temporal_shape(k):
    frames = 17 * k + 5
    # nodes_minimax_h3.temporal_shape: round(frame_count / 24 * 40) in floating point
    assert streams.audio_length(frames, MINIMAX_H3.audio.latents_per_pixel_frame) == round(frames / 24 * 40)


@given(stored_k=st.integers(1, 20), j=st.integers(0, 19))
@settings(max_examples=80, deadline=None)
def test_h3_audio_tail_plays_during_the_video_tail(stored_k, j):
    j = min(j, stored_k)
    latents = 5 * stored_k + 2
    pixels = pixel_frames(latents, MINIMAX_H3)
    rate = streams.audio_rate(MINIMAX_H3, pixels, 1)
    audio_len = streams.audio_length(pixels, rate)
    tail = aligned_tail_frames(5 * j + 2, MINIMAX_H3)
    overlap = overlap_pixel_frames(tail, MINIMAX_H3)
    span = streams.audio_tail(audio_len, pixels, overlap, rate)
    assert span.start + span.count == audio_len  # up to the end of the stored audio
    # starts at the time of the tail's first pixel frame, to the nearest audio latent
    assert abs(span.start - Fraction(pixels - overlap) * rate) <= Fraction(1, 2)
    # and lasts as long as the overlap, within one latent of rounding
    assert abs(span.count - overlap * rate) <= 1


@given(stored_pixels=st.integers(2, 400), overlap=st.integers(1, 400), audio_len=st.integers(1, 600))
@settings(max_examples=100, deadline=None)
def test_measured_rate_aligns_any_lengths(stored_pixels, overlap, audio_len):
    overlap = min(overlap, stored_pixels)
    rate = streams.audio_rate(LTX2, stored_pixels, audio_len)
    assert rate == Fraction(audio_len, stored_pixels)  # LTX-2: the stored shot's own ratio
    span = streams.audio_tail(audio_len, stored_pixels, overlap, rate)
    assert 0 <= span.start < audio_len and span.count >= 1 and span.start + span.count == audio_len


@given(batch=st.integers(1, 2), length=st.integers(2, 30), count=st.integers(1, 40),
       tail_batch_shared=st.booleans(), seed=st.integers(0, 2**16))
@settings(max_examples=60, deadline=None)
def test_audio_inpaint_places_and_masks_the_tail(batch, length, count, tail_batch_shared, seed):
    tail_batch = 1 if tail_batch_shared else batch
    tail = torch.randn(tail_batch, 32, 2, count, generator=torch.Generator().manual_seed(seed))
    before = tail.clone()
    samples, mask = streams.audio_inpaint((batch, 32, 2, length), tail, MINIMAX_H3)
    kept = min(count, length)
    assert samples.shape == (batch, 32, 2, length) and mask.shape == (batch, 1, 2, length)
    assert torch.equal(bits(samples[..., :kept]), bits(tail[..., :kept].expand(batch, 32, 2, kept)))
    assert samples[..., kept:].eq(0).all()
    assert mask[..., :kept].eq(0).all() and mask[..., kept:].eq(1).all()
    assert mask.dtype == torch.float32 and torch.equal(tail, before)


def test_ltx2_audio_time_axis_is_dim_2():
    tail = torch.randn(1, 8, 5, 16)
    samples, mask = streams.audio_inpaint((1, 8, 17, 16), tail, LTX2)
    assert torch.equal(samples[:, :, :5], tail) and samples[:, :, 5:].eq(0).all()
    assert mask.shape == (1, 1, 17, 16) and mask[:, :, :5].eq(0).all() and mask[:, :, 5:].eq(1).all()
    span = streams.AudioTail(start=12, count=5)
    audio = torch.arange(17.0).view(1, 1, 17, 1).expand(1, 8, 17, 16)
    assert streams.take_audio_tail(audio, span, LTX2)[0, 0, :, 0].tolist() == [12, 13, 14, 15, 16]


def test_no_audio_tail_generates_everything():
    samples, mask = streams.audio_inpaint((1, 32, 2, 9), None, MINIMAX_H3)
    assert samples.eq(0).all() and mask.eq(1).all()


def test_audio_checks_name_the_problem():
    with pytest.raises(ContinuityError, match=r"not a MiniMax H3 .* audio latent \[B, 32, 2, T\]"):
        streams.check_audio_stream(torch.zeros(1, 16, 2, 9), MINIMAX_H3, 1)
    with pytest.raises(ContinuityError, match="batch 2 differs"):
        streams.check_audio_stream(torch.zeros(2, 32, 2, 9), MINIMAX_H3, 1)
    with pytest.raises(ContinuityError, match="has no audio stream"):
        streams.audio_rate(WAN21, 9, 9)
    with pytest.raises(ContinuityError, match="only the time axis may differ"):
        streams.audio_inpaint((1, 32, 2, 9), torch.zeros(1, 32, 1, 3), MINIMAX_H3)
    with pytest.raises(ContinuityError, match="spans 30 pixel frames but the stored shot has only 22"):
        streams.audio_tail(37, 22, 30, Fraction(5, 3))
    assert streams.audio_target_shape((1, 8, 17, 16), 2, 25, LTX2) == (2, 8, 25, 16)


def test_a_fresh_audio_stream_has_the_family_layout_and_comfyuis_length():
    # MiniMax H3 audio is [B, 32, 2, T] with T = round(F / 24 * 40) (nodes_minimax_h3)
    assert streams.fresh_audio_shape(MINIMAX_H3, 2, 121) == (2, 32, 2, round(121 / 24 * 40))
    with pytest.raises(ValueError, match="no fixed audio rate"):
        streams.fresh_audio_shape(LTX2, 1, 97)  # LTX-2's rate depends on the user's frame rate
