"""What the engine is asked to measure of a hop's seam, and how a seam record reads.

The Store asks the engine, at put time, for small summaries of both ends of a shot's streams and
the seam of the cut from its parent (zc.h "HowTo: measure the seam of a hop"): ``hop_layouts``
says what to summarise (each stream's time axis, the repeated head to drop, the window and the
values read of each frame), ``video_skip`` and ``audio_skip`` how many leading frames of the new
shot repeat the parent. ``verdict`` and ``summary`` read a seam record (green under
``GREEN_BELOW``, red from ``RED_FROM``) for the certificate and the film view.

The numbers themselves are defined by the torch reference the tests hold the engine to
(tests/python/seam_reference.py, docs/film.md); the product computes them in C.
"""

from __future__ import annotations

from .bundle_layout import VIDEO_KEY, stream_key

WINDOW = 4
"""Latent frames read each side of the cut (video)."""
AUDIO_WINDOW = 8
"""Audio latent steps read each side of the cut."""

GREEN_BELOW = 2.0
"""A score under this is green: the cut steps at most twice as far as the shots' own frames."""
RED_FROM = 4.0
"""A score from this up is red: four frames' worth of change at once, or a step under a quarter of
one (a freeze); amber between."""

MAX_VALUES = 4096
"""Values read of each video frame (all channels together, per batch entry: the batch is read whole). Audio
steps, a few hundred values, are read whole."""


def verdict(score: float | None) -> str | None:
    """green / amber / red for a score (None for none)."""
    if score is None:
        return None
    return "green" if score < GREEN_BELOW else "amber" if score < RED_FROM else "red"


def video_skip(trim: int, tail_frames: int, length_rule=None) -> int:
    """Latent frames at the start of the new shot that hold any of its first ``trim`` pixel frames
    (those repeat the parent): with the family's length rule, the latents whose pixel span starts
    before ``trim``; without one, the ``tail_frames`` the Handoff placed (0 when nothing is trimmed).
    An image family (no rule, 4-D) drops ``trim`` images."""
    if trim <= 0:
        return 0
    if length_rule is None:
        return max(0, int(tail_frames))
    k = 0
    while length_rule.pixels_for_latents(k) < trim:
        k += 1
    return k


def audio_skip(trim: int, audio_count: int | None, skipped_latents: int, latents: int, audio_len: int) -> int:
    """Audio steps at the start of the new shot that repeat the parent: the ``audio_count`` steps the
    Handoff placed, else the share of the stream that the skipped video latents cover."""
    if trim <= 0:
        return 0
    if audio_count:
        return int(audio_count)
    return round(audio_len * skipped_latents / latents) if latents else 0


def summary(seam: dict | None) -> str:
    """One line for a certificate or an info output."""
    if not seam:
        return "no seam measured"
    text = (f"score {seam['score']:.3g} ({verdict(seam['score'])}): mean step {seam['mean_step']:.3g}, "
            f"std step {seam['std_step']:.3g}, RMS step {seam['rms_step']:.3g}, correlation "
            f"{seam['correlation']:.3g} (within the shots {_num(seam.get('within_correlation'))})")
    audio = seam.get("audio")
    if audio:
        text += (f"; audio: level step {audio['level_db']:+.3g} dB, RMS step "
                 f"{audio['rms_step']:.3g}, correlation {audio['correlation']:.3g}")
    return text + " (latent statistics, not a perceptual score)"


def _num(v) -> str:
    return "-" if v is None else f"{v:.3g}"


def hop_layouts(shot_tensors, marker: dict | None, *, spec=None) -> dict:
    """What the engine summarises of a shot at put time (``zc_bundle_seam_summarize``): for the
    video stream and, when its time axis is known, the audio one, ``(time_axis, head_skip, window,
    max_values)`` by tensor name (max_values 0: read whole). ``head_skip`` is the repeated head
    the ``marker`` (None for a root: 0) says to drop, as ``for_hop`` drops it. Empty for a shot
    without a floating-point video stream of rank 4 or 5."""
    video = shot_tensors.get(VIDEO_KEY)
    if video is None or video.dim() not in (4, 5) or not video.is_floating_point():
        return {}
    marker = marker or {}
    rule = getattr(spec, "length_rule", None) if video.dim() == 5 else None
    trim = int(marker.get("trim") or 0)
    skip = video_skip(trim, int(marker.get("tail_frames") or 0), rule)
    out = {VIDEO_KEY: (2 if video.dim() == 5 else 0, skip, WINDOW, MAX_VALUES)}
    audio = shot_tensors.get(stream_key(1))
    axis = _audio_axis(marker, spec, audio)
    if audio is not None and axis is not None and video.dim() == 5 and audio.is_floating_point() \
            and 1 < int(axis) < audio.dim():
        a_skip = audio_skip(trim, marker.get("audio_count"), skip, video.shape[2], audio.shape[int(axis)])
        out[stream_key(1)] = (int(axis), a_skip, AUDIO_WINDOW, 0)
    return out


def _audio_axis(marker: dict, spec, audio) -> int | None:
    axis = marker.get("audio_axis")
    if axis is None and getattr(spec, "audio", None) is not None:
        axis = spec.audio.time_axis
    if axis is None and audio is not None and audio.dim() >= 3:
        axis = 2
    return axis
