"""ZeroCopyLatentStore and ZeroCopyLatentHandoff on real ComfyUI graphs (CPU,
tiny random-weight Wan 2.1 DiTs, fake text encoder and conditioning from the
test-only nodes, a VAE that raises whenever zero-copy mode would call it)."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from conftest import COMFYUI_PATH, ComfyRunError, Graph

REPO = Path(__file__).resolve().parents[2]
CANVAS = dict(width=64, height=64, length=9)  # latent [1,16,3,8,8]


@pytest.fixture(scope="session")
def pack(comfyui, zc_test_nodes, tmp_path_factory):
    """Our pack, loaded by ComfyUI's own loader, with its spill directory in tmp and
    every log record of the load kept for the no-warning check."""
    spill = tmp_path_factory.mktemp("zc_spill")
    os.environ["ZEROCOPY_SPILL_DIR"] = str(spill)
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record):
            records.append(record)

    handler = Keep(level=logging.DEBUG)
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        module = comfyui.load_custom_node(REPO)
    finally:
        root.removeHandler(handler)
    module.load_records = records
    module.spill_dir = spill
    # another test module may have loaded the pack first (its submodules stay imported): the
    # shared store must use this fixture's spill directory all the same
    sys.modules[module.__name__ + ".zc_nodes.runtime"].reset(spill)
    return module


def runtime_of(pack):
    return sys.modules[pack.__name__ + ".zc_nodes.runtime"]


def sampler(g, model, latent, positive, negative, seed=7):
    return g.add("KSampler", model=g.out(model), seed=seed, steps=2, cfg=1.0, sampler_name="euler",
                 scheduler="simple", positive=g.out(positive), negative=g.out(negative),
                 latent_image=latent, denoise=1.0)


def handoff(g, clip, vae, tag, *, model=None, continuity=None, mode="zero_copy_latent_only",
            ratio=0.0, fallback=None, **overrides):
    inputs = dict(clip=g.out(clip), vae=g.out(vae), prompt="the next shot", **CANVAS,
                  buffer_tag=tag, continuity_mode=mode, blend_ratio=ratio)
    inputs.update(overrides)
    if model is not None:
        inputs["model"] = g.out(model)
    if continuity is not None:
        inputs["continuity"] = g.out(continuity, 1)
    if fallback is not None:
        inputs["fallback_first_frame"] = g.out(fallback)
    return g.add("ZeroCopyLatentHandoff", **inputs)


def first_shot_graph(unet, tag, seed=7):
    g = Graph()
    model = g.add("UNETLoader", unet_name=unet, weight_dtype="default")
    pos = g.add("ZCTestConditioning", seed=1, tokens=8)
    neg = g.add("ZCTestConditioning", seed=2, tokens=8)
    empty = g.add("EmptyHunyuanLatentVideo", batch_size=1, **CANVAS)
    shot = sampler(g, model, g.out(empty), pos, neg, seed=seed)
    store = g.add("ZeroCopyLatentStore", samples=g.out(shot), buffer_tag=tag, model=g.out(model))
    g.add("ZCTestCaptureLatent", samples=g.out(store), label=f"{tag}:stored")
    return g, model, store


def next_shot_graph(unet, tag, seed, *, vae="ZCTestRaisingVAE"):
    """Handoff (from the store, no link) -> KSampler -> Store, all captured."""
    g = Graph()
    model = g.add("UNETLoader", unet_name=unet, weight_dtype="default")
    clip = g.add("ZCTestClip", tokens=8)
    vae_node = g.add(vae)
    hand = handoff(g, clip, vae_node, tag, model=model)
    shot = sampler(g, model, g.out(hand, 1), hand, hand, seed=seed)
    g.prompt[shot]["inputs"]["negative"] = g.out(hand, 2)
    g.add("ZCTestCaptureLatent", samples=g.out(hand, 1), label=f"{tag}:handoff")
    store = g.add("ZeroCopyLatentStore", samples=g.out(shot), buffer_tag=tag, model=g.out(model))
    g.add("ZCTestCaptureLatent", samples=g.out(store), label=f"{tag}:stored", always_run=True)
    return g, hand


def test_pack_loads_without_warnings_or_errors(pack):
    ours = [r for r in pack.load_records if r.levelno >= logging.WARNING]
    assert not ours, [r.getMessage() for r in ours]
    import nodes
    assert {"ZeroCopyLatentStore", "ZeroCopyLatentHandoff"} <= set(nodes.NODE_CLASS_MAPPINGS)


def test_three_shot_chain_in_one_graph_is_bit_identical(comfyui, captures, pack, tiny_wan21_t2v):
    tag = "one_graph"
    g, model, store1 = first_shot_graph(tiny_wan21_t2v.name, tag)
    clip = g.add("ZCTestClip", tokens=8)
    vae = g.add("ZCTestRaisingVAE")  # zero_copy_latent_only must never call it
    neg = g.add("ZCTestConditioning", seed=2, tokens=8)
    previous = store1
    for shot in (2, 3):
        hand = handoff(g, clip, vae, tag, model=model, continuity=previous)
        g.add("ZCTestCaptureLatent", samples=g.out(hand, 1), label=f"handoff{shot}")
        s = sampler(g, model, g.out(hand, 1), hand, neg, seed=100 + shot)
        previous = g.add("ZeroCopyLatentStore", samples=g.out(s), buffer_tag=tag, model=g.out(model))
        g.add("ZCTestCaptureLatent", samples=g.out(previous), label=f"shot{shot}")
    run = comfyui.run(g.prompt)
    shots = [captures.CAPTURED[f"{tag}:stored"]["samples"], captures.CAPTURED["shot2"]["samples"]]
    for index, shot in enumerate((2, 3)):
        handed = captures.CAPTURED[f"handoff{shot}"]
        assert torch.equal(handed["samples"][:, :, :1], shots[index][:, :, -1:])
        assert handed["noise_mask"].shape == (1, 1, 3, 8, 8)
        assert handed["noise_mask"][:, :, 0].eq(0).all() and handed["noise_mask"][:, :, 1:].eq(1).all()
    info = comfyui.output(run, [n for n, v in g.prompt.items()
                              if v["class_type"] == "ZeroCopyLatentHandoff"][0], 3)
    assert "bit-identical: yes" in info and "adapter temporal_inpaint" in info


def test_three_separate_queue_runs_continue_from_the_store(comfyui, captures, pack, tiny_wan21_t2v):
    tag = "queue_runs"
    g1, _, _ = first_shot_graph(tiny_wan21_t2v.name, tag)
    comfyui.run(g1.prompt)
    previous = captures.CAPTURED[f"{tag}:stored"]["samples"]
    for run_index, seed in enumerate((21, 22)):
        g, hand = next_shot_graph(tiny_wan21_t2v.name, tag, seed)
        run = comfyui.run(g.prompt)
        handed = captures.CAPTURED[f"{tag}:handoff"]["samples"]
        assert torch.equal(handed[:, :, :1], previous[:, :, -1:]), run_index
        info = comfyui.output(run, hand, 3)
        assert f"generation {run_index + 1}" in info and "bit-identical: yes" in info
        previous = captures.CAPTURED[f"{tag}:stored"]["samples"]


def test_a_repeated_canvas_gets_its_next_latent_filled_ahead_and_identical(comfyui, captures, pack,
                                                                           tiny_wan21_t2v):
    """A canvas large enough to be prepared (latent [1,16,5,64,64], 1.3 MB): the second Handoff
    takes the latent the first one had filled ahead, and it holds exactly what a fresh fill holds."""
    tag = "prepared_ahead"
    canvas = dict(width=512, height=512, length=17)
    g = Graph()
    model = g.add("UNETLoader", unet_name=tiny_wan21_t2v.name, weight_dtype="default")
    pos = g.add("ZCTestConditioning", seed=1, tokens=8)
    neg = g.add("ZCTestConditioning", seed=2, tokens=8)
    empty = g.add("EmptyHunyuanLatentVideo", batch_size=1, **canvas)
    shot = sampler(g, model, g.out(empty), pos, neg)
    g.add("ZeroCopyLatentStore", samples=g.out(shot), buffer_tag=tag, model=g.out(model))
    comfyui.run(g.prompt)
    prepared = sys.modules[pack.__name__ + ".zc_nodes.prepared_latents"].pool()
    handed, served = [], []
    for seed in (31, 32):
        g, hand = next_shot_graph(tiny_wan21_t2v.name, tag, seed)
        g.prompt[hand]["inputs"].update(canvas)
        served_before = prepared.served
        comfyui.run(g.prompt)
        prepared.wait()
        handed.append(captures.CAPTURED[f"{tag}:handoff"])
        served.append(prepared.served - served_before)
    assert served[1] >= 1  # the second hop's latent was ready
    first, second = handed
    assert first["samples"].shape == second["samples"].shape == (1, 16, 5, 64, 64)
    assert torch.equal(first["samples"][:, :, 1:], second["samples"][:, :, 1:])  # the same fill
    assert torch.equal(first["noise_mask"], second["noise_mask"])
    fill = first["samples"][0, :, 1:].flatten(1)
    assert torch.equal(fill, fill[:, :1].expand_as(fill))  # one value per channel
    assert not torch.equal(first["samples"][:, :, :1], second["samples"][:, :, :1])  # each its own tail


def test_handoff_cache_follows_the_store_generation(comfyui, captures, pack, tiny_wan21_t2v):
    tag = "cache_check"
    g1, _, _ = first_shot_graph(tiny_wan21_t2v.name, tag)
    comfyui.run(g1.prompt)
    g, hand = next_shot_graph(tiny_wan21_t2v.name, tag, seed=5)
    g.prompt = {k: v for k, v in g.prompt.items()
                if v["class_type"] not in ("ZeroCopyLatentStore",) and
                not (v["class_type"] == "ZCTestCaptureLatent" and v["inputs"]["label"].endswith("stored"))}
    first = comfyui.run(g.prompt)
    assert hand in first.executed
    again = comfyui.run(g.prompt)
    assert hand not in again.executed  # nothing new in the store: cached
    comfyui.run(first_shot_graph(tiny_wan21_t2v.name, tag, seed=99)[0].prompt)  # a new shot arrives
    after = comfyui.run(g.prompt)
    assert hand in after.executed
    assert "generation 2" in comfyui.output(after, hand, 3)


def test_wan_i2v_concat_keys_from_the_tail(comfyui, captures, pack, tiny_wan21_i2v):
    tag = "i2v"
    g = Graph()
    model = g.add("UNETLoader", unet_name=tiny_wan21_i2v.name, weight_dtype="default")
    neg = g.add("ZCTestConditioning", seed=2, tokens=8)
    # The previous shot, stored directly (its sampling is covered by the T2V tests).
    latent = torch.randn(1, 16, 3, 8, 8, generator=torch.Generator().manual_seed(4))
    store = runtime_of(pack).store()
    store.put(tag, {"latent_tensor": latent}, {"family": "wan21", "latent_format": "Wan21",
                                                 "channels": "16", "spatial_ratio": "8",
                                                 "temporal_ratio": "4"})
    clip = g.add("ZCTestClip", tokens=8)
    raising = g.add("ZCTestRaisingVAE")
    hand = handoff(g, clip, raising, tag, model=model, tail_frames=2)
    s = sampler(g, model, g.out(hand, 1), hand, neg, seed=3)
    g.prompt[s]["inputs"]["negative"] = g.out(hand, 2)
    g.add("ZCTestCaptureLatent", samples=g.out(s), label="i2v_out")
    run = comfyui.run(g.prompt)
    conditioning = comfyui.output(run, hand, 0)
    extra = conditioning[0][1]
    assert torch.equal(extra["concat_latent_image"][:, :, :2], latent[:, :, -2:])
    mask = extra["concat_mask"]
    assert mask.shape == (1, 1, 3, 8, 8) and mask[:, :, :2].eq(0).all() and mask[:, :, 2:].eq(1).all()
    negative = comfyui.output(run, hand, 2)
    assert torch.equal(negative[0][1]["concat_latent_image"], extra["concat_latent_image"])
    assert "noise_mask" not in comfyui.output(run, hand, 1)
    info = comfyui.output(run, hand, 3)
    assert "adapter wan_i2v" in info and "bit-identical: yes" in info
    assert captures.CAPTURED["i2v_out"]["samples"].shape == (1, 16, 3, 8, 8)


def test_canvas_change_resamples_like_common_upscale(comfyui, captures, pack, tiny_wan21_t2v):
    from comfy.utils import common_upscale  # a plain `import comfy.utils` would shadow the fixture
    tag = "canvas"
    comfyui.run(first_shot_graph(tiny_wan21_t2v.name, tag)[0].prompt)
    stored = captures.CAPTURED[f"{tag}:stored"]["samples"]
    g, hand = next_shot_graph(tiny_wan21_t2v.name, tag, seed=4)
    g.prompt[hand]["inputs"].update(width=96, height=64)
    run = comfyui.run(g.prompt, targets=[hand])
    handed = comfyui.output(run, hand, 1)["samples"]
    assert handed.shape == (1, 16, 3, 8, 12)
    expected = common_upscale(stored[:, :, -1:], 12, 8, "bicubic", "disabled")
    assert torch.equal(handed[:, :, :1], expected)
    info = comfyui.output(run, hand, 3)
    assert "bit-identical: no" in info and "resampled" in info


def test_blend_with_fallback_uses_a_real_wan_vae(comfyui, captures, pack, tiny_wan21_t2v, wan21_vae):
    tag = "blend"
    comfyui.run(first_shot_graph(tiny_wan21_t2v.name, tag)[0].prompt)
    stored = captures.CAPTURED[f"{tag}:stored"]["samples"]
    g = Graph()
    model = g.add("UNETLoader", unet_name=tiny_wan21_t2v.name, weight_dtype="default")
    clip = g.add("ZCTestClip", tokens=8)
    vae = g.add("VAELoader", vae_name=wan21_vae.name)
    image = g.add("ZCTestNoiseImage", seed=5, width=64, height=64, frames=1)
    hand = handoff(g, clip, vae, tag, model=model, mode="blend_with_fallback", ratio=0.25,
                   fallback=image)
    encode = g.add("VAEEncode", pixels=g.out(image), vae=g.out(vae))
    run = comfyui.run(g.prompt, targets=[hand, encode])
    handed = comfyui.output(run, hand, 1)["samples"]
    fallback = comfyui.output(run, encode, 0)["samples"]
    expected = torch.lerp(stored[:, :, -1:], fallback[:, :, :1], 0.25)
    assert torch.allclose(handed[:, :, :1], expected, atol=1e-6)
    info = comfyui.output(run, hand, 3)
    assert "bit-identical: no" in info and "blend" in info


def test_first_shot_uses_the_fallback_frame(comfyui, captures, pack, tiny_wan21_t2v, wan21_vae):
    g = Graph()
    clip = g.add("ZCTestClip", tokens=8)
    vae = g.add("VAELoader", vae_name=wan21_vae.name)
    image = g.add("ZCTestNoiseImage", seed=6, width=64, height=64, frames=1)
    hand = handoff(g, clip, vae, "never_stored", fallback=image)
    run = comfyui.run(g.prompt, targets=[hand])
    latent = comfyui.output(run, hand, 1)
    assert latent["samples"].shape == (1, 16, 3, 8, 8) and latent["noise_mask"][:, :, 0].eq(0).all()
    assert "holds no latent yet" in comfyui.output(run, hand, 3)


def test_clear_errors(comfyui, captures, pack, tiny_wan21_t2v):
    g = Graph()
    clip = g.add("ZCTestClip", tokens=8)
    vae = g.add("ZCTestRaisingVAE")
    hand = handoff(g, clip, vae, "nothing_here")
    with pytest.raises(ComfyRunError, match="nothing_here.*fallback_first_frame"):
        comfyui.run(g.prompt, targets=[hand])

    store = runtime_of(pack).store()
    store.put("wide", {"latent_tensor": torch.zeros(1, 48, 3, 4, 4)}, {"family": "unknown"})
    g = Graph()
    model = g.add("UNETLoader", unet_name=tiny_wan21_t2v.name, weight_dtype="default")
    clip = g.add("ZCTestClip", tokens=8)
    vae = g.add("ZCTestRaisingVAE")
    hand = handoff(g, clip, vae, "wide", model=model)
    with pytest.raises(ComfyRunError, match="channel mismatch.*48.*16"):
        comfyui.run(g.prompt, targets=[hand])

    store.put("wan", {"latent_tensor": torch.zeros(1, 16, 3, 8, 8)}, {"family": "wan21"})
    g = Graph()
    clip = g.add("ZCTestClip", tokens=8)
    vae = g.add("ZCTestRaisingVAE")
    hand = handoff(g, clip, vae, "wan", length=10)
    with pytest.raises(ComfyRunError, match="length 10.*use 9 or 13"):
        comfyui.run(g.prompt, targets=[hand])

    g = Graph()
    clip = g.add("ZCTestClip", tokens=8)
    vae = g.add("ZCTestRaisingVAE")
    hand = handoff(g, clip, vae, "bad/tag")
    with pytest.raises(ComfyRunError, match=r"bad/tag\" has .*/.* at character 4; "):
        comfyui.run(g.prompt, targets=[hand])


def test_store_never_keeps_noise_mask(comfyui, captures, pack, tiny_wan21_t2v):
    tag = "masked"
    g = Graph()
    empty = g.add("EmptyHunyuanLatentVideo", batch_size=1, **CANVAS)
    mask = g.add("ZCTestFrameMask", frames=3, height=8, width=8, keep_first=1)
    masked = g.add("SetLatentNoiseMask", samples=g.out(empty), mask=g.out(mask))
    store = g.add("ZeroCopyLatentStore", samples=g.out(masked), buffer_tag=tag)
    g.add("ZCTestCaptureLatent", samples=g.out(store), label="passthrough", always_run=True)
    comfyui.run(g.prompt)
    assert "noise_mask" in captures.CAPTURED["passthrough"]  # passed through untouched
    shot = runtime_of(pack).store().get(tag)
    assert list(shot.tensors) == ["latent_tensor"]
    assert "noise_mask" in shot.meta["keys_not_kept"].split(",")


RESTART_SCRIPT = r"""
import asyncio, json, os, sys
sys.path.insert(0, os.environ["COMFYUI_PATH"])
from comfy.cli_args import args
args.cpu = True
import nodes
asyncio.run(nodes.init_extra_nodes(init_custom_nodes=False, init_api_nodes=False))
assert asyncio.run(nodes.load_custom_node(sys.argv[1]))
handoff = nodes.NODE_CLASS_MAPPINGS["ZeroCopyLatentHandoff"]
class Clip:
    def tokenize(self, text, **kw): return text
    def encode_from_tokens_scheduled(self, tokens, **kw): return [[None, {}]]
