"""ZeroCopyLatentLoad on real ComfyUI (CPU): stored shots as plain LATENTs for other nodes, bit for
bit: core's WanSoundImageToVideoExtend continuing a Wan chain over three queue runs and a restart,
the last k latents of video and audio-video shots, and the errors and fallbacks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from conftest import ComfyRunError, Graph
from test_families_support import (ksampler, pack, pack_module, require_nodes, same_bits,  # noqa: F401
                                   shared_store, streams)

WAN = dict(width=64, height=64, length=9)  # [1, 16, 3, 8, 8]


def load(g, tag, shot="newest", generation=0, frames=0, frames_from="end"):
    return g.add("ZeroCopyLatentLoad", buffer_tag=tag, shot=shot, generation=generation, frames=frames,
                 frames_from=frames_from)


def first_shot(g, unet_name, tag):
    model = g.add("UNETLoader", unet_name=unet_name, weight_dtype="default")
    pos = g.add("ZCTestConditioning", seed=1, tokens=8)
    neg = g.add("ZCTestConditioning", seed=2, tokens=8)
    empty = g.add("EmptyHunyuanLatentVideo", batch_size=1, **WAN)
    shot = ksampler(g, model, g.out(empty), g.out(pos), g.out(neg), seed=3)
    g.add("ZeroCopyLatentStore", samples=g.out(shot), buffer_tag=tag)
    return model


def s2v_extend_shot(g, unet_name, tag, seed):
    """ZeroCopyLatentLoad(newest) -> WanSoundImageToVideoExtend (no audio) -> KSampler -> Store."""
    model = g.add("UNETLoader", unet_name=unet_name, weight_dtype="default")
    pos = g.add("ZCTestConditioning", seed=1, tokens=8)
    neg = g.add("ZCTestConditioning", seed=2, tokens=8)
    vae = g.add("ZCTestRaisingVAE")  # no ref_image, no control_video: the node never encodes
    loaded = load(g, tag)
    g.add("ZCTestCaptureLatent", samples=g.out(loaded), label="s2v:received")
    extend = g.add("WanSoundImageToVideoExtend", positive=g.out(pos), negative=g.out(neg), vae=g.out(vae),
                   length=9, video_latent=g.out(loaded))
    sampled = ksampler(g, model, g.out(extend, 2), g.out(extend, 0), g.out(extend, 1), seed=seed)
    g.add("ZeroCopyLatentStore", samples=g.out(sampled), buffer_tag=tag)
    return loaded, extend


def test_wan_s2v_extend_chain_fed_by_the_store(comfyui, captures, pack, tiny_wan21_t2v):
    require_nodes("WanSoundImageToVideoExtend")
    tag = "load_s2v"
    g = Graph()
    first_shot(g, tiny_wan21_t2v.name, tag)
    comfyui.run(g.prompt)
    runtime = pack_module(pack, "zc_nodes.runtime")
    for run_index, seed in enumerate((21, 22, 23)):
        stored = shared_store(pack).get(tag)
        expected = stored.tensors["latent_tensor"].clone()
        if run_index == 2:  # a restart: the next Load reads the spill file
            runtime.reset(Path(runtime.store().spill_dir))
            comfyui.reset_cache()
        g = Graph()
        loaded, extend = s2v_extend_shot(g, tiny_wan21_t2v.name, tag, seed)
        run = comfyui.run(g.prompt)
        received = captures.CAPTURED["s2v:received"]["samples"]
        assert same_bits(received, expected)
        motion = comfyui.output(run, extend, 0)[0][1]["reference_motion"]
        assert same_bits(motion, expected[:, :, -19:])  # core's own slice of what it received
        info = comfyui.output(run, loaded, 1)
        assert f"generation {stored.generation} (newest)" in info and "bit-identical: yes" in info
        new = shared_store(pack).get(tag)
        assert new.generation == stored.generation + 1
        # the Load's tail is the new shot's parent in the film: the whole shot, bit-identical
        hop = json.loads(new.meta["lineage"])
        assert (hop["parent_tag"], hop["parent_generation"], hop["tail_frames"]) == (tag, stored.generation, 3)
        assert hop["tail_digest"] == hop["used_digest"] == stored.info["latent_tensor"].digest
        assert hop["adapter"] == "ZeroCopyLatentLoad -> WanSoundImageToVideoExtend" and hop["seed"] == seed


def test_last_frames_of_video_and_audio_video_shots(comfyui, captures, pack):
    require_nodes("EmptyMiniMaxH3LatentAV")
    g = Graph()
    video = g.add("ZCTestSeededLatent", seed=4, channels=16, frames=5, height=4, width=4, scale=1.0, shift=0.0)
    g.add("ZeroCopyLatentStore", samples=g.out(video), buffer_tag="load_video")
    av = g.add("EmptyMiniMaxH3LatentAV", width=64, height=64, length=39)  # [1,24,12,4,4] + [1,32,2,65]
    g.add("ZeroCopyLatentStore", samples=g.out(av), buffer_tag="load_av")
    comfyui.run(g.prompt)
    g = Graph()
    last2 = load(g, "load_video", frames=2)
    first1 = load(g, "load_video", frames=1, frames_from="start")
    av_last = load(g, "load_av", frames=7)
    av_first = load(g, "load_av", frames=2, frames_from="start")
    run = comfyui.run(g.prompt, targets=[last2, first1, av_last, av_first])
    stored = shared_store(pack).get("load_video").tensors["latent_tensor"]
    assert same_bits(comfyui.output(run, last2, 0)["samples"], stored[:, :, -2:])
    assert "the last 2 of [1, 16, 5, 4, 4]" in comfyui.output(run, last2, 1)
    assert same_bits(comfyui.output(run, first1, 0)["samples"], stored[:, :, :1])
    v, a = streams(comfyui.output(run, av_last, 0)["samples"])
    shot = shared_store(pack).get("load_av")
    assert same_bits(v, shot.tensors["latent_tensor"][:, :, -7:])
    # the last 7 latents are H3's last 22 pixel frames of 39: audio from round(17 * 5/3) = 28
    assert same_bits(a, shot.tensors["latent_tensor_1"][..., 28:])
    v0, a0 = streams(comfyui.output(run, av_first, 0)["samples"])  # H3's first 2 latents: 5 pixel frames
    assert same_bits(v0, shot.tensors["latent_tensor"][:, :, :2])
    assert same_bits(a0, shot.tensors["latent_tensor_1"][..., :8])  # round(5 * 5/3) = 8 audio latents


def test_bad_requests_get_clear_errors_and_corrupt_newest_falls_back(comfyui, captures, pack):
    g = Graph()
    missing = load(g, "load_never_stored")
    with pytest.raises(ComfyRunError, match=r"no latent is stored under tag \"load_never_stored\".*run a "
                                            r"ZeroCopyLatentStore with tag 'load_never_stored'"):
        comfyui.run(g.prompt, targets=[missing])
    store = shared_store(pack)
    for i in range(2):
        store.put("load_errors", {"latent_tensor": torch.full((1, 16, 3, 2, 2), float(i))}, spill=True)
    store.flush()
    g = Graph()
    too_many = load(g, "load_errors", frames=4)
    with pytest.raises(ComfyRunError, match=r"frames 4 is more than the 3 latent frames"):
        comfyui.run(g.prompt, targets=[too_many])
    g = Graph()
    gone = load(g, "load_errors", shot="generation", generation=99)
    with pytest.raises(ComfyRunError, match=r"has no generation 99 in memory or on disk"):
        comfyui.run(g.prompt, targets=[gone])
    runtime = pack_module(pack, "zc_nodes.runtime")
    spill = Path(runtime.store().spill_dir)
    runtime.reset(spill)
    newest = spill / f"load_errors@{2:020d}.latent"
    data = newest.read_bytes()  # torn, but large enough to be read: a 64-byte stub is renamed
    newest.write_bytes(data[:len(data) - 16])  # aside when the store opens (test_spill_hostile)
    g = Graph()
    fallback = load(g, "load_errors")
    run = comfyui.run(g.prompt, targets=[fallback])
    assert comfyui.output(run, fallback, 0)["samples"].eq(0.0).all()  # generation 1, never the corrupt 2
    info = comfyui.output(run, fallback, 1)
    assert "generation 2 skipped:" in info and "used generation 1, the newest that verifies" in info
