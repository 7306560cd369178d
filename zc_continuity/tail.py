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
from .families import aligned_tail_frames


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


def check_stored_video(tag: str, video: torch.Tensor, spec) -> None:
    """Refuse a stored video stream ``spec``'s models cannot continue: rank, channels, batch."""
    want = 5 if spec.is_video else 4
    if video.dim() != want:
        layout = "[B,C,T,H,W]" if spec.is_video else "[B,C,H,W]"
        raise ContinuityError(
            f"tag {tag!r} holds a latent of shape {list(video.shape)}, but {spec.display_name} "
            f"latents are {layout}; store a tail made by a {spec.display_name} model, or pick the "
            "model of the stored shot")
    if video.shape[1] != spec.channels:
        raise ContinuityError(
            f"channel mismatch: tag {tag!r} holds {video.shape[1]}-channel latents but "
            f"{spec.display_name} uses {spec.channels}; store and hand off with the same model family")
    if spec.max_batch is not None and video.shape[0] > spec.max_batch:
        raise ContinuityError(f"{spec.display_name} supports batch size {spec.max_batch}, but tag "
                              f"{tag!r} holds a batch of {video.shape[0]}; store one clip per tag")


def take_video_tail(tag: str, video: torch.Tensor, spec, requested: int, notes: list[str]) -> torch.Tensor:
    """The tail a Handoff hands on: an image family's last image, or a video family's last
    ``requested`` latent frames rounded to whole VAE chunks (each change said in ``notes``)."""
    if not spec.is_video:
        if requested != 1:
            notes.append(f"tail_frames {requested}: an image family hands off the last stored image, "
                         "whole")
        return take_tail(video, 1)
    k = aligned_tail_frames(requested, spec)
    if k != requested:
        notes.append(f"tail_frames {requested} -> {k}: {spec.display_name} tails are whole VAE "
                     f"chunks ({spec.length_rule.first_latents}+{spec.length_rule.latent_step}j latents)")
    if k > video.shape[2]:
        raise ContinuityError(f"tail_frames {k} is more than the {video.shape[2]} latent frames tag "
                              f"{tag!r} holds; lower tail_frames")
    return take_tail(video, k)
