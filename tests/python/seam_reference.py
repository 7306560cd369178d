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

Cheap enough for the Store's hot path: only the ``WINDOW`` frames each side are read, and of each
frame only a strided grid of its latent pixels (every ``s``-th one each way, ``s`` the smallest that
keeps a frame, all channels, within ``MAX_VALUES`` values: a Wan 480p latent's 60x104 is read as
12x21, 720p's 90x160 as 12x20, LTX-2's 16x24 as 4x6, a FLUX 1024² image's 128x128 as 16x16). Only
those samples are converted to float and brought to the host; the shot is never converted or
copied. The statistics are therefore those of a spatially subsampled latent: means, stds and RMS
steps are estimates of the full frame's (a colour shift, a contrast step, a freeze and a jump read
the same), a change confined to a few latent pixels between the grid's points can be missed.

Pure: torch only. ``measure`` takes the tensors; ``video_skip`` and ``audio_skip``
(zc_continuity.seam_plan) say how many leading frames of the new shot repeat the parent.

This module is the reference definition, kept with the tests: the product does not run it. At put
time the C engine computes the same numbers from small summaries it keeps with each shot
(zc_continuity.seam_plan's ``hop_layouts`` says what to summarise; ``from_engine`` here makes the
record of the engine's statistics; zc.h "HowTo: measure the seam of a hop"), so the Store reads no
tensor in Python; tests/python/test_seam_engine.py holds the two together.
"""

from __future__ import annotations

import math

import torch

from zc_pack.zc_continuity.bundle_layout import VIDEO_KEY, stream_key
from zc_pack.zc_continuity.seam_plan import (  # noqa: F401 - the plan's names; tests read them here
    AUDIO_WINDOW,
    GREEN_BELOW,
    MAX_VALUES,
    RED_FROM,
    WINDOW,
    _audio_axis,
    audio_skip,
    hop_layouts,
    summary,
    verdict,
    video_skip,
)

CAP = 100.0
"""Ratios are capped here (a step over a shot that does not move at all)."""
FLOOR = 1e-3
"""Within-shot steps below this fraction of the frames' own spread count as this (a still shot)."""

DB_PER_STEP = 3.0
"""An audio level step of this many dB adds one to its score: amber from 3 dB (twice the power),
red from 9 dB."""

VERSION = 1


def _frames(x: torch.Tensor, axis: int, start: int, count: int, max_values: int | None) -> torch.Tensor:
    """Frames ``start .. start + count - 1`` along ``axis`` of ``x`` as a [frames, channels, rest]
    float32 array (float64 for a float64 input), channels along axis 1 (axis 0 and 1 for a 4-D image
    batch: each image a frame, its channels). With ``max_values``, each frame is read on a strided
    grid: one stride for every axis other than the frames', the channels' and the batch's, the
    smallest that keeps a frame (all its channels) within ``max_values`` values. One indexing and
    one conversion of the samples read: the rest of the shot is neither read nor copied."""
    index = [slice(None)] * x.dim()
    index[axis] = slice(start, start + count)
    if max_values is not None:
        dims = [d for d in range(x.dim()) if d not in (axis, 1) and not (d == 0 and axis != 0)]
        sizes = [x.shape[d] for d in dims]
        budget = max(1, max_values // max(1, x.shape[1]))  # positions per channel
        stride = 1
        while math.prod(-(-n // stride) for n in sizes) > budget:
            stride += 1
        for d in dims:
            index[d] = slice(None, None, stride)
    t = x.detach()[tuple(index)]
    t = t.to(torch.float64 if t.dtype == torch.float64 else torch.float32).cpu()
    a = torch.movedim(t, (axis, 1), (0, 1))  # frames, then channels
    return a.reshape(a.shape[0], a.shape[1], -1)


def _ratio(num: float, den: float) -> float:
    if den <= 0.0:
        return 0.0 if num <= 0.0 else CAP
    return min(num / den, CAP)


class _Cut:
    """Per-frame statistics of the frames both sides of the cut: frames ``0 .. parent - 1`` are the
    parent's, the step ``parent - 1 -> parent`` is the cut, every other neighbouring pair a step
    inside a shot. The few thousand samples are on the host by now and small enough that each
    operation below runs on one thread (below torch's intra-op grain size)."""

    def __init__(self, p: torch.Tensor, n: torch.Tensor):
        x = torch.cat([p, n])  # [F, C, N]
        mean = x.mean(dim=2)  # [F, C]; two passes, no one-pass variance
        xc = x - mean[:, :, None]
        square = xc * xc
        std = square.mean(dim=2).sqrt()  # [F, C]
        d = x[1:] - x[:-1]
        cov = (xc[1:] * xc[:-1]).sum(dim=(1, 2))  # each channel centred on its own mean
        power = square.sum(dim=(1, 2))  # [F]: each frame's centred sum of squares
        den = (power[1:] * power[:-1]).sqrt()
        corr = torch.where(den > 0, cov / torch.where(den > 0, den, torch.ones_like(den)),
                           torch.zeros_like(den))
        cut = p.shape[0]
        self.mean_steps = torch.linalg.vector_norm(mean[1:] - mean[:-1], dim=1).tolist()  # [F-1] each
        self.std_steps = torch.linalg.vector_norm(std[1:] - std[:-1], dim=1).tolist()
        self.rms_steps = (d * d).mean(dim=(1, 2)).sqrt().tolist()
        self.corrs = corr.tolist()
        side_std = (std[:cut], std[cut:])
        self.spread = float(sum(float(torch.linalg.vector_norm(s.mean(dim=0))) for s in side_std) / 2)
        self.rms_spread = float(sum(float((s * s).mean().sqrt()) for s in side_std) / 2)
        self.tail_level = float((x[:cut] * x[:cut]).mean().sqrt())
        self.head_level = float((x[cut:] * x[cut:]).mean().sqrt())
        self.cut = cut - 1
        self.frames = (int(p.shape[0]), int(n.shape[0]))

    def split(self, values: list) -> tuple[float, float | None]:
        """(the value at the cut, the mean of the values inside the shots; None when none)."""
        inside = values[:self.cut] + values[self.cut + 1:]
        return values[self.cut], (sum(inside) / len(inside) if inside else None)


def _video(c: _Cut) -> dict:
    def rel(values: list, scale: float) -> float:
        cut, within = c.split(values)
        return _ratio(cut, max(within, FLOOR * scale))

    correlation, within_correlation = c.split(c.corrs)
    return {"mean_step": rel(c.mean_steps, c.spread), "std_step": rel(c.std_steps, c.spread),
            "rms_step": rel(c.rms_steps, c.rms_spread), "correlation": correlation,
            "within_correlation": within_correlation}


def _level_db(head: float, tail: float) -> float:
    level_db = 20.0 * math.log10(head / tail) if head > 0.0 and tail > 0.0 else 0.0
    return max(-120.0, min(120.0, level_db))


def _audio(c: _Cut) -> dict:
    out = _video(c)
    return {"level_db": _level_db(c.head_level, c.tail_level), "rms_step": out["rms_step"],
            "correlation": out["correlation"], "within_correlation": out["within_correlation"]}


def _round(v: float) -> float:
    return float(f"{v:.4g}")


def _stream(parent: torch.Tensor, shot: torch.Tensor, axis: int, skip: int, window: int,
            max_values: int | None = MAX_VALUES):
    """The two sides of the cut: the parent's last ``window`` frames, the shot's ``window`` after
    ``skip``, each frame thinned to ``max_values`` values (None: read whole); None when either
    side is empty or there is no within-shot step on either."""
    if axis >= min(parent.dim(), shot.dim()) or parent.shape[axis] < 1 or shot.shape[axis] <= skip:
        return None
    if parent.shape[:axis] + parent.shape[axis + 1:] != shot.shape[:axis] + shot.shape[axis + 1:]:
        return None
    keep = min(window, parent.shape[axis])  # only the frames read are converted: a few, not the shot
    p = _frames(parent, axis, parent.shape[axis] - keep, keep, max_values)
    n = _frames(shot, axis, skip, min(window, shot.shape[axis] - skip), max_values)
    if p.shape[0] < 2 and n.shape[0] < 2:
        return None
    return _Cut(p, n)


def _severity(rms_step: float) -> float:
    return max(rms_step, _ratio(1.0, rms_step))


def measure(parent_video: torch.Tensor, shot_video: torch.Tensor, *, video_skip: int = 0,
            parent_audio: torch.Tensor | None = None, shot_audio: torch.Tensor | None = None,
            audio_axis: int | None = None, audio_skip: int = 0, window: int = WINDOW,
            audio_window: int = AUDIO_WINDOW, max_values: int | None = MAX_VALUES) -> dict | None:
    """The seam of the cut from ``parent_video`` to ``shot_video`` (5-D [B, C, T, H, W]: frames on
    axis 2; 4-D: a batch of images, each a frame), ``video_skip`` leading frames of the new shot
    dropped as repeats; with both audio streams, their seam along ``audio_axis`` too (``audio_skip``
    leading steps dropped). None when the shapes differ or no side has two frames to compare the
    cut with (a still image: nothing moves inside it). Each video frame is read on a strided grid
    of at most ``max_values`` values (None: every position). Numbers rounded to 4 significant
    digits."""
    axis = 2 if shot_video.dim() == 5 else 0
    cut = _stream(parent_video, shot_video, axis, max(0, int(video_skip)), window, max_values)
    if cut is None:
        return None
    audio = None
    if parent_audio is not None and shot_audio is not None and audio_axis is not None:
        a_cut = _stream(parent_audio, shot_audio, int(audio_axis), max(0, int(audio_skip)), audio_window,
                        None)  # audio read whole
        audio = _audio(a_cut) if a_cut is not None else None
    return _assemble(list(cut.frames), int(video_skip), _video(cut), audio, int(audio_skip))


def _assemble(frames: list, skip: int, video: dict, audio: dict | None, a_skip: int) -> dict:
    """The seam record from the video numbers (``_video``'s) and the audio ones (``_audio``'s, or
    None): the score, and every number rounded to 4 significant digits."""
    out = {"version": VERSION, "frames": frames, "skip": skip, **video}
    score = max(out["mean_step"], out["std_step"], _severity(out["rms_step"]))
    if audio is not None:
        audio = dict(audio, skip=a_skip)
        out["audio"] = {k: v if isinstance(v, int) else _round(v) for k, v in audio.items()}
        score = max(score, 1.0 + abs(audio["level_db"]) / DB_PER_STEP, _severity(audio["rms_step"]))
    out["score"] = score
    return {k: _round(v) if isinstance(v, float) else v for k, v in out.items()}


def from_engine(video: dict | None, audio: dict | None, layouts: dict) -> dict | None:
    """The seam record from the engine's statistics of the cut (``zc_store_seam``, as
    zc_engine.LatentStore hands them: ``measured``, ``parent_frames``, ``shot_frames``, the five
    ratios, ``parent_level``/``shot_level``) for the video stream and, optionally, the audio one;
    ``layouts`` is what ``hop_layouts`` asked the engine to summarise (for the skips). The same
    record ``measure`` makes from the tensors (this module stays the reference definition)."""
    if not video or not video.get("measured"):
        return None
    keys = ("mean_step", "std_step", "rms_step", "correlation", "within_correlation")
    a = None
    if audio and audio.get("measured"):
        a = {"level_db": _level_db(audio["shot_level"], audio["parent_level"]),
             "rms_step": audio["rms_step"], "correlation": audio["correlation"],
             "within_correlation": audio["within_correlation"]}
    return _assemble([int(video["parent_frames"]), int(video["shot_frames"])], int(layouts[VIDEO_KEY][1]),
                     {k: float(video[k]) for k in keys}, a,
                     int(layouts[stream_key(1)][1]) if a is not None else 0)


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
    axis = _audio_axis(marker, spec, audio)
    a_skip = 0
    if audio is not None and axis is not None and video.dim() == 5:
        a_skip = audio_skip(trim, marker.get("audio_count"), skip, video.shape[2], audio.shape[int(axis)])
    return measure(parent_video, video, video_skip=skip, parent_audio=parent_audio, shot_audio=audio,
                   audio_axis=axis, audio_skip=a_skip)
