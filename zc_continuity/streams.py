"""Audio-video latents: checking the audio stream and keeping it aligned with the video in time.

ComfyUI carries an audio-video latent as a NestedTensor of streams (video
first); the node layer unbinds it and passes the streams here as plain
tensors. Video and audio run at different rates: MiniMax H3 has 40 audio
latents per second against 24 video pixel frames per second (5/3 per frame),
LTX-2 as many as its audio VAE's rate over the user's frame rate.

Alignment rule. The video tail placed at the start of the new shot stands for
``overlap`` pixel frames there (``shapes.overlap_pixel_frames``), and its end
lines up with the end of the stored shot. The audio tail is therefore the
stored audio from the time of pixel frame ``stored_pixels - overlap`` to the
end, and it goes to the start of the new shot's audio: both streams meet the
cut at the same instant. Audio indices are rounded to the nearest latent
(half a latent of error at most: 12.5 ms for H3).
"""

from __future__ import annotations

from fractions import Fraction
from typing import NamedTuple

import torch

from ._checks import require_floating, require_int, require_tensor, shape_text
from .errors import ContinuityError
from .families import AudioStreamSpec, FamilySpec, audio_stream_matches


class AudioTail(NamedTuple):
    """Where the audio tail lies in the stored stream: ``start`` to the end, ``count`` latents."""

    start: int
    count: int


def _require_audio_spec(spec: FamilySpec) -> AudioStreamSpec:
    if spec.audio is None:
        raise ContinuityError(f"{spec.display_name} has no audio stream; an audio-video latent "
                              "needs an audio-video family (LTX-2, MiniMax H3)")
    return spec.audio


def check_audio_stream(audio, spec: FamilySpec, video_batch: int) -> torch.Tensor:
    """Return ``audio`` if it has the family's audio layout and the video's batch, else raise."""
    layout = _require_audio_spec(spec)
    audio = require_floating("audio stream", require_tensor("audio stream", audio))
    if not audio_stream_matches(tuple(audio.shape), layout):
        raise ContinuityError(
            f"audio stream of shape {shape_text(audio.shape)} is not a {spec.display_name} audio "
            f"latent {layout.layout}; store the whole audio-video latent the sampler produced")
    if audio.shape[0] != video_batch:
        raise ContinuityError(f"audio stream batch {audio.shape[0]} differs from the video stream's "
                              f"{video_batch}; store both streams of one latent together")
    if audio.shape[layout.time_axis] < 1:
        raise ContinuityError(f"audio stream of shape {shape_text(audio.shape)} has no time steps; "
                              "store a latent that holds audio")
    return audio


def audio_rate(spec: FamilySpec, stored_pixels: int, stored_audio_len: int) -> Fraction:
    """Audio latents per video pixel frame: the family's, or the stored shot's own ratio."""
    layout = _require_audio_spec(spec)
    if layout.latents_per_pixel_frame is not None:
        return layout.latents_per_pixel_frame
    stored_pixels = require_int("stored pixel frames", stored_pixels, minimum=1)
    stored_audio_len = require_int("stored audio length", stored_audio_len, minimum=1)
    return Fraction(stored_audio_len, stored_pixels)


def audio_length(pixel_frames: int, rate: Fraction) -> int:
    """Audio latents of a clip of ``pixel_frames`` frames: round(F * rate), at least 1.

    For MiniMax H3 this equals ComfyUI's ``round(F / 24 * 40)``
    (nodes_minimax_h3.temporal_shape): F * 5/3 is never exactly half-way.
    """
    pixel_frames = require_int("pixel frames", pixel_frames, minimum=1)
    return max(1, round(Fraction(pixel_frames) * rate))


def fresh_audio_shape(spec: FamilySpec, batch: int, pixel_frames: int) -> tuple:
    """The audio stream shape of a new shot no stored audio sizes: the family's fixed dimensions,
    ``batch``, and ``audio_length(pixel_frames)`` at the family's fixed rate. Only for families
    that fix both the rate and the channels (MiniMax H3); the caller says why others cannot."""
    layout = _require_audio_spec(spec)
    if layout.latents_per_pixel_frame is None or layout.channels is None:
        raise ValueError(f"{spec.display_name}: no fixed audio rate and channels to size a fresh stream")
    shape = [batch] + [0] * (layout.rank - 1)
    for axis, size in layout.fixed_dims:
        shape[axis] = size
    shape[layout.time_axis] = audio_length(pixel_frames, layout.latents_per_pixel_frame)
    return tuple(shape)


