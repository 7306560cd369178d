"""A whole film in one prompt with a native loop (ComfyUI v0.36+), run on trees without loops
through the exact prompt the loop's expansion produces (loop_emulation.expand_loop) and the
stand-ins for the loop's internal nodes (zc_loop_test_nodes).

The wiring (docs/compatibility.md, "Loops"): StartLoop(List: one prompt per shot) ->
list_item -> Handoff.prompt, current_iteration_value -> Handoff.continuity; Handoff -> KSampler
(seed <- iteration_index) -> Store; Store.continuity -> EndLoop.next_iteration_value and
EndLoop.output_value (accumulate off: the loop carries tokens, never frames). The loader, text
encoder and VAE sit outside the loop and run once. After the loop, ZeroCopyFilmRender (continuity
<- EndLoop's output: the last shot's token) renders the film from the store to an H.264 file, one
shot in memory at a time (the shipped example's wiring)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import Graph
from loop_emulation import expand_loop, loop_body
from test_families_support import pack, pack_module, shared_store  # noqa: F401

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
ZC = Path(os.environ.get("ZC_TOOL") or REPO / "build" / "zc")  # the zc tool (make build/zc)
WAN = dict(width=64, height=64, length=9)
PROMPTS = [f"shot {i + 1}: the lighthouse, hour {i + 1}" for i in range(6)]


@pytest.fixture(scope="module")
def loop_nodes(comfyui, zc_test_nodes):
    import nodes

    if "ZCTestLoopIteration" not in nodes.NODE_CLASS_MAPPINGS:
        comfyui.load_custom_node(HERE / "zc_loop_test_nodes")


def loop_film(unet, vae_name, tag, *, cache_iterations=False):
    """The user's prompt (StartLoop/EndLoop) and the ids of its nodes."""
    g = Graph()
    ids = {"model": g.add("UNETLoader", unet_name=unet, weight_dtype="default"),
           "clip": g.add("ZCTestClip", tokens=8), "vae": g.add("VAELoader", vae_name=vae_name),
           "image": g.add("ZCTestNoiseImage", seed=3, width=64, height=64, frames=1)}
    ids["start"] = g.add("StartLoop", mode={"mode": "List", "list": PROMPTS}, cache_iterations=cache_iterations)
    ids["hand"] = g.add("ZeroCopyLatentHandoff", clip=g.out(ids["clip"]), vae=g.out(ids["vae"]),
                        prompt=g.out(ids["start"], 3), **WAN, fallback_first_frame=g.out(ids["image"]),
                        buffer_tag=tag, continuity_mode="zero_copy_latent_only", blend_ratio=0.0,
                        model=g.out(ids["model"]), continuity=g.out(ids["start"], 4))
    ids["sampler"] = g.add("KSampler", model=g.out(ids["model"]), seed=g.out(ids["start"], 0), steps=2, cfg=1.0,
                           sampler_name="euler", scheduler="simple", positive=g.out(ids["hand"], 0),
                           negative=g.out(ids["hand"], 2), latent_image=g.out(ids["hand"], 1), denoise=1.0)
    ids["store"] = g.add("ZeroCopyLatentStore", samples=g.out(ids["sampler"]), buffer_tag=tag,
                         model=g.out(ids["model"]))
    ids["end"] = g.add("EndLoop", output_value=g.out(ids["store"], 1), next_iteration_value=g.out(ids["store"], 1),
                       accumulate=False)
    ids["render"] = g.add("ZeroCopyFilmRender", buffer_tag=tag, vae=g.out(ids["vae"]), format="h264-mp4",
                          frame_rate=16.0, quality=19, folder="zerocopy", crossfade_frames=0, first_shot=1,
                          last_shot=0, seam_trim=-1, timeline=True, continuity=g.out(ids["end"], 0))
    return g.prompt, ids


def expanded(prompt, ids, *, cache_iterations):
    return expand_loop(prompt, ids["start"], ids["end"], list_items=PROMPTS, cache_iterations=cache_iterations)


def test_the_expansion_matches_core_ids_links_and_fingerprints(tiny_wan21_t2v):
    prompt, ids = loop_film("m.safetensors", "v.safetensors", "t")
    assert loop_body(prompt, ids["start"], ids["end"]) == {ids["hand"], ids["sampler"], ids["store"]}
    out = expanded(prompt, ids, cache_iterations=False)
    prefix = f"{ids['start']}.0.0."
    for p in range(6):
        hand, store = out[f"{prefix}{p}_{ids['hand']}"], out[f"{prefix}{p}_{ids['store']}"]
        iteration = out[f"{prefix}iteration_{p}"]["inputs"]
        assert hand["inputs"]["continuity"] == [f"{prefix}iteration_{p}", 4]
        assert hand["inputs"]["prompt"] == [f"{prefix}iteration_{p}", 3] and iteration["list_item"] == PROMPTS[p]
        assert hand["inputs"]["clip"] == [ids["clip"], 0]  # outside the loop: one node for all
        assert store["inputs"]["samples"] == [f"{prefix}{p}_{ids['sampler']}", 0]
        carried = iteration.get("current_iteration_value")
        assert carried == (None if p == 0 else [f"{prefix}{p - 1}_{ids['store']}", 1])
        assert iteration["reuse_cache"] is False and iteration["is_first"] is False  # is_first unused
    assert ids["start"] not in out and ids["end"] not in out and ids["hand"] not in out
    assert out[f"{prefix}result"]["inputs"]["dependency0"] == [f"{prefix}5_{ids['store']}", 1]
    assert out[f"{prefix}result"]["inputs"]["output0"] == [f"{prefix}5_{ids['store']}", 1]  # the last token only
    assert not [k for k in out[f"{prefix}result"]["inputs"] if k.startswith("output") and k != "output0"]
    # after the loop, once: the render of the last iteration's stored shot (End Loop's output)
    assert out[ids["render"]]["inputs"]["continuity"] == [f"{prefix}5_{ids['store']}", 1]
    assert not [k for k in out if k.endswith(f"_{ids['render']}")]
    sys.path.insert(0, str(HERE))
    import zc_loop_test_nodes as stand_ins
    assert math.isnan(stand_ins.ZCTestLoopIteration.fingerprint_inputs(reuse_cache=False))
    assert stand_ins.ZCTestLoopIteration.fingerprint_inputs(reuse_cache=True) is None


