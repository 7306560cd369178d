"""LTX-Video / LTX-2 insertion point: the tail as appended keyframe guide latents.

ComfyUI's ``LTXVAddGuide`` conditions a clip on frames by appending their
latents after the clip's own frames (T grows by k), giving them a noise mask
of ``1 - strength`` and recording their pixel-space positions in
``keyframe_idxs`` on both conditionings; the DiT reads those positions for the
appended tokens. This module plans that layout for stored tail latents (no
encode: the tail is already a latent, as the later upstream
``LTXVAddLatentGuide`` does); the node layer calls core's own
``LTXVAddGuide.append_keyframe`` so the positions are computed exactly as core
computes them. The guide sits at pixel frame 0 with strength 1 (mask 0), so
the new clip starts where the stored one ended.

The appended latents are part of the sampled output until removed
(``LTXVCropGuides``). The Handoff marks its latent with ``GUIDE_MARKER`` (a
plain key that KSampler copies through), so the Store removes them before
storing: ``crop_appended_guides``.

Caveats: the causal first frame (guide latent 0 is positioned as a
one-pixel-frame latent but is a continuation latent); AV latents must be split
first (core refuses guides on combined AV latents), which the node layer does;
crop the guides before decoding.
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from ._checks import require_int, shape_text
from .assemble import _check_target, _check_tail
from .errors import ContinuityError

GUIDE_MARKER = "zerocopy_appended_guides"
"""LATENT key: {"guide_frames": k, "video_frames": T} for a latent whose video stream has k guides appended."""


class LtxGuidePlan(NamedTuple):
    """An empty clip, its all-generate mask, and the guide latents to append at ``frame_idx``."""

    samples: torch.Tensor
    noise_mask: torch.Tensor
    guide: torch.Tensor
    frame_idx: int
    strength: float


def ltx_guide_plan(target_shape, tail: torch.Tensor) -> LtxGuidePlan:
    """Zeros [B, C, T, H, W] (LTX's empty latent), mask ones [B, 1, T, 1, 1], the tail as guide at 0.

    The mask has core's ``get_noise_mask`` layout (one value per latent frame);
    ``append_keyframe`` extends it with the guides' 0.0 (strength 1).
    """
    target = _check_target(target_shape)
    tail = _check_tail(tail, target)
    batch, channels, frames = target[:3]
    samples = torch.zeros(target, dtype=tail.dtype, device=tail.device)
    mask = torch.ones((batch, 1, frames, 1, 1), dtype=torch.float32, device=tail.device)
    return LtxGuidePlan(samples=samples, noise_mask=mask, guide=tail, frame_idx=0, strength=1.0)


def guide_marker(guide_frames: int, video_frames: int) -> dict:
    return {"guide_frames": require_int("guide frames", guide_frames, minimum=1),
            "video_frames": require_int("video frames", video_frames, minimum=1)}


def crop_appended_guides(video: torch.Tensor, marker) -> tuple[torch.Tensor, int]:
    """The video stream without the guides a Handoff appended; returns (view, frames removed).

    A latent already cropped (T equals the clip's own length, e.g. after
    LTXVCropGuides, which also drops the marker) is returned unchanged; any
    other length means the latent was cut elsewhere and is refused rather than
    guessed at.
    """
    if not isinstance(marker, dict) or {"guide_frames", "video_frames"} - set(marker):
        raise ContinuityError(f"the LATENT's {GUIDE_MARKER!r} entry {marker!r} is not what the "
                              "Handoff writes; remove the key or re-run the Handoff")
    guides = require_int("guide frames", marker["guide_frames"], minimum=1)
    frames = require_int("video frames", marker["video_frames"], minimum=1)
    if video.ndim != 5:
        raise ContinuityError(f"video stream of shape {shape_text(video.shape)} is not [B, C, T, H, W]")
    have = video.shape[2]
    if have == frames:
        return video, 0
    if have == frames + guides:
        return video.narrow(2, 0, frames), guides
    raise ContinuityError(
        f"the latent has {have} latent frames, but the Handoff made a {frames}-frame clip with "
        f"{guides} guide frames appended ({frames + guides}); crop the guides with LTXVCropGuides "
        "before the Store, or store the sampler's output directly")
