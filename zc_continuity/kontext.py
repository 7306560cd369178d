"""FLUX.1 Kontext insertion point: the stored image latent as a reference.

ComfyUI's ``ReferenceLatent`` node appends a latent to the conditioning's
``reference_latents`` list; ``model_base.Flux`` applies ``process_latent_in``
to each and the DiT attends to it next to the image being generated, at its
own size (a reference does not have to match the new canvas, so it is never
resampled here). The new image starts empty: zeros, as
``EmptySD3LatentImage`` makes them.

Caveats: image family only (the reference is the last stored image, whole);
only FLUX-VAE latents can be references, so a video tail (Wan, Hunyuan, LTX,
H3 latent spaces) cannot, without the pixel bridge.
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from ._checks import require_floating, require_int, require_tensor, shape_text
from .errors import ContinuityError


class KontextReference(NamedTuple):
    reference_latent: torch.Tensor
    samples: torch.Tensor

    def conditioning_values(self) -> dict:
        """Appended (not replacing) to ``reference_latents`` on positive and negative."""
        return {"reference_latents": [self.reference_latent]}

    def latent_dict(self) -> dict:
        return {"samples": self.samples}


def kontext_reference(target_shape, reference: torch.Tensor) -> KontextReference:
    """Zeros of ``target_shape`` [B, C, H, W] and ``reference`` [n, C, h, w] kept as is (bit-identical)."""
    if len(target_shape) != 4:
        raise ContinuityError(f"target shape {shape_text(target_shape)} is not an image latent "
                              "[B, C, H, W]; a Kontext reference continues an image family")
    for label, value in zip(("batch", "channels", "height", "width"), target_shape):
        require_int(f"target {label}", value, minimum=1)
    reference = require_floating("reference", require_tensor("reference", reference))
    if reference.ndim != 4 or reference.shape[1] != target_shape[1] or 0 in reference.shape:
        raise ContinuityError(f"reference of shape {shape_text(reference.shape)} is not a "
                              f"{target_shape[1]}-channel image latent [n, C, h, w]; store a FLUX "
                              "image latent (a sampler's output) under the tag")
    samples = torch.zeros(tuple(int(d) for d in target_shape), dtype=reference.dtype,
                          device=reference.device)
    return KontextReference(reference_latent=reference, samples=samples)
