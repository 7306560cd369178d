"""Shots of a film in a real LatentStore, for the tests of the film (choosing a take, the next
shot, the film routes and what they redact)."""

from __future__ import annotations

import torch

from zc_pack.zc_continuity import lineage
from zc_pack.zc_engine import digest_tensor


def put_shot(store, tag: str, seed: int, parent: int | None = None, *, parent_tag: str | None = None) -> int:
    """One shot of ``tag``, a seeded (1, 16, 3, 4, 4) latent, continuing generation ``parent`` of
    ``parent_tag`` (default: ``tag``) by its last latent frame when given; its generation."""
    parent_tag = parent_tag or tag
    latent = torch.randn(1, 16, 3, 4, 4, generator=torch.Generator().manual_seed(seed))
    meta = {"family": "wan21"}
    if parent is not None:
        tail = store.get(parent_tag, parent).tensors["latent_tensor"][:, :, -1:]
        meta["lineage"] = lineage.record(lineage.marker(
            parent_tag=parent_tag, parent_generation=parent, tail_frames=1, tail_digest=digest_tensor(tail),
            used_digest=digest_tensor(tail), adapter="temporal_inpaint", trim=1, prompt=f"seed {seed}"),
            seed=seed)
    return store.put(tag, {"latent_tensor": latent}, meta, spill=True)
