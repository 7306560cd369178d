"""ltx_latent_guide: LTX-Video / LTX-2 tail latents as keyframe guides (core's LTXVAddGuide layout).

The video tail is appended after an empty clip as guide latents at pixel
frame 0 with strength 1, with ``keyframe_idxs`` (and the guide attention
entry) on both conditionings, computed by core's own
``LTXVAddGuide.append_keyframe``. LTX-2 latents are split first (core refuses
guides on a combined AV latent): the guide goes on the video stream, the
aligned audio tail is held at the start of the audio stream, and the streams
are rejoined with a nested noise mask. The LATENT carries
``zc_continuity.ltx.GUIDE_MARKER`` so the Store drops the appended guides.

As core's LTXVAddGuide (frame_idx 0, strength 1) on an empty latent: keyframe_idxs,
the guide attention entry, the appended guide latents and the noise mask come from
core's own ``append_keyframe``. Differs, one line each (also in the certificate):
- the guide's first latent is a continuation latent where core's is a one-pixel-frame
  latent (core's causal_fix positions it as one);
- the LATENT carries the key ``zerocopy_appended_guides`` (ours; the sampler ignores it);
- LTX-2: the audio tail is held at the start of the audio stream (core's guide node adds no audio).
"""

from __future__ import annotations

from .. import comfy_calls
from ...zc_continuity import ltx
from ...zc_continuity.families import ADAPTER_LTX_GUIDE
from .base import Adapter, BuildRequest, BuildResult
from .temporal_inpaint import build_streams


class LtxLatentGuide(Adapter):
    name = ADAPTER_LTX_GUIDE
    core_node = "LTXVAddGuide"
    summary = ("tail appended as guide latents (mask 0) with keyframe_idxs at frame 0 on both "
               "conditionings; LTX-2: video guided, audio tail held, streams rejoined")

    def build(self, request: BuildRequest) -> BuildResult:
        spec = request.spec
        target = request.target()
        plan = ltx.ltx_guide_plan(target, request.video)
        guide = plan.guide.expand(target[0], *plan.guide.shape[1:])
        scale = (spec.temporal_ratio, spec.spatial_ratio, spec.spatial_ratio)
        positive, negative, samples, mask = comfy_calls.ltx_append_guide(
            request.positive, request.negative, plan.samples, plan.noise_mask, guide, plan.frame_idx,
            plan.strength, scale)
        latent = build_streams(request, samples, mask)
        k = guide.shape[2]
        latent[ltx.GUIDE_MARKER] = ltx.guide_marker(k, target[2])
        notes = [f"ltx_latent_guide: {k} guide latent(s) appended after the {target[2]}-frame clip; "
                 "the Store drops them, crop them (LTXVCropGuides) before decoding"]
        differences = [] if request.fresh_first_frame else [
            "guide latent 0 is a continuation latent where core's is the encoding of one pixel "
            "frame (positioned as one by core's causal_fix)"]
        differences.append(f"the LATENT carries {ltx.GUIDE_MARKER!r} (ours, for the Store; the "
                           "sampler ignores it)")
        if spec.is_audio_video:
            notes.append(request.audio_note())
            differences.append("LTX-2: the audio tail is held at the start of the audio stream "
                               "(core's guide node guides video only)")
        return BuildResult(positive, negative, latent, notes, differences)