def film_doc(comfyui, pack, tag):
    film_view = pack_module(pack, "zc_nodes.film_view")
    return film_view.describe(tag, verify=True)


@pytest.mark.parametrize("cache_iterations", [False, True], ids=["every_iteration_runs", "cache_iterations"])
def test_a_six_shot_film_in_one_prompt(comfyui, captures, pack, loop_nodes, tiny_wan21_t2v, wan21_vae,  # noqa: F811
                                       cache_iterations):
    from zc_pack.zc_engine import digest_tensor

    tag = f"loop_film_{int(cache_iterations)}"
    store = shared_store(pack)
    prompt, ids = loop_film(tiny_wan21_t2v.name, wan21_vae.name, tag, cache_iterations=cache_iterations)
    run_prompt = expanded(prompt, ids, cache_iterations=cache_iterations)
    store.set_depth(tag, 16)  # keep every shot readable here (the default ring keeps 4)
    run = comfyui.run(run_prompt)
    prefix = f"{ids['start']}.0.0."
    entry = store.describe_tag(tag)
    assert entry["last_generation"] == 7, entry  # the encoded start image (1) + 6 shots, none twice
    start = store.get(tag, 1)
    assert start.meta["kind"] == "start_image"
    previous = start
    trims = []
    for p in range(6):
        shot = store.get(tag, p + 2)
        hop = json.loads(shot.meta["lineage"])
        assert (hop["parent_tag"], hop["parent_generation"], hop["prompt"]) == (tag, p + 1, PROMPTS[p])
        # KSampler.seed <- iteration_index: a linked seed is not in the prompt's constants, so the
        # lineage has none (prompt_graph.sampler_seed reads constants only)
        assert hop.get("seed") in (None, p)
        tail = previous.tensors["latent_tensor"][:, :, -1:]
        assert hop["tail_digest"] == digest_tensor(tail) == hop["used_digest"]  # bit-identical hop
        trims.append(int(hop.get("trim") or 0))
        info = comfyui.output(run, f"{prefix}{p}_{ids['hand']}", 3)
        if p:  # the Handoff of iteration p used iteration p-1's shot, not its own (stored after it)
            assert "bit-identical: yes" in info and f"generation {p + 1}" in info, info
        previous = shot
    # the render after the loop: the six shots, each decoded once (9 frames: 3 latent frames), the
    # first keeping every frame, each later one losing the frames its lineage says repeat the shot before
    film = Path(comfyui.output_dir) / "zerocopy" / f"{tag}.mp4"
    assert film_frames(film) == 6 * WAN["length"] - sum(trims[1:]), comfyui.output(run, ids["render"], 1)
    info = comfyui.output(run, ids["render"], 1)
    assert info.startswith(f"ZeroCopy film {tag!r}: 6 shots, {film_frames(film)} frames"), info
    assert "6 shot(s) decoded, 0 reused" in info, info
    assert (film.parent / f"{tag}.otio").is_file() and len(list((film.parent / f"{tag}_clips").iterdir())) == 6
    assert run.ui[ids["render"]]["images"][0]["filename"] == film.name  # the node shows the film
    store.flush()  # every spill file written: `zc film` reads the folder as a restart would
    done = zc_film(store.spill_dir, tag)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "7 shots on the line, all hops verified" in done.stdout, done.stdout  # start image + 6 shots
    # queued again: with cache_iterations the first Handoff still sees a new newest shot, so the
    # whole loop runs again and continues the film (6 more shots, none skipped, none twice)
    run = comfyui.run(run_prompt)
    assert store.describe_tag(tag)["last_generation"] == 13
    again = json.loads(store.get(tag, 8).meta["lineage"])
    assert again["parent_generation"] == 7
    # the render after it: the whole 12-shot film, the first six shots taken from the render cache
    info = comfyui.output(run, ids["render"], 1)
    assert info.startswith(f"ZeroCopy film {tag!r}: 12 shots, {film_frames(film)} frames"), info
    assert "6 shot(s) decoded, 6 reused" in info, info
    trims += [int(json.loads(store.get(tag, g).meta["lineage"]).get("trim") or 0) for g in range(8, 14)]
    assert film_frames(film) == 12 * WAN["length"] - sum(trims[1:]), info
    spill = store.spill_dir
    pack_module(pack, "zc_nodes.runtime").reset()  # a restart: spills flushed
    done = zc_film(spill, tag)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "13 shots on the line, all hops verified" in done.stdout, done.stdout


def film_frames(path: Path) -> int:
    """The frames of a video file, decoded (PyAV)."""
    av = pytest.importorskip("av")
    assert path.is_file(), f"no film at {path}"
    with av.open(str(path)) as container:
        return sum(1 for _ in container.decode(video=0))


def zc_film(spill, tag):
    if not ZC.exists():
        pytest.skip(f"no zc tool at {ZC} (make build/zc)")
    return subprocess.run([str(ZC), "film", str(spill), tag], capture_output=True, text=True, timeout=60)
