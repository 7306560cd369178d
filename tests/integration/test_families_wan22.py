"""Wan 2.2 on real ComfyUI (CPU): the TI2V 5B noise-mask path end to end with a tiny 5B-like
DiT (per-frame timesteps), the 48-channel family inferred with no model connected anywhere,
and the A14B I2V concat keys with a tiny 36-channel DiT that has no CLIP-vision projection."""

from __future__ import annotations

import torch

from conftest import Graph
from test_families_support import (conditioning_pair, handoff, ksampler, pack, same_bits,  # noqa: F401
                                   shared_store, store_sampled, tiny_wan22_5b, tiny_wan22_a14b_i2v,
                                   unet)

CANVAS = dict(width=64, height=64, length=9)  # Wan 2.2 5B: [1, 48, 3, 4, 4]


def test_wan22_5b_noise_mask_path_end_to_end(comfyui, captures, pack, tiny_wan22_5b):
    from comfy.latent_formats import Wan22

    tag = "wan22_5b_chain"
    g = Graph()
    model = unet(g, tiny_wan22_5b)
    pos, neg = conditioning_pair(g, "ZCTestConditioning", tokens=8)
    vae = g.add("ZCTestRaisingVAE")  # Wan22ImageToVideoLatent without start_image never encodes
    empty = g.add("Wan22ImageToVideoLatent", vae=g.out(vae), batch_size=1, **CANVAS)
    shot1 = ksampler(g, model, g.out(empty), g.out(pos), g.out(neg), seed=5)
    store1 = g.add("ZeroCopyLatentStore", samples=g.out(shot1), buffer_tag=tag, model=g.out(model))
    g.add("ZCTestCaptureLatent", samples=g.out(store1), label="shot1")
    clip = g.add("ZCTestClip", tokens=8)
    hand = handoff(g, clip, vae, tag, model=model, continuity=store1, **CANVAS)
    g.add("ZCTestCaptureLatent", samples=g.out(hand, 1), label="handoff")
    shot2 = ksampler(g, model, g.out(hand, 1), g.out(hand, 0), g.out(hand, 2), seed=6)
    g.add("ZCTestCaptureLatent", samples=g.out(shot2), label="shot2")
    run = comfyui.run(g.prompt)

    stored = captures.CAPTURED["shot1"]["samples"]
    handed = captures.CAPTURED["handoff"]
    assert stored.shape == (1, 48, 3, 4, 4)
    # core's Wan22ImageToVideoLatent layout: tail in front, process_out(0) after, mask [B,1,T,H,W]
    assert same_bits(handed["samples"][:, :, :1], stored[:, :, -1:])
    empty_value = Wan22().process_out(torch.zeros(1, 48, 1, 1, 1))
    assert torch.equal(handed["samples"][:, :, 1:], empty_value.expand(1, 48, 2, 4, 4))
    mask = handed["noise_mask"]
    assert mask.shape == (1, 1, 3, 4, 4) and mask[:, :, 0].eq(0).all() and mask[:, :, 1:].eq(1).all()
    # WAN22 turns that mask into per-frame timesteps: the kept frame runs at t = 0
    patcher = comfyui.output(run, model)
    assert type(patcher.model).__name__ == "WAN22"
    per_frame = patcher.model.process_timestep(torch.tensor([500.0]), handed["samples"],
                                               denoise_mask=mask)
    assert per_frame.tolist() == [[0.0, 500.0, 500.0]]
    # ... and the sampled shot keeps it while generating the rest
    out = captures.CAPTURED["shot2"]["samples"]
    assert torch.allclose(out[:, :, :1], stored[:, :, -1:], atol=1e-5)
    assert not torch.allclose(out[:, :, 1:], handed["samples"][:, :, 1:])
    info = comfyui.output(run, hand, 3)
    assert "family wan22_5b, adapter temporal_inpaint" in info and "bit-identical: yes" in info
    assert "timestep 0 per frame" in info


def test_wan22_family_is_inferred_without_any_model(comfyui, captures, pack):
    tag = "wan22_no_model"
    latent = torch.randn(1, 48, 3, 4, 4, generator=torch.Generator().manual_seed(3))
    g = Graph()
    vae = g.add("ZCTestRaisingVAE")
    source = g.add("Wan22ImageToVideoLatent", vae=g.out(vae), batch_size=1, **CANVAS)
    store = g.add("ZeroCopyLatentStore", samples=g.out(source), buffer_tag=tag)
    comfyui.run(g.prompt, targets=[store])
    assert shared_store(pack).get(tag).meta["family"] == "wan22_5b"  # 48 channels, 5D: only Wan 2.2
    shared_store(pack).put(tag, {"latent_tensor": latent}, {"family": "unknown"})  # no metadata at all
    g = Graph()
    clip = g.add("ZCTestClip", tokens=8)
    vae = g.add("ZCTestRaisingVAE")
    hand = handoff(g, clip, vae, tag, width=96, height=64, length=13, tail_frames=2)
    run = comfyui.run(g.prompt, targets=[hand])
    handed = comfyui.output(run, hand, 1)
    assert handed["samples"].shape == (1, 48, 4, 4, 6)  # new canvas, 16x, 4k+1 frames
    info = comfyui.output(run, hand, 3)
    assert "family wan22_5b" in info and "resampled" in info


def test_wan22_a14b_i2v_concat_keys_and_sampling(comfyui, captures, pack, tiny_wan22_a14b_i2v):
    tag = "wan22_a14b"
    g = Graph()
    model = unet(g, tiny_wan22_a14b_i2v)
    pos, neg = conditioning_pair(g, "ZCTestConditioning", tokens=8)
    empty = g.add("EmptyHunyuanLatentVideo", width=64, height=64, length=9, batch_size=1)
    store1 = store_sampled(g, model, tag, empty, pos, neg, label="a14b_shot1")
    clip = g.add("ZCTestClip", tokens=8)
    vae = g.add("ZCTestRaisingVAE")
    hand = handoff(g, clip, vae, tag, model=model, continuity=store1, width=64, height=64,
                   length=9, tail_frames=2)
    shot2 = ksampler(g, model, g.out(hand, 1), g.out(hand, 0), g.out(hand, 2), seed=9)
    g.add("ZCTestCaptureLatent", samples=g.out(shot2), label="a14b_shot2")
    run = comfyui.run(g.prompt)

    patcher = comfyui.output(run, model)
    # detected as T2V (no CLIP-vision projection) with a 36-channel patch embedding
    assert type(patcher.model.model_config).__name__ == "WAN21_T2V"
    assert patcher.model.image_to_video is False
    stored = captures.CAPTURED["a14b_shot1"]["samples"]
    extra = comfyui.output(run, hand, 0)[0][1]
    assert same_bits(extra["concat_latent_image"][:, :, :2], stored[:, :, -2:])
    assert extra["concat_mask"][:, :, :2].eq(0).all() and extra["concat_mask"][:, :, 2:].eq(1).all()
    assert "concat_latent_image" in comfyui.output(run, hand, 2)[0][1]
    # the model really takes the concat image: 16 noise + 4 mask + 16 image channels
    concat = patcher.model.concat_cond(noise=torch.zeros(1, 16, 3, 8, 8), device=torch.device("cpu"),
                                       concat_latent_image=extra["concat_latent_image"],
                                       concat_mask=extra["concat_mask"])
    assert concat.shape == (1, 20, 3, 8, 8)
    assert captures.CAPTURED["a14b_shot2"]["samples"].shape == (1, 16, 3, 8, 8)
    info = comfyui.output(run, hand, 3)
    assert "adapter wan_i2v" in info and "bit-identical: yes" in info
