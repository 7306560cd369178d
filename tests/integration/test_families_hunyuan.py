"""HunyuanVideo on real ComfyUI (CPU) with tiny random DiTs: 1.0 I2V v2 (replace) and 1.5 I2V
(concat), each sampled over the handed-off latent; and the 16-channel ambiguity with Wan 2.1,
resolved only by the model or the Store's metadata."""

from __future__ import annotations

import pytest
import torch

from conftest import ComfyRunError, Graph
from test_families_support import (conditioning_pair, handoff, ksampler, pack, same_bits,  # noqa: F401
                                   shared_store, store_sampled, tiny_hunyuan_video,
                                   tiny_hunyuan_video15, tiny_hunyuan_video_i2v_concat, unet)

HY10_TEXT = dict(tokens=8, dim=32, pooled_dim=768)  # tiny HunyuanVideo 1.0: text 32, CLIP-L pooled
HY15_TEXT = dict(tokens=8, dim=32, pooled_dim=0)


def first_shot(g, model, tag, empty_node, canvas, text, seed=5):
    pos, neg = conditioning_pair(g, "ZCTestConditioningDims", attention_mask=False, **text)
    empty = g.add(empty_node, batch_size=1, **canvas)
    store = store_sampled(g, model, tag, empty, pos, neg, seed=seed, label=f"{tag}:1")
    return store


def test_hunyuan10_i2v_replace_keys_and_sampling(comfyui, captures, pack, tiny_hunyuan_video):
    tag, canvas = "hy10", dict(width=64, height=64, length=9)  # [1, 16, 3, 8, 8]
    g = Graph()
    model = unet(g, tiny_hunyuan_video)
    store = first_shot(g, model, tag, "EmptyHunyuanLatentVideo", canvas, HY10_TEXT)
    clip = g.add("ZCTestClipDims", attention_mask=False, **HY10_TEXT)
    vae = g.add("ZCTestRaisingVAE")
    hand = handoff(g, clip, vae, tag, model=model, continuity=store, adapter="hunyuan_i2v", **canvas)
    g.add("ZCTestCaptureLatent", samples=g.out(hand, 1), label="hy10_handoff")
    shot2 = ksampler(g, model, g.out(hand, 1), g.out(hand, 0), g.out(hand, 2), seed=6)
    g.add("ZCTestCaptureLatent", samples=g.out(shot2), label="hy10_shot2")
    auto = handoff(g, clip, vae, tag, model=model, continuity=store, **canvas)
    run = comfyui.run(g.prompt, targets=[shot2, auto] + [n for n, v in g.prompt.items()
                                                        if v["class_type"] == "ZCTestCaptureLatent"])

    assert shared_store(pack).get(tag).meta["family"] == "hunyuan_video"
    stored = captures.CAPTURED[f"{tag}:1"]["samples"]
    handed = captures.CAPTURED["hy10_handoff"]
    # HunyuanImageToVideo "v2 (replace)": frames in the latent, noise_mask 0 there,
    # guiding_frame_index 0 on the positive only
    assert same_bits(handed["samples"][:, :, :1], stored[:, :, -1:])
    assert handed["samples"][:, :, 1:].eq(0).all()
    assert handed["noise_mask"].shape == (1, 1, 3, 8, 8) and handed["noise_mask"][:, :, 0].eq(0).all()
    assert comfyui.output(run, hand, 0)[0][1]["guiding_frame_index"] == 0
    assert "guiding_frame_index" not in comfyui.output(run, hand, 2)[0][1]
    assert type(comfyui.output(run, model).model).__name__ == "HunyuanVideo"
    out = captures.CAPTURED["hy10_shot2"]["samples"]
    assert torch.allclose(out[:, :, :1], stored[:, :, -1:], atol=1e-5)  # kept clean, restored
    info = comfyui.output(run, hand, 3)
    assert "family hunyuan_video, adapter hunyuan_i2v" in info and "bit-identical: yes" in info
    # auto cannot tell the v2 I2V checkpoint from T2V (both 16 channels): it inpaints and says so
    auto_info = comfyui.output(run, auto, 3)
    assert "adapter temporal_inpaint" in auto_info and "choose adapter hunyuan_i2v" in auto_info