def audio_tail(stored_audio_len: int, stored_pixels: int, overlap_pixels: int,
               rate: Fraction) -> AudioTail:
    """The audio that plays during the last ``overlap_pixels`` frames of the stored shot."""
    stored_audio_len = require_int("stored audio length", stored_audio_len, minimum=1)
    stored_pixels = require_int("stored pixel frames", stored_pixels, minimum=1)
    overlap_pixels = require_int("overlap pixel frames", overlap_pixels, minimum=1)
    if overlap_pixels > stored_pixels:
        raise ContinuityError(f"the tail spans {overlap_pixels} pixel frames but the stored shot has "
                              f"only {stored_pixels}; lower tail_frames")
    start = min(stored_audio_len - 1, max(0, round(Fraction(stored_pixels - overlap_pixels) * rate)))
    return AudioTail(start=start, count=stored_audio_len - start)


def take_audio_tail(audio: torch.Tensor, span: AudioTail, spec: FamilySpec) -> torch.Tensor:
    """The audio tail as a view of the stored stream (no copy; do not write into it)."""
    axis = _require_audio_spec(spec).time_axis
    return audio.narrow(axis, span.start, span.count)


def audio_target_shape(stored_audio_shape, batch: int, length: int, spec: FamilySpec) -> tuple:
    """The new shot's audio stream shape: the stored layout with the new batch and length."""
    axis = _require_audio_spec(spec).time_axis
    shape = [int(d) for d in stored_audio_shape]
    shape[0] = require_int("batch size", batch, minimum=1)
    shape[axis] = require_int("audio length", length, minimum=1)
    return tuple(shape)


def audio_inpaint(target_shape, tail: torch.Tensor | None, spec: FamilySpec,
                  fill: float = 0.0) -> tuple[torch.Tensor, torch.Tensor]:
    """The new audio stream and its mask: the tail at the start (kept), ``fill`` after (generated).

    Returns ``(samples, mask)``. ``mask`` has the samples' shape with one
    channel ([B, 1, ...], float32), 0.0 where the tail is kept and 1.0
    elsewhere, at exact size so ComfyUI's mask resize is an identity. A tail
    longer than the new stream is cut to it (the new shot is shorter than the
    overlap's audio). With no tail (a video-only stored latent), everything is
    generated. Empty audio is ``fill`` (0.0: what ComfyUI's empty AV latent
    nodes hold). Dtype and device follow the tail (float32 CPU without one).
    """
    axis = _require_audio_spec(spec).time_axis
    target_shape = tuple(int(d) for d in target_shape)
    mask_shape = (target_shape[0], 1) + target_shape[2:]
    if tail is None:
        return (torch.full(target_shape, float(fill), dtype=torch.float32),
                torch.ones(mask_shape, dtype=torch.float32))
    tail = require_floating("audio tail", require_tensor("audio tail", tail))
    expected = list(target_shape)
    expected[0] = tail.shape[0]
    expected[axis] = tail.shape[axis]
    if tuple(tail.shape) != tuple(expected) or tail.shape[0] not in (1, target_shape[0]):
        raise ContinuityError(f"audio tail of shape {shape_text(tail.shape)} does not fit the new "
                              f"audio stream {shape_text(target_shape)}; only the time axis may differ")
    count = min(tail.shape[axis], target_shape[axis])
    samples = torch.full(target_shape, float(fill), dtype=tail.dtype, device=tail.device)
    samples.narrow(axis, 0, count).copy_(tail.narrow(axis, 0, count).expand(
        samples.narrow(axis, 0, count).shape))
    mask = torch.ones(mask_shape, dtype=torch.float32, device=tail.device)
    mask.narrow(axis, 0, count).zero_()
    return samples, mask
