"""The seam of one hop: how the cut from a parent shot to its continuation steps, in latent space.

A few latent frames each side of the cut are compared: the parent's last ``WINDOW`` frames and the
new shot's first ``WINDOW`` frames after the ones that repeat the parent (the lineage's ``trim``).
Every number relates the step *across* the cut to the frame-to-frame steps *inside* the two shots,
so it reads the same whatever the family's latent scale (a scaled copy of both shots gives the same
numbers). These are latent statistics, not perceptual scores: they say that a cut moves, shifts
colour or freezes more than the shots do themselves, not how a viewer will judge it (docs/film.md).

- ``mean_step``: the step of the per-channel mean vector across the cut over its mean step inside
  the shots (colour drift); ``std_step`` the same for the per-channel standard deviation (contrast).
- ``rms_step``: the RMS of the frame difference across the cut over the mean within-shot RMS step:
  about 1 for a smooth cut, far above for a jump, near 0 for a freeze (a repeated frame).
- ``correlation``: the correlation of the last parent frame with the first new one (each channel
  centred), next to ``within_correlation``, the mean of the same for neighbouring frames inside.
- ``score``: the largest of ``mean_step``, ``std_step``, ``rms_step`` and ``1 / rms_step`` (a freeze
  counts as its inverse), and of the audio ones: how many times the cut out-steps the shots.
- ``audio`` (audio-video shots): ``level_db``, the latent RMS level of the new shot's first audio
  steps over the parent's last ones, in dB (signed; a level ratio is scale-free by itself), and
  ``rms_step``, ``correlation`` and ``within_correlation`` as for video along the audio's time axis.
  In the score a level step counts as ``1 + |level_db| / DB_PER_STEP``.

Pure: torch only. ``measure`` takes the tensors; ``video_skip`` and ``audio_skip`` say how many
leading frames of the new shot repeat the parent.
"""

from __future__ import annotations

import math

import torch

from .bundle_layout import VIDEO_KEY, stream_key

WINDOW = 4
"""Latent frames read each side of the cut (video)."""
AUDIO_WINDOW = 8
"""Audio latent steps read each side of the cut."""
CAP = 100.0
"""Ratios are capped here (a step over a shot that does not move at all)."""
FLOOR = 1e-3
"""Within-shot steps below this fraction of the frames' own spread count as this (a still shot)."""

GREEN_BELOW = 2.0
"""A score under this is green: the cut steps at most twice as far as the shots' own frames."""
RED_FROM = 4.0
"""A score from this up is red: four frames' worth of change at once, or a step under a quarter of
one (a freeze); amber between."""

DB_PER_STEP = 3.0
"""An audio level step of this many dB adds one to its score: amber from 3 dB (twice the power),
red from 9 dB."""

VERSION = 1


def verdict(score: float | None) -> str | None:
    """green / amber / red for a score (None for none)."""
    if score is None:
        return None
    return "green" if score < GREEN_BELOW else "amber" if score < RED_FROM else "red"


def _frames(x: torch.Tensor, axis: int) -> torch.Tensor:
    """[frames, channels, rest] in float32 (float64 for a float64 input) from a tensor with frames along ``axis`` and channels along
    axis 1 (axis 0 and 1 for a 4-D image batch: each image a frame, its channels)."""
    x = x.detach()
    x = x.to(torch.float64 if x.dtype == torch.float64 else torch.float32).movedim(axis, 0)  # frames first
    x = x.movedim(2 if axis > 1 else 1, 1)  # then the channels
    return x.reshape(x.shape[0], x.shape[1], -1)


def _ratio(num: float, den: float) -> float:
    if den <= 0.0:
        return 0.0 if num <= 0.0 else CAP
    return min(num / den, CAP)


def _rms(x: torch.Tensor) -> float:
    return float(torch.linalg.vector_norm(x)) / math.sqrt(max(1, x.numel()))


class _Side:
    """Per-frame statistics of the frames one side of the cut: one pass for means and stds."""

    def __init__(self, frames: torch.Tensor):
        self.frames = frames
        if frames.shape[2] > 1:
            self.std, self.mean = torch.std_mean(frames, dim=2, unbiased=False)  # [F, C] each
        else:
            self.mean = frames.mean(dim=2)
            self.std = torch.zeros_like(self.mean)

    def steps(self):
        return range(self.frames.shape[0] - 1)


def _corr(a: _Side, i: int, b: _Side, j: int) -> float:
    """Correlation of frame i of a with frame j of b, each channel centred on its own mean (from the
    sides' means and stds: one product of the two frames, no centred copies)."""
    n = a.frames.shape[2]
    cov = (a.frames[i] * b.frames[j]).sum(dim=1) - n * a.mean[i] * b.mean[j]
    den = math.sqrt(float(n * a.std[i].pow(2).sum()) * float(n * b.std[j].pow(2).sum()))
    return float(cov.sum()) / den if den > 0.0 else 0.0


def _within(sides, value) -> float | None:
    vals = [value(s, i) for s in sides for i in s.steps()]
    return sum(vals) / len(vals) if vals else None


def _round(v: float) -> float:
    return float(f"{v:.4g}")


def _stream(parent: torch.Tensor, shot: torch.Tensor, axis: int, skip: int, window: int):
    """The two sides of the cut: the parent's last ``window`` frames, the shot's ``window`` after
    ``skip``; None when either side is empty or there is no within-shot step on either."""
    if axis >= min(parent.dim(), shot.dim()) or parent.shape[axis] < 1 or shot.shape[axis] <= skip:
        return None
    keep = min(window, parent.shape[axis])  # only the frames read are converted: a few, not the shot
    p = _frames(parent.narrow(axis, parent.shape[axis] - keep, keep), axis)
    n = _frames(shot.narrow(axis, skip, min(window, shot.shape[axis] - skip)), axis)
    if p.shape[1:] != n.shape[1:]:
        return None
    p, n = _Side(p), _Side(n)
    if p.frames.shape[0] < 2 and n.frames.shape[0] < 2:
        return None
    return p, n


