"""HunyuanVideo insertion points: 1.0 I2V (v2 replace, v1 concat) and 1.5 I2V (concat).

These mirror ComfyUI's ``HunyuanImageToVideo`` and ``HunyuanVideo15ImageToVideo``
with the stored tail latents in place of an encoded start image.

- 1.0 v2 (replace): the tail goes into ``samples[:, :, :k]`` with ``noise_mask``
  0 there, and ``guiding_frame_index: 0`` on the positive conditioning. The
  model gives the tokens of latent frame 0 the timestep embedding of a clean
  frame; frames 1..k-1 of a longer tail are kept only by the mask (the model
  substitutes the clean latent each step), without that embedding.
- 1.0 v1 (concat, 33-channel I2V checkpoints): ``concat_latent_image`` is the
  tail alone (k latents), as HunyuanImageToVideo sets the start image's
  encoding unpadded (the model zero-pads it in T after process_in), and
  ``concat_mask`` [1, 1, T, H, W] 0 on the tail.
- 1.5: ``concat_latent_image`` [B, 32, T, H, W] with the tail in frames [0:k]
  and zeros after, as HunyuanVideo15ImageToVideo pads (zero is also
  ``process_out(0)`` for both formats, which only scale), and ``concat_mask``
  0 on the tail.

Caveats: the causal first frame (slot 0 expects a one-pixel-frame latent, the
tail is a continuation latent), and for 1.0 that its latents have Wan 2.1's
shape, so the family must come from the model or the Store's metadata.
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from .assemble import WanI2VConcat, temporal_inpaint, wan_i2v_concat


class HunyuanReplace(NamedTuple):
    """HunyuanVideo 1.0 v2 (replace): the LATENT plus the key for the positive conditioning."""

    samples: torch.Tensor
    noise_mask: torch.Tensor

    def positive_values(self) -> dict:
        """Set on the positive conditioning only, as HunyuanImageToVideo does."""
        return {"guiding_frame_index": 0}

    def latent_dict(self) -> dict:
        return {"samples": self.samples, "noise_mask": self.noise_mask}


def hunyuan_replace(target_shape, tail: torch.Tensor) -> HunyuanReplace:
    """Tail in frames [0:k], zeros after (raw = model-space zero for HunyuanVideo), mask 0 on the tail.

    The mask is [B, 1, T, H, W]; HunyuanImageToVideo's is [1, 1, T, H, W] (equal for batch 1;
    the sampler resizes either to the batch)."""
    channels = int(target_shape[1])
    out = temporal_inpaint(target_shape, tail, torch.zeros(channels, dtype=torch.float32))
    return HunyuanReplace(samples=out.samples, noise_mask=out.noise_mask)


def hunyuan_concat(target_shape, tail: torch.Tensor) -> WanI2VConcat:
    """Concat conditioning with zero padding (HunyuanVideo 1.0 v1 and 1.5 I2V).

    Where the returned ``conditioning_values()`` go follows core: both
    positive and negative for 1.5 (HunyuanVideo15ImageToVideo), positive only
    for 1.0 v1 (HunyuanImageToVideo).
    """
    channels = int(target_shape[1])
    return wan_i2v_concat(target_shape, tail, torch.zeros(channels, dtype=torch.float32))


def hunyuan_v1_concat(target_shape, tail: torch.Tensor) -> WanI2VConcat:
    """HunyuanVideo 1.0 v1 (concat) as HunyuanImageToVideo sets it: ``concat_latent_image`` is
    the tail alone [1 or B, 16, k, H, W] (core's is the start image's encoding, unpadded; the
    model pads it in T with zeros after process_in, so the model sees the same input), and
    ``concat_mask`` [1, 1, T, H, W] 0 on the first k frames."""
    full = hunyuan_concat(target_shape, tail)
    k = int(tail.shape[2])
    return full._replace(concat_latent_image=full.concat_latent_image[:, :, :k].contiguous())
