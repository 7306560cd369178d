"""SVI 2.0 Pro through kijai/ComfyUI-KJNodes' own WanImageToVideoSVIPro, fed by the store over three
queue runs (CPU, a tiny random-weight Wan I2V DiT, a real KSampler): ZeroCopyLatentLoad(first) as
``anchor_samples`` (its first latent: frames 1 from the start) and ZeroCopyLatentLoad(newest) as
``prev_samples``; the anchor and motion latents
the node receives are the stored ones, bit for bit.

KJNodes is not on PyPI: point KJNODES_PATH at a checkout of kijai/ComfyUI-KJNodes (fetched outside
this repository, never committed); setup.sh then installs its requirements."""

from __future__ import annotations

import json
import os

import pytest

from conftest import Graph
from test_families_support import ksampler, pack, same_bits, shared_store  # noqa: F401

KJNODES_PATH = os.environ.get("KJNODES_PATH")
WAN = dict(width=64, height=64, length=9)  # [1, 16, 3, 8, 8]
MOTION = 1


@pytest.fixture(scope="module")
def kjnodes(comfyui):
    if not KJNODES_PATH:
        pytest.skip("skipped: KJNODES_PATH not set")
    why = comfyui.load_peer_pack(KJNODES_PATH, "WanImageToVideoSVIPro")
    if why:
        pytest.skip(f"skipped: {why}")


def test_svi_pro_chain_over_three_queue_runs(comfyui, captures, pack, kjnodes, tiny_wan21_i2v):
    tag = "svi_pro_film"
    g = Graph()
    model = g.add("UNETLoader", unet_name=tiny_wan21_i2v.name, weight_dtype="default")
    pos = g.add("ZCTestConditioning", seed=1, tokens=8)
    neg = g.add("ZCTestConditioning", seed=2, tokens=8)
    empty = g.add("EmptyHunyuanLatentVideo", batch_size=1, **WAN)
    first = ksampler(g, model, g.out(empty), g.out(pos), g.out(neg), seed=3)
    g.add("ZeroCopyLatentStore", samples=g.out(first), buffer_tag=tag)
    comfyui.run(g.prompt)
    anchor = shared_store(pack).get(tag).tensors["latent_tensor"].clone()
    for shot, seed in ((2, 31), (3, 32)):
        previous = shared_store(pack).get(tag)
        prev = previous.tensors["latent_tensor"].clone()
        g = Graph()
        model = g.add("UNETLoader", unet_name=tiny_wan21_i2v.name, weight_dtype="default")
        pos = g.add("ZCTestConditioning", seed=1, tokens=8)
        neg = g.add("ZCTestConditioning", seed=2, tokens=8)
        anchor_node = g.add("ZeroCopyLatentLoad", buffer_tag=tag, shot="first", generation=0, frames=1,
                            frames_from="start")
        prev_node = g.add("ZeroCopyLatentLoad", buffer_tag=tag, shot="newest", generation=0, frames=0,
                          frames_from="end")
        svi = g.add("WanImageToVideoSVIPro", positive=g.out(pos), negative=g.out(neg), length=WAN["length"],
                    anchor_samples=g.out(anchor_node), prev_samples=g.out(prev_node),
                    motion_latent_count=MOTION)
        sampled = ksampler(g, model, g.out(svi, 2), g.out(svi, 0), g.out(svi, 1), seed=seed)
        g.add("ZeroCopyLatentStore", samples=g.out(sampled), buffer_tag=tag)
        g.add("ZCTestCaptureLatent", samples=g.out(sampled), label=f"svi{shot}")
        run = comfyui.run(g.prompt)
        concat = comfyui.output(run, svi, 0)[0][1]["concat_latent_image"]
        assert same_bits(concat[:, :, :1], anchor[:, :, :1])  # anchor_samples: the film's first latent
        assert same_bits(concat[:, :, 1:1 + MOTION], prev[:, :, -MOTION:])  # motion latents of the newest
        assert "generation 1 (first)" in comfyui.output(run, anchor_node, 1)
        assert f"generation {previous.generation} (newest)" in comfyui.output(run, prev_node, 1)
        assert captures.CAPTURED[f"svi{shot}"]["samples"].shape == (1, 16, 3, 8, 8)
        new = shared_store(pack).get(tag)
        assert new.generation == previous.generation + 1
        # the film's lineage: the newest Load's tail is the parent, never the anchor Load
        hop = json.loads(new.meta["lineage"])
        assert (hop["parent_generation"], hop["tail_digest"]) == (previous.generation,
                                                                  previous.info["latent_tensor"].digest)
        assert hop["adapter"] == "ZeroCopyLatentLoad -> WanImageToVideoSVIPro"
