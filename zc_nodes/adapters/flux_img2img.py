"""flux_img2img: the stored FLUX image latent as the new shot's latent (FLUX.1 Dev / Schnell).

``auto`` chooses it for FLUX models: they have no image input, so latent-space
continuation is img2img and the KSampler's denoise decides how much changes.
The latent is the stored one, bit-identical unless the canvas changed (then it
is resampled in latent space). See ``zc_continuity.img2img``.

As core's img2img (VAEEncode of the image as the KSampler's latent_image): the
same LATENT ({"samples"} only), with the stored latent in place of the encoding.
"""

from __future__ import annotations

from ...zc_continuity import img2img
from ...zc_continuity.families import ADAPTER_FLUX_IMG2IMG
from .base import Adapter, BuildRequest, BuildResult


class FluxImg2Img(Adapter):
    name = ADAPTER_FLUX_IMG2IMG
    core_node = "VAEEncode"
    summary = "the stored image latent is the new latent (set the sampler's denoise, e.g. 0.6)"
    image_on_canvas = True  # the tail is resampled to the new canvas (Kontext keeps its size)

    def build(self, request: BuildRequest) -> BuildResult:
        samples = img2img.img2img_start(request.target(length=1), request.video)
        return BuildResult(request.positive, request.negative, {"samples": samples},
                           ["flux_img2img: connect 'latent' to the KSampler and set its denoise below 1 "
                            "(e.g. 0.6): 1.0 would ignore the stored image"])
