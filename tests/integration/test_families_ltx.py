"""LTX-Video and LTX-2 (audio-video) on real ComfyUI (CPU): ComfyUI's own empty-latent and AV
nodes, tiny random LTXV / LTXAV DiTs sampling over the handed-off latent, the tail as appended
keyframe guides that core's LTXVCropGuides and LTXVSeparateAVLatent accept, and the Store
dropping the appended guides before it keeps the next shot."""

from __future__ import annotations

import torch

from conftest import Graph
from test_families_support import (conditioning_pair, handoff, ksampler, pack, require_nodes,  # noqa: F401
                                   same_bits, shared_store, store_sampled, streams, tiny_ltxav,
                                   tiny_ltxv, unet)

CANVAS = dict(width=64, height=64, length=17)  # LTX: [1, 128, 3, 2, 2]
LTXV_TEXT = dict(tokens=8, dim=32, pooled_dim=0, attention_mask=True)
LTXAV_TEXT = dict(tokens=8, dim=64, pooled_dim=0, attention_mask=True)  # 2 x caption width


def test_ltxv_guides_crop_with_core_and_chain(comfyui, captures, pack, tiny_ltxv):
    tag = "ltxv_chain"
    g = Graph()
    model = unet(g, tiny_ltxv)
    pos, neg = conditioning_pair(g, "ZCTestConditioningDims", **LTXV_TEXT)
    empty = g.add("EmptyLTXVLatentVideo", batch_size=1, **CANVAS)
    store1 = store_sampled(g, model, tag, empty, pos, neg, seed=4, label="ltxv_shot1")
    clip = g.add("ZCTestClipDims", **LTXV_TEXT)
    vae = g.add("ZCTestRaisingVAE")
    hand = handoff(g, clip, vae, tag, model=model, continuity=store1, **CANVAS)
    g.add("ZCTestCaptureLatent", samples=g.out(hand, 1), label="ltxv_handoff")
    crop = g.add("LTXVCropGuides", positive=g.out(hand, 0), negative=g.out(hand, 2),
                 latent=g.out(hand, 1))
    g.add("ZCTestCaptureLatent", samples=g.out(crop, 2), label="ltxv_core_crop")
    g.add("ZCTestCaptureAny", value=g.out(crop, 0), label="ltxv_core_crop_positive")
    shot2 = ksampler(g, model, g.out(hand, 1), g.out(hand, 0), g.out(hand, 2), seed=5)
    g.add("ZCTestCaptureLatent", samples=g.out(shot2), label="ltxv_shot2")
    store2 = g.add("ZeroCopyLatentStore", samples=g.out(shot2), buffer_tag=tag, model=g.out(model))
    g.add("ZCTestCaptureLatent", samples=g.out(store2), label="ltxv_stored2")
    run = comfyui.run(g.prompt)

    stored = captures.CAPTURED["ltxv_shot1"]["samples"]
    assert stored.shape == (1, 128, 3, 2, 2)
    handed = captures.CAPTURED["ltxv_handoff"]
    # LTXVAddGuide layout: the clip, then the guide latent appended, mask 1 - strength = 0 on it
    assert handed["samples"].shape == (1, 128, 4, 2, 2) and handed["samples"][:, :, :3].eq(0).all()
    assert same_bits(handed["samples"][:, :, 3:], stored[:, :, -1:])
    assert handed["noise_mask"].shape == (1, 1, 4, 1, 1)
    assert handed["noise_mask"].flatten().tolist() == [1.0, 1.0, 1.0, 0.0]
    assert handed["zerocopy_appended_guides"] == {"guide_frames": 1, "video_frames": 3}
    for output in (0, 2):
        # [B, (t, h, w), guide tokens = 1 frame x 2 x 2, ...]: one guide frame's positions
        assert comfyui.output(run, hand, output)[0][1]["keyframe_idxs"].shape[:3] == (1, 3, 4)
    # core's own crop node reads the layout: back to the 3-frame clip, keyframes cleared
    assert captures.CAPTURED["ltxv_core_crop"]["samples"].shape == (1, 128, 3, 2, 2)
    assert captures.CAPTURED["ltxv_core_crop_positive"][0][1]["keyframe_idxs"] is None
    # sampled with the guide kept clean; the Store drops the appended guide
    out = captures.CAPTURED["ltxv_shot2"]["samples"]
    assert out.shape == (1, 128, 4, 2, 2)
    assert torch.allclose(out[:, :, 3:], stored[:, :, -1:], atol=1e-5)
    shot = shared_store(pack).get(tag)
    assert shot.tensors["latent_tensor"].shape == (1, 128, 3, 2, 2)
    assert same_bits(shot.tensors["latent_tensor"], out[:, :, :3])
    assert shot.meta["guide_frames_removed"] == "1" and shot.meta["family"] == "ltxv"
    info = comfyui.output(run, hand, 3)
    assert "family ltxv, adapter ltx_latent_guide" in info and "bit-identical: yes" in info


