"""What ZeroCopyLatentLoad hands out: a stored shot, whole or some of its latents, as views.

Other nodes (SVI 2.0 Pro's WanImageToVideoSVIPro, core WanSoundImageToVideoExtend,
LatentConcat, ReplaceVideoLatentFrames, ...) take plain LATENTs. The Load node
gives them the stored shot bit-identical, without a copy: the whole shot, or
its last (or first) ``frames`` latent frames (image shots: images of the
batch). The first latent of a causal video clip is encoded from one pixel
frame, so a film's first shot's first latent is a legal start-image latent
(SVI's ``anchor_samples``). For an audio-video shot the audio that plays
during those frames comes with them, aligned as the Handoff aligns it.
"""

from __future__ import annotations

import torch

from . import families, streams
from ._checks import require_int, shape_text
from .errors import ContinuityError


def cut_latents(stream_list: list[torch.Tensor], frames: int, spec, *, from_start: bool = False,
                tag: str = "", generation: int = 0) -> list[torch.Tensor]:
    """The streams (video first) cut to their last ``frames`` latents (the first, with
    ``from_start``); 0 means all. Views only.

    ``spec`` is the shot's family, or None when it is unknown (then only a
    single-stream shot can be cut: aligning audio needs the family's layout)."""
    frames = require_int("frames", frames, minimum=0)
    if frames == 0:
        return list(stream_list)
    video = stream_list[0]
    where = f"tag {tag!r} generation {generation}" if tag else "the stored shot"
    axis = 2 if video.ndim == 5 else 0  # image latents: the batch holds the images
    available = video.shape[axis]
    unit = "latent frames" if video.ndim == 5 else "images"
    if frames > available:
        raise ContinuityError(f"frames {frames} is more than the {available} {unit} {where} holds "
                              f"({shape_text(video.shape)}); set frames between 1 and {available}, or 0 "
                              "for the whole shot")
    cut = [video.narrow(axis, 0 if from_start else available - frames, frames)]
    if len(stream_list) == 1:
        return cut
    if spec is None or not spec.is_audio_video or not spec.is_resolved:
        raise ContinuityError(f"{where} is an audio-video latent of unknown family, so the audio of those "
                              "frames cannot be aligned; set frames to 0 (the whole shot), or store it "
                              "with its model connected so the family is recorded")
    audio = streams.check_audio_stream(stream_list[1], spec, video.shape[0])
    axis_a = spec.audio.time_axis
    stored_pixels = families.pixel_frames(available, spec)
    rate = streams.audio_rate(spec, stored_pixels, audio.shape[axis_a])
    if from_start:
        pixels = spec.length_rule.pixels_for_latents(frames)
        count = min(audio.shape[axis_a], streams.audio_length(pixels, rate))
        audio_cut = audio.narrow(axis_a, 0, count)
    else:
        kept_from = spec.length_rule.pixels_for_latents(available - frames)
        span = streams.audio_tail(audio.shape[axis_a], stored_pixels, stored_pixels - kept_from, rate)
        audio_cut = streams.take_audio_tail(audio, span, spec)
    return cut + [audio_cut] + list(stream_list[2:])
