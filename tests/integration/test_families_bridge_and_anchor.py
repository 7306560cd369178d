"""The opt-in pixel bridge (one decode, one encode, counted) with a real random Wan VAE, the
family-mismatch error that offers it, and the colour anchor: statistics recorded by the Store
and matched by the Handoff only when asked."""

from __future__ import annotations

import pytest
import torch

from conftest import ComfyRunError, Graph
from test_families_support import (conditioning_pair, handoff, ksampler, pack, same_bits,  # noqa: F401
                                   shared_store, store_sampled, tiny_flux, unet)

CANVAS = dict(width=64, height=64, length=9)


def test_pixel_bridge_decodes_once_and_encodes_the_last_frame(comfyui, captures, pack, tiny_wan21_t2v,
                                                              wan21_vae):
    tag, canvas = "bridge", dict(width=32, height=32, length=9)  # small: the VAE decodes 9 frames
    g = Graph()
    model = g.add("UNETLoader", unet_name=tiny_wan21_t2v.name, weight_dtype="default")
    pos, neg = conditioning_pair(g, "ZCTestConditioning", tokens=8)
    empty = g.add("EmptyHunyuanLatentVideo", batch_size=1, **canvas)
    store = store_sampled(g, model, tag, empty, pos, neg)
    vae = g.add("VAELoader", vae_name=wan21_vae.name)
    clip = g.add("ZCTestClip", tokens=8)
    hand = handoff(g, clip, vae, tag, model=model, continuity=store, adapter="pixel_bridge", **canvas)
    # the same bridge with ComfyUI's own VAEDecode and VAE: decode, last pixel frame, encode
    decoded = g.add("VAEDecode", samples=g.out(store), vae=g.out(vae))
    run = comfyui.run(g.prompt, targets=[hand, decoded])

    handed = comfyui.output(run, hand, 1)
    frames = comfyui.output(run, decoded, 0)
    assert frames.shape == (9, 32, 32, 3)
    with torch.inference_mode():  # as ComfyUI runs nodes
        core = comfyui.output(run, vae).encode(frames[-1:])
    assert core.shape == (1, 16, 1, 4, 4)
    assert torch.allclose(handed["samples"][:, :, :1], core, atol=1e-5)
    assert handed["noise_mask"][:, :, 0].eq(0).all()
    info = comfyui.output(run, hand, 3)
    assert "pixel bridge: 1 decode(s), 1 encode(s)" in info and "bit-identical: no" in info
    assert "adapter pixel_bridge -> temporal_inpaint" in info


def test_family_mismatch_names_the_pixel_bridge(comfyui, captures, pack, tiny_wan21_t2v):
    tag = "mismatch"
    shared_store(pack).put(tag, {"latent_tensor": torch.zeros(1, 16, 3, 8, 8)},
                           {"family": "hunyuan_video", "latent_format": "HunyuanVideo"})
    g = Graph()
    model = g.add("UNETLoader", unet_name=tiny_wan21_t2v.name, weight_dtype="default")
    clip = g.add("ZCTestClip", tokens=8)
    vae = g.add("ZCTestRaisingVAE")
    hand = handoff(g, clip, vae, tag, model=model, **CANVAS)
    with pytest.raises(ComfyRunError, match="family mismatch.*HunyuanVideo 1.0.*pixel_bridge"):
        comfyui.run(g.prompt, targets=[hand])


def test_pixel_bridge_across_families_wan_video_to_kontext_still(comfyui, captures, pack, tiny_flux,
                                                                 wan21_vae):
    tag = "bridge_to_flux"
    shared_store(pack).put(tag, {"latent_tensor": torch.randn(1, 16, 3, 4, 4)},
                           {"family": "wan21", "latent_format": "Wan21"})
    g = Graph()
    model = unet(g, tiny_flux)
    text = dict(tokens=8, dim=32, pooled_dim=32, attention_mask=False)
    clip = g.add("ZCTestClipDims", **text)
    flux_vae = g.add("ZCTestShapeOnlyVAE", channels=16, ratio=8, video=False)  # no tiny FLUX VAE
    wan_vae = g.add("VAELoader", vae_name=wan21_vae.name)
    plain = handoff(g, clip, flux_vae, tag, model=model, width=64, height=64, length=1)
    bridged = handoff(g, clip, flux_vae, tag, model=model, width=64, height=64, length=1,
                      adapter="pixel_bridge", bridge_vae=g.out(wan_vae))
    with pytest.raises(ComfyRunError, match="family mismatch.*Wan 2.1.*FLUX.*pixel_bridge"):
        comfyui.run(g.prompt, targets=[plain])
    run = comfyui.run(g.prompt, targets=[bridged])
    # the decoded last frame, encoded as a FLUX image, starts the still (img2img: adapter auto)
    assert comfyui.output(run, bridged, 1)["samples"].shape == (1, 16, 8, 8)
    info = comfyui.output(run, bridged, 3)
    assert "family flux, adapter pixel_bridge -> flux_img2img" in info
    assert "1 decode(s), 1 encode(s)" in info and "bit-identical: no" in info


def channel_stats(x):
    flat = x.double().movedim(1, 0).reshape(x.shape[1], -1)
    return flat.mean(1), flat.std(1, unbiased=False)


def test_color_anchor_matches_the_first_shot_statistics(comfyui, captures, pack):
    tag = "anchor"
    shots = []
    for seed, scale, shift in ((1, 1.0, 0.0), (2, 1.02, 0.05), (3, 1.04, 0.1)):  # drifting
        g = Graph()
        # 48 channels: a Wan 2.2 5B latent, a family the shape alone identifies (no model here)
        latent = g.add("ZCTestSeededLatent", seed=seed, channels=48, frames=3, height=4, width=4,
                       scale=scale, shift=shift)
        store = g.add("ZeroCopyLatentStore", samples=g.out(latent), buffer_tag=tag)
        run = comfyui.run(g.prompt, targets=[store])
        shots.append(comfyui.output(run, latent)["samples"])
    newest = shared_store(pack).get(tag)
    assert newest.meta["color_anchor_from"] == "generation 1"

    g = Graph()
    clip = g.add("ZCTestClip", tokens=8)
    vae = g.add("ZCTestRaisingVAE")
    anchored = handoff(g, clip, vae, tag, color_anchor=True, tail_frames=2, **CANVAS)
    plain = handoff(g, clip, vae, tag, tail_frames=2, **CANVAS)
    first = handoff(g, clip, vae, tag, color_anchor=True, generation=1, **CANVAS)
    run = comfyui.run(g.prompt, targets=[anchored, plain, first])

    m1, s1 = channel_stats(shots[0])
    m3, s3 = channel_stats(shots[2])
    view = (1, 48, 1, 1, 1)
    expected = ((shots[2][:, :, -2:].double() - m3.view(view)) * (s1 / s3).view(view)
                + m1.view(view)).float()
    got = comfyui.output(run, anchored, 1)["samples"][:, :, :2]
    assert torch.allclose(got, expected, atol=1e-5)
    info = comfyui.output(run, anchored, 3)
    assert "bit-identical: no" in info and "adjusted: colour anchor" in info and "generation 1" in info
    assert same_bits(comfyui.output(run, plain, 1)["samples"][:, :, :2], shots[2][:, :, -2:])
    assert "bit-identical: yes" in comfyui.output(run, plain, 3)  # off by default
    first_info = comfyui.output(run, first, 3)
    assert "is the anchor" in first_info and "bit-identical: yes" in first_info