def test_hunyuan10_i2v_v1_concat_checkpoint_is_chosen_by_auto(comfyui, captures, pack,
                                                              tiny_hunyuan_video_i2v_concat):
    tag, canvas = "hy10_v1", dict(width=64, height=64, length=9)
    g = Graph()
    model = unet(g, tiny_hunyuan_video_i2v_concat)
    store = first_shot(g, model, tag, "EmptyHunyuanLatentVideo", canvas, HY10_TEXT)
    clip = g.add("ZCTestClipDims", attention_mask=False, **HY10_TEXT)
    vae = g.add("ZCTestRaisingVAE")
    hand = handoff(g, clip, vae, tag, model=model, continuity=store, **canvas)
    shot2 = ksampler(g, model, g.out(hand, 1), g.out(hand, 0), g.out(hand, 2), seed=6)
    g.add("ZCTestCaptureLatent", samples=g.out(shot2), label="hy10_v1_shot2")
    run = comfyui.run(g.prompt)
    assert type(comfyui.output(run, model).model).__name__ == "HunyuanVideoI2V"
    assert shared_store(pack).get(tag).meta["model_variant"] == "i2v_concat"
    stored = captures.CAPTURED[f"{tag}:1"]["samples"]
    extra = comfyui.output(run, hand, 0)[0][1]  # HunyuanImageToVideo "v1 (concat)": positive only
    assert same_bits(extra["concat_latent_image"][:, :, :1], stored[:, :, -1:])
    assert extra["concat_mask"][:, :, :1].eq(0).all() and extra["concat_mask"][:, :, 1:].eq(1).all()
    assert "concat_latent_image" not in comfyui.output(run, hand, 2)[0][1]
    assert captures.CAPTURED["hy10_v1_shot2"]["samples"].shape == (1, 16, 3, 8, 8)
    info = comfyui.output(run, hand, 3)
    assert "adapter hunyuan_i2v" in info and "v1 (concat)" in info


def test_hunyuan10_shares_wan21_shape_so_needs_model_or_metadata(comfyui, captures, pack,
                                                                 tiny_hunyuan_video):
    tag = "hy10_ambiguous"
    shared_store(pack).put(tag, {"latent_tensor": torch.randn(1, 16, 3, 8, 8)}, {"family": "unknown"})
    g = Graph()
    clip = g.add("ZCTestClipDims", attention_mask=False, **HY10_TEXT)
    vae = g.add("ZCTestRaisingVAE")
    hand = handoff(g, clip, vae, tag, width=64, height=64, length=9)
    with pytest.raises(ComfyRunError, match=r"Wan 2\.1 / 2\.2 A14B, HunyuanVideo 1\.0.*'model' input"):
        comfyui.run(g.prompt, targets=[hand])
    g = Graph()
    model = unet(g, tiny_hunyuan_video)
    clip = g.add("ZCTestClipDims", attention_mask=False, **HY10_TEXT)
    vae = g.add("ZCTestRaisingVAE")
    hand = handoff(g, clip, vae, tag, model=model, width=64, height=64, length=9,
                   adapter="hunyuan_i2v")
    run = comfyui.run(g.prompt, targets=[hand])
    assert "family hunyuan_video" in comfyui.output(run, hand, 3)


def test_hunyuan15_i2v_concat_keys_and_sampling(comfyui, captures, pack, tiny_hunyuan_video15):
    tag, canvas = "hy15", dict(width=64, height=64, length=9)  # [1, 32, 3, 4, 4]
    g = Graph()
    model = unet(g, tiny_hunyuan_video15)
    store = first_shot(g, model, tag, "EmptyHunyuanVideo15Latent", canvas, HY15_TEXT)
    clip = g.add("ZCTestClipDims", attention_mask=False, **HY15_TEXT)
    vae = g.add("ZCTestRaisingVAE")
    hand = handoff(g, clip, vae, tag, model=model, continuity=store, tail_frames=2, **canvas)
    shot2 = ksampler(g, model, g.out(hand, 1), g.out(hand, 0), g.out(hand, 2), seed=6)
    g.add("ZCTestCaptureLatent", samples=g.out(shot2), label="hy15_shot2")
    run = comfyui.run(g.prompt)

    assert type(comfyui.output(run, model).model).__name__ == "HunyuanVideo15"
    stored = captures.CAPTURED[f"{tag}:1"]["samples"]
    assert stored.shape == (1, 32, 3, 4, 4)
    for output in (0, 2):  # HunyuanVideo15ImageToVideo sets both conditionings
        extra = comfyui.output(run, hand, output)[0][1]
        image, mask = extra["concat_latent_image"], extra["concat_mask"]
        assert image.shape == (1, 32, 3, 4, 4) and mask.shape == (1, 1, 3, 4, 4)
        assert same_bits(image[:, :, :2], stored[:, :, -2:]) and image[:, :, 2:].eq(0).all()
        assert mask[:, :, :2].eq(0).all() and mask[:, :, 2:].eq(1).all()
    assert comfyui.output(run, hand, 1)["samples"].eq(0).all()  # core returns an empty latent
    assert captures.CAPTURED["hy15_shot2"]["samples"].shape == (1, 32, 3, 4, 4)
    info = comfyui.output(run, hand, 3)
    assert "family hunyuan_video15, adapter hunyuan15_i2v" in info and "bit-identical: yes" in info
