"""A film, not just shots, on real ComfyUI (CPU): lineage recorded through real samplers, the
encoded start image kept as the film's root."""

from __future__ import annotations

import json

import torch

from conftest import Graph
from test_families_support import ksampler, pack, shared_store  # noqa: F401

WAN = dict(width=64, height=64, length=9)


def shot_graph(unet_name, vae_name, tag, seed, fallback=False):
    """Handoff (no model; the VAE tells the family) -> KSampler -> Store."""
    g = Graph()
    model = g.add("UNETLoader", unet_name=unet_name, weight_dtype="default")
    clip = g.add("ZCTestClip", tokens=8)
    vae = g.add("VAELoader", vae_name=vae_name)
    extra = {}
    if fallback:
        image = g.add("ZCTestNoiseImage", seed=3, width=64, height=64, frames=1)
        extra["fallback_first_frame"] = g.out(image)
    hand = g.add("ZeroCopyLatentHandoff", clip=g.out(clip), vae=g.out(vae), prompt=f"shot with seed {seed}",
                 **WAN, buffer_tag=tag, continuity_mode="zero_copy_latent_only", blend_ratio=0.0, **extra)
    sampled = ksampler(g, model, g.out(hand, 1), g.out(hand, 0), g.out(hand, 2), seed=seed)
    store = g.add("ZeroCopyLatentStore", samples=g.out(sampled), buffer_tag=tag)
    return g, hand, store


def test_lineage_is_recorded_through_real_samplers(comfy, captures, pack, tiny_wan21_t2v, wan21_vae):
    from zc_engine import digest_tensor

    tag = "film_lineage"
    store = shared_store(pack)
    g, hand, _ = shot_graph(tiny_wan21_t2v.name, wan21_vae.name, tag, 51, fallback=True)
    run = comfy.run(g.prompt)
    start = store.get(tag, 1)
    assert start.meta["kind"] == "start_image" and start.tensors["latent_tensor"].shape == (1, 16, 1, 8, 8)
    assert "generation 1 (its anchor" in comfy.output(run, hand, 3)
    shot1 = store.get(tag)
    first = json.loads(shot1.meta["lineage"])
    assert shot1.generation == 2 and first["parent_generation"] == 1 and first["seed"] == 51
    assert first["tail_digest"] == digest_tensor(start.tensors["latent_tensor"])
    assert first["prompt"] == "shot with seed 51"
    g, hand, _ = shot_graph(tiny_wan21_t2v.name, wan21_vae.name, tag, 52)
    comfy.run(g.prompt)
    shot2 = store.get(tag)
    hop = json.loads(shot2.meta["lineage"])
    assert (hop["parent_tag"], hop["parent_generation"], hop["seed"]) == (tag, 2, 52)
    assert hop["tail_digest"] == digest_tensor(shot1.tensors["latent_tensor"][:, :, -1:]) == hop["used_digest"]
    assert hop["adapter"] == "temporal_inpaint" and hop["trim"] == 1 and hop["tail_frames"] == 1
    assert "keys_not_kept" not in shot2.meta or "zerocopy_lineage" not in shot2.meta["keys_not_kept"]
    assert not torch.equal(shot2.tensors["latent_tensor"], shot1.tensors["latent_tensor"])
