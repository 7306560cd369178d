"""Joining a film's decoded clips into one: in order, the overlap each hop names dropped, with an
optional short crossfade at each seam.

Shot k+1 starts with ``trim`` pixel frames that repeat the end of shot k (the tail latents it
was continued from; the Handoff's certificate and the shot's lineage say how many). Dropping
them gives one continuous film. A crossfade of ``c`` frames then blends the last ``c`` frames
of shot k into the first ``c`` kept frames of shot k+1 (a linear ramp), which hides a seam
where the continuation drifts; it shortens the film by ``c`` frames per seam. Audio streams are
joined the same way, at their own rate (samples per pixel frame).
"""

from __future__ import annotations

import torch

from ._checks import require_floating, require_int, require_tensor, shape_text
from .errors import ContinuityError


def shot_range(line: list[dict], first_shot: int, last_shot: int) -> list[dict]:
    """Shots first_shot..last_shot (1-based places on the film's line; last 0 = the end)."""
    if not line:
        raise ContinuityError("the film holds no shot on its line; store a shot under the tag first")
    last = len(line) if last_shot == 0 else last_shot
    if not 1 <= first_shot <= len(line) or not first_shot <= last <= len(line):
        raise ContinuityError(f"shots {first_shot}..{last_shot or 'end'} are not on the film's line of "
                              f"{len(line)} shots; choose first_shot 1..{len(line)} and last_shot "
                              f"{first_shot}..{len(line)} (0: the end)")
    return line[first_shot - 1:last]


def seam_trims(shots: list[dict], seam_trim: int) -> list[int]:
    """Pixel frames to drop at the start of each shot: the shot's recorded ``trim`` (seam_trim -1)
    or seam_trim at every seam; the first shot keeps every frame."""
    trims = [int(s.get("trim") or 0) if seam_trim < 0 else int(seam_trim) for s in shots]
    return [0] + trims[1:]


def _ramp(count: int, axis: int, like: torch.Tensor) -> torch.Tensor:
    """Weights 1/(c+1) .. c/(c+1) of the incoming clip, shaped to broadcast along ``axis``."""
    weights = torch.arange(1, count + 1, dtype=torch.float32, device=like.device) / (count + 1)
    return weights.reshape([count if d == axis else 1 for d in range(like.ndim)]).to(like.dtype)


def _join(pieces: list[torch.Tensor], trims: list[int], fade: int, axis: int, what: str) -> torch.Tensor:
    if not pieces:
        raise ContinuityError(f"no {what} to join; the film holds no shot")
    if len(trims) != len(pieces):
        raise ContinuityError(f"{len(trims)} trims for {len(pieces)} {what}s; give one per shot (0 for the first)")
    parts: list[torch.Tensor] = []  # joined once at the end: no copy of the film per shot
    total = 0
    for index, (piece, trim) in enumerate(zip(pieces, trims)):
        piece = require_floating(f"{what} {index + 1}", require_tensor(f"{what} {index + 1}", piece))
        trim = require_int(f"trim of {what} {index + 1}", trim, minimum=0)
        if index and trim:
            if trim >= piece.shape[axis]:
                raise ContinuityError(f"{what} {index + 1} has {piece.shape[axis]} frames but its trim is {trim}: "
                                      "nothing would be left; check the shot's lineage (it names the trim)")
            piece = piece.narrow(axis, trim, piece.shape[axis] - trim)
        if not parts:
            parts, total = [piece], piece.shape[axis]
            continue
        first = parts[0]
        if piece.shape[:axis] != first.shape[:axis] or piece.shape[axis + 1:] != first.shape[axis + 1:]:
            joined = first.shape[:axis] + (total,) + first.shape[axis + 1:]
            raise ContinuityError(f"{what} {index + 1} of shape {shape_text(piece.shape)} does not join "
                                  f"{shape_text(joined)}: every shot of a film must have the same size; "
                                  "resize the clips first")
        count = min(fade, total, piece.shape[axis])
        if count:
            while parts[-1].shape[axis] < count:  # the fade reaches back past the last piece
                tail = parts.pop()
                parts[-1] = torch.cat([parts[-1], tail], dim=axis)
            last = parts.pop()
            w = _ramp(count, axis, piece)
            head = last.narrow(axis, last.shape[axis] - count, count)
            blended = head * (1 - w) + piece.narrow(axis, 0, count) * w
            parts += [last.narrow(axis, 0, last.shape[axis] - count), blended,
                      piece.narrow(axis, count, piece.shape[axis] - count)]
        else:
            parts.append(piece)
        total += piece.shape[axis] - count
    return parts[0] if len(parts) == 1 else torch.cat(parts, dim=axis)


def join_frames(clips: list[torch.Tensor], trims: list[int], crossfade: int = 0) -> torch.Tensor:
    """One IMAGE batch [N, H, W, C] from the clips (each [n_k, H, W, C]) in order: each clip after
    the first loses its first ``trims[k]`` frames, and ``crossfade`` frames blend at each seam."""
    crossfade = require_int("crossfade", crossfade, minimum=0)
    for index, clip in enumerate(clips):
        if require_tensor(f"clip {index + 1}", clip).ndim != 4:
            raise ContinuityError(f"clip {index + 1} of shape {shape_text(clip.shape)} is not an IMAGE batch "
                                  "[frames, H, W, C]; decode the shot first")
    return _join(list(clips), list(trims), crossfade, 0, "clip")


def join_audio(waveforms: list[torch.Tensor], trims: list[int], samples_per_frame: float,
               crossfade: int = 0) -> torch.Tensor:
    """One waveform [B, channels, samples] from the shots' waveforms in order; the trims and the
    crossfade are in pixel frames, converted with ``samples_per_frame`` (sample rate / fps)."""
    if samples_per_frame <= 0:
        raise ContinuityError(f"samples per frame {samples_per_frame!r} must be positive (sample rate / fps)")
    sample_trims = [round(t * samples_per_frame) for t in trims]
    fade = round(require_int("crossfade", crossfade, minimum=0) * samples_per_frame)
    for index, wave in enumerate(waveforms):
        if require_tensor(f"audio {index + 1}", wave).ndim != 3:
            raise ContinuityError(f"audio {index + 1} of shape {shape_text(wave.shape)} is not a waveform "
                                  "[batch, channels, samples]")
    return _join(list(waveforms), sample_trims, fade, 2, "audio")
