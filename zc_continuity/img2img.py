"""FLUX.1 Dev / Schnell insertion point: the stored image latent as the new image's start.

Dev and Schnell have no image input: continuing a still in latent space is
img2img, the way ComfyUI users do it with VAEEncode -> KSampler(denoise < 1),
minus the encode. The new shot's latent *is* the stored image latent (resampled
in latent space when the canvas changes, bit-identical otherwise), and the
sampler's ``denoise`` sets how much of it the new shot keeps (e.g. 0.6). No
conditioning key is added, so the prompt alone steers the change.

Kontext models load as the same ``Flux`` architecture in ComfyUI (its model
detection has no Kontext config), so a model cannot say whether it reads
``reference_latents``: ``flux_kontext_reference`` must be chosen by name.
"""

from __future__ import annotations

import torch

from ._checks import require_floating, require_int, require_tensor, shape_text
from .errors import ContinuityError


def img2img_start(target_shape, image: torch.Tensor) -> torch.Tensor:
    """The new image latent: ``image`` [1 or B, C, H, W] on the target canvas, as is.

    ``image`` must already have the target's channels and latent size (resample
    it first); a batch of 1 is repeated to the target batch (a new tensor), a
    matching batch is returned untouched (no copy)."""
    if len(target_shape) != 4:
        raise ContinuityError(f"target shape {shape_text(target_shape)} is not an image latent "
                              "[B, C, H, W]; img2img continues an image family")
    batch, channels, height, width = (require_int(f"target {label}", value, minimum=1) for label, value in
                                      zip(("batch", "channels", "height", "width"), target_shape))
    image = require_floating("image", require_tensor("image", image))
    if image.ndim != 4 or tuple(image.shape[1:]) != (channels, height, width):
        raise ContinuityError(f"stored image latent of shape {shape_text(image.shape)} does not fit the "
                              f"target {shape_text(target_shape)}; resample it to the canvas first")
    if image.shape[0] == batch:
        return image
    if image.shape[0] != 1:
        raise ContinuityError(f"stored batch {image.shape[0]} does not fit target batch {batch}; store "
                              "one image per tag, or continue with the same batch size")
    return image.expand(batch, channels, height, width).clone()
