"""Encoding a run of frames into a piece file, and reading frames back.

A piece is a complete little video file (one shot's body, head or tail, or one seam's blend) in
the film's format, starting on a key frame, so that pieces join into the film without a second
encode (remux.py). Frames are 8-bit RGB, [frames, height, width, 3] numpy arrays.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import numpy as np

from .files import staged
from .formats import Format


def to_rgb8(images) -> np.ndarray:
    """ComfyUI IMAGE frames (float 0..1, [n, H, W, C] torch or numpy) as uint8 RGB, rounded to nearest.
    A single-channel image is repeated to RGB; an alpha channel is dropped."""
    try:
        import torch

        if isinstance(images, torch.Tensor):
            images = (images.detach().float().clamp(0, 1) * 255).round().to(torch.uint8).cpu().numpy()
    except ImportError:
        pass
    frames = np.asarray(images)
    if frames.dtype != np.uint8:
        frames = np.clip(np.rint(frames.astype(np.float32) * 255.0), 0, 255).astype(np.uint8)
    if frames.ndim != 4:
        raise ValueError(f"frames of shape {list(frames.shape)} are not [frames, height, width, channels]")
    if frames.shape[-1] == 1:
        frames = np.repeat(frames, 3, axis=-1)
    return np.ascontiguousarray(frames[..., :3])


def rate_of(frame_rate: float) -> Fraction:
    """A frame rate as an exact fraction (23.976 -> 24000/1001)."""
    return Fraction(frame_rate).limit_denominator(1001)


def encode(path: Path, frames: np.ndarray, fmt: Format, rate: Fraction, quality: int, *, what: str) -> int:
    """Write ``frames`` (uint8 [n, H, W, 3], n >= 1) to ``path`` as one piece; returns its size in bytes.
    ``what`` names the work in a disk error ("caching shot 3 of film 'x'")."""
    import av

    with staged(Path(path), what=what) as temp, av.open(str(temp), "w", format=fmt.container) as out:
        stream = out.add_stream(fmt.codec, rate=rate, options=fmt.encoder_options(quality))
        stream.width, stream.height, stream.pix_fmt = int(frames.shape[2]), int(frames.shape[1]), fmt.pix_fmt
        for frame in frames:
            for packet in stream.encode(av.VideoFrame.from_ndarray(frame, format="rgb24")):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
    return Path(path).stat().st_size


def read_frames(path: Path) -> np.ndarray:
    """Every frame of a video file as uint8 RGB [n, H, W, 3] (for checks; a film's pieces are never
    decoded to be joined)."""
    import av

    with av.open(str(path)) as container:
        frames = [f.to_ndarray(format="rgb24") for f in container.decode(video=0)]
    return np.stack(frames) if frames else np.zeros((0, 0, 0, 3), np.uint8)
