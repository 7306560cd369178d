"""Colour anchor: pull a latent's per-channel statistics back to those of a film's first shot.

Chaining shots in latent space removes the VAE round trip, but the model can
still drift: over many hops the latent's per-channel means and spreads wander
(users see colour and contrast creep). The anchor is the first shot stored
under a tag: its per-channel mean and standard deviation over every other
axis. Matching applies, per channel c,

    x' = (x - mean_now[c]) * (std_anchor[c] / std_now[c]) + mean_anchor[c]

where "now" are the statistics of the whole previous shot (not of the short
tail, whose statistics are noisy), so a shot that has not drifted is left
nearly unchanged. Channels whose spread is (nearly) zero are only shifted. The
map is per-channel affine, so it commutes with latent formats' per-channel
normalisation and with resampling: raw or model space, before or after a
resize, the result is the same.

This is an optional guard (off by default): it changes the tail, so a
certificate then says the tail was adjusted and is not bit-identical.
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from ._checks import require_floating, require_tensor, shape_text
from .errors import ContinuityError

STD_FLOOR = 1e-6
"""Spreads below this are treated as zero: the channel is shifted, not scaled."""


class ChannelStats(NamedTuple):
    """Per-channel mean and (population) standard deviation, float32 [C] on the CPU."""

    mean: torch.Tensor
    std: torch.Tensor

    @property
    def channels(self) -> int:
        return int(self.mean.numel())


def channel_stats(latent: torch.Tensor) -> ChannelStats:
    """Statistics over every axis but the channel axis (1) of a [B, C, ...] latent.

    Computed in float64 for accuracy and returned as float32 on the CPU, the
    form the store keeps. Non-finite values make the statistics non-finite,
    which ``check_stats`` then refuses.
    """
    latent = require_floating("latent", require_tensor("latent", latent))
    if latent.ndim < 3 or 0 in latent.shape:
        raise ContinuityError(f"latent of shape {shape_text(latent.shape)} has no channel axis with "
                              "values to measure; pass a [B, C, ...] latent")
    flat = latent.detach().to(device="cpu", dtype=torch.float64).movedim(1, 0).reshape(
        latent.shape[1], -1)
    mean = flat.mean(dim=1)
    std = flat.std(dim=1, unbiased=False)
    return ChannelStats(mean=mean.to(torch.float32), std=std.to(torch.float32))


def check_stats(stats: ChannelStats, channels: int, what: str) -> ChannelStats:
    """Return ``stats`` if it has ``channels`` finite values each, else raise naming ``what``."""
    mean, std = stats
    if mean.numel() != channels or std.numel() != channels:
        raise ContinuityError(f"{what} has {mean.numel()} channels, the latent {channels}; the anchor "
                              "belongs to another latent space (re-start the film under a new tag)")
    if not (torch.isfinite(mean).all() and torch.isfinite(std).all()) or (std < 0).any():
        raise ContinuityError(f"{what} holds non-finite or negative values; the shot it was taken "
                              "from contains NaN or inf, so it cannot anchor colours")
    return ChannelStats(mean.reshape(-1).to(torch.float32), std.reshape(-1).to(torch.float32))


def match_channel_stats(latent: torch.Tensor, current: ChannelStats,
                        anchor: ChannelStats) -> torch.Tensor:
    """``latent`` moved from ``current`` statistics to ``anchor`` ones, per channel (a new tensor).

    The arithmetic runs in float64 and the result has the latent's dtype and
    device. ``latent`` is never written.
    """
    latent = require_floating("latent", require_tensor("latent", latent))
    if latent.ndim < 3:
        raise ContinuityError(f"latent of shape {shape_text(latent.shape)} has no channel axis; "
                              "pass a [B, C, ...] latent")
    channels = latent.shape[1]
    current = check_stats(current, channels, "the shot's statistics")
    anchor = check_stats(anchor, channels, "the colour anchor")
    view = (1, channels) + (1,) * (latent.ndim - 2)
    scale = torch.where(current.std > STD_FLOOR, anchor.std.double() / current.std.double().clamp(
        min=STD_FLOOR), torch.ones(channels, dtype=torch.float64))
    work = latent.detach().to(torch.float64)
    out = (work - current.mean.double().to(work.device).view(view)) * scale.to(work.device).view(view)
    out = out + anchor.mean.double().to(work.device).view(view)
    return out.to(latent.dtype)


def stats_equal(a: ChannelStats, b: ChannelStats) -> bool:
    """True when two statistics are bit-identical (the shot is its own anchor)."""
    return torch.equal(a.mean, b.mean) and torch.equal(a.std, b.std)
