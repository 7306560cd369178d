"""flux_kontext_reference: the stored FLUX image latent as a Kontext reference.

As core's ReferenceLatent node: the reference is appended to
``reference_latents`` on both conditionings (so CFG's negative sees it too),
and the new image starts from zeros (EmptySD3LatentImage). The reference is
used at its stored size, bit-identical; Kontext does not need it to match the
canvas. See ``zc_continuity.kontext`` for the caveats.

As core's ReferenceLatent + EmptySD3LatentImage: identical (the reference is the
stored latent, where core's is VAEEncode of an image), the empty latent's other keys
included (``downscale_ratio_spacial`` where this ComfyUI's node sets it, asked of the
node); no difference to name.
"""

from __future__ import annotations

from .. import comfy_calls
from ...zc_continuity import kontext
from ...zc_continuity.families import ADAPTER_FLUX_KONTEXT
from .base import Adapter, BuildRequest, BuildResult


class FluxKontextReference(Adapter):
    name = ADAPTER_FLUX_KONTEXT
    core_node = "ReferenceLatent"
    summary = "reference_latents += [stored image latent] (both conditionings), empty latent"

    def build(self, request: BuildRequest) -> BuildResult:
        target = request.target(length=1)
        result = kontext.kontext_reference(target, request.video)
        values = result.conditioning_values()
        return BuildResult(
            comfy_calls.conditioning_with(request.positive, values, append=True),
            comfy_calls.conditioning_with(request.negative, values, append=True),
            {**result.latent_dict(), **comfy_calls.empty_latent_keys("EmptySD3LatentImage")},
            [f"flux_kontext_reference: reference {list(request.video.shape)} kept at its stored size"])
