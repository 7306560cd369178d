"""Taking tails and sanitising LATENT dicts."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from zc_pack.zc_continuity import ContinuityError, take_tail


class FakeNested:
    """Stands in for ComfyUI's NestedTensor (not a torch.Tensor; has is_nested)."""

    is_nested = True

    def __init__(self, *tensors):
        self.tensors = list(tensors)

    def unbind(self):
        return self.tensors


@given(b=st.integers(1, 3), c=st.integers(1, 4), t=st.integers(1, 8), h=st.integers(1, 5),
       w=st.integers(1, 5), data=st.data())
@settings(max_examples=60, deadline=None)
def test_video_tail_is_the_last_frames(b, c, t, h, w, data):
    frames = data.draw(st.integers(1, t))
    samples = torch.randn(b, c, t, h, w)
    tail = take_tail(samples, frames)
    assert tail.shape == (b, c, frames, h, w)
    assert torch.equal(tail, samples[:, :, t - frames:])
    assert tail.untyped_storage().data_ptr() == samples.untyped_storage().data_ptr()  # a view


@given(b=st.integers(1, 5), data=st.data())
@settings(max_examples=30, deadline=None)
def test_image_tail_is_the_last_batch_items(b, data):
    frames = data.draw(st.integers(1, b))
    samples = torch.randn(b, 4, 3, 5)
    tail = take_tail(samples, frames)
    assert tail.shape == (frames, 4, 3, 5)
    assert torch.equal(tail, samples[b - frames:])


def test_tail_keeps_bits():
    samples = torch.tensor([-0.0, float("nan"), float("inf"), 1e-45]).view(1, 1, 4, 1, 1)
    tail = take_tail(samples, 3)
    assert torch.equal(tail.view(torch.int32), samples[:, :, 1:].view(torch.int32))


@pytest.mark.parametrize("frames", [0, -1, 6])
def test_tail_frames_out_of_range(frames):
    with pytest.raises(ContinuityError) as err:
        take_tail(torch.zeros(1, 16, 5, 2, 2), frames)
    message = str(err.value)
    assert f"tail_frames {frames} is outside 1..5" in message
    assert "5 latent frames" in message and "between 1 and 5" in message


def test_image_tail_out_of_range_mentions_batch_items():
    with pytest.raises(ContinuityError) as err:
        take_tail(torch.zeros(2, 16, 4, 4), 3)
    assert "tail_frames 3" in str(err.value) and "batch items" in str(err.value)


@pytest.mark.parametrize("frames", [1.0, "2", True, None])
def test_tail_frames_type(frames):
    with pytest.raises(ContinuityError) as err:
        take_tail(torch.zeros(1, 16, 5, 2, 2), frames)
    assert repr(frames) in str(err.value)


def test_tail_rejects_other_ranks_and_nested():
    with pytest.raises(ContinuityError) as err:
        take_tail(torch.zeros(1, 64, 100), 1)
    assert "[1, 64, 100]" in str(err.value)
    with pytest.raises(ContinuityError) as err:
        take_tail(FakeNested(torch.zeros(1, 24, 7, 2, 2), torch.zeros(1, 32, 2, 10)), 2)
    assert "nested" in str(err.value) and "unbind" in str(err.value)
