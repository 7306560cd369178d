"""A small video autoencoder trained inside the benchmark, and the video it learns from.

The drift section needs a VAE that has learned something, so that a decode → 8-bit image →
encode roundtrip behaves like the real one (it loses a little every hop) without any
downloaded weights. This module has three pieces:

* ``make_clip`` / ``make_batch``: generated test video, deterministic from a
  ``torch.Generator``: a moving background (scrolling colour bars, a translating
  checkerboard or a travelling colour wave) with one to three coloured discs gliding over it,
  every motion with a random velocity, rendered at twice the resolution and averaged down
  (anti-aliased edges). Sizes and speeds are fractions of the frame, so any frame size shows
  the same kind of content. Layout ``[3, T, H, W]`` (a batch: ``[B, 3, T, H, W]``), values in
  ``[0, 1]``.
* ``TinyVideoAE``: 3 → ``latent_channels`` (default 8) channels, spatial ÷4 (each 4×4
  patch becomes one latent position), temporal ÷1 (one latent frame per video frame, so the
  tail of a clip is simply its last latent frames); a linear patch projection plus
  nonlinear Conv3d branches over space and time. ``encode`` takes pixels in ``[0, 1]``;
  ``decode`` returns pixels clamped to ``[0, 1]``, as ComfyUI's VAEs do.
* ``train``: the linear paths start from a PCA of training patches, then Adam on the pixel
  MSE of fresh generated clips every step, a fixed seed, and a wall-clock budget (the
  learning rate follows a cosine over the budget, so a slower machine takes fewer steps but
  still ends at a small rate).

Also here: ``mse`` / ``psnr``. (The PNG step between two shots, ComfyUI's SaveImage
quantization and LoadImage, is ``bench.common.png_roundtrip``.)
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass, field

import torch
from torch import nn
from torch.nn import functional as F

# Training clips: small, so a step takes a fraction of a second on two CPU cores.
TRAIN_FRAMES = 8
TRAIN_SIZE = 32
TRAIN_BATCH = 8


# --------------------------------------------------------------------------- test video

def _uniform(gen: torch.Generator, low: float, high: float) -> float:
    return low + (high - low) * torch.rand((), generator=gen).item()


def _colour(gen: torch.Generator) -> torch.Tensor:
    return torch.rand(3, generator=gen)


def _signed_speed(gen: torch.Generator, low: float, high: float) -> float:
    """A speed in [low, high] (fractions of the frame per frame) with a random sign."""
    sign = 1.0 if torch.rand((), generator=gen).item() < 0.5 else -1.0
    return sign * _uniform(gen, low, high)


def _background(gen: torch.Generator, kind: int, x: torch.Tensor, y: torch.Tensor,
                t: torch.Tensor) -> torch.Tensor:
    """A moving full-frame pattern; x, y in [0, 1) and t in frames, broadcast to [T, H, W].
    Returns [3, T, H, W]."""
    if kind == 0:  # colour bars scrolling along a random axis
        count = int(torch.randint(4, 9, (), generator=gen))
        colours = torch.rand(count, 3, generator=gen)
        angle = _uniform(gen, 0.0, 2 * math.pi)
        along = x * math.cos(angle) + y * math.sin(angle)
        bar_width = _uniform(gen, 0.12, 0.3)
        speed = _signed_speed(gen, 0.01, 0.06)
        index = torch.floor((along - speed * t) / bar_width).long() % count
        return colours[index].permute(3, 0, 1, 2)
    if kind == 1:  # checkerboard translating in a random direction
        cell = _uniform(gen, 0.1, 0.25)
        vx, vy = _signed_speed(gen, 0.0, 0.05), _signed_speed(gen, 0.0, 0.05)
        first, second = _colour(gen), _colour(gen)
        parity = (torch.floor((x - vx * t) / cell) + torch.floor((y - vy * t) / cell)) % 2
        return (first.view(3, 1, 1, 1) * (1 - parity) + second.view(3, 1, 1, 1) * parity)
    # kind 2: a smooth colour wave travelling along a random direction
    angle = _uniform(gen, 0.0, 2 * math.pi)
    along = x * math.cos(angle) + y * math.sin(angle)
    wavelength = _uniform(gen, 0.3, 1.0)
    speed = _signed_speed(gen, 0.01, 0.05)
    first, second = _colour(gen), _colour(gen)
    # a triangle wave eased with smoothstep: smooth like a sine, but only + − × and floor,
    # which give the same bits on every call (torch.sin on the CPU did not, in testing)
    phase = (along - speed * t) / wavelength
    triangle = (2.0 * (phase - torch.floor(phase)) - 1.0).abs()
    mix = triangle * triangle * (3.0 - 2.0 * triangle)
    return first.view(3, 1, 1, 1) + (second - first).view(3, 1, 1, 1) * mix


def make_clip(gen: torch.Generator, frames: int = TRAIN_FRAMES, size: int = TRAIN_SIZE) -> torch.Tensor:
    """One generated clip ``[3, frames, size, size]`` in [0, 1], drawn from ``gen``.

    A moving background (bars, checkerboard or colour wave) plus 1–3 discs moving with
    random velocities (wrapping around the frame edges), anti-aliased by rendering at 2×
    and averaging 2×2 blocks.
    """
    fine = 2 * size
    coords = (torch.arange(fine, dtype=torch.float32) + 0.5) / fine
    y = coords.view(1, fine, 1)
    x = coords.view(1, 1, fine)
    t = torch.arange(frames, dtype=torch.float32).view(frames, 1, 1)
    kind = int(torch.randint(0, 3, (), generator=gen))
    video = _background(gen, kind, x, y, t).expand(3, frames, fine, fine).clone()
    for _ in range(int(torch.randint(1, 4, (), generator=gen))):
        radius = _uniform(gen, 0.08, 0.22)
        cx, cy = _uniform(gen, 0.0, 1.0), _uniform(gen, 0.0, 1.0)
        vx, vy = _signed_speed(gen, 0.0, 0.06), _signed_speed(gen, 0.0, 0.06)
        # shortest offset on the torus, so a disc leaving one edge enters at the other
        dx = torch.remainder(x - (cx + vx * t) + 0.5, 1.0) - 0.5
        dy = torch.remainder(y - (cy + vy * t) + 0.5, 1.0) - 0.5
        inside = (dx * dx + dy * dy <= radius * radius).to(torch.float32)
        colour = _colour(gen).view(3, 1, 1, 1)
        video = video * (1 - inside) + colour * inside
    video = F.avg_pool2d(video.reshape(3 * frames, 1, fine, fine), 2).reshape(3, frames, size, size)
    return video.clamp_(0.0, 1.0)


def make_batch(gen: torch.Generator, count: int, frames: int = TRAIN_FRAMES,
               size: int = TRAIN_SIZE) -> torch.Tensor:
    """``count`` clips from ``gen`` as ``[count, 3, frames, size, size]``."""
    return torch.stack([make_clip(gen, frames, size) for _ in range(count)])


def held_out_clip(seed: int, frames: int, size: int) -> torch.Tensor:
    """The held-out clip of a seed, ``[1, 3, frames, size, size]``.

    It comes from its own random stream (seed · 7919 + 104729), not from the training
    stream ``torch.Generator().manual_seed(seed)``, so training never sees it."""
    gen = torch.Generator().manual_seed(seed * 7919 + 104729)
    return make_clip(gen, frames, size).unsqueeze(0)


# --------------------------------------------------------------------------- autoencoder

PATCH = 4  # spatial factor: one latent position per 4×4 pixel patch


def space_to_depth(video: torch.Tensor, factor: int = PATCH) -> torch.Tensor:
    """``[B, C, T, H, W]`` → ``[B, C·f², T, H/f, W/f]`` (each f×f patch becomes channels)."""
    b, c, t, h, w = video.shape
    patches = video.reshape(b, c, t, h // factor, factor, w // factor, factor)
    return patches.permute(0, 1, 4, 6, 2, 3, 5).reshape(b, c * factor * factor, t, h // factor,
                                                         w // factor)


def depth_to_space(features: torch.Tensor, factor: int = PATCH) -> torch.Tensor:
    """The inverse of ``space_to_depth``."""
    b, cf, t, h, w = features.shape
    c = cf // (factor * factor)
    patches = features.reshape(b, c, factor, factor, t, h, w)
    return patches.permute(0, 1, 4, 5, 2, 6, 3).reshape(b, c, t, h * factor, w * factor)


def _residual_branch(channels_in: int, width: int, channels_out: int) -> nn.Sequential:
    """Two 3×3×3 convolutions and a 1×1×1 projection whose weights start at zero, so the
    branch adds nothing until training gives it something to add."""
    projection = nn.Conv3d(width, channels_out, 1)
    nn.init.zeros_(projection.weight)
    nn.init.zeros_(projection.bias)
    return nn.Sequential(nn.Conv3d(channels_in, width, 3, padding=1), nn.SiLU(),
                         nn.Conv3d(width, width, 3, padding=1), nn.SiLU(), projection)


class TinyVideoAE(nn.Module):
    """Pixels ``[B, 3, T, H, W]`` ↔ latents ``[B, C, T, H/4, W/4]`` (H, W multiples of 4).

    Encoder: the 4×4 patches as 48 channels → a linear 1×1×1 projection to C channels plus a
    nonlinear residual branch (3×3×3 convolutions over space and time). Decoder: the mirror
    image back to 48 channels → pixels, then a small full-resolution 3×3×3 refinement
    (smooths the patch seams). The linear paths are initialised from a PCA of training
    patches (``init_from_pca``), which gives a sensible start in one step; then everything
    trains jointly.
    """

    def __init__(self, latent_channels: int = 8, width: int = 48, refine_width: int = 8):
        super().__init__()
        patch_channels = 3 * PATCH * PATCH
        self.latent_channels = latent_channels
        self.encode_linear = nn.Conv3d(patch_channels, latent_channels, 1)
        self.encode_residual = _residual_branch(patch_channels, width, latent_channels)
        self.decode_linear = nn.Conv3d(latent_channels, patch_channels, 1)
        self.decode_residual = _residual_branch(latent_channels, width, patch_channels)
        last = nn.Conv3d(refine_width, 3, 3, padding=1)
        nn.init.zeros_(last.weight)
        nn.init.zeros_(last.bias)
        self.refine = nn.Sequential(nn.Conv3d(3, refine_width, 3, padding=1), nn.SiLU(), last)

    @torch.no_grad()
    def init_from_pca(self, clips: torch.Tensor) -> None:
        """Set the linear paths to the top principal components of the 4×4 patches of
        ``clips`` (whitened: each latent channel starts with unit variance)."""
        patches = space_to_depth(clips * 2.0 - 1.0)
        rows = patches.permute(0, 2, 3, 4, 1).reshape(-1, patches.shape[1]).double()
        mean = rows.mean(0)
        _, singular, components = torch.linalg.svd(rows - mean, full_matrices=False)
        k = self.latent_channels
        top = components[:k]                                   # [k, 48]
        std = singular[:k] / math.sqrt(max(1, rows.shape[0] - 1))
        encode = top / std[:, None]
        self.encode_linear.weight.copy_(encode.view(k, -1, 1, 1, 1))
        self.encode_linear.bias.copy_(-(encode @ mean))
        self.decode_linear.weight.copy_((top.T * std[None, :]).view(-1, k, 1, 1, 1))
        self.decode_linear.bias.copy_(mean)

    def encode(self, pixels: torch.Tensor) -> torch.Tensor:
        """Pixels in [0, 1] → latent."""
        patches = space_to_depth(pixels * 2.0 - 1.0)
        return self.encode_linear(patches) + self.encode_residual(patches)

    def decode_raw(self, latent: torch.Tensor) -> torch.Tensor:
        """Latent → unclamped pixels (what training sees)."""
        coarse = depth_to_space(self.decode_linear(latent) + self.decode_residual(latent))
        return (coarse + self.refine(coarse) + 1.0) * 0.5

    def decode(self, latent: torch.Tensor) -> torch.Tensor:
        """Latent → pixels clamped to [0, 1], as a ComfyUI VAE decode returns them."""
        return self.decode_raw(latent).clamp(0.0, 1.0)

    def forward(self, pixels: torch.Tensor) -> torch.Tensor:
        return self.decode_raw(self.encode(pixels))


def build_model(seed: int, latent_channels: int = 8, width: int = 48,
                refine_width: int = 8) -> TinyVideoAE:
    """A freshly initialised (untrained) model; its weights depend only on ``seed``."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return TinyVideoAE(latent_channels, width, refine_width)