out = handoff.execute(Clip(), None, "after restart", 64, 64, 9, buffer_tag=sys.argv[2])
import torch
from safetensors.torch import save_file
latent = out.args[1] if hasattr(out, "args") else out[1]
save_file({"samples": latent["samples"].contiguous()}, sys.argv[3])
print(json.dumps({"info": out.args[3] if hasattr(out, "args") else out[3]}))
"""


def test_restart_continues_from_the_spilled_tail(comfyui, captures, pack, tiny_wan21_t2v, tmp_path):
    tag = "restart"
    comfyui.run(first_shot_graph(tiny_wan21_t2v.name, tag)[0].prompt)
    stored = captures.CAPTURED[f"{tag}:stored"]["samples"]
    runtime_of(pack).store().flush()
    out = tmp_path / "restarted.safetensors"
    env = dict(os.environ, COMFYUI_PATH=COMFYUI_PATH, ZEROCOPY_SPILL_DIR=str(pack.spill_dir))
    proc = subprocess.run([sys.executable, "-c", RESTART_SCRIPT, str(REPO), tag, str(out)],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    info = json.loads(proc.stdout.strip().splitlines()[-1])["info"]
    assert "bit-identical: yes" in info
    from safetensors.torch import load_file
    handed = load_file(str(out))["samples"]
    assert torch.equal(handed[:, :, :1], stored[:, :, -1:])


NO_ENGINE_SCRIPT = r"""
import asyncio, logging, os, sys
logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(message)s")
sys.path.insert(0, os.environ["COMFYUI_PATH"])
from comfy.cli_args import args
args.cpu = True
import nodes
asyncio.run(nodes.init_extra_nodes(init_custom_nodes=False, init_api_nodes=False))
print("LOADED", asyncio.run(nodes.load_custom_node(sys.argv[1])))
print("NODES", sorted(k for k in nodes.NODE_CLASS_MAPPINGS if k.startswith("ZeroCopy")))
"""


def test_pack_without_the_engine_still_loads_and_says_how_to_build_it(comfyui, tmp_path):
    env = dict(os.environ, COMFYUI_PATH=COMFYUI_PATH, ZC_LIBRARY=str(tmp_path / "missing" / "libzc.so"))
    proc = subprocess.run([sys.executable, "-c", NO_ENGINE_SCRIPT, str(REPO)], capture_output=True,
                          text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "LOADED True" in proc.stdout
    assert "NODES ['ZeroCopyVRAMPin']" in proc.stdout  # the residency lock needs no engine
    ours = [line for line in proc.stderr.splitlines() if "[ZeroCopy-Continuity]" in line]
    assert len(ours) == 1 and "does not exist" in ours[0], ours
    # one line: the missing nodes, the platform, the fix that works here (a compiler is on the PATH)
    assert "5 of 6 nodes are not loaded" in ours[0] and "ZeroCopyFilmAssemble" in ours[0], ours
    assert "unset ZC_LIBRARY" in ours[0] and "install.py --build" in ours[0], ours


def test_store_handoff_and_prompt_end_describe_their_tag_never_the_whole_store(comfyui, captures, pack,
                                                                               tiny_wan21_t2v, monkeypatch):
    """Every Store and Handoff used to describe the whole store to describe one tag (its UI
    event), and the prompt end did it again, so their cost grew with the tags held. Here, with a
    server present (the events are sent) and other tags held, a Store, a Handoff whose tag is
    linked (its fingerprint cannot name the tag) and the prompt end's durability step call the
    one-tag description and the change count, never the whole-store describe."""
    import types

    runtime = runtime_of(pack)
    durability = sys.modules[pack.__name__ + ".zc_nodes.durability"]
    store = runtime.store()
    for index in range(40):
        store.put(f"held_{index}", {"latent_tensor": torch.zeros(1, 4, 8, 8)}, {"family": "sd1"}, spill=True)
    sent = []
    server = types.ModuleType("server")
    server.PromptServer = type("PromptServer", (), {"instance": type("S", (), {
        "send_sync": lambda self, event, data, sid=None: sent.append((event, data))})()})
    monkeypatch.setitem(sys.modules, "server", server)
    calls = {"describe": 0, "describe_tag": 0, "changes": 0}

    def counted(name):
        original = getattr(store, name)

        def call(*args, **kwargs):
            calls[name] += 1
            return original(*args, **kwargs)
        return call

    for name in calls:
        monkeypatch.setattr(store, name, counted(name))
    tag = "one_tag_cost"
    comfyui.run(first_shot_graph(tiny_wan21_t2v.name, tag)[0].prompt)
    durability.make_durable()
    g, hand = next_shot_graph(tiny_wan21_t2v.name, tag, seed=5)
    named = g.add("PrimitiveString", value=tag)
    g.prompt[hand]["inputs"]["buffer_tag"] = g.out(named)  # linked: the fingerprint uses the change count
    comfyui.run(g.prompt)
    durability.make_durable()
    assert calls["describe"] == 0, calls
    assert calls["describe_tag"] >= 2 and calls["changes"] >= 1, calls
    stores = [data for event, data in sent if event == "zerocopy.store" and data["tag"] == tag]
    handoffs = [data for event, data in sent if event == "zerocopy.handoff" and data.get("tag") == tag]
    assert len(stores) == 2 and all(d["shape"] == [1, 16, 3, 8, 8] and d["digest"] for d in stores), stores
    assert handoffs and handoffs[0]["shape"] == [1, 16, 3, 8, 8], handoffs
