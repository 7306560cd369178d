"""MiniMax H3 audio-video on real ComfyUI (CPU): ComfyUI's EmptyMiniMaxH3LatentAV, a tiny random
H3 DiT sampling the nested latent, the Store keeping both streams as one bundle, and the
Handoff's keyframe entry plus chunk-aligned video and audio tails, sampled again."""

from __future__ import annotations

import pytest
import torch

from conftest import ComfyRunError, Graph
from test_families_support import (conditioning_pair, handoff, ksampler, pack, require_nodes,  # noqa: F401
                                   same_bits, shared_store, store_sampled, streams,
                                   tiny_minimax_h3, unet)

TEXT = dict(tokens=8, dim=32, pooled_dim=0, attention_mask=False)
CANVAS = dict(width=64, height=64, length=22)  # 17k+5: video [1,24,7,4,4], audio [1,32,2,37]


@pytest.fixture(autouse=True)
def _has_h3(comfyui):
    require_nodes("EmptyMiniMaxH3LatentAV")


def clip_keyframes() -> bool:
    """ComfyUI v0.33.0 packs one latent frame per keyframe; a tree with MiniMaxH3AddGuide takes a
    whole clip (with its audio) as a keyframe, and the adapter hands off the whole tail then."""
    import nodes

    return "MiniMaxH3AddGuide" in nodes.NODE_CLASS_MAPPINGS


def test_h3_av_chain_keyframe_and_aligned_tails(comfyui, captures, pack, tiny_minimax_h3):
    tag = "h3_chain"
    g = Graph()
    model = unet(g, tiny_minimax_h3)
    pos, neg = conditioning_pair(g, "ZCTestConditioningDims", **TEXT)
    empty = g.add("EmptyMiniMaxH3LatentAV", **CANVAS)
    store = store_sampled(g, model, tag, empty, pos, neg, seed=4, label="h3_shot1")
    clip = g.add("ZCTestClipDims", **TEXT)
    vae = g.add("ZCTestRaisingVAE")
    hand = handoff(g, clip, vae, tag, model=model, continuity=store, **CANVAS)
    g.add("ZCTestCaptureLatent", samples=g.out(hand, 1), label="h3_handoff")
    shot2 = ksampler(g, model, g.out(hand, 1), g.out(hand, 0), g.out(hand, 2), seed=8)
    g.add("ZCTestCaptureLatent", samples=g.out(shot2), label="h3_shot2")
    reference = g.add("EmptyMiniMaxH3LatentAV", **CANVAS)
    g.add("ZCTestCaptureLatent", samples=g.out(reference), label="h3_core_empty")
    run = comfyui.run(g.prompt)

    video, audio = streams(captures.CAPTURED["h3_shot1"]["samples"])
    assert video.shape == (1, 24, 7, 4, 4) and audio.shape == (1, 32, 2, 37)
    shot = shared_store(pack).get(tag)
    assert shot.meta["family"] == "minimax_h3" and shot.meta["streams"] == "2"
    assert same_bits(shot.tensors["latent_tensor"], video)
    assert same_bits(shot.tensors["latent_tensor_1"], audio)

    handed = captures.CAPTURED["h3_handoff"]
    h_video, h_audio = streams(handed["samples"])
    core_video, core_audio = streams(captures.CAPTURED["h3_core_empty"]["samples"])
    assert h_video.shape == core_video.shape and h_audio.shape == core_audio.shape
    # tail_frames 1 -> 2: the last [1, 4] chunk (5 pixel frames), latents 5 and 6
    assert same_bits(h_video[:, :, :2], video[:, :, 5:])
    # its audio: pixel frames 17..21 of 22 -> audio latents round(17 * 5/3) = 28 .. 36
    assert same_bits(h_audio[..., :9], audio[..., 28:]) and h_audio[..., 9:].eq(0).all()
    v_mask, a_mask = streams(handed["noise_mask"])
    assert v_mask.shape == (1, 1, 7, 4, 4) and a_mask.shape == (1, 1, 2, 37)
    assert v_mask[:, :, :2].eq(0).all() and v_mask[:, :, 2:].eq(1).all()
    assert a_mask[..., :9].eq(0).all() and a_mask[..., 9:].eq(1).all()
    extra = comfyui.output(run, hand, 0)[0][1]
    (keyframe,) = extra["minimax_keyframes"]
    assert keyframe["resolved_frame_index"] == 0 and extra["minimax_frame_count"] == 22
    if clip_keyframes():  # the whole tail and its audio
        assert same_bits(keyframe["latent"], video[:, :, 5:])
        assert same_bits(keyframe["audio_latent"], audio[..., 28:])
    else:  # one latent frame per keyframe: the chunk-start latent of the tail
        assert same_bits(keyframe["latent"], video[:, :, 5:6]) and "audio_latent" not in keyframe

    out_video, out_audio = streams(captures.CAPTURED["h3_shot2"]["samples"])
    # held, and restored by the sampler (the last Euler step rounds: x - (x - denoised))
    assert torch.allclose(out_video[:, :, :2], video[:, :, 5:], atol=1e-5)
    assert torch.allclose(out_audio[..., :9], audio[..., 28:], atol=1e-5)
    assert not torch.equal(out_video[:, :, 2:], h_video[:, :, 2:])
    info = comfyui.output(run, hand, 3)
    assert "family minimax_h3, adapter minimax_h3_keyframe, tail_frames 2" in info
    assert "tail_frames 1 -> 2" in info and "audio stored digest xxh3:" in info
    assert "bit-identical: yes" in info and "first 5 pixel frames" in info
    assert ("clip keyframe" if clip_keyframes() else "one-frame keyframe") in info


