"""Insertion points: tail placement, fill/padding placement, exact masks, shape errors."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from zc_pack.zc_continuity import ContinuityError, take_tail, temporal_inpaint, wan_i2v_concat


def bits(t: torch.Tensor) -> torch.Tensor:
    return t.contiguous().view(torch.int32)


@st.composite
def cases(draw):
    """(target shape, tail) with 1 <= k < T and a tail batch of 1 or B."""
    b, c = draw(st.integers(1, 3)), draw(st.integers(1, 5))
    t, h, w = draw(st.integers(2, 8)), draw(st.integers(1, 5)), draw(st.integers(1, 5))
    k = draw(st.integers(1, t - 1))
    tail_batch = draw(st.sampled_from([1, b]))
    seed = draw(st.integers(0, 2**16))
    source = torch.randn(tail_batch, c, t + 3, h, w, generator=torch.Generator().manual_seed(seed))
    return (b, c, t, h, w), take_tail(source, k)


@given(case=cases())
@settings(max_examples=60, deadline=None)
def test_temporal_inpaint_places_tail_fill_and_mask(case):
    target, tail = case
    b, c, t, h, w = target
    k = tail.shape[2]
    fill = torch.linspace(-1, 1, c)
    before = tail.clone()
    out = temporal_inpaint(target, tail, fill)
    assert out.samples.shape == target and out.samples.dtype == tail.dtype
    assert torch.equal(bits(out.samples[:, :, :k]), bits(tail.expand(b, c, k, h, w)))
    assert torch.equal(out.samples[:, :, k:], fill.view(1, c, 1, 1, 1).expand(b, c, t - k, h, w))
    assert out.noise_mask.shape == (b, 1, t, h, w) and out.noise_mask.dtype == torch.float32
    assert torch.equal(out.noise_mask[:, :, :k], torch.zeros(b, 1, k, h, w))
    assert torch.equal(out.noise_mask[:, :, k:], torch.ones(b, 1, t - k, h, w))
    assert torch.equal(tail, before)
    out.samples.add_(1.0)   # the result owns its memory
    assert torch.equal(tail, before)
    assert set(out.latent_dict()) == {"samples", "noise_mask"}


def test_temporal_inpaint_copies_special_values_bit_for_bit():
    tail = torch.tensor([-0.0, float("nan"), float("inf"), -1e-45]).view(1, 1, 4, 1, 1)
    out = temporal_inpaint((1, 1, 5, 1, 1), tail, torch.zeros(1))
    assert torch.equal(bits(out.samples[:, :, :4]), bits(tail))


def test_fill_accepts_process_out_shape():
    tail = torch.randn(1, 3, 1, 2, 2)
    fill = torch.tensor([0.5, -0.25, 2.0]).view(1, 3, 1, 1, 1)  # process_out(zeros[1, C, 1, 1, 1])
    out = temporal_inpaint((1, 3, 3, 2, 2), tail, fill)
    assert torch.equal(out.samples[0, :, 2, 0, 0], fill.flatten())


def test_fill_follows_tail_dtype():
    tail = torch.randn(1, 2, 1, 2, 2, dtype=torch.float64)
    out = temporal_inpaint((1, 2, 3, 2, 2), tail, torch.ones(2, dtype=torch.float32))
    assert out.samples.dtype == torch.float64 and out.noise_mask.dtype == torch.float32


@given(case=cases(), full_padding=st.booleans())
@settings(max_examples=60, deadline=None)
def test_wan_i2v_concat_places_tail_and_padding(case, full_padding):
    target, tail = case
    b, c, t, h, w = target
    k = tail.shape[2]
    if full_padding:
        padding = torch.randn(1, c, t, h, w)
        expected_pad = padding[:, :, k:].expand(b, c, t - k, h, w)
    else:
        padding = torch.linspace(0, 1, c)
        expected_pad = padding.view(1, c, 1, 1, 1).expand(b, c, t - k, h, w)
    out = wan_i2v_concat(target, tail, padding)
    image = out.concat_latent_image
    assert image.shape == target and image.dtype == tail.dtype
    assert torch.equal(bits(image[:, :, :k]), bits(tail.expand(b, c, k, h, w)))
    assert torch.equal(image[:, :, k:], expected_pad)
    assert out.concat_mask.shape == (1, 1, t, h, w) and out.concat_mask.dtype == torch.float32
    assert torch.equal(out.concat_mask[:, :, :k], torch.zeros(1, 1, k, h, w))
    assert torch.equal(out.concat_mask[:, :, k:], torch.ones(1, 1, t - k, h, w))
    assert out.samples.shape == target and not out.samples.any()
    assert set(out.conditioning_values()) == {"concat_latent_image", "concat_mask"}
    assert set(out.latent_dict()) == {"samples"}


def test_wan_padding_per_item():
    tail = torch.randn(2, 16, 1, 2, 2)
    padding = torch.randn(2, 16, 5, 2, 2)
    out = wan_i2v_concat((2, 16, 5, 2, 2), tail, padding)
    assert torch.equal(out.concat_latent_image[:, :, 1:], padding[:, :, 1:])


def test_reference_wan_sizes():
    tail = torch.randn(1, 16, 2, 60, 104)
    out = wan_i2v_concat((1, 16, 21, 60, 104), tail, torch.zeros(16))
    assert out.concat_mask.shape == (1, 1, 21, 60, 104)
    assert out.concat_mask[0, 0, :, 0, 0].tolist() == [0.0, 0.0] + [1.0] * 19


@pytest.mark.parametrize("build", [temporal_inpaint, wan_i2v_concat])
@pytest.mark.parametrize("k, t", [(3, 3), (4, 3)])
def test_tail_leaving_nothing_to_generate(build, k, t):
    with pytest.raises(ContinuityError) as err:
        build((1, 4, t, 2, 2), torch.zeros(1, 4, k, 2, 2), torch.zeros(4))
    assert str(err.value) == (f"tail_frames {k} leaves no frame to generate in a {t}-frame latent; "
                              "lower tail_frames or raise length")


@pytest.mark.parametrize("build", [temporal_inpaint, wan_i2v_concat])
@pytest.mark.parametrize("tail_shape", [(1, 16, 2, 60, 100), (1, 48, 2, 60, 104), (1, 16, 2, 30, 104)])
def test_tail_size_mismatch_names_both_shapes(build, tail_shape):
    with pytest.raises(ContinuityError) as err:
        build((1, 16, 21, 60, 104), torch.zeros(tail_shape), torch.zeros(16))
    message = str(err.value)
    assert "[" + ", ".join(map(str, tail_shape)) + "]" in message
    assert "[1, 16, 21, 60, 104]" in message and "resample_frames" in message


@pytest.mark.parametrize("build", [temporal_inpaint, wan_i2v_concat])
def test_tail_batch_mismatch(build):
    with pytest.raises(ContinuityError) as err:
        build((3, 4, 5, 2, 2), torch.zeros(2, 4, 1, 2, 2), torch.zeros(4))
    assert "tail batch 2" in str(err.value) and "batch 1" in str(err.value)


@pytest.mark.parametrize("build", [temporal_inpaint, wan_i2v_concat])
def test_target_must_be_video(build):
    with pytest.raises(ContinuityError) as err:
        build((1, 4, 2, 2), torch.zeros(1, 4, 1, 2, 2), torch.zeros(4))
    assert "[1, 4, 2, 2]" in str(err.value) and "[B, C, T, H, W]" in str(err.value)
    with pytest.raises(ContinuityError) as err:
        build((1, 4, 0, 2, 2), torch.zeros(1, 4, 1, 2, 2), torch.zeros(4))
    assert "target frames 0" in str(err.value)


@pytest.mark.parametrize("build", [temporal_inpaint, wan_i2v_concat])
def test_tail_must_be_5d_float(build):
    with pytest.raises(ContinuityError) as err:
        build((1, 4, 3, 2, 2), torch.zeros(1, 4, 2, 2), torch.zeros(4))
    assert "[1, 4, 2, 2]" in str(err.value) and "take_tail" in str(err.value)
    with pytest.raises(ContinuityError) as err:
        build((1, 4, 3, 2, 2), torch.zeros(1, 4, 1, 2, 2, dtype=torch.int32), torch.zeros(4))
    assert "torch.int32" in str(err.value)


def test_fill_with_wrong_channel_count():
    with pytest.raises(ContinuityError) as err:
        temporal_inpaint((1, 4, 3, 2, 2), torch.zeros(1, 4, 1, 2, 2), torch.zeros(16))
    message = str(err.value)
    assert "fill of shape [16]" in message and "(4)" in message and "process_out" in message


def test_padding_with_wrong_shape():
    with pytest.raises(ContinuityError) as err:
        wan_i2v_concat((1, 4, 5, 2, 2), torch.zeros(1, 4, 1, 2, 2), torch.zeros(1, 4, 4, 2, 2))
    message = str(err.value)
    assert "padding of shape [1, 4, 4, 2, 2]" in message and "[1, 4, 5, 2, 2]" in message
    assert "0.5-gray" in message
