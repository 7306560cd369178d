"""Joining a film's pieces into one file without encoding the video again.

The pieces were encoded with the same settings (formats.py), so their packets chain: each packet
is given its frame's place in the film (the frames of the pieces before it, plus its own index)
and written to the film's one video stream. Audio, when the film has it, is encoded here, segment
by segment as the video goes, so the muxer never holds more than a segment of either. The file
appears under its final name only when whole (files.staged).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import numpy as np

from .errors import RenderError
from .files import staged
from .formats import Format


@dataclass
class Segment:
    """A run of the film: a piece file holding ``frames`` frames (None when it has none), and the
    audio samples that play with them (float32 [channels, samples], or None)."""

    video: Path | None
    frames: int
    audio: np.ndarray | None = None


def _layout(channels: int) -> str:
    return {1: "mono", 2: "stereo"}.get(channels) or f"{channels}c"


def audio_rate_for(fmt: Format, sample_rate: int) -> int:
    """The rate the film's audio stream is written at: Opus knows only 8-48 kHz steps."""
    if fmt.audio_codec == "libopus" and sample_rate not in (8000, 12000, 16000, 24000, 48000):
        return 48000
    return sample_rate


def join(final: Path, segments: Iterable[Segment], fmt: Format, rate: Fraction, *, film: str,
         sample_rate: int | None = None, channels: int = 0, needed: int | None = None) -> dict:
    """Write the film to ``final`` from its segments, in order. Returns {"frames", "bytes",
    "audio_samples"}. ``needed``: the file's expected size, for a full disk's message. A segment's piece that does not hold the frames it should is a RenderError
    (the cache checked its bytes; this catches a piece made with other settings)."""
    import av

    frame_base = Fraction(rate.denominator, rate.numerator)  # one tick a frame
    frames_done = audio_done = 0
    with staged(Path(final), what=f"writing film {film!r} to {Path(final).name}", needed=needed) as temp:
        with av.open(str(temp), "w", format=fmt.container) as out:
            video = audio = None
            for segment in segments:
                if segment.video is not None:
                    with av.open(str(segment.video)) as piece:
                        source = piece.streams.video[0]
                        if video is None:
                            video = out.add_stream_from_template(source)
                            if sample_rate:
                                audio = out.add_stream(fmt.audio_codec, rate=audio_rate_for(fmt, sample_rate))
                                audio.layout = _layout(channels)
                        count = 0
                        for packet in piece.demux(source):
                            if packet.pts is None:  # the demuxer's end-of-stream marker
                                continue
                            index = round(packet.pts * source.time_base / frame_base)
                            packet.pts = packet.dts = frames_done + index
                            packet.duration = 1
                            packet.time_base = frame_base
                            packet.stream = video
                            out.mux(packet)
                            count += 1
                    if count != segment.frames:
                        raise RenderError(f"film {film!r}: the piece {segment.video.name} holds {count} frames where "
                                          f"{segment.frames} were expected; clear the render cache of this film and "
                                          "render again")
                    frames_done += count
                if audio is not None and segment.audio is not None and segment.audio.shape[-1]:
                    samples = np.ascontiguousarray(segment.audio, dtype=np.float32)
                    frame = av.AudioFrame.from_ndarray(samples, format="fltp", layout=_layout(channels))
                    frame.sample_rate = sample_rate
                    frame.pts = audio_done
                    frame.time_base = Fraction(1, sample_rate)
                    for packet in audio.encode(frame):
                        out.mux(packet)
                    audio_done += samples.shape[-1]
            if audio is not None:
                for packet in audio.encode(None):
                    out.mux(packet)
            if video is None:
                raise RenderError(f"film {film!r} has no frames to write")
    return {"frames": frames_done, "bytes": Path(final).stat().st_size, "audio_samples": audio_done}
