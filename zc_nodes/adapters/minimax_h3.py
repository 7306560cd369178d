"""minimax_h3_keyframe: MiniMax H3 keyframe entry plus both streams' tails.

The positive conditioning gets a ``minimax_keyframes`` entry at frame 0 on the
target grid and ``minimax_frame_count`` (as core's MiniMaxH3ImageToVideo sets
them), and the AV latent holds the chunk-aligned video tail and the aligned
audio tail under a nested noise mask. See ``zc_continuity.minimax`` for the
layout and caveats.

Against core (v0.33.0: MiniMaxH3ImageToVideo with first_frame; a ComfyUI with
MiniMaxH3AddGuide: that node at frame_idx 0 with the tail clip and its audio): the same
``minimax_keyframes`` entry on the target grid, text conditioning and latent shapes;
differs, one line each (also in the certificate):
- the latent holds the video and audio tails under a nested noise mask (core's is empty):
  the whole tail continues, not only the keyframe;
- the prompt is encoded text-only (core also shows the keyframe image to the text encoder);
- with MiniMaxH3AddGuide: ``minimax_frame_count`` is set as v0.33.0's node sets it (that node
  sets none).
"""

from __future__ import annotations

import torch

from .. import comfy_calls
from ...zc_continuity import assemble, minimax, shapes
from ...zc_continuity.errors import ContinuityError
from ...zc_continuity.families import ADAPTER_MINIMAX_KEYFRAME
from .base import Adapter, BuildRequest, BuildResult
from .temporal_inpaint import build_streams


class MiniMaxH3Keyframe(Adapter):
    name = ADAPTER_MINIMAX_KEYFRAME
    core_node = "MiniMaxH3ImageToVideo"
    summary = ("minimax_keyframes entry (frame 0, target grid) + video tail (5j+2 latents) and "
               "aligned audio tail held by a nested noise mask")

    def build(self, request: BuildRequest) -> BuildResult:
        spec = request.spec
        if request.batch != 1:
            raise ContinuityError(f"MiniMax H3 supports batch size 1 only, but the stored shot has "
                                  f"batch {request.batch}; store and continue one clip at a time")
        target = shapes.target_shape(1, request.width, request.height, request.length, spec)
        clip = comfy_calls.minimax_clip_keyframes_supported()
        keyframes = minimax.keyframe_entries(request.video, clip_keyframes=clip,
                                             audio_tail=request.audio)
        positive = comfy_calls.conditioning_with(request.positive, {"minimax_keyframes": keyframes},
                                                   append=True)
        positive = comfy_calls.conditioning_with(positive, {"minimax_frame_count": request.length})
        if request.fresh_first_frame:
            video = torch.zeros(target, dtype=request.video.dtype, device=request.video.device)
            mask = torch.ones((1, 1) + tuple(target[2:]), dtype=torch.float32, device=video.device)
            hold = "the keyframe is the freshly encoded frame; nothing else is held"
        else:
            fill = comfy_calls.empty_fill(request.latent_format, spec.channels)
            held = assemble.temporal_inpaint(target, request.video, fill)
            video, mask = held.samples, held.noise_mask
            hold = (f"the {request.video.shape[2]} tail latents are held by the nested noise mask; "
                    f"{comfy_calls.minimax_kept_rows_hold()}")
        latent = build_streams(request, video, mask)
        kind = ("clip keyframe: the whole tail and its audio" if clip else
                "one-frame keyframe: the tail's first latent, a chunk-start latent encoded from "
                "one pixel frame (this ComfyUI packs one latent frame per keyframe)")
        notes = [f"minimax_h3_keyframe: {kind}", f"minimax_h3_keyframe: {hold}",
                 "minimax_h3_keyframe: the prompt is encoded text-only; core's MiniMaxH3ImageToVideo "
                 "also shows the keyframe image to the text encoder, which needs pixels"]
        if request.audio is not None:
            notes.append(request.audio_note())
        differences = ["the prompt is encoded text-only; core also shows the keyframe image to the "
                       "text encoder (it needs pixels)"]
        if clip:  # this core's guide node no longer sets minimax_frame_count (v0.33.0's I2V node does)
            differences.append(f"minimax_frame_count {request.length} is set as v0.33.0's "
                               "MiniMaxH3ImageToVideo sets it; this core's MiniMaxH3AddGuide sets none")
        if not request.fresh_first_frame:
            differences.insert(0, "the latent holds the video and audio tails under a nested noise "
                                  "mask (core's latent is empty): the whole tail continues")
        core_node = ("MiniMaxH3AddGuide (frame_idx 0, the tail clip and its audio)" if clip else
                     "MiniMaxH3ImageToVideo (first_frame)")
        return BuildResult(positive, request.negative, latent, notes, differences, core_node=core_node)
