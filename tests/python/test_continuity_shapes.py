"""Target sizes from pixel settings, and the messages users see when a setting is off."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zc_pack.zc_continuity import (GENERIC_VIDEO, WAN21, ContinuityError, FamilySpec, latent_frames,
                           latent_size, overlap_pixel_frames, pixel_frames, target_shape,
                           validate_canvas, validate_latent_for_family, validate_length)

IMAGE = FamilySpec(name="test_image", display_name="Test image", channels=16, spatial_ratio=8,
                   temporal_ratio=1, latent_dims=2, length_rule=None, canvas_multiple=16,
                   canvas_reason="test")


@given(k=st.integers(0, 300))
@settings(max_examples=60, deadline=None)
def test_valid_wan_lengths(k):
    length = 4 * k + 1
    assert validate_length(length, WAN21) == length
    assert latent_frames(length, WAN21) == (length - 1) // 4 + 1 == k + 1
    assert pixel_frames(k + 1, WAN21) == length


def test_length_message_example():
    with pytest.raises(ContinuityError) as err:
        validate_length(80, WAN21)
    message = str(err.value)
    assert message.startswith("length 80 is not valid for Wan 2.1")
    assert "pixel lengths are 4k+1" in message and message.endswith("use 77 or 81")


@given(length=st.integers(-100, 1000).filter(lambda n: n < 1 or (n - 1) % 4))
@settings(max_examples=80, deadline=None)
def test_invalid_lengths_name_value_and_nearest(length):
    with pytest.raises(ContinuityError) as err:
        validate_length(length, WAN21)
    message = str(err.value)
    assert f"length {length} " in message and "4k+1" in message
    below = (length - 1) // 4 * 4 + 1
    if length < 1:
        assert message.endswith("use 1")
    else:
        assert message.endswith(f"use {below} or {below + 4}")


@pytest.mark.parametrize("bad", ["81", 81.0, None, True])
def test_length_type_errors(bad):
    with pytest.raises(ContinuityError) as err:
        validate_length(bad, WAN21)
    assert repr(bad) in str(err.value) and "int" in str(err.value)


@given(w=st.integers(1, 200), h=st.integers(1, 200))
@settings(max_examples=60, deadline=None)
def test_canvas(w, h):
    width, height = 16 * w, 16 * h
    assert validate_canvas(width, height, WAN21) == (width, height)
    assert latent_size(width, height, WAN21) == (height // 8, width // 8)


def test_canvas_message_names_both_sides_and_fix():
    with pytest.raises(ContinuityError) as err:
        validate_canvas(500, 300, WAN21)
    message = str(err.value)
    assert "width 500 and height 300 are not valid" in message
    assert "multiples of 16" in message and "2x2" in message
    assert message.endswith("use width 496 or 512 and height 288 or 304")


@given(value=st.integers(-40, 4000).filter(lambda n: n < 16 or n % 16))
@settings(max_examples=60, deadline=None)
def test_canvas_single_bad_side(value):
    with pytest.raises(ContinuityError) as err:
        validate_canvas(832, value, WAN21)
    message = str(err.value)
    assert f"height {value} is not valid" in message and "width" not in message.split(":")[0]
    below = value // 16 * 16
    fix = f"height {below} or {below + 16}" if below >= 16 else "height 16"
    assert message.endswith(f"use {fix}")


@given(batch=st.integers(1, 4), w=st.integers(1, 60), h=st.integers(1, 60), k=st.integers(0, 40))
@settings(max_examples=60, deadline=None)
def test_target_shape_video(batch, w, h, k):
    shape = target_shape(batch, 16 * w, 16 * h, 4 * k + 1, WAN21)
    assert shape == (batch, 16, k + 1, 2 * h, 2 * w)


def test_target_shape_reference_sizes():
    assert target_shape(1, 832, 480, 81, WAN21) == (1, 16, 21, 60, 104)
    assert target_shape(1, 1280, 720, 121, WAN21) == (1, 16, 31, 90, 160)


def test_target_shape_image_ignores_length():
    assert target_shape(2, 1024, 768, 81, IMAGE) == (2, 16, 96, 128)
    assert target_shape(2, 1024, 768, 80, IMAGE) == (2, 16, 96, 128)
    with pytest.raises(ContinuityError):
        latent_frames(81, IMAGE)


def test_target_shape_bad_batch():
    with pytest.raises(ContinuityError) as err:
        target_shape(0, 832, 480, 81, WAN21)
    assert "batch size 0" in str(err.value) and "use 1 or more" in str(err.value)


def test_generic_spec_must_be_resolved():
    with pytest.raises(ContinuityError) as err:
        target_shape(1, 832, 480, 81, GENERIC_VIDEO)
    assert "metadata" in str(err.value)
    spec = GENERIC_VIDEO.resolved(channels=48, spatial_ratio=16, temporal_ratio=4)
    assert target_shape(1, 1280, 704, 121, spec) == (1, 48, 31, 44, 80)


@given(k=st.integers(1, 40))
@settings(max_examples=40, deadline=None)
def test_overlap_pixel_frames(k):
    assert overlap_pixel_frames(k, WAN21) == (k - 1) * 4 + 1
    assert overlap_pixel_frames(k, IMAGE) == 0


def test_overlap_needs_positive_tail():
    with pytest.raises(ContinuityError) as err:
        overlap_pixel_frames(0, WAN21)
    assert "tail_frames 0" in str(err.value)


def test_latent_family_check():
    validate_latent_for_family((1, 16, 21, 60, 104), WAN21)
    with pytest.raises(ContinuityError) as err:
        validate_latent_for_family((1, 48, 21, 44, 80), WAN21)
    assert "48 channels" in str(err.value) and "16" in str(err.value)
    with pytest.raises(ContinuityError) as err:
        validate_latent_for_family((1, 16, 60, 104), WAN21)
    assert "[1, 16, 60, 104]" in str(err.value) and "[B, C, T, H, W]" in str(err.value)


@given(t=st.integers(1, 60))
@settings(max_examples=30, deadline=None)
def test_pixel_frames_inverts_latent_frames(t):
    assert latent_frames(pixel_frames(t, WAN21), WAN21) == t


@pytest.mark.parametrize("count", [0, -2, 1.5, True])
def test_pixel_frames_errors(count):
    with pytest.raises(ContinuityError) as err:
        pixel_frames(count, WAN21)
    assert repr(count) in str(err.value) and "[B, C, T, H, W]" in str(err.value)
    with pytest.raises(ContinuityError) as err:
        pixel_frames(3, IMAGE)
    assert "image family" in str(err.value)