def test_ltx2_av_streams_split_guided_and_rejoined(comfyui, captures, pack, tiny_ltxav):
    require_nodes("LTXVEmptyLatentAudio", "LTXVConcatAVLatent", "LTXVSeparateAVLatent")
    tag = "ltx2_chain"
    g = Graph()
    model = unet(g, tiny_ltxav)
    pos, neg = conditioning_pair(g, "ZCTestConditioningDims", **LTXAV_TEXT)
    audio_vae = g.add("ZCTestLTXAudioVAE")
    video = g.add("EmptyLTXVLatentVideo", batch_size=1, **CANVAS)
    audio = g.add("LTXVEmptyLatentAudio", frames_number=17, frame_rate=25.0, batch_size=1,
                  audio_vae=g.out(audio_vae))
    av = g.add("LTXVConcatAVLatent", video_latent=g.out(video), audio_latent=g.out(audio))
    shot1 = ksampler(g, model, g.out(av), g.out(pos), g.out(neg), seed=4)
    store1 = g.add("ZeroCopyLatentStore", samples=g.out(shot1), buffer_tag=tag, model=g.out(model))
    g.add("ZCTestCaptureLatent", samples=g.out(store1), label="ltx2_shot1")
    clip = g.add("ZCTestClipDims", **LTXAV_TEXT)
    vae = g.add("ZCTestRaisingVAE")
    hand = handoff(g, clip, vae, tag, model=model, continuity=store1, tail_frames=2, **CANVAS)
    g.add("ZCTestCaptureLatent", samples=g.out(hand, 1), label="ltx2_handoff")
    split = g.add("LTXVSeparateAVLatent", av_latent=g.out(hand, 1))
    g.add("ZCTestCaptureLatent", samples=g.out(split, 0), label="ltx2_core_video")
    g.add("ZCTestCaptureLatent", samples=g.out(split, 1), label="ltx2_core_audio")
    shot2 = ksampler(g, model, g.out(hand, 1), g.out(hand, 0), g.out(hand, 2), seed=5)
    store2 = g.add("ZeroCopyLatentStore", samples=g.out(shot2), buffer_tag=tag, model=g.out(model))
    g.add("ZCTestCaptureLatent", samples=g.out(store2), label="ltx2_shot2")
    run = comfyui.run(g.prompt)

    v1, a1 = streams(captures.CAPTURED["ltx2_shot1"]["samples"])
    assert v1.shape == (1, 128, 3, 2, 2) and a1.shape == (1, 8, 17, 16)  # 25 fps, 25 audio latents/s
    h_video, h_audio = streams(captures.CAPTURED["ltx2_handoff"]["samples"])
    assert h_video.shape == (1, 128, 5, 2, 2) and same_bits(h_video[:, :, 3:], v1[:, :, -2:])
    # the 2 tail latents stand for 9 pixel frames at the new shot's start: the audio of the
    # stored shot's last 9 frames (1 audio latent per frame here) is held there
    assert h_audio.shape == (1, 8, 17, 16) and same_bits(h_audio[:, :, :9], a1[:, :, 8:])
    # core's LTXVSeparateAVLatent splits our latent and its nested mask
    core_video, core_audio = captures.CAPTURED["ltx2_core_video"], captures.CAPTURED["ltx2_core_audio"]
    assert core_video["samples"].shape == (1, 128, 5, 2, 2)
    assert core_video["noise_mask"].flatten().tolist() == [1.0, 1.0, 1.0, 0.0, 0.0]
    assert core_audio["noise_mask"].shape == (1, 1, 17, 16)
    assert core_audio["noise_mask"][:, :, :9].eq(0).all() and core_audio["noise_mask"][:, :, 9:].eq(1).all()
    # sampled: guides and audio tail held; the Store drops the guides, keeps both streams
    v2, a2 = streams(captures.CAPTURED["ltx2_shot2"]["samples"])
    assert v2.shape == (1, 128, 5, 2, 2)
    assert torch.allclose(v2[:, :, 3:], v1[:, :, -2:], atol=1e-5)
    assert torch.allclose(a2[:, :, :9], a1[:, :, 8:], atol=1e-5)
    shot = shared_store(pack).get(tag)
    assert shot.tensors["latent_tensor"].shape == (1, 128, 3, 2, 2)
    assert shot.tensors["latent_tensor_1"].shape == (1, 8, 17, 16)
    assert shot.meta["guide_frames_removed"] == "2"
    assert shot.meta["family"] == "ltx2" and shot.meta["streams"] == "2"
    info = comfyui.output(run, hand, 3)
    assert "family ltx2, adapter ltx_latent_guide, tail_frames 2" in info
    assert "audio stored digest" in info and "bit-identical: yes" in info