def _video(p: _Side, n: _Side) -> dict:
    sides = (p, n)
    spread = float((p.std.mean(dim=0).norm() + n.std.mean(dim=0).norm()) / 2)
    rms_spread = (_rms(p.std) + _rms(n.std)) / 2  # the RMS of the frames about their channel means

    def rel(cut: float, within: float, scale: float) -> float:
        return _ratio(cut, max(within, FLOOR * scale))

    mean_step = rel(float((n.mean[0] - p.mean[-1]).norm()),
                    _within(sides, lambda s, i: float((s.mean[i + 1] - s.mean[i]).norm())), spread)
    std_step = rel(float((n.std[0] - p.std[-1]).norm()),
                   _within(sides, lambda s, i: float((s.std[i + 1] - s.std[i]).norm())), spread)
    rms_step = rel(_rms(n.frames[0] - p.frames[-1]),
                   _within(sides, lambda s, i: _rms(s.frames[i + 1] - s.frames[i])), rms_spread)
    return {"mean_step": mean_step, "std_step": std_step, "rms_step": rms_step,
            "correlation": _corr(p, -1, n, 0),
            "within_correlation": _within(sides, lambda s, i: _corr(s, i, s, i + 1))}


def _audio(p: _Side, n: _Side) -> dict:
    head, tail = _rms(n.frames), _rms(p.frames)
    level_db = 20.0 * math.log10(head / tail) if head > 0.0 and tail > 0.0 else 0.0
    out = _video(p, n)
    return {"level_db": max(-120.0, min(120.0, level_db)), "rms_step": out["rms_step"],
            "correlation": out["correlation"], "within_correlation": out["within_correlation"]}


def _severity(rms_step: float) -> float:
    return max(rms_step, _ratio(1.0, rms_step))


def measure(parent_video: torch.Tensor, shot_video: torch.Tensor, *, video_skip: int = 0,
            parent_audio: torch.Tensor | None = None, shot_audio: torch.Tensor | None = None,
            audio_axis: int | None = None, audio_skip: int = 0, window: int = WINDOW,
            audio_window: int = AUDIO_WINDOW) -> dict | None:
    """The seam of the cut from ``parent_video`` to ``shot_video`` (5-D [B, C, T, H, W]: frames on
    axis 2; 4-D: a batch of images, each a frame), ``video_skip`` leading frames of the new shot
    dropped as repeats; with both audio streams, their seam along ``audio_axis`` too (``audio_skip``
    leading steps dropped). None when the shapes differ or no side has two frames to compare the
    cut with (a still image: nothing moves inside it). Numbers rounded to 4 significant digits."""
    axis = 2 if shot_video.dim() == 5 else 0
    sides = _stream(parent_video, shot_video, axis, max(0, int(video_skip)), window)
    if sides is None:
        return None
    out = {"version": VERSION, "frames": [int(sides[0].frames.shape[0]), int(sides[1].frames.shape[0])],
           "skip": int(video_skip), **_video(*sides)}
    score = max(out["mean_step"], out["std_step"], _severity(out["rms_step"]))
    if parent_audio is not None and shot_audio is not None and audio_axis is not None:
        a_sides = _stream(parent_audio, shot_audio, int(audio_axis), max(0, int(audio_skip)), audio_window)
        if a_sides is not None:
            audio = _audio(*a_sides)
            audio["skip"] = int(audio_skip)
            out["audio"] = {k: v if isinstance(v, int) else _round(v) for k, v in audio.items()}
            score = max(score, 1.0 + abs(audio["level_db"]) / DB_PER_STEP, _severity(audio["rms_step"]))
    out["score"] = score
    return {k: _round(v) if isinstance(v, float) else v for k, v in out.items()}


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


def for_hop(parent_tensors, shot_tensors, marker: dict, *, spec=None) -> dict | None:
    """The seam of the hop a lineage ``marker`` describes: the parent's streams (``latent_tensor``,
    ``latent_tensor_1`` for audio) against the new shot's, the repeated head dropped as the marker's
    ``trim`` says (the family ``spec``'s length rule converts pixel frames to latents). None for a
    parent or shot without a video stream, or when ``measure`` has none."""
    parent_video, video = parent_tensors.get(VIDEO_KEY), shot_tensors.get(VIDEO_KEY)
    if parent_video is None or video is None or parent_video.dim() != video.dim():
        return None
    rule = getattr(spec, "length_rule", None) if video.dim() == 5 else None
    trim = int(marker.get("trim") or 0)
    skip = video_skip(trim, int(marker.get("tail_frames") or 0), rule)
    parent_audio, audio = parent_tensors.get(stream_key(1)), shot_tensors.get(stream_key(1))
    axis = marker.get("audio_axis")
    if axis is None and getattr(spec, "audio", None) is not None:
        axis = spec.audio.time_axis
    if axis is None and audio is not None and audio.dim() >= 3:
        axis = 2
    a_skip = 0
    if audio is not None and axis is not None and video.dim() == 5:
        a_skip = audio_skip(trim, marker.get("audio_count"), skip, video.shape[2], audio.shape[int(axis)])
    return measure(parent_video, video, video_skip=skip, parent_audio=parent_audio, shot_audio=audio,
                   audio_axis=axis, audio_skip=a_skip)
