"""A fast PNG preview of one stored latent frame, with no VAE.

The way ComfyUI's own Latent2RGB previewer works: bring the raw latent into
model space with the latent format's ``process_in``, then map channels to RGB
with the family's ``latent_rgb_factors`` (a [C, 3] matrix and a bias) and map
[-1, 1] to [0, 255]. The factors are read from the running ComfyUI
(``comfy.latent_formats``) by the caller and passed in, never copied here. A
latent whose format has no factors gets a plain per-channel stretch of its
first three channels, and the response says which method was used.

PNG encoding uses only zlib: the preview works without Pillow.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass

import torch

MIN_SIZE = 16
MAX_SIZE = 1024
DEFAULT_SIZE = 256


@dataclass
class RgbProjection:
    """How one latent format maps to RGB: factors [C][3], bias [3], process_in, reshape."""

    name: str
    factors: list[list[float]]
    bias: list[float] | None = None
    process_in: Callable[[torch.Tensor], torch.Tensor] | None = None
    reshape: Callable[[torch.Tensor], torch.Tensor] | None = None


def select_frame(tensor: torch.Tensor, batch: int, frame: int) -> torch.Tensor:
    """One frame as a batch of one, keeping the latent's rank: [1,C,1,H,W] or [1,C,H,W].

    ``frame`` counts from the end when negative (-1 = the tail). Raises IndexError
    with the valid range when batch or frame is out of range."""
    if tensor.dim() not in (4, 5):
        raise ValueError(f"a latent of shape {list(tensor.shape)} is neither [B,C,H,W] nor [B,C,T,H,W]")
    batches = tensor.shape[0]
    if not -batches <= batch < batches:
        raise IndexError(f"batch {batch} is out of range for a latent with batch size {batches}")
    picked = tensor[batch:batch + 1] if batch >= 0 else tensor[batches + batch:batches + batch + 1]
    if tensor.dim() == 4:
        if frame not in (0, -1):
            raise IndexError(f"frame {frame} is out of range for an image latent (use 0 or -1)")
        return picked
    frames = tensor.shape[2]
    if not -frames <= frame < frames:
        raise IndexError(f"frame {frame} is out of range for a video latent with {frames} latent "
                         f"frames (use {-frames}..{frames - 1}; -1 is the tail)")
    index = frame % frames
    return picked[:, :, index:index + 1]


def project(frame: torch.Tensor, projection: RgbProjection | None) -> tuple[torch.Tensor, str]:
    """[H, W, 3] uint8 RGB of one selected frame, and the method used."""
    x = frame.detach().to(torch.float32)
    if projection is not None:
        try:
            if projection.process_in is not None:
                x = projection.process_in(x)
            if projection.reshape is not None:
                x = projection.reshape(x)
            x = x.reshape(x.shape[0], x.shape[1], *x.shape[-2:])[0]  # [C, H, W]
            factors = torch.tensor(projection.factors, dtype=torch.float32, device=x.device)
            if factors.shape[0] == x.shape[0] and factors.shape[1] == 3:
                bias = None if projection.bias is None else \
                    torch.tensor(projection.bias, dtype=torch.float32, device=x.device)
                rgb = torch.nn.functional.linear(x.movedim(0, -1), factors.t(), bias)
                rgb = ((rgb.clamp(-1.0, 1.0) + 1.0) * 127.5).round().to(torch.uint8)
                return rgb.cpu(), f"latent_rgb_factors:{projection.name}"
        except Exception:
            pass  # a format whose helpers do not fit this tensor: fall back below
        x = frame.detach().to(torch.float32)
    return stretch_channels(x.reshape(x.shape[0], x.shape[1], *x.shape[-2:])[0]), "channels"


def stretch_channels(x: torch.Tensor) -> torch.Tensor:
    """The first three channels of [C, H, W], each stretched to [0, 255] (gray if C < 3)."""
    channels = x[:3] if x.shape[0] >= 3 else x[:1].expand(3, -1, -1)
    low = channels.amin(dim=(1, 2), keepdim=True)
    high = channels.amax(dim=(1, 2), keepdim=True)
    scaled = (channels - low) / (high - low).clamp_min(1e-12)
    scaled = torch.nan_to_num(scaled, nan=0.0, posinf=1.0, neginf=0.0)
    return (scaled * 255.0).round().clamp(0, 255).to(torch.uint8).movedim(0, -1).cpu()


def fit(rgb: torch.Tensor, size: int) -> torch.Tensor:
    """Scale [H, W, 3] by nearest neighbour so the longer edge is at most ``size``
    (latent frames are tiny: small ones are enlarged by a whole factor)."""
    height, width = rgb.shape[:2]
    longest = max(height, width)
    if longest < size:
        factor = max(1, size // longest)
        return rgb.repeat_interleave(factor, dim=0).repeat_interleave(factor, dim=1)
    if longest > size:
        new_h = max(1, round(height * size / longest))
        new_w = max(1, round(width * size / longest))
        rows = (torch.arange(new_h) * height // new_h).clamp_max(height - 1)
        cols = (torch.arange(new_w) * width // new_w).clamp_max(width - 1)
        return rgb[rows][:, cols]
    return rgb


def png_bytes(rgb: torch.Tensor) -> bytes:
    """An 8-bit RGB PNG of [H, W, 3] uint8."""
    height, width, channels = rgb.shape
    if channels != 3 or rgb.dtype != torch.uint8:
        raise ValueError("png_bytes takes [H, W, 3] uint8")
    rows = rgb.contiguous().numpy().reshape(height, width * 3)
    raw = b"".join(b"\x00" + rows[y].tobytes() for y in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 6))
            + chunk(b"IEND", b""))


def preview_png(tensor: torch.Tensor, projection: RgbProjection | None, *, batch: int = 0,
                frame: int = -1, size: int = DEFAULT_SIZE) -> tuple[bytes, str, tuple[int, int]]:
    """PNG bytes of one frame of a stored latent, the method, and the PNG's (width, height)."""
    if not MIN_SIZE <= size <= MAX_SIZE:
        raise ValueError(f"size {size} is out of range {MIN_SIZE}..{MAX_SIZE}")
    rgb, method = project(select_frame(tensor, batch, frame), projection)
    rgb = fit(rgb, size)
    return png_bytes(rgb), method, (rgb.shape[1], rgb.shape[0])