def parameter_count(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


@dataclass
class TrainResult:
    steps: int                     # optimiser steps taken
    seconds: float                 # wall clock, PCA start included
    final_loss: float              # mean pixel MSE of the last (up to) 10 steps
    first_loss: float              # pixel MSE of the first step (right after the PCA start)
    losses: list[float] = field(default_factory=list)
    threads: int = 1


PCA_CLIPS = 32  # clips whose patches give the linear paths their starting point


def train(model: TinyVideoAE, seconds: float, seed: int, *, batch: int = TRAIN_BATCH,
          frames: int = TRAIN_FRAMES, size: int = TRAIN_SIZE, lr: float = 1e-3,
          max_steps: int | None = None, log=None) -> TrainResult:
    """Train ``model``: PCA start of the linear paths, then Adam on the pixel MSE of fresh
    generated clips every step until ``seconds`` of wall clock (or ``max_steps``) have
    passed; at least one step is always taken. The learning rate follows a cosine from
    ``lr`` to 5 % of it over the budget. Runs on every CPU core
    (torch.set_num_threads(os.cpu_count())) and restores the thread count afterwards.
    The data depend only on ``seed``; how many steps fit in the budget depends on the machine
    (and on what else runs on it)."""
    previous_threads = torch.get_num_threads()
    threads = os.cpu_count() or 1
    torch.set_num_threads(threads)
    data = torch.Generator().manual_seed(seed)
    losses: list[float] = []
    start = time.perf_counter()
    next_log = start + 10.0
    try:
        model.init_from_pca(make_batch(data, PCA_CLIPS, frames, size))
        optimiser = torch.optim.Adam(model.parameters(), lr=lr)
        model.train()
        while True:
            elapsed = time.perf_counter() - start
            if losses and (elapsed >= seconds or (max_steps is not None and len(losses) >= max_steps)):
                break
            fraction = min(1.0, elapsed / seconds) if seconds > 0 else 1.0
            for group in optimiser.param_groups:
                group["lr"] = lr * (0.05 + 0.95 * 0.5 * (1.0 + math.cos(math.pi * fraction)))
            clips = make_batch(data, batch, frames, size)
            loss = F.mse_loss(model(clips), clips)
            optimiser.zero_grad(set_to_none=True)
            loss.backward()
            optimiser.step()
            losses.append(loss.item())
            if log is not None and time.perf_counter() >= next_log:
                log(f"drift: training the tiny video AE: step {len(losses)}, loss {losses[-1]:.5f}")
                next_log += 10.0
    finally:
        torch.set_num_threads(previous_threads)
        model.eval()
    tail = losses[-10:]
    return TrainResult(steps=len(losses), seconds=time.perf_counter() - start,
                       final_loss=sum(tail) / len(tail), first_loss=losses[0], losses=losses,
                       threads=threads)


@torch.no_grad()
def evaluation_loss(model: TinyVideoAE, seed: int, clips: int = 8) -> float:
    """Pixel MSE of encode → decode (unclamped) on ``clips`` generated clips of a seed."""
    batch = make_batch(torch.Generator().manual_seed(seed), clips)
    return F.mse_loss(model(batch), batch).item()


# --------------------------------------------------------------------------- measuring

def mse(a: torch.Tensor, b: torch.Tensor) -> float:
    """Mean squared error, computed in float64."""
    return torch.mean((a.double() - b.double()) ** 2).item()


def psnr(a: torch.Tensor, b: torch.Tensor, peak: float = 1.0) -> float | None:
    """Peak signal-to-noise ratio in dB for values in [0, peak]; None when identical (∞)."""
    error = mse(a, b)
    if error == 0.0:
        return None
    return 10.0 * math.log10(peak * peak / error)


def to_frames(video: torch.Tensor) -> torch.Tensor:
    """``[1, 3, T, H, W]`` → ``[T, H, W, 3]`` (ComfyUI's IMAGE layout)."""
    return video[0].permute(1, 2, 3, 0).contiguous()


def from_frames(frames: torch.Tensor) -> torch.Tensor:
    """``[T, H, W, 3]`` → ``[1, 3, T, H, W]``."""
    return frames.permute(3, 0, 1, 2).unsqueeze(0).contiguous()
