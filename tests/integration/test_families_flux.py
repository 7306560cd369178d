"""FLUX.1 on real ComfyUI (CPU) with a tiny random FLUX DiT: Dev/Schnell img2img (adapter auto:
the stored image latent is the new latent, a real KSampler at denoise 0.6), and Kontext (the
stored image as a reference, next to ComfyUI's own ReferenceLatent, that the model really reads)."""

from __future__ import annotations

import torch

from conftest import Graph
from zc_pack.zc_engine import digest_tensor
from test_families_support import (conditioning_pair, handoff, ksampler, pack, same_bits,  # noqa: F401
                                   shared_store, store_sampled, tiny_flux, unet)

TEXT = dict(tokens=8, dim=32, pooled_dim=32, attention_mask=False)


def test_flux_kontext_reference_from_the_store(comfyui, captures, pack, tiny_flux):
    tag = "flux_stills"
    g = Graph()
    model = unet(g, tiny_flux)
    pos, neg = conditioning_pair(g, "ZCTestConditioningDims", **TEXT)
    empty = g.add("EmptySD3LatentImage", width=64, height=64, batch_size=1)
    store = store_sampled(g, model, tag, empty, pos, neg, seed=4, label="flux_shot1")
    clip = g.add("ZCTestClipDims", **TEXT)
    vae = g.add("ZCTestRaisingVAE")
    hand = handoff(g, clip, vae, tag, model=model, continuity=store, width=96, height=64, length=81,
                   adapter="flux_kontext_reference")
    core = g.add("ReferenceLatent", conditioning=g.out(pos), latent=g.out(store))
    g.add("ZCTestCaptureAny", value=g.out(core), label="flux_core_reference")
    with_ref = ksampler(g, model, g.out(hand, 1), g.out(hand, 0), g.out(hand, 2), seed=6)
    g.add("ZCTestCaptureLatent", samples=g.out(with_ref), label="flux_with_reference")
    plain_pos = g.add("ZCTestClipDims", **TEXT)
    encode = g.add("CLIPTextEncode", clip=g.out(plain_pos), text="the next shot")
    encode_neg = g.add("CLIPTextEncode", clip=g.out(plain_pos), text="")
    without = ksampler(g, model, g.out(hand, 1), g.out(encode), g.out(encode_neg), seed=6)
    g.add("ZCTestCaptureLatent", samples=g.out(without), label="flux_without_reference")
    run = comfyui.run(g.prompt)

    stored = captures.CAPTURED["flux_shot1"]["samples"]
    assert stored.shape == (1, 16, 8, 8)
    assert shared_store(pack).get(tag).meta["family"] == "flux"
    for output in (0, 2):
        (reference,) = comfyui.output(run, hand, output)[0][1]["reference_latents"]
        assert same_bits(reference, stored)  # at its stored size: no resample for a reference
    (core_reference,) = captures.CAPTURED["flux_core_reference"][0][1]["reference_latents"]
    assert same_bits(core_reference, stored)  # the same key and layout as core's ReferenceLatent
    latent = comfyui.output(run, hand, 1)
    assert latent["samples"].shape == (1, 16, 8, 12) and latent["samples"].eq(0).all()
    a = captures.CAPTURED["flux_with_reference"]["samples"]
    b = captures.CAPTURED["flux_without_reference"]["samples"]
    assert a.shape == b.shape == (1, 16, 8, 12)
    assert not torch.allclose(a, b)  # same seed and text: only the reference differs
    info = comfyui.output(run, hand, 3)
    assert "family flux, adapter flux_kontext_reference" in info and "bit-identical: yes" in info
    assert "nothing to trim" in info


def test_flux_first_still_uses_the_fallback_as_reference(comfyui, captures, pack, tiny_flux):
    g = Graph()
    model = unet(g, tiny_flux)
    clip = g.add("ZCTestClipDims", **TEXT)
    vae = g.add("ZCTestShapeOnlyVAE", channels=16, ratio=8, video=False)
    image = g.add("ZCTestNoiseImage", seed=3, width=64, height=64, frames=1)
    hand = handoff(g, clip, vae, "flux_never_stored", model=model, fallback_first_frame=g.out(image),
                   width=64, height=64, length=1, adapter="flux_kontext_reference")
    run = comfyui.run(g.prompt, targets=[hand])
    (reference,) = comfyui.output(run, hand, 0)[0][1]["reference_latents"]
    assert reference.shape == (1, 16, 8, 8)
    assert comfyui.output(run, hand, 1)["samples"].shape == (1, 16, 8, 8)
    assert "adapter flux_kontext_reference" in comfyui.output(run, hand, 3)


def test_flux_dev_img2img_chain_from_the_store(comfyui, captures, pack, tiny_flux):
    """Auto picks img2img for FLUX: three stills, each KSampler (denoise 0.6) starting from the
    previous still's latent as stored, bit-identical; a new canvas resamples it in latent space."""
    tag = "flux_dev_chain"
    g = Graph()
    model = unet(g, tiny_flux)
    pos, neg = conditioning_pair(g, "ZCTestConditioningDims", **TEXT)
    empty = g.add("EmptySD3LatentImage", width=64, height=64, batch_size=1)
    first = ksampler(g, model, g.out(empty), g.out(pos), g.out(neg), seed=4)
    g.add("ZeroCopyLatentStore", samples=g.out(first), buffer_tag=tag)
    comfyui.run(g.prompt)
    previous = shared_store(pack).get(tag).tensors["latent_tensor"].clone()
    for still, seed in ((2, 5), (3, 6)):
        g = Graph()
        model = unet(g, tiny_flux)
        clip = g.add("ZCTestClipDims", **TEXT)
        vae = g.add("ZCTestRaisingVAE")  # img2img from the store never encodes
        hand = handoff(g, clip, vae, tag, model=model, width=64, height=64, length=1)
        sampled = g.add("KSampler", model=g.out(model), seed=seed, steps=3, cfg=1.0, sampler_name="euler",
                        scheduler="simple", positive=g.out(hand, 0), negative=g.out(hand, 2),
                        latent_image=g.out(hand, 1), denoise=0.6)
        g.add("ZeroCopyLatentStore", samples=g.out(sampled), buffer_tag=tag)
        g.add("ZCTestCaptureLatent", samples=g.out(sampled), label=f"still{still}")
        run = comfyui.run(g.prompt)
        handed = comfyui.output(run, hand, 1)["samples"]
        assert same_bits(handed, previous)  # the latent in is the stored still, bit for bit
        marker = comfyui.output(run, hand, 1)["zerocopy_lineage"]  # the whole still: its stored digest
        assert marker["tail_digest"] == marker["used_digest"] == digest_tensor(previous)
        assert "reference_latents" not in comfyui.output(run, hand, 0)[0][1]
        info = comfyui.output(run, hand, 3)
        assert "family flux, adapter flux_img2img" in info and "bit-identical: yes" in info
        out = captures.CAPTURED[f"still{still}"]["samples"]
        assert out.shape == previous.shape and not torch.equal(out, previous)  # denoise 0.6 changed it
        previous = out
    g = Graph()
    model = unet(g, tiny_flux)
    clip = g.add("ZCTestClipDims", **TEXT)
    vae = g.add("ZCTestRaisingVAE")
    wide = handoff(g, clip, vae, tag, model=model, width=96, height=64, length=1)
    run = comfyui.run(g.prompt, targets=[wide])
    assert comfyui.output(run, wide, 1)["samples"].shape == (1, 16, 8, 12)
    assert "resampled" in comfyui.output(run, wide, 3) and "bit-identical: no" in comfyui.output(run, wide, 3)
