"""Latent resampling: the no-op path, per-frame 2D resizing, ComfyUI's centre-crop rule, errors."""

from __future__ import annotations

from fractions import Fraction

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from zc_pack.zc_continuity import RESAMPLE_METHODS, ContinuityError, center_crop_box, resample_frames

sizes = st.integers(1, 12)


def latent(shape, seed=0):
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed))


@given(b=st.integers(1, 2), c=st.integers(1, 4), t=st.integers(1, 4), h=sizes, w=sizes,
       method=st.sampled_from(RESAMPLE_METHODS), crop=st.sampled_from(["disabled", "center"]))
@settings(max_examples=40, deadline=None)
def test_same_size_is_the_input_object(b, c, t, h, w, method, crop):
    video = latent((b, c, t, h, w))
    assert resample_frames(video, h, w, method, crop) is video
    image = latent((b, c, h, w))
    assert resample_frames(image, h, w, method, crop) is image


def test_same_size_keeps_negative_zero_bits():
    # An identity-size bicubic pass would turn -0.0 into +0.0: the no-op path must not run it.
    video = torch.full((1, 2, 2, 3, 3), -0.0)
    out = resample_frames(video, 3, 3, "bicubic")
    assert torch.signbit(out).all()


@given(b=st.integers(1, 2), c=st.integers(1, 4), t=st.integers(1, 4), h=sizes, w=sizes,
       new_h=sizes, new_w=sizes, method=st.sampled_from(RESAMPLE_METHODS))
@settings(max_examples=60, deadline=None)
def test_video_is_resized_frame_by_frame(b, c, t, h, w, new_h, new_w, method):
    video = latent((b, c, t, h, w), seed=h * 31 + w)
    out = resample_frames(video, new_h, new_w, method)
    assert out.shape == (b, c, t, new_h, new_w) and out.dtype == video.dtype
    assert out.is_contiguous()
    for frame in range(t):
        expected = F.interpolate(video[:, :, frame], size=(new_h, new_w), mode=method)
        assert torch.equal(out[:, :, frame], expected)


@given(b=st.integers(1, 3), c=st.integers(1, 4), h=sizes, w=sizes, new_h=sizes, new_w=sizes)
@settings(max_examples=40, deadline=None)
def test_image_resize_matches_interpolate(b, c, h, w, new_h, new_w):
    image = latent((b, c, h, w))
    out = resample_frames(image, new_h, new_w)
    assert torch.equal(out, F.interpolate(image, size=(new_h, new_w), mode="bicubic"))


@given(t=st.integers(1, 3), h=sizes, w=sizes, new_h=sizes, new_w=sizes)
@settings(max_examples=60, deadline=None)
def test_center_crop_then_resize(t, h, w, new_h, new_w):
    video = latent((1, 3, t, h, w))
    top, left, crop_h, crop_w = center_crop_box(h, w, new_h, new_w)
    if crop_h < 1 or crop_w < 1:
        with pytest.raises(ContinuityError):
            resample_frames(video, new_h, new_w, "bilinear", "center")
        return
    out = resample_frames(video, new_h, new_w, "bilinear", "center")
    cropped = video[..., top:top + crop_h, left:left + crop_w]
    for frame in range(t):
        expected = F.interpolate(cropped[:, :, frame], size=(new_h, new_w), mode="bilinear")
        assert torch.equal(out[:, :, frame], expected)


@given(h=st.integers(1, 300), w=st.integers(1, 300), new_h=st.integers(1, 300),
       new_w=st.integers(1, 300))
@settings(max_examples=100, deadline=None)
def test_center_crop_box_rule(h, w, new_h, new_w):
    top, left, crop_h, crop_w = center_crop_box(h, w, new_h, new_w)
    assert crop_h == h - 2 * top and crop_w == w - 2 * left
    assert top == 0 or left == 0
    source, target = Fraction(w, h), Fraction(new_w, new_h)
    if source > target:      # too wide: trim left and right by about half the excess each
        assert top == 0 and abs(left - (w - h * target) / 2) <= Fraction(1, 2) + Fraction(1, 10**6)
    elif source < target:    # too tall
        assert left == 0 and abs(top - (h - w / target) / 2) <= Fraction(1, 2) + Fraction(1, 10**6)
    else:
        assert (top, left) == (0, 0)


