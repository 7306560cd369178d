"""The family catalog against ComfyUI v0.33.0's own formulas (restated here as numbers),
inference from latent shapes, and chunk-aligned tails."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zc_pack.zc_continuity import (FLUX, HUNYUAN_VIDEO, HUNYUAN_VIDEO_15, LTX2, LTXV, MINIMAX_H3, WAN21,
                           WAN22_5B, ContinuityError, aligned_tail_frames, family_by_name,
                           family_from_latent_format, infer_family_from_latent,
                           infer_family_from_streams, latent_frames, overlap_pixel_frames,
                           tail_pixel_span, target_shape)

# (family, latent format class, channels, spatial ratio, first valid pixel lengths,
#  pixel length -> latent frames as ComfyUI's empty-latent node computes it, canvas step)
FACTS = [
    (WAN22_5B, "Wan22", 48, 16, [1, 5, 9], lambda f: (f - 1) // 4 + 1, 32),
    (HUNYUAN_VIDEO, "HunyuanVideo", 16, 8, [1, 5, 9], lambda f: (f - 1) // 4 + 1, 16),
    (HUNYUAN_VIDEO_15, "HunyuanVideo15", 32, 16, [1, 5, 9], lambda f: (f - 1) // 4 + 1, 16),
    (LTXV, "LTXV", 128, 32, [1, 9, 17], lambda f: (f - 1) // 8 + 1, 32),
    (LTX2, "LTXAV", 128, 32, [1, 9, 17], lambda f: (f - 1) // 8 + 1, 32),
    # nodes_minimax_h3.video_latent_t
    (MINIMAX_H3, "MiniMaxH3AV", 24, 16, [5, 22, 39],
     lambda f: 2 if f <= 5 else ((f - 5) // 17) * 5 + 2, 32),
]


@pytest.mark.parametrize("spec, format_name, channels, spatial, first_lengths, frames_of, step",
                         FACTS, ids=[f[0].name for f in FACTS])
def test_video_family_facts(spec, format_name, channels, spatial, first_lengths, frames_of, step):
    assert family_by_name(spec.name) is spec
    assert family_from_latent_format(format_name) is spec
    assert (spec.channels, spec.spatial_ratio, spec.canvas_multiple) == (channels, spatial, step)
    valid = [f for f in range(1, 400) if spec.length_rule.is_valid_pixel_length(f)]
    assert valid[:3] == first_lengths
    for f in valid:
        assert latent_frames(f, spec) == frames_of(f)
    shape = target_shape(1, step * 3, step * 2, valid[2], spec)
    assert shape == (1, channels, frames_of(valid[2]), step * 2 // spatial, step * 3 // spatial)


def test_flux_is_an_image_family():
    assert family_from_latent_format("Flux") is FLUX and not FLUX.is_video
    assert target_shape(2, 96, 64, 81, FLUX) == (2, 16, 8, 12)  # length ignored for images


def test_caveats_are_stated():
    for spec in (WAN22_5B, HUNYUAN_VIDEO, HUNYUAN_VIDEO_15, LTXV, LTX2, MINIMAX_H3, FLUX):
        assert spec.caveats, spec.name
    assert any("Wan 2.1" in c for c in HUNYUAN_VIDEO.caveats)
    assert any("cache across chunks is unverified" in c for c in MINIMAX_H3.caveats)


def test_shape_inference_where_unambiguous():
    assert infer_family_from_latent((1, 48, 21, 44, 80)) is WAN22_5B
    assert infer_family_from_latent((1, 32, 9, 30, 53)) is HUNYUAN_VIDEO_15
    assert infer_family_from_latent((1, 24, 7, 48, 84)) is MINIMAX_H3  # H3 video stream alone
    assert infer_family_from_latent((1, 16, 21, 60, 104)) is None  # Wan 2.1 / Hunyuan 1.0 / ...
    assert infer_family_from_latent((1, 128, 13, 16, 24)) is None  # LTX-Video 0.9 or LTX-2 video
    assert infer_family_from_latent((1, 16, 128, 128)) is None  # FLUX or SD3
    assert infer_family_from_streams([(1, 24, 7, 4, 4), (1, 32, 2, 37)]) is MINIMAX_H3
    assert infer_family_from_streams([(1, 128, 3, 2, 2), (1, 8, 17, 16)]) is LTX2
    assert infer_family_from_streams([(1, 128, 3, 2, 2)]) is None
    assert infer_family_from_streams([(1, 24, 7, 4, 4), (1, 16, 2, 37)]) is None  # not H3 audio
    assert infer_family_from_streams([(1, 24, 7, 4, 4), (1, 32, 2, 37), (1, 4)]) is None


@given(requested=st.integers(1, 60))
@settings(max_examples=60, deadline=None)
def test_h3_tails_are_the_smallest_chunk_aligned_count(requested):
    k = aligned_tail_frames(requested, MINIMAX_H3)
    assert k >= requested and k % 5 == 2 and k - 5 < max(requested, 2)
    # a chunk-aligned tail spans the same pixel frames in the stored shot and the new one
    stored = k + 5 * 3
    assert tail_pixel_span(stored, k, MINIMAX_H3) == overlap_pixel_frames(k, MINIMAX_H3) == 17 * (k // 5) + 5


@given(requested=st.integers(1, 60), ratio_family=st.sampled_from([WAN21, WAN22_5B, LTXV, HUNYUAN_VIDEO]))
@settings(max_examples=60, deadline=None)
def test_causal_families_take_any_tail(requested, ratio_family):
    assert aligned_tail_frames(requested, ratio_family) == requested
    stored = requested + 2
    # in the stored shot every tail latent is a continuation latent: ratio frames each
    assert tail_pixel_span(stored, requested, ratio_family) == ratio_family.temporal_ratio * requested
    assert overlap_pixel_frames(requested, ratio_family) == ratio_family.temporal_ratio * (requested - 1) + 1


def test_aligned_tail_rejects_bad_counts():
    for bad in (0, -1, True, 1.5):
        with pytest.raises(ContinuityError):
            aligned_tail_frames(bad, MINIMAX_H3)
    assert aligned_tail_frames(3, FLUX) == 3
    with pytest.raises(ContinuityError, match="more than the 2 latent frames"):
        tail_pixel_span(2, 3, WAN21)


def test_h3_audio_layout():
    audio = MINIMAX_H3.audio
    assert audio.rank == 4 and audio.time_axis == 3 and audio.channels == 32
    assert audio.latents_per_pixel_frame == Fraction(5, 3) and MINIMAX_H3.max_batch == 1
    assert LTX2.audio.latents_per_pixel_frame is None and LTX2.audio.time_axis == 2
