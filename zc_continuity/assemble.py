"""Placing stored tail latents at each family's legal insertion point for the next shot.

Each function builds new tensors and never writes into its inputs; the tail is
copied bit for bit into the first k latent frames.

The causal first-frame caveat applies to every insertion point here. A causal
video VAE encodes latent 0 from one pixel frame and each later latent from
``temporal_ratio`` frames (Wan: 4), given everything before it. A tail latent
was a later latent of the old shot, a "4-frame continuation latent"; placed at
slot 0 of the new shot it sits where a 1-frame latent is expected, so slot 0
decodes only approximately. With k tail latents the new shot starts with
``overlap_pixel_frames(k, spec)`` pixel frames ((k-1)*4+1 for Wan) that repeat
the end of the old one; trim them when joining the clips. ``overlap_pixel_frames``
is defined in shapes and importable from here.
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from . import fresh_latents
from ._checks import require_floating, require_int, require_tensor, shape_text
from .errors import ContinuityError
from .shapes import overlap_pixel_frames  # noqa: F401  (part of this module's API, see docstring)


class InpaintLatent(NamedTuple):
    """The next shot's LATENT for temporal inpainting: samples plus the mask that keeps the tail."""

    samples: torch.Tensor
    noise_mask: torch.Tensor

    def latent_dict(self) -> dict:
        return {"samples": self.samples, "noise_mask": self.noise_mask}


class WanI2VConcat(NamedTuple):
    """Wan I2V conditioning values plus the empty LATENT that WanImageToVideo returns."""

    concat_latent_image: torch.Tensor
    concat_mask: torch.Tensor
    samples: torch.Tensor

    def conditioning_values(self) -> dict:
        """Keys to set on both positive and negative conditioning."""
        return {"concat_latent_image": self.concat_latent_image, "concat_mask": self.concat_mask}

    def latent_dict(self) -> dict:
        return {"samples": self.samples}


def _check_target(target_shape) -> tuple[int, int, int, int, int]:
    if len(target_shape) != 5:
        raise ContinuityError(f"target shape {shape_text(target_shape)} is not [B, C, T, H, W]; "
                              "temporal insertion needs a video latent (use target_shape of a "
                              "video family)")
    for label, value in zip(("batch", "channels", "frames", "height", "width"), target_shape):
        require_int(f"target {label}", value, minimum=1)
    return tuple(int(d) for d in target_shape)


def _check_tail(tail, target) -> torch.Tensor:
    """Return the tail if it fits the target (channels, size, batch) and leaves frames to generate."""
    tail = require_floating("tail", require_tensor("tail", tail))
    batch, channels, frames, height, width = target
    if tail.ndim != 5:
        raise ContinuityError(f"tail of shape {shape_text(tail.shape)} is not a video latent "
                              "[B, C, k, H, W]; take it with take_tail from a 5D latent")
    if tail.shape[1] != channels or tuple(tail.shape[3:]) != (height, width):
        raise ContinuityError(
            f"tail of shape {shape_text(tail.shape)} does not fit the target "
            f"{shape_text(target)}: channels and latent height/width must match; resample the "
            "tail to the target size first (resample_frames) or use the tail's family and canvas")
    if tail.shape[0] not in (1, batch):
        raise ContinuityError(f"tail batch {tail.shape[0]} does not fit target batch {batch}; "
                              f"use a tail of batch 1 (shared) or {batch} (one per item)")
    k = tail.shape[2]
    if k < 1:
        raise ContinuityError(f"tail of shape {shape_text(tail.shape)} has no frames; set "
                              "tail_frames to 1 or more")
    if k >= frames:
        raise ContinuityError(f"tail_frames {k} leaves no frame to generate in a {frames}-frame "
                              "latent; lower tail_frames or raise length")
    return tail


def _per_channel(name: str, value, channels: int, like: torch.Tensor) -> torch.Tensor:
    """A [C] fill (also accepted as process_out's [1, C, 1, 1, 1]) on the tail's device and dtype."""
    value = require_floating(name, require_tensor(name, value))
    if value.numel() != channels:
        raise ContinuityError(f"{name} of shape {shape_text(value.shape)} has {value.numel()} "
                              f"values, expected one per channel ({channels}); pass the latent "
                              "format's process_out of zeros, or zeros for a generic family")
    return value.reshape(1, channels, 1, 1, 1).to(device=like.device, dtype=like.dtype)


def _frame_mask(shape, kept: int, device) -> torch.Tensor:
    """float32 mask, 0.0 on the first ``kept`` frames (keep) and 1.0 after them (generate)."""
    mask = fresh_latents.filled(shape, torch.ones(1, dtype=torch.float32, device=device))
    mask[:, :, :kept] = 0.0
    return mask


