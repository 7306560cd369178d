"""How a LATENT's streams are laid out in a store bundle, and read back.

An image or video latent is one tensor, stored as ``latent_tensor`` (the key
ComfyUI's SaveLatent/LoadLatent use, so a spilled plain latent is a valid
.latent file). An audio-video latent (a NestedTensor: video, then audio) is
stored as one bundle with a tensor per stream: ``latent_tensor`` (video) and
``latent_tensor_1`` (audio), plus the metadata ``streams`` (their count) and
``stream_shapes``, so both streams are captured, digested, spilled and
restored together and can never drift apart.
"""

from __future__ import annotations

import torch

from .errors import ContinuityError

VIDEO_KEY = "latent_tensor"


def stream_key(index: int) -> str:
    return VIDEO_KEY if index == 0 else f"{VIDEO_KEY}_{index}"


def bundle_tensors(streams: list[torch.Tensor]) -> tuple[dict[str, torch.Tensor], dict[str, str]]:
    """Named tensors and metadata for a list of streams (video first)."""
    tensors = {stream_key(i): s for i, s in enumerate(streams)}
    meta = {}
    if len(streams) > 1:
        meta["streams"] = str(len(streams))
        meta["stream_shapes"] = ";".join("x".join(str(d) for d in s.shape) for s in streams)
    return tensors, meta


def streams_of(shot) -> list[torch.Tensor]:
    """The streams of a stored bundle, video first, as the store's zero-copy views."""
    try:
        count = int(shot.meta.get("streams", "1"))
    except ValueError:
        count = 1
    missing = [stream_key(i) for i in range(count) if stream_key(i) not in shot.tensors]
    if missing:
        raise ContinuityError(f"tag {shot.tag!r} generation {shot.generation} records {count} streams "
                              f"but lacks {', '.join(missing)}; the stored bundle is incomplete, "
                              "store the shot again")
    return [shot.tensors[stream_key(i)] for i in range(count)]
