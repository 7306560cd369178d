"""The documented wiring (README) on real ComfyUI (CPU): Store(samples, buffer_tag) and
Handoff(clip, vae, prompt, ..., buffer_tag) with no ``model`` anywhere, the tag from one
PrimitiveString, a Store with nothing after it, a corrupt newest spill file, and the usual
CLIPTextEncode wiring. Random-weight VAEs of the real architectures come from VAELoader; every
VAE call is counted, and zero-copy mode must make none."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from conftest import ComfyRunError, Graph
from test_families_support import (ksampler, pack, pack_module, same_bits, shared_store,  # noqa: F401
                                   tiny_hunyuan_video)

WAN = dict(width=64, height=64, length=9)  # Wan 2.1 / HunyuanVideo 1.0: [1, 16, 3, 8, 8]
HY10_TEXT = dict(tokens=8, dim=32, pooled_dim=768)


@pytest.fixture
def vae_calls(comfyui, monkeypatch):
    """Every encode/decode any ComfyUI VAE object makes during the test, by method name."""
    import comfy.sd

    calls: list[str] = []
    for name in ("encode", "decode", "encode_tiled", "decode_tiled"):
        original = getattr(comfy.sd.VAE, name)

        def counted(self, *args, _name=name, _original=original, **kwargs):
            calls.append(_name)
            return _original(self, *args, **kwargs)
        monkeypatch.setattr(comfy.sd.VAE, name, counted)
    return calls


@pytest.fixture(scope="session")
def hunyuan_vae(model_dirs):
    import tiny_models

    return tiny_models.build_hunyuan_video_vae(model_dirs["vae"], seed=4)


def spec_handoff(g, clip, vae, *, tag=None, tag_link=None, prompt="the next shot", **extra):
    """A Handoff wired as the README shows: clip, vae, prompt, canvas, tag, mode, ratio."""
    inputs = dict(clip=g.out(clip), vae=g.out(vae), prompt=prompt, **WAN,
                  buffer_tag=g.out(tag_link) if tag_link is not None else tag,
                  continuity_mode="zero_copy_latent_only", blend_ratio=0.0)
    inputs.update(extra)
    return g.add("ZeroCopyLatentHandoff", **inputs)


def wan_first_shot(g, unet_name, tag=None, tag_link=None, seed=3):
    model = g.add("UNETLoader", unet_name=unet_name, weight_dtype="default")
    pos = g.add("ZCTestConditioning", seed=1, tokens=8)
    neg = g.add("ZCTestConditioning", seed=2, tokens=8)
    empty = g.add("EmptyHunyuanLatentVideo", batch_size=1, **WAN)
    shot = ksampler(g, model, g.out(empty), g.out(pos), g.out(neg), seed=seed)
    store = g.add("ZeroCopyLatentStore", samples=g.out(shot),
                  buffer_tag=g.out(tag_link) if tag_link is not None else tag)
    return model, store


def wan_next_shot(g, unet_name, vae_name, tag=None, tag_link=None, seed=11, label="next"):
    """Handoff (no model) -> KSampler -> Store (no model); both latents captured."""
    model = g.add("UNETLoader", unet_name=unet_name, weight_dtype="default")
    clip = g.add("ZCTestClip", tokens=8)
    vae = g.add("VAELoader", vae_name=vae_name)
    hand = spec_handoff(g, clip, vae, tag=tag, tag_link=tag_link)
    g.add("ZCTestCaptureLatent", samples=g.out(hand, 1), label=f"{label}:handoff")
    shot = ksampler(g, model, g.out(hand, 1), g.out(hand, 0), g.out(hand, 2), seed=seed)
    store = g.add("ZeroCopyLatentStore", samples=g.out(shot),
                  buffer_tag=g.out(tag_link) if tag_link is not None else tag)
    g.add("ZCTestCaptureLatent", samples=g.out(store), label=f"{label}:stored")
    return hand, store, clip


def newest(pack, tag):
    return shared_store(pack).get(tag)


def test_wan21_chain_without_model_family_from_the_vae(comfyui, captures, pack, tiny_wan21_t2v, wan21_vae,
                                                        vae_calls):
    tag = "spec_wan21"
    g = Graph()
    wan_first_shot(g, tiny_wan21_t2v.name, tag)
    comfyui.run(g.prompt)
    previous = newest(pack, tag)
    assert previous.meta["family"] == "unknown"  # 16 channels: Wan 2.1 or HunyuanVideo; no model said
    previous = previous.tensors["latent_tensor"].clone()
    for shot, seed in ((2, 11), (3, 12)):
        g = Graph()
        hand, _, _ = wan_next_shot(g, tiny_wan21_t2v.name, wan21_vae.name, tag, seed=seed, label=f"wan{shot}")
        run = comfyui.run(g.prompt)
        handed = captures.CAPTURED[f"wan{shot}:handoff"]["samples"]
        assert same_bits(handed[:, :, :1], previous[:, :, -1:])
        info = comfyui.output(run, hand, 3)
        assert "bit-identical: yes" in info and "adapter temporal_inpaint" in info
        assert "family wan21: from the VAE WanVAE (16 channels, 4x8x8)" in info
        previous = captures.CAPTURED[f"wan{shot}:stored"]["samples"]
        assert newest(pack, tag).generation == shot
    assert vae_calls == []  # never decoded or encoded


def test_hunyuan_video_chain_without_model_family_from_the_vae(comfyui, captures, pack, tiny_hunyuan_video,
                                                                hunyuan_vae, vae_calls):
    tag = "spec_hy10"
    g = Graph()
    model = g.add("UNETLoader", unet_name=tiny_hunyuan_video.name, weight_dtype="default")
    pos = g.add("ZCTestConditioningDims", seed=1, attention_mask=False, **HY10_TEXT)
    neg = g.add("ZCTestConditioningDims", seed=2, attention_mask=False, **HY10_TEXT)
    empty = g.add("EmptyHunyuanLatentVideo", batch_size=1, **WAN)
    first = ksampler(g, model, g.out(empty), g.out(pos), g.out(neg), seed=5)
    g.add("ZeroCopyLatentStore", samples=g.out(first), buffer_tag=tag)
    comfyui.run(g.prompt)
    previous = newest(pack, tag).tensors["latent_tensor"].clone()
    for shot, seed in ((2, 6), (3, 7)):
        g = Graph()
        model = g.add("UNETLoader", unet_name=tiny_hunyuan_video.name, weight_dtype="default")
        clip = g.add("ZCTestClipDims", attention_mask=False, **HY10_TEXT)
        vae = g.add("VAELoader", vae_name=hunyuan_vae.name)
        hand = spec_handoff(g, clip, vae, tag=tag)
        g.add("ZCTestCaptureLatent", samples=g.out(hand, 1), label=f"hy{shot}:handoff")
        sampled = ksampler(g, model, g.out(hand, 1), g.out(hand, 0), g.out(hand, 2), seed=seed)
        store = g.add("ZeroCopyLatentStore", samples=g.out(sampled), buffer_tag=tag)
        g.add("ZCTestCaptureLatent", samples=g.out(store), label=f"hy{shot}:stored")
        run = comfyui.run(g.prompt)
        handed = captures.CAPTURED[f"hy{shot}:handoff"]["samples"]
        assert same_bits(handed[:, :, :1], previous[:, :, -1:])
        info = comfyui.output(run, hand, 3)
        assert "family hunyuan_video: from the VAE AutoencoderKL (16 channels, 4x8x8)" in info
        assert "bit-identical: yes" in info
        previous = captures.CAPTURED[f"hy{shot}:stored"]["samples"]
    assert vae_calls == []


def test_first_shot_takes_its_family_from_the_vae(comfyui, captures, pack, hunyuan_vae, vae_calls):
    g = Graph()
    clip = g.add("ZCTestClipDims", attention_mask=False, **HY10_TEXT)
    vae = g.add("VAELoader", vae_name=hunyuan_vae.name)
    image = g.add("ZCTestNoiseImage", seed=3, width=64, height=64, frames=1)
    hand = spec_handoff(g, clip, vae, tag="spec_never_stored", fallback_first_frame=g.out(image))
    run = comfyui.run(g.prompt, targets=[hand])
    info = comfyui.output(run, hand, 3)
    assert "holds no latent yet" in info and "family hunyuan_video: from the VAE AutoencoderKL" in info
    assert comfyui.output(run, hand, 1)["samples"].shape == (1, 16, 3, 8, 8)
    assert vae_calls == ["encode"]  # the fallback frame, once


def test_first_shot_without_any_clue_names_what_was_tried(comfyui, captures, pack):
    g = Graph()
    clip = g.add("ZCTestClip", tokens=8)
    vae = g.add("ZCTestRaisingVAE")
    image = g.add("ZCTestNoiseImage", seed=3, width=64, height=64, frames=1)
    hand = spec_handoff(g, clip, vae, tag="spec_no_clue", fallback_first_frame=g.out(image))
    with pytest.raises(ComfyRunError, match=r"cannot tell which model family to build for; tried the "
                                            r"'model' input \(not connected\); the VAE RaisingVAE \(no "
                                            r"family this pack knows\); the CLIP FakeUMT5Clip .*Connect "
                                            r"the diffusion model"):
        comfyui.run(g.prompt, targets=[hand])


def test_four_run_film_named_once_by_a_primitive_string(comfyui, captures, pack, tiny_wan21_t2v, wan21_vae):
    tag = "spec_linked_film"
    g = Graph()
    name = g.add("PrimitiveString", value=tag)
    wan_first_shot(g, tiny_wan21_t2v.name, tag_link=name)
    comfyui.run(g.prompt)  # validates with the tag linked, and the Store (an output node) runs
    assert newest(pack, tag).generation == 1
    previous = newest(pack, tag).tensors["latent_tensor"].clone()
    g = Graph()
    name = g.add("PrimitiveString", value=tag)
    hand, store, _ = wan_next_shot(g, tiny_wan21_t2v.name, wan21_vae.name, tag_link=name, label="film")
    for generation in (2, 3, 4):  # the very same prompt, queued three times
        run = comfyui.run(g.prompt)
        assert hand in run.executed and store in run.executed  # a new shot re-ran the Handoff
        info = comfyui.output(run, hand, 3)
        assert f"tag '{tag}', generation {generation - 1}" in info and "bit-identical: yes" in info
        handed = captures.CAPTURED["film:handoff"]["samples"]
        assert same_bits(handed[:, :, :1], previous[:, :, -1:])
        assert newest(pack, tag).generation == generation
        previous = captures.CAPTURED["film:stored"]["samples"]
    caught_up = comfyui.run(g.prompt, targets=[hand])  # shot 4 was stored after the last fingerprint
    assert hand in caught_up.executed and "generation 4" in comfyui.output(caught_up, hand, 3)
    settled = comfyui.run(g.prompt, targets=[hand])  # nothing stored since: ComfyUI's cache serves it
    assert hand not in settled.executed


def test_a_linked_tag_is_checked_when_its_value_is_known(comfyui, captures, pack, tiny_wan21_t2v):
    g = Graph()
    name = g.add("PrimitiveString", value="not a tag!")
    wan_first_shot(g, tiny_wan21_t2v.name, tag_link=name)
    with pytest.raises(ComfyRunError, match=r"raised ValueError: tag \"not a tag!\" has a space at character 4; "):
        comfyui.run(g.prompt)


def test_dead_end_store_runs_and_the_next_run_continues(comfyui, captures, pack, tiny_wan21_t2v, wan21_vae):
    tag = "spec_dead_end"
    g = Graph()
    _, store = wan_first_shot(g, tiny_wan21_t2v.name, tag)
    run = comfyui.run(g.prompt)  # KSampler -> Store, nothing after it: a valid prompt
    assert store in run.executed and newest(pack, tag).generation == 1
    stored = newest(pack, tag).tensors["latent_tensor"].clone()
    again = comfyui.run(g.prompt)  # nothing new: ComfyUI's cache serves it, nothing is stored twice
    assert store not in again.executed and newest(pack, tag).generation == 1
    shared_store(pack).drop(tag, disk=True)  # the sidebar's Clear
    refilled = comfyui.run(g.prompt)  # the cached output no longer stands for a stored shot: re-run
    assert store in refilled.executed and newest(pack, tag).generation == 2  # numbers only grow
    g = Graph()
    hand, _, _ = wan_next_shot(g, tiny_wan21_t2v.name, wan21_vae.name, tag, label="after_dead_end")
    comfyui.run(g.prompt)
    assert same_bits(captures.CAPTURED["after_dead_end:handoff"]["samples"][:, :, :1], stored[:, :, -1:])


def test_truncated_newest_spill_file_falls_back_to_the_previous_generation(
        comfyui, captures, pack, tiny_wan21_t2v, wan21_vae, caplog):
    tag = "spec_truncated"
    g = Graph()
    wan_first_shot(g, tiny_wan21_t2v.name, tag)
    comfyui.run(g.prompt)
    first = newest(pack, tag).tensors["latent_tensor"].clone()
    g = Graph()
    wan_next_shot(g, tiny_wan21_t2v.name, wan21_vae.name, tag, label="trunc2")
    comfyui.run(g.prompt)
    runtime = pack_module(pack, "zc_nodes.runtime")
    spill = Path(runtime.store().spill_dir)
    runtime.reset(spill)  # flushes, and the next use reads the spill folder again (a restart)
    newest_file = spill / f"{tag}@{2:020d}.latent"
    data = newest_file.read_bytes()
    newest_file.write_bytes(data[: len(data) // 2])  # a disk error / a crashed tool
    g = Graph()
    clip = g.add("ZCTestClip", tokens=8)
    vae = g.add("VAELoader", vae_name=wan21_vae.name)
    hand = spec_handoff(g, clip, vae, tag=tag)
    with caplog.at_level("WARNING"):
        run = comfyui.run(g.prompt, targets=[hand])
    info = comfyui.output(run, hand, 3)
    assert f"tag '{tag}', generation 1" in info and "bit-identical: yes" in info
    assert "generation 2 skipped:" in info and "used generation 1, the newest that verifies" in info
    assert same_bits(comfyui.output(run, hand, 1)["samples"][:, :, :1], first[:, :, -1:])
    assert not newest_file.exists() and newest_file.with_name(newest_file.name + ".rejected").exists()
    assert any("generation 2 skipped" in r.getMessage() for r in caplog.records)


def test_positive_from_clip_text_encode_overrides_the_prompt(comfyui, captures, pack, tiny_wan21_t2v,
                                                             wan21_vae):
    tag = "spec_positive"
    g = Graph()
    wan_first_shot(g, tiny_wan21_t2v.name, tag)
    comfyui.run(g.prompt)
    g = Graph()
    clip = g.add("ZCTestClip", tokens=8)
    vae = g.add("VAELoader", vae_name=wan21_vae.name)
    encoded = g.add("CLIPTextEncode", clip=g.out(clip), text="a prompt from CLIPTextEncode")
    hand = spec_handoff(g, clip, vae, tag=tag, prompt="never encoded", positive=g.out(encoded))
    run = comfyui.run(g.prompt, targets=[hand])
    assert torch.equal(comfyui.output(run, hand, 0)[0][0], comfyui.output(run, encoded, 0)[0][0])
    calls = comfyui.output(run, clip, 0).calls
    assert "never encoded" not in calls and calls.count("a prompt from CLIPTextEncode") == 1


def test_the_prompt_is_encoded_once_across_stored_shots(comfyui, captures, pack, tiny_wan21_t2v, wan21_vae):
    tag = "spec_encode_once"
    g = Graph()
    wan_first_shot(g, tiny_wan21_t2v.name, tag)
    comfyui.run(g.prompt)
    g = Graph()
    hand, store, clip = wan_next_shot(g, tiny_wan21_t2v.name, wan21_vae.name, tag, label="once")
    runs = [comfyui.run(g.prompt) for _ in range(2)]  # two new shots stored, the Handoff re-ran twice
    assert all(hand in run.executed for run in runs) and newest(pack, tag).generation == 3
    calls = comfyui.output(runs[-1], clip, 0).calls  # the same CLIP object both times (cached node)
    assert calls.count("the next shot") == 1 and calls.count("") == 1  # prompt and negative_prompt
