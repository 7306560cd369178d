"""Spatial resampling of latents, frame by frame, with ComfyUI's upscale conventions.

When the next shot's canvas differs from the stored tail's, the tail is resized
in latent space (no VAE round trip). The conventions are those of ComfyUI's
``comfy.utils.common_upscale`` so that results match core nodes bit for bit:
every latent frame is resized as an independent 2D image (T folded into the
batch, never resampled), the optional centre crop trims the side that is too
long by ``round(excess / 2)`` (Python's round) before resizing, and the resize
is ``torch.nn.functional.interpolate`` with the given mode, default
``align_corners`` and no antialias.

Linear resampling kernels sum to one, so resizing commutes with the per-channel
affine normalisation of latent formats (Wan mean/std, FLUX shift/scale):
resizing raw latents is equivalent to resizing model-space ones.
"""

from __future__ import annotations

import torch

from ._checks import require_floating, require_int, require_tensor, shape_text
from .errors import ContinuityError

RESAMPLE_METHODS = ("bicubic", "bilinear", "area", "nearest-exact", "nearest")
"""Modes of torch interpolate that resample each frame in 2D.

ComfyUI's "bislerp" is left out because it normalises vectors (it does not
commute with the latent format's per-channel shift), and "lanczos" because it
round-trips through 8-bit images, which would quantise latents.
"""

CROP_MODES = ("disabled", "center")


def center_crop_box(old_height: int, old_width: int, height: int, width: int) -> tuple[int, int, int, int]:
    """(top, left, crop_height, crop_width) that gives the source the target's aspect ratio.

    The side that is too long loses ``round(excess / 2)`` on each end, computed
    in floating point as ComfyUI does, so crop offsets match it exactly.
    """
    source_aspect = old_width / old_height
    target_aspect = width / height
    top = left = 0
    if source_aspect > target_aspect:
        kept_width = old_width * (target_aspect / source_aspect)
        left = round((old_width - kept_width) / 2)
    elif source_aspect < target_aspect:
        kept_height = old_height * (source_aspect / target_aspect)
        top = round((old_height - kept_height) / 2)
    return top, left, old_height - 2 * top, old_width - 2 * left


def resample_frames(latent: torch.Tensor, height: int, width: int, method: str = "bicubic",
                    crop: str = "disabled") -> torch.Tensor:
    """Resize ``latent`` ([B,C,T,H,W] or [B,C,H,W]) to latent size ``height`` x ``width``.

    Returns the input object itself, untouched, when it already has that size:
    even an identity-size bicubic pass is not bit-exact (it turns -0.0 into
    +0.0 and spreads inf/NaN to neighbours), and the zero-copy path must stay
    bit-identical. Otherwise returns a new contiguous tensor on the input's
    device and dtype; T and B are never changed.
    """
    latent = require_floating("latent", require_tensor("latent", latent))
    height = require_int("latent height", height, minimum=1)
    width = require_int("latent width", width, minimum=1)
    if method not in RESAMPLE_METHODS:
        raise ContinuityError(f"resample method {method!r} is not supported; use one of "
                              f"{', '.join(RESAMPLE_METHODS)}")
    if crop not in CROP_MODES:
        raise ContinuityError(f"crop {crop!r} is not supported; use 'disabled' or 'center'")
    if latent.ndim not in (4, 5):
        raise ContinuityError(f"latent of shape {shape_text(latent.shape)} is neither [B, C, H, W] "
                              "nor [B, C, T, H, W]; pass an image or video latent")
    old_height, old_width = latent.shape[-2], latent.shape[-1]
    if (old_height, old_width) == (height, width):
        return latent
    if 0 in latent.shape:
        raise ContinuityError(f"latent of shape {shape_text(latent.shape)} is empty; "
                              "nothing to resample")

    frames = latent
    if latent.ndim == 5:
        batch, channels, count = latent.shape[:3]
        frames = latent.movedim(2, 1).reshape(batch * count, channels, old_height, old_width)
    if crop == "center":
        top, left, crop_height, crop_width = center_crop_box(old_height, old_width, height, width)
        if crop_height < 1 or crop_width < 1:
            raise ContinuityError(
                f"center crop of a {old_height}x{old_width} latent to the aspect of {height}x{width} "
                "leaves no pixels; use crop='disabled' or a canvas closer to the tail's aspect")
        frames = frames.narrow(-2, top, crop_height).narrow(-1, left, crop_width)
    resized = torch.nn.functional.interpolate(frames, size=(height, width), mode=method)
    if latent.ndim == 4:
        return resized.contiguous()
    return resized.reshape(batch, count, channels, height, width).movedim(1, 2).contiguous()
