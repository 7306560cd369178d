"""Preparing a stored shot's tail for the next shot, the same way for every adapter.

Take the tail (chunk-aligned where the family's VAE needs it), digest it as
stored, resample it to the new canvas, optionally blend the fallback frame
into its first latent and apply the colour anchor, digest what is used; for
audio-video shots also take the audio that plays during the overlap, aligned
to the cut (``zc_continuity.streams``). Everything that changes the tail is
recorded for the certificate.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

import torch

from . import color_anchor, comfy_calls
from ..zc_continuity import blend, bundle_layout, color, families, resample, shapes, streams, tail
from ..zc_continuity.errors import ContinuityError
from ..zc_engine import digest_tensor


@dataclass
class PreparedTail:
    video: torch.Tensor
    stored_digest: str
    used_digest: str
    tail_frames: int
    audio: torch.Tensor | None = None
    audio_shape: tuple | None = None
    audio_rate: Fraction | None = None
    audio_digests: tuple[str, str] | None = None
    audio_span: tuple[int, int, int] | None = None  # (axis, start, count) of the audio tail taken
    resampled: bool = False
    blended: bool = False
    adjusted: bool = False
    adjustment: str = ""
    notes: list[str] = field(default_factory=list)


@dataclass
class TailSettings:
    width: int
    height: int
    length: int
    tail_frames: int
    mode: str
    ratio: float
    image: object = None
    vae: object = None
    color_anchor: bool = False
    image_on_canvas: bool = False  # image families: resample the stored image to the canvas (img2img)
    prompt: str = ""  # the new shot's prompt, for its lineage


def piece_digest(shot, video: torch.Tensor, piece: torch.Tensor) -> str:
    """The digest of the stored tail as stored. When the tail is the whole video stream (an
    image family's last image, or tail_frames covering the shot) of a host shot, that is the
    digest the store recorded, which the verified get has just checked against the bytes in use
    (nothing could write them since); else it is computed from the bytes."""
    info = getattr(shot, "info", {}).get(bundle_layout.VIDEO_KEY)
    whole = (piece.device.type == "cpu" and piece.data_ptr() == video.data_ptr()
             and piece.shape == video.shape and piece.stride() == video.stride())
    if whole and info is not None and info.tier == "host" and (info.digest or "").startswith("xxh3:"):
        return info.digest
    return digest_tensor(piece)


def require_fallback(settings: TailSettings) -> None:
    if settings.image is None:
        raise ContinuityError("continuity_mode blend_with_fallback needs 'fallback_first_frame' "
                              "connected; connect an image or use zero_copy_latent_only")


def blend_fallback(used: torch.Tensor, settings: TailSettings, spec) -> torch.Tensor:
    """Encode the fallback frame at the piece's canvas and blend it into its first latent."""
    ratio = spec.spatial_ratio
    width, height = used.shape[-1] * ratio, used.shape[-2] * ratio
    first = comfy_calls.encode_first_frame(settings.vae, settings.image, width, height).to(used)
    out = used.clone()
    if spec.is_video:
        out[:, :, :1] = blend.blend(out[:, :, :1], first[:, :, :1], settings.ratio)
    else:
        out[:1] = blend.blend(out[:1], first[:1], settings.ratio)
    return out


def apply_color_anchor(shot, video: torch.Tensor, used: torch.Tensor, prepared: PreparedTail) -> torch.Tensor:
    found = color_anchor.anchor_of(shot)
    if found is None:
        prepared.notes.append("color_anchor: the stored shot carries no anchor (stored by an older "
                              "version); the tail is unchanged")
        return used
    anchor, source = found
    current = color.channel_stats(video)
    if source == f"generation {shot.generation}" or color.stats_equal(current, anchor):
        prepared.notes.append(f"color_anchor: the stored shot is the anchor ({source}); nothing to adjust")
        return used
    prepared.adjusted = True
    shift = (current.mean - anchor.mean).abs().max().item()
    prepared.adjustment = (f"colour anchor: per-channel mean and std matched to the tag's first "
                           f"shot ({source}); largest mean shift {shift:.4g}")
    return color.match_channel_stats(used, current, anchor)


def audio_part(shot, streams_, spec, video, k: int, settings: TailSettings, prepared: PreparedTail):
    """Fill the audio fields of ``prepared`` for an audio-video family."""
    batch = video.shape[0]
    stored_pixels = families.pixel_frames(video.shape[2], spec)
    if len(streams_) > 1:
        audio = streams.check_audio_stream(streams_[1], spec, batch)
        axis = spec.audio.time_axis
        rate = streams.audio_rate(spec, stored_pixels, audio.shape[axis])
        overlap = shapes.overlap_pixel_frames(k, spec)
        span = streams.audio_tail(audio.shape[axis], stored_pixels, overlap, rate)
        piece = streams.take_audio_tail(audio, span, spec)
        prepared.audio = piece
        prepared.audio_span = (axis, span.start, span.count)
        digest = digest_tensor(piece)
        prepared.audio_digests = (digest, digest)
        prepared.audio_rate = rate
        prepared.audio_shape = streams.audio_target_shape(
            audio.shape, batch, streams.audio_length(settings.length, rate), spec)
        prepared.notes.append(f"audio: stored latents {span.start}..{audio.shape[axis] - 1} (the last "
                              f"{overlap} pixel frames' audio, {float(rate):.4g} audio latents per "
                              "frame) continue at the start of the new shot")
        return
    if spec.audio.latents_per_pixel_frame is None or spec.audio.channels is None:
        raise ContinuityError(
            f"tag {shot.tag!r} holds only a video stream, and {spec.display_name} needs the stored "
            "audio stream to size the new one; store the whole audio-video latent (before "
            "LTXVSeparateAVLatent)")
    prepared.audio_shape = streams.fresh_audio_shape(spec, batch, settings.length)
    prepared.audio_rate = spec.audio.latents_per_pixel_frame
    prepared.notes.append("audio: the stored shot has no audio stream; the new shot's audio is "
                          "generated from scratch")


def prepare(shot, streams_, spec, settings: TailSettings) -> PreparedTail:
    """The tail of the stored shot, ready for ``spec``'s adapters at the new canvas."""
    video = streams_[0]
    tail.check_stored_video(shot.tag, video, spec)
    notes: list[str] = []
    piece = tail.take_video_tail(shot.tag, video, spec, settings.tail_frames, notes)
    stored_digest = piece_digest(shot, video, piece)
    used = piece
    if spec.is_video or settings.image_on_canvas:
        target = shapes.target_shape(video.shape[0], settings.width, settings.height,
                                     settings.length, spec)
        used = resample.resample_frames(piece, target[-2], target[-1])
    prepared = PreparedTail(video=used, stored_digest=stored_digest, used_digest="",
                            tail_frames=piece.shape[2] if spec.is_video else 1,
                            resampled=used is not piece, notes=notes)
    if settings.mode == "blend_with_fallback":
        require_fallback(settings)
        if settings.ratio > 0:
            used = blend_fallback(used, settings, spec)
            prepared.blended = True
    if settings.color_anchor:
        used = apply_color_anchor(shot, video, used, prepared)
    prepared.video = used
    prepared.used_digest = stored_digest if used is piece else digest_tensor(used)
    if spec.is_audio_video:
        audio_part(shot, streams_, spec, video, prepared.tail_frames, settings, prepared)
    elif len(streams_) > 1:
        prepared.notes.append(f"the stored latent has {len(streams_)} streams but "
                              f"{spec.display_name} takes video only; only the video stream is used")
    return prepared
