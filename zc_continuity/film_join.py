"""Joining a film's decoded clips into one: in order, the overlap each hop names dropped, with an
optional short crossfade at each seam.

Shot k+1 starts with ``trim`` pixel frames that repeat the end of shot k (the tail latents it
was continued from; the Handoff's certificate and the shot's lineage say how many). Dropping
them gives one continuous film. A crossfade of ``c`` frames then blends the last ``c`` frames
of shot k into the first ``c`` kept frames of shot k+1 (a linear ramp), which hides a seam
where the continuation drifts; it shortens the film by ``c`` frames per seam. Audio streams are
joined the same way, at their own rate (samples per pixel frame).

``join_frames`` joins clips already decoded (all of them in memory, then the film beside them);
``FrameJoiner`` gives the same frames a clip at a time into one batch allocated at the film's
projected size (``joined_length`` of the clips' ``pixel_frames``), so a caller that decodes shot
by shot holds the film and one clip, never the film twice.
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


def joined_length(counts: list[int], trims: list[int], crossfade: int = 0) -> int:
    """The frames join_frames gives for clips of ``counts`` frames: each clip after the first
    loses its trim, and each seam ``min(crossfade, frames so far, frames kept)`` more. A clip
    its trim would empty counts as one frame (the join refuses it when it comes)."""
    total = 0
    for index, (count, trim) in enumerate(zip(counts, trims)):
        kept = max(int(count) - (int(trim) if index else 0), 1)
        total += kept - (min(crossfade, total, kept) if index else 0)
    return total


def pixel_frames(latent_frames: int, known: list[tuple[int, int]]) -> int:
    """The pixel frames a shot of ``latent_frames`` latent frames decodes to, projected from
    shots of the same film already decoded: ``known`` = [(latent frames, pixel frames), ...].

    Causal video VAEs give 1 + (T - 1) x s frames (Wan: s = 4, LTX: s = 8), so two shots of
    different lengths fix the line through them (the shortest and the longest known). With one
    length known, (T1, n1): 1 + (T - 1)(n1 - 1)/(T1 - 1) when T1 > 1, else n1 x T / T1. A
    projection, not a promise: the caller checks every decoded shot against it."""
    if not known:
        raise ContinuityError("no decoded shot to project the film's frames from; decode its first shot first")
    latent_frames = int(latent_frames)
    low, high = min(known), max(known)
    if high[0] != low[0]:
        slope = (high[1] - low[1]) / (high[0] - low[0])
        projected = low[1] + (latent_frames - low[0]) * slope
    elif low[0] > 1:
        projected = 1 + (latent_frames - 1) * (low[1] - 1) / (low[0] - 1)
    else:
        projected = low[1] * latent_frames / max(low[0], 1)
    return max(round(projected), 1)


class FrameJoiner:
    """join_frames one clip at a time, into one IMAGE batch allocated once.

    ``total`` is the film's projected frame count (joined_length of the clips' projected
    frames). The batch [total, H, W, C] is allocated at the first ``add`` (a clip gives its frame
    size, dtype and device), each clip's kept frames are written into it, and the caller drops
    the clip: memory is the film plus the clip being added (plus the crossfade's few frames),
    never the film twice. When the clips come out longer than projected the batch grows once to
    the larger of what is needed and ``expect``'s newer projection (one copy of the frames joined
    so far); shorter, ``result`` is the frames joined (a view of the batch). Either way the
    frames are exactly join_frames' (torch.equal), the blend at each seam included.

    HowTo: ``joiner = FrameJoiner(total, trims, crossfade)``; ``joiner.add(clip)`` per clip in
    film order (``trims[k]`` frames of clip k dropped, k > 0); ``joiner.result()``."""

    def __init__(self, total: int, trims: list[int], crossfade: int = 0):
        self._expected = require_int("total", total, minimum=0)
        self._trims = [require_int(f"trim of clip {i + 1}", t, minimum=0) for i, t in enumerate(trims)]
        self._fade = require_int("crossfade", crossfade, minimum=0)
        self._batch: torch.Tensor | None = None
        self.frames = 0  # frames joined so far
        self.clips = 0  # clips added so far
        self.grown = 0  # times the batch was reallocated (clips longer than projected)

    @property
    def capacity(self) -> int:
        """Frames the batch holds room for (0 before the first clip)."""
        return 0 if self._batch is None else int(self._batch.shape[0])

    def expect(self, total: int) -> None:
        """The film's frames as projected now (after a clip that did not match the projection):
        a later growth of the batch goes straight to this size instead of a clip at a time."""
        self._expected = require_int("total", total, minimum=0)

    def add(self, clip: torch.Tensor) -> int:
        """Join the next clip [n, H, W, C]; returns the film's frames so far. The clip is not
        kept: drop it after this call to free its memory."""
        index = self.clips
        name = f"clip {index + 1}"
        if require_tensor(name, clip).ndim != 4:
            raise ContinuityError(f"{name} of shape {shape_text(clip.shape)} is not an IMAGE batch "
                                  "[frames, H, W, C]; decode the shot first")
        if index >= len(self._trims):
            raise ContinuityError(f"{len(self._trims)} trims for {index + 1} clips; give one per shot "
                                  "(0 for the first)")
        piece = require_floating(name, clip)
        trim = self._trims[index]
        if index and trim:
            if trim >= piece.shape[0]:
                raise ContinuityError(f"{name} has {piece.shape[0]} frames but its trim is {trim}: "
                                      "nothing would be left; check the shot's lineage (it names the trim)")
            piece = piece.narrow(0, trim, piece.shape[0] - trim)
        if self._batch is not None and piece.shape[1:] != self._batch.shape[1:]:
            joined = (self.frames,) + tuple(self._batch.shape[1:])
            raise ContinuityError(f"{name} of shape {shape_text(piece.shape)} does not join "
                                  f"{shape_text(joined)}: every shot of a film must have the same size; "
                                  "resize the clips first")
        count = min(self._fade, self.frames, piece.shape[0]) if index else 0
        end = self.frames + piece.shape[0] - count
        self._make_room(piece, end)
        batch = self._batch
        if count:  # the same expression as join_frames', so the same bits
            w = _ramp(count, 0, piece)
            head = batch.narrow(0, self.frames - count, count)
            blended = head * (1 - w) + piece.narrow(0, 0, count) * w
            head.copy_(blended)
            del blended, head
        batch.narrow(0, self.frames, end - self.frames).copy_(piece.narrow(0, count, piece.shape[0] - count))
        self.frames, self.clips = end, index + 1
        return end

    def _make_room(self, piece: torch.Tensor, end: int) -> None:
        batch = self._batch
        dtype = piece.dtype if batch is None else torch.promote_types(batch.dtype, piece.dtype)
        if batch is not None and end <= batch.shape[0] and dtype == batch.dtype:
            return
        size = max(end, self._expected)
        grown = torch.empty((size, *piece.shape[1:]), dtype=dtype,
                            device=piece.device if batch is None else batch.device)
        if batch is not None:
            grown.narrow(0, 0, self.frames).copy_(batch.narrow(0, 0, self.frames))
            self.grown += 1
        self._batch = grown

    def result(self) -> torch.Tensor:
        """The film [frames, H, W, C]: the batch itself when the projection held, else a view of
        its first ``frames``."""
        if self._batch is None:
            raise ContinuityError("no clip to join; the film holds no shot")
        if self.clips != len(self._trims):
            raise ContinuityError(f"{len(self._trims)} trims for {self.clips} clips; give one per shot "
                                  "(0 for the first)")
        return self._batch if self.frames == self._batch.shape[0] else self._batch.narrow(0, 0, self.frames)
