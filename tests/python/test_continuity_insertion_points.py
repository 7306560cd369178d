"""Insertion points of the other families: HunyuanVideo (replace, concat), LTX guides (plan,
marker, crop), MiniMax H3 keyframe entries, FLUX Kontext references."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from zc_pack.zc_continuity import ContinuityError, hunyuan, kontext, ltx, minimax, take_tail


def bits(t):
    return t.contiguous().view(torch.int32)


@st.composite
def video_cases(draw):
    b, c = draw(st.integers(1, 2)), draw(st.integers(1, 6))
    t, h, w = draw(st.integers(2, 7)), draw(st.integers(1, 4)), draw(st.integers(1, 4))
    k = draw(st.integers(1, t - 1))
    seed = draw(st.integers(0, 2**16))
    source = torch.randn(draw(st.sampled_from([1, b])), c, t + 2, h, w,
                         generator=torch.Generator().manual_seed(seed))
    return (b, c, t, h, w), take_tail(source, k)


@given(case=video_cases())
@settings(max_examples=50, deadline=None)
def test_hunyuan_replace_and_concat(case):
    target, tail = case
    b, c, t, h, w = target
    k = tail.shape[2]
    replace = hunyuan.hunyuan_replace(target, tail)
    assert torch.equal(bits(replace.samples[:, :, :k]), bits(tail.expand(b, c, k, h, w)))
    assert replace.samples[:, :, k:].eq(0).all()  # HunyuanVideo's process_out(0) is 0
    assert replace.noise_mask.shape == (b, 1, t, h, w) and replace.noise_mask[:, :, :k].eq(0).all()
    assert replace.positive_values() == {"guiding_frame_index": 0}
    assert set(replace.latent_dict()) == {"samples", "noise_mask"}
    concat = hunyuan.hunyuan_concat(target, tail)
    assert torch.equal(bits(concat.concat_latent_image[:, :, :k]), bits(tail.expand(b, c, k, h, w)))
    assert concat.concat_latent_image[:, :, k:].eq(0).all()  # zeros, as core pads
    assert concat.concat_mask.shape == (1, 1, t, h, w)
    assert concat.concat_mask[:, :, :k].eq(0).all() and concat.concat_mask[:, :, k:].eq(1).all()
    assert concat.samples.eq(0).all()


@given(case=video_cases())
@settings(max_examples=50, deadline=None)
def test_ltx_guide_plan(case):
    target, tail = case
    b, c, t, h, w = target
    plan = ltx.ltx_guide_plan(target, tail)
    assert plan.samples.shape == target and plan.samples.eq(0).all()
    assert plan.noise_mask.shape == (b, 1, t, 1, 1) and plan.noise_mask.eq(1).all()
    assert plan.guide is tail and plan.frame_idx == 0 and plan.strength == 1.0


@given(frames=st.integers(1, 9), guides=st.integers(1, 5))
@settings(max_examples=40, deadline=None)
def test_appended_guides_are_cropped_once(frames, guides):
    marker = ltx.guide_marker(guides, frames)
    video = torch.randn(1, 4, frames + guides, 2, 2)
    cropped, removed = ltx.crop_appended_guides(video, marker)
    assert removed == guides and torch.equal(cropped, video[:, :, :frames])
    again, removed = ltx.crop_appended_guides(cropped, marker)  # e.g. after LTXVCropGuides
    assert removed == 0 and again is cropped


def test_crop_refuses_what_it_cannot_explain():
    with pytest.raises(ContinuityError, match="crop the guides with LTXVCropGuides"):
        ltx.crop_appended_guides(torch.zeros(1, 4, 7, 2, 2), ltx.guide_marker(2, 3))
    with pytest.raises(ContinuityError, match="not what the Handoff writes"):
        ltx.crop_appended_guides(torch.zeros(1, 4, 3, 2, 2), {"frames": 1})


def test_minimax_keyframe_entries():
    tail = torch.randn(1, 24, 7, 4, 6)
    audio = torch.randn(1, 32, 2, 37)
    (one,) = minimax.keyframe_entries(tail, clip_keyframes=False, audio_tail=audio)
    assert one["resolved_frame_index"] == 0 and set(one) == {"resolved_frame_index", "latent"}
    # the chunk-start latent, as a view: one latent frame, encoded from one pixel frame
    assert one["latent"].shape == (1, 24, 1, 4, 6) and one["latent"].data_ptr() == tail.data_ptr()
    (clip,) = minimax.keyframe_entries(tail, clip_keyframes=True, audio_tail=audio)
    assert clip["latent"] is tail and clip["audio_latent"] is audio
    (video_only,) = minimax.keyframe_entries(tail, clip_keyframes=True)
    assert "audio_latent" not in video_only
    with pytest.raises(ContinuityError, match="batch size 1 only"):
        minimax.keyframe_entries(torch.zeros(2, 24, 2, 4, 4), clip_keyframes=False)
    with pytest.raises(ContinuityError, match=r"\[1, C, k, H, W\]"):
        minimax.keyframe_entries(torch.zeros(1, 24, 4, 4), clip_keyframes=False)


@given(n=st.integers(1, 2), h=st.integers(1, 9), w=st.integers(1, 9), batch=st.integers(1, 3))
@settings(max_examples=40, deadline=None)
def test_kontext_reference_is_kept_whole(n, h, w, batch):
    reference = torch.randn(n, 16, h, w)
    out = kontext.kontext_reference((batch, 16, 8, 12), reference)
    assert out.reference_latent is reference  # bit-identical: not resampled, not copied
    assert out.samples.shape == (batch, 16, 8, 12) and out.samples.eq(0).all()
    assert out.conditioning_values() == {"reference_latents": [reference]}
    assert set(out.latent_dict()) == {"samples"}


def test_kontext_refuses_non_image_latents():
    with pytest.raises(ContinuityError, match="16-channel image latent"):
        kontext.kontext_reference((1, 16, 8, 8), torch.zeros(1, 16, 1, 8, 8))
    with pytest.raises(ContinuityError, match="16-channel image latent"):
        kontext.kontext_reference((1, 16, 8, 8), torch.zeros(1, 4, 8, 8))
    with pytest.raises(ContinuityError, match=r"not an image latent"):
        kontext.kontext_reference((1, 16, 3, 8, 8), torch.zeros(1, 16, 8, 8))
