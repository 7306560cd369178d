"""Mixing the stored tail with a fallback latent, for users who want a softer handoff.

The mix is a linear interpolation in raw latent space. Linear mixing commutes
with the latent format's per-channel affine normalisation, so mixing raw
latents equals mixing model-space ones.
"""

from __future__ import annotations

import math

import torch

from ._checks import require_floating, require_tensor, shape_text
from .errors import ContinuityError


def _require_ratio(ratio) -> float:
    if isinstance(ratio, bool) or not isinstance(ratio, (int, float)):
        raise ContinuityError(f"blend_ratio {ratio!r} is not a number; pass a float between 0 and 1")
    if not math.isfinite(ratio) or not 0.0 <= ratio <= 1.0:
        raise ContinuityError(f"blend_ratio {ratio} is outside [0, 1]: 0 keeps the stored tail "
                              "bit-identical and 1 uses only the fallback; set it between 0 and 1")
    return float(ratio)


def blend(tail: torch.Tensor, fallback_latent: torch.Tensor, ratio: float) -> torch.Tensor:
    """``tail`` moved towards ``fallback_latent`` by ``ratio`` (the fallback's share).

    ratio 0 returns the ``tail`` object itself, not a copy or a 0-weighted sum
    (``x + 0 * (y - x)`` is not bit-exact for -0.0, inf or NaN), so the
    bit-identical path stays bit-identical and its digest still matches the
    store's. ratio 1 returns the fallback's values exactly, as a view of it
    (moved to the tail's device and dtype if needed; do not write into it). In
    between: ``torch.lerp`` on the tail's device and dtype. Shapes must be equal, except that a fallback of
    batch 1 (one encoded image) is shared by every batch item of the tail; the
    result always has the tail's shape.
    """
    tail = require_floating("tail", require_tensor("tail", tail))
    fallback_latent = require_floating("fallback latent", require_tensor("fallback latent",
                                                                          fallback_latent))
    ratio = _require_ratio(ratio)
    shared = fallback_latent.shape[:1] == (1,) and fallback_latent.shape[1:] == tail.shape[1:]
    if tail.shape != fallback_latent.shape and not shared:
        raise ContinuityError(
            f"fallback latent of shape {shape_text(fallback_latent.shape)} cannot blend with the "
            f"tail {shape_text(tail.shape)}; encode the fallback at the new shot's canvas with as "
            "many latent frames as tail_frames, or set blend_ratio to 0")
    if ratio == 0.0:
        return tail
    fallback_latent = fallback_latent.to(device=tail.device, dtype=tail.dtype)
    if ratio == 1.0:
        return fallback_latent.expand(tail.shape)
    return torch.lerp(tail, fallback_latent, ratio)
