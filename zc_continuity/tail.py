"""Taking the end of a shot from a stored latent.

Only a LATENT's ``samples`` travel to the next shot: ComfyUI's KSampler returns
a copy of its input dict with new samples, so the output still carries the
input's ``noise_mask`` and ``batch_index``, which would freeze or re-seed frames
of the next shot. The Store keeps none of them (``zc_continuity.shot`` lists
them as ``keys_not_kept``).
"""

from __future__ import annotations

import torch

from ._checks import require_int, require_tensor, shape_text
from .errors import ContinuityError

def take_tail(samples: torch.Tensor, frames: int) -> torch.Tensor:
    """The last ``frames`` frames of a latent, as a view (no copy; do not write into it).

    Video [B, C, T, H, W]: the last ``frames`` latent frames, [B, C, frames, H, W],
    for every batch item. Image [B, C, H, W]: images are batch items, so the last
    ``frames`` batch items, whole (no spatial cut), [frames, C, H, W];
    ``frames=1`` is the last image.
    """
    samples = require_tensor("samples", samples)
    if samples.ndim == 5:
        axis, unit = 2, "latent frames"
    elif samples.ndim == 4:
        axis, unit = 0, "images (batch items)"
    else:
        raise ContinuityError(f"latent of shape {shape_text(samples.shape)} is neither a video "
                              "[B, C, T, H, W] nor an image [B, C, H, W] latent; store the "
                              "sampler's LATENT output")
    available = samples.shape[axis]
    frames = require_int("tail_frames", frames)
    if frames < 1 or frames > available:
        raise ContinuityError(f"tail_frames {frames} is outside 1..{available}: the stored latent "
                              f"{shape_text(samples.shape)} has {available} {unit}; set "
                              f"tail_frames between 1 and {available}")
    return samples.narrow(axis, available - frames, frames)
