"""hunyuan_i2v (HunyuanVideo 1.0) and hunyuan15_i2v (HunyuanVideo 1.5).

hunyuan_i2v follows core's HunyuanImageToVideo: with a v1 (concat) I2V
checkpoint (33 input channels; the model's concat keys say so) it sets
``concat_latent_image`` + ``concat_mask`` on the positive conditioning; with
any other 1.0 model it uses v2 (replace): the tail in the latent with a noise
mask and ``guiding_frame_index: 0`` on the positive. Without a model the
Store's metadata decides (v2 unless it recorded a concat checkpoint).
hunyuan15_i2v follows HunyuanVideo15ImageToVideo: concat keys on both
conditionings, zero padding. See ``zc_continuity.hunyuan`` for the caveats.

Every key, mask, padding value and shape equals core's for the same request
(batch 1). Differs from core, one line each (also in the certificate):
- slot 0 holds a continuation latent where core has a one-pixel-frame latent (causal first frame);
- 1.5: no ``clip_vision_output`` (it needs pixels);
- v2 with a stored batch B > 1: noise_mask has batch B where core's has 1 (the sampler resizes both).
"""

from __future__ import annotations

from .. import comfy_calls
from ...zc_continuity import hunyuan
from ...zc_continuity.families import ADAPTER_HUNYUAN15_I2V, ADAPTER_HUNYUAN_I2V, VARIANT_HUNYUAN_V1_CONCAT
from .base import Adapter, BuildRequest, BuildResult

CAUSAL_SLOT0 = ("slot 0 holds a continuation latent (4 pixel frames) where core has the encoding of "
                "one pixel frame")


def causal(request: BuildRequest) -> list[str]:
    return [] if request.fresh_first_frame else [CAUSAL_SLOT0]


def uses_concat(request: BuildRequest) -> bool:
    if request.model is not None:
        return comfy_calls.hunyuan_concat_i2v(request.model)
    return request.meta.get("model_variant") == VARIANT_HUNYUAN_V1_CONCAT


class HunyuanI2V(Adapter):
    name = ADAPTER_HUNYUAN_I2V
    core_node = "HunyuanImageToVideo"
    summary = ("v2 replace: samples + noise_mask + guiding_frame_index 0 (positive); v1 concat "
               "checkpoints: concat_latent_image + concat_mask (positive)")

    def build(self, request: BuildRequest) -> BuildResult:
        target = request.target()
        if uses_concat(request):
            result = hunyuan.hunyuan_v1_concat(target, request.video)
            positive = comfy_calls.conditioning_with(request.positive, result.conditioning_values())
            return BuildResult(positive, request.negative, result.latent_dict(),
                               ["hunyuan_i2v: v1 (concat) checkpoint, image keys on the positive "
                                "conditioning as HunyuanImageToVideo sets them"], causal(request),
                               core_node="HunyuanImageToVideo (guidance_type v1 (concat))")
        result = hunyuan.hunyuan_replace(target, request.video)
        positive = comfy_calls.conditioning_with(request.positive, result.positive_values())
        notes = ["hunyuan_i2v: v2 (replace); guiding_frame_index gives latent frame 0 the clean "
                 "timestep embedding"]
        if request.video.shape[2] > 1:
            notes.append(f"hunyuan_i2v: latent frames 1..{request.video.shape[2] - 1} of the tail are "
                         "kept by the noise mask only (guiding_frame_index covers frame 0)")
        differences = causal(request)
        if target[0] > 1:
            differences.append(f"noise_mask has batch {target[0]} where core's has 1 (the sampler "
                               "resizes both to the batch)")
        return BuildResult(positive, request.negative, result.latent_dict(), notes, differences,
                           core_node="HunyuanImageToVideo (guidance_type v2 (replace))")


class Hunyuan15I2V(Adapter):
    name = ADAPTER_HUNYUAN15_I2V
    core_node = "HunyuanVideo15ImageToVideo"
    summary = "concat_latent_image = tail + zeros, concat_mask 0 on the tail (both conditionings)"

    def build(self, request: BuildRequest) -> BuildResult:
        target = request.target()
        result = hunyuan.hunyuan_concat(target, request.video)
        values = result.conditioning_values()
        return BuildResult(comfy_calls.conditioning_with(request.positive, values),
                           comfy_calls.conditioning_with(request.negative, values),
                           result.latent_dict(),
                           ["hunyuan15_i2v: no clip_vision_output (that needs pixels); the image "
                            "reaches the model through the concat keys only"],
                           causal(request) + ["no clip_vision_output: it needs the start image's pixels"])