def temporal_inpaint(target_shape, tail: torch.Tensor, fill: torch.Tensor) -> InpaintLatent:
    """Samples with the tail in frames [0:k] and a noise_mask that keeps exactly those frames.

    Frames k..T-1 are ``fill`` broadcast per channel: the latent format's
    ``process_out(0)``, the raw-space value of an "empty" frame. Raw zeros would
    not do: a latent with any non-zero value is normalised as a whole by the
    sampler, and raw zeros become ``(0 - mean) / std`` for Wan. Generic families
    with no latent format pass zeros. The tail ([1 or B, C, k, H, W]) must
    already have the target's channels and latent height/width. ``noise_mask``
    is [B, 1, T, H, W] float32, 0.0 on the tail frames (keep) and 1.0 elsewhere
    (generate), at exact latent size so ComfyUI's trilinear mask resize is an
    identity and the boundary stays sharp. Output dtype and device follow the
    tail.

    Causal caveat: the tail latents are continuation latents, so slot 0 decodes
    approximately, and the new shot's first (k-1)*4+1 pixel frames (Wan; see
    ``overlap_pixel_frames``) repeat the end of the old shot.
    """
    target = _check_target(target_shape)
    tail = _check_tail(tail, target)
    batch, channels = target[:2]
    fill = _per_channel("fill", fill, channels, tail)
    k = tail.shape[2]
    samples = fresh_latents.filled(target, fill)
    samples[:, :, :k] = tail
    mask = _frame_mask((batch, 1) + target[2:], k, tail.device)
    return InpaintLatent(samples=samples, noise_mask=mask)


def wan_i2v_concat(target_shape, tail: torch.Tensor, padding: torch.Tensor, *,
                   padding_constant: bool = False) -> WanI2VConcat:
    """Wan 2.1 I2V / 2.2 A14B I2V conditioning that starts the new shot from the tail.

    Mirrors ComfyUI's WanImageToVideo, with tail latents in place of an encoded
    start image:

    - ``concat_latent_image`` [B, C, T, H, W] (raw space, as the model applies
      process_in itself): frames [0:k] are the tail, frames [k:T] come from
      ``padding``. ``padding`` is either a full [1 or B, C, T, H, W] latent (the
      VAE encoding of ``length`` 0.5-gray pixel frames, as WanImageToVideo pads
      its start image with gray; frames k..T-1 of it are used, position for
      position, so the 1-frame gray latent 0 is never used for a 4-frame slot) or
      a per-channel [C] fill (``process_out(0)``) broadcast. Gray encodings are
      what the model saw in training; a fill is an approximation. Inside
      WanImageToVideo the gray latents after the start frames are encoded with
      the causal cache of those frames, so gray encoded alone equals core's
      padding exactly only for a gray start image (the node layer encodes it with
      the Handoff's VAE and caches it: ``zc_nodes.adapters.gray_padding``; the
      measured difference is in docs/families.md, "Wan I2V padding").
    - ``concat_mask`` [1, 1, T, H, W] float32: 0.0 on frames [0:k] (given), 1.0
      elsewhere; the model uses ``1 - concat_mask`` as its 4-channel mask.
    - ``samples``: zeros [B, C, T, H, W], the empty latent WanImageToVideo
      returns; all-zero latents are treated by the sampler as empty and not
      normalised.

    Causal caveat: slot 0 expects the encoding of one pixel frame and gets a
    continuation latent, so it decodes approximately; the new shot's first
    (k-1)*4+1 pixel frames (``overlap_pixel_frames``) repeat the old shot's end.

    Each tensor is new and the caller's alone, made with one fill each: the image is the padding
    copied whole (one contiguous copy; its first k frames are then overwritten by the tail), the
    samples a zero fill (``fresh_latents.filled``: either may come prepared ahead, see ``fresh_latents``).
    ``padding_constant``: the caller promises nobody ever writes ``padding`` (a cache entry), so
    its copy may be prepared ahead of the next call (``fresh_latents.filled``'s ``constant``).
    """
    target = _check_target(target_shape)
    tail = _check_tail(tail, target)
    batch, channels, frames, height, width = target
    k = tail.shape[2]
    padding = require_floating("padding", require_tensor("padding", padding))
    if padding.ndim == 5 and tuple(padding.shape[1:]) == target[1:] and padding.shape[0] in (1, batch):
        if padding.dtype == tail.dtype and padding.device == tail.device:
            image = fresh_latents.filled(target, padding, constant=padding_constant)
        else:  # converted as it is copied; a converted copy is never the same tensor twice
            image = fresh_latents.empty(target, dtype=tail.dtype, device=tail.device)
            image.copy_(padding.expand(target))
    elif padding.numel() == channels:
        image = fresh_latents.filled(target, _per_channel("padding", padding, channels, tail))
    else:
        raise ContinuityError(
            f"padding of shape {shape_text(padding.shape)} fits neither the target "
            f"{shape_text(target)} nor one value per channel ({channels}); pass the VAE encoding "
            "of 0.5-gray frames at the new shot's width, height and length "
            f"({frames} latent frames, batch 1), or the latent format's process_out of zeros")
    image[:, :, :k] = tail
    concat_mask = _frame_mask((1, 1) + target[2:], k, tail.device)
    samples = fresh_latents.filled(target, torch.zeros(1, dtype=tail.dtype, device=tail.device))
    return WanI2VConcat(concat_latent_image=image, concat_mask=concat_mask, samples=samples)