def test_center_crop_examples():
    # Worked by hand from ComfyUI's rule: trim round(excess / 2) from each end of the long side.
    assert center_crop_box(60, 104, 90, 90) == (0, 22, 60, 60)
    assert center_crop_box(104, 60, 90, 90) == (22, 0, 60, 60)
    assert center_crop_box(60, 104, 90, 160) == (1, 0, 58, 104)
    assert center_crop_box(5, 10, 2, 2) == (0, 2, 5, 6)   # round(2.5) == 2 (to even)


def test_constant_latent_stays_constant():
    video = torch.full((1, 2, 2, 6, 10), 0.375)
    for method in RESAMPLE_METHODS:
        out = resample_frames(video, 9, 15, method)
        torch.testing.assert_close(out, torch.full_like(out, 0.375))


def test_commutes_with_per_channel_affine_normalisation():
    video = latent((1, 4, 2, 6, 8))
    mean = torch.tensor([0.1, -0.3, 0.5, 0.0]).view(1, 4, 1, 1, 1)
    std = torch.tensor([1.5, 0.7, 2.0, 1.1]).view(1, 4, 1, 1, 1)
    raw_then_norm = (resample_frames(video, 12, 16) - mean) / std
    norm_then_raw = resample_frames((video - mean) / std, 12, 16)
    torch.testing.assert_close(raw_then_norm, norm_then_raw, rtol=1e-5, atol=1e-5)


def test_integer_downscale_with_area_is_average_pooling():
    video = latent((1, 2, 3, 8, 12))
    out = resample_frames(video, 4, 6, "area")
    expected = F.avg_pool2d(video.movedim(2, 1).reshape(3, 2, 8, 12), 2).reshape(1, 3, 2, 4, 6)
    torch.testing.assert_close(out, expected.movedim(1, 2))


def test_input_is_not_modified():
    video = latent((1, 2, 3, 5, 7))
    before = video.clone()
    resample_frames(video, 9, 4, "bicubic", "center")
    assert torch.equal(video, before)


@pytest.mark.parametrize("kwargs, words", [
    (dict(method="bislerp"), ["'bislerp'", "bicubic"]),
    (dict(method="lanczos"), ["'lanczos'", "bicubic"]),
    (dict(crop="edge"), ["'edge'", "'center'"]),
    (dict(height=0), ["latent height 0", "1 or more"]),
    (dict(width=2.5), ["latent width 2.5", "int"]),
])
def test_bad_arguments(kwargs, words):
    args = dict(height=4, width=4, method="bicubic", crop="disabled") | kwargs
    with pytest.raises(ContinuityError) as err:
        resample_frames(latent((1, 2, 2, 3, 3)), **args)
    for word in words:
        assert word in str(err.value)


def test_wrong_inputs():
    with pytest.raises(ContinuityError) as err:
        resample_frames(torch.zeros(2, 3, 4), 4, 4)
    assert "[2, 3, 4]" in str(err.value)
    with pytest.raises(ContinuityError) as err:
        resample_frames(torch.zeros(1, 2, 3, 3, dtype=torch.int64), 4, 4)
    assert "torch.int64" in str(err.value)
    with pytest.raises(ContinuityError) as err:
        resample_frames([[1.0]], 4, 4)
    assert "list" in str(err.value)
    with pytest.raises(ContinuityError) as err:
        resample_frames(torch.zeros(1, 2, 3, 0, 3), 4, 4)
    assert "empty" in str(err.value)


def test_center_crop_that_leaves_nothing():
    with pytest.raises(ContinuityError) as err:
        resample_frames(latent((1, 1, 1, 100)), 100, 1, "bicubic", "center")
    assert "crop='disabled'" in str(err.value)
