"""MiniMax H3 insertion point: a keyframe entry on the target grid plus both streams' tails.

H3 conditions on frames through ``minimax_keyframes`` entries on the positive
conditioning (``{"resolved_frame_index", "latent"}``, ComfyUI's
``MiniMaxH3ImageToVideo``): their latents are packed as condition rows on the
target's spatial grid and never denoised. H3's VAE works in 17-frame chunks
whose latents span 1, 4, 4, 4, 4 pixel frames, and a clip of 17k+5 frames has
5k+2 latents ending in a [1, 4] group, so the last 5j+2 latents of a clip
(``families.aligned_tail_frames``) start on a chunk start and span exactly
17j+5 frames: structurally a stand-alone clip.

What the Handoff builds for H3 (this module chooses the keyframe latent; the
node layer adds the holds, ``assemble.temporal_inpaint`` and
``streams.audio_inpaint``):

- keyframe at frame 0. ComfyUI v0.33.0's packed layout reserves one latent
  frame of rows per keyframe (``PackedLayout``), so the keyframe is the tail's
  first latent, a chunk-start latent encoded from one pixel frame: the legal
  first-frame latent. Where core accepts clip keyframes with audio (upstream
  ``MiniMaxH3AddGuide``), the whole tail and its audio go into the entry
  (``clip_keyframes=True``; not in v0.33.0; tested on upstream master 783545f6).
- the whole video tail in the first 5j+2 latents and the aligned audio tail at
  the start of the audio stream, kept by a nested noise mask (0 = keep).

Caveats: batch 1 only; whether the H3 VAE carries a cache across chunks is
unverified (if it does, a chunk-aligned tail only approximates a stand-alone
encode); v0.33.0's H3 has no per-row timesteps, so the held frames are
re-noised each step and restored at the end by the sampler's inpainting, while
later upstream runs them at the conditioning timestep (the node layer says
which, by feature).
"""

from __future__ import annotations

import torch

from ._checks import require_floating, require_tensor, shape_text
from .errors import ContinuityError


def keyframe_entries(video_tail: torch.Tensor, *, clip_keyframes: bool,
                     audio_tail: torch.Tensor | None = None) -> list[dict]:
    """The ``minimax_keyframes`` entries that start the new shot from the tail.

    ``video_tail`` [1, 24, k, H, W] must already be on the target grid. Without
    clip keyframes: one entry holding latent 0 of the tail, [1, 24, 1, H, W]
    (a view; no copy). With them: the whole tail and, if given, its audio.
    """
    video_tail = require_floating("video tail", require_tensor("video tail", video_tail))
    if video_tail.ndim != 5 or video_tail.shape[2] < 1:
        raise ContinuityError(f"video tail of shape {shape_text(video_tail.shape)} is not a "
                              "[1, C, k, H, W] latent; take it from the stored video stream")
    if video_tail.shape[0] != 1:
        raise ContinuityError(f"video tail batch {video_tail.shape[0]}: MiniMax H3 supports batch "
                              "size 1 only; store and continue one clip at a time")
    if not clip_keyframes:
        return [{"resolved_frame_index": 0, "latent": video_tail.narrow(2, 0, 1)}]
    entry = {"resolved_frame_index": 0, "latent": video_tail}
    if audio_tail is not None:
        entry["audio_latent"] = audio_tail
    return [entry]