def test_h3_without_any_model_and_with_a_new_canvas(comfyui, captures, pack):
    tag = "h3_no_model"
    g = Graph()
    empty = g.add("EmptyMiniMaxH3LatentAV", width=64, height=64, length=39)  # [1,24,12,4,4]
    store = g.add("ZeroCopyLatentStore", samples=g.out(empty), buffer_tag=tag)
    clip = g.add("ZCTestClipDims", **TEXT)
    vae = g.add("ZCTestRaisingVAE")
    hand = handoff(g, clip, vae, tag, continuity=store, width=96, height=64, length=39, tail_frames=3)
    run = comfyui.run(g.prompt, targets=[hand])
    assert shared_store(pack).get(tag).meta["family"] == "minimax_h3"  # 24-ch video + [B,32,2,T] audio
    h_video, h_audio = streams(comfyui.output(run, hand, 1)["samples"])
    assert h_video.shape == (1, 24, 12, 4, 6) and h_audio.shape == (1, 32, 2, 65)
    (keyframe,) = comfyui.output(run, hand, 0)[0][1]["minimax_keyframes"]
    # on the target grid: tail_frames 3 -> 7 latents (a clip keyframe), or its first one
    assert keyframe["latent"].shape == (1, 24, 7 if clip_keyframes() else 1, 4, 6)
    info = comfyui.output(run, hand, 3)
    assert "tail_frames 3 -> 7" in info and "resampled" in info and "bit-identical: no" in info


def test_h3_length_is_validated_on_the_17k_plus_5_grid(comfyui, captures, pack):
    tag = "h3_length"
    g = Graph()
    empty = g.add("EmptyMiniMaxH3LatentAV", width=64, height=64, length=22)
    store = g.add("ZeroCopyLatentStore", samples=g.out(empty), buffer_tag=tag)
    clip = g.add("ZCTestClipDims", **TEXT)
    vae = g.add("ZCTestRaisingVAE")
    hand = handoff(g, clip, vae, tag, continuity=store, width=64, height=64, length=20)
    with pytest.raises(ComfyRunError, match=r"length 20 is not valid for MiniMax H3.*17k\+5; use 5 or 22"):
        comfyui.run(g.prompt, targets=[hand])


def test_h3_first_shot_keyframe_from_the_fallback_frame(comfyui, captures, pack, tiny_minimax_h3):
    g = Graph()
    model = unet(g, tiny_minimax_h3)
    clip = g.add("ZCTestClipDims", **TEXT)
    vae = g.add("ZCTestShapeOnlyVAE", channels=24, ratio=16, video=True)
    image = g.add("ZCTestNoiseImage", seed=3, width=64, height=64, frames=1)
    hand = handoff(g, clip, vae, "h3_never_stored", model=model, fallback_first_frame=g.out(image),
                   **CANVAS)
    neg = g.add("ZCTestConditioningDims", seed=2, **TEXT)
    shot = ksampler(g, model, g.out(hand, 1), g.out(hand, 0), g.out(neg), seed=3)
    g.add("ZCTestCaptureLatent", samples=g.out(shot), label="h3_first")
    run = comfyui.run(g.prompt)
    video, audio = streams(comfyui.output(run, hand, 1)["samples"])
    assert video.shape == (1, 24, 7, 4, 4) and audio.shape == (1, 32, 2, 37)
    assert video.eq(0).all() and audio.eq(0).all()  # as MiniMaxH3ImageToVideo: empty AV latent
    (keyframe,) = comfyui.output(run, hand, 0)[0][1]["minimax_keyframes"]
    assert keyframe["latent"].shape == (1, 24, 1, 4, 4) and keyframe["resolved_frame_index"] == 0
    assert [s.shape for s in streams(captures.CAPTURED["h3_first"]["samples"])] == [video.shape, audio.shape]
    assert "holds no latent yet" in comfyui.output(run, hand, 3)
