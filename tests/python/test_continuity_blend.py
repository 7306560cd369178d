"""Blending the stored tail with a fallback latent."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from zc_pack.zc_continuity import ContinuityError
from zc_pack.zc_continuity.blend import blend

shapes = st.tuples(st.integers(1, 2), st.integers(1, 4), st.integers(1, 3), st.integers(1, 4),
                   st.integers(1, 4))


def pair(shape, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=g), torch.randn(shape, generator=g)


@given(shape=shapes, seed=st.integers(0, 2**16))
@settings(max_examples=40, deadline=None)
def test_endpoints(shape, seed):
    tail, fallback = pair(shape, seed)
    assert blend(tail, fallback, 0.0) is tail
    assert blend(tail, fallback, 0) is tail
    assert torch.equal(blend(tail, fallback, 1.0), fallback)


def test_ratio_zero_keeps_special_bits():
    tail = torch.tensor([-0.0, float("nan"), float("inf")])
    assert blend(tail, torch.zeros(3), 0.0) is tail


@given(shape=shapes, seed=st.integers(0, 2**16), ratio=st.floats(0.0, 1.0))
@settings(max_examples=60, deadline=None)
def test_linear_in_ratio(shape, seed, ratio):
    tail, fallback = pair(shape, seed)
    out = blend(tail, fallback, ratio)
    assert out.shape == tail.shape and out.dtype == tail.dtype
    torch.testing.assert_close(out, tail + ratio * (fallback - tail), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(out, blend(fallback, tail, 1.0 - ratio), rtol=1e-5, atol=1e-5)


@given(seed=st.integers(0, 2**16), a=st.floats(0.0, 1.0), b=st.floats(0.0, 1.0))
@settings(max_examples=30, deadline=None)
def test_midpoints_are_affine(seed, a, b):
    tail, fallback = pair((1, 2, 1, 3, 3), seed)
    mixed = 0.5 * (blend(tail, fallback, a) + blend(tail, fallback, b))
    torch.testing.assert_close(mixed, blend(tail, fallback, (a + b) / 2), rtol=1e-5, atol=1e-5)


def test_fallback_follows_tail_dtype():
    tail = torch.randn(1, 2, 1, 2, 2)
    out = blend(tail, torch.randn(1, 2, 1, 2, 2, dtype=torch.float64), 0.5)
    assert out.dtype == torch.float32


@pytest.mark.parametrize("ratio", [-0.1, 1.5, math.nan, math.inf])
def test_ratio_out_of_range(ratio):
    with pytest.raises(ContinuityError) as err:
        blend(torch.zeros(2), torch.zeros(2), ratio)
    message = str(err.value)
    assert f"blend_ratio {ratio}" in message and "between 0 and 1" in message


@pytest.mark.parametrize("ratio", ["0.5", None, True])
def test_ratio_not_a_number(ratio):
    with pytest.raises(ContinuityError) as err:
        blend(torch.zeros(2), torch.zeros(2), ratio)
    assert repr(ratio) in str(err.value) and "between 0 and 1" in str(err.value)


def test_shape_mismatch():
    with pytest.raises(ContinuityError) as err:
        blend(torch.zeros(1, 16, 2, 60, 104), torch.zeros(1, 16, 1, 60, 104), 0.5)
    message = str(err.value)
    assert "[1, 16, 1, 60, 104]" in message and "[1, 16, 2, 60, 104]" in message
    assert "blend_ratio to 0" in message


@given(batch=st.integers(2, 4), ratio=st.sampled_from([0.0, 0.3, 1.0]))
@settings(max_examples=15, deadline=None)
def test_batch_one_fallback_is_shared(batch, ratio):
    tail, _ = pair((batch, 3, 1, 2, 2), batch)
    fallback = torch.randn(1, 3, 1, 2, 2)
    out = blend(tail, fallback, ratio)
    assert out.shape == tail.shape
    for item in range(batch):
        torch.testing.assert_close(out[item:item + 1], blend(tail[item:item + 1], fallback, ratio))
