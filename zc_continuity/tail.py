"""Taking the end of a shot from a LATENT, and keeping only what may travel to the next shot.

A LATENT dict is more than its ``samples``: ComfyUI's KSampler returns a copy of
its input dict with new samples, so the output still carries the input's
``noise_mask`` and ``batch_index``. Re-emitting those into the next shot would
freeze or re-seed frames that the user meant to generate; only the samples
tensor travels.
"""

from __future__ import annotations

import torch

from ._checks import require_int, require_tensor, shape_text
from .errors import ContinuityError

DROPPED_KEY_REASONS = {
    "noise_mask": "the previous shot's inpaint mask; in the next shot it would keep frames that "
                  "should be generated",
    "batch_index": "the previous shot's noise indices; in the next shot they would re-use its "
                   "noise draws",
}
"""Why each known non-sample key of a LATENT is not carried into the next shot."""


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


def sanitize_latent_dict(latent: dict) -> tuple[object, tuple[str, ...]]:
    """Split a LATENT into the samples that travel and the names of every key left behind.

    Returns ``(samples, dropped_keys)``. ``samples`` is returned as is: a torch
    tensor, or ComfyUI's nested audio+video tensor (recognised by its
    ``is_nested`` attribute) for the caller to unbind per stream. Every other
    key is dropped and listed (sorted), so the caller can report it; see
    ``DROPPED_KEY_REASONS`` for why ``noise_mask`` and ``batch_index`` must not
    travel. Nothing is dropped silently.
    """
    if not isinstance(latent, dict):
        raise ContinuityError(f"expected a LATENT dict, got a {type(latent).__name__}; connect a "
                              "LATENT output (for example a KSampler's)")
    if "samples" not in latent:
        keys = ", ".join(sorted(map(str, latent))) or "none"
        raise ContinuityError(f"the LATENT has no 'samples' key (keys: {keys}); connect a LATENT "
                              "output (for example a KSampler's)")
    samples = latent["samples"]
    if not getattr(samples, "is_nested", False):
        require_tensor("the LATENT's samples", samples)
    dropped = tuple(sorted(str(k) for k in latent if k != "samples"))
    return samples, dropped


def explain_dropped_keys(dropped_keys) -> list[str]:
    """One line per dropped key saying why it was not carried, for node logs and certificates."""
    return [f"dropped {key}: {DROPPED_KEY_REASONS.get(key, 'not part of the latent content')}"
            for key in dropped_keys]
