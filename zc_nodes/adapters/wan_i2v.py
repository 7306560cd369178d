"""wan_i2v: Wan 2.1 I2V / Wan 2.2 A14B I2V concat conditioning from the tail.

As core's WanImageToVideo with tail latents in place of an encoded start
image: ``concat_latent_image`` (tail, then padding) and ``concat_mask`` on
positive and negative, and an empty (all-zero) latent. Works for any Wan
model with 36 input channels: 2.1 I2V (CLIP-vision projection, detected as
I2V) and 2.2 A14B I2V (no CLIP vision, detected as T2V with 36 channels).

Caveats: the padding frames hold the latent format's empty value
(``process_out(0)``), not the VAE encoding of gray frames that core uses
(that would need the VAE); there is no CLIP-vision input without pixels; the
causal first frame.
"""

from __future__ import annotations

from .. import comfy_adapter
from ...zc_continuity import assemble
from .base import Adapter, BuildRequest, BuildResult


class WanI2V(Adapter):
    name = "wan_i2v"
    families = ("wan21",)
    summary = "concat_latent_image = tail + empty-value padding, concat_mask 0 on the tail (both conditionings)"

    def build(self, request: BuildRequest) -> BuildResult:
        spec = request.spec
        target = request.target()
        fill = comfy_adapter.empty_fill(request.latent_format, spec.channels)
        result = assemble.wan_i2v_concat(target, request.video, fill)
        values = result.conditioning_values()
        return BuildResult(
            comfy_adapter.conditioning_with(request.positive, values),
            comfy_adapter.conditioning_with(request.negative, values),
            result.latent_dict(),
            ["padding frames hold the latent format's empty value (process_out(0)), not a VAE "
             "encoding of gray frames, which would need the VAE"])
