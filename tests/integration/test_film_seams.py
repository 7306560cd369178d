"""The seam of every hop, measured by the Store in real ComfyUI (CPU): shots made by
ZCTestSeededLatent (seeded randn frames, a controlled per-channel shift) are chained through
Store -> Handoff -> Store, the Handoff's LATENT (its lineage marker) carried to the Store by core's
LatentMultiply (x0) and LatentAdd (+ the seeded shot). A shot with the same statistics as its parent
gets a green seam, one with a deliberate colour drift a red one; the Handoff that continues a shot
names the seam of the hop that made it; `zc film --seams-fail-above` fails on the drift."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from conftest import Graph
from test_families_support import pack, pack_module, shared_store  # noqa: F401

REPO = Path(__file__).resolve().parents[2]
ZC = Path(os.environ.get("ZC_BIN", REPO / "build" / "zc"))
SHOT = {"channels": 16, "frames": 5, "height": 8, "width": 8, "scale": 1.0}  # Wan 2.1 latents of 17 frames at 64x64


def seeded(g, seed, shift):
    return g.add("ZCTestSeededLatent", seed=seed, shift=shift, **SHOT)


def first_shot(tag, seed):
    g = Graph()
    store = g.add("ZeroCopyLatentStore", samples=g.out(seeded(g, seed, 0.0)), buffer_tag=tag)
    return g, store


def next_shot(vae_name, tag, seed, shift):
    """Handoff (continues the newest shot) -> its LATENT zeroed -> + a seeded shot -> Store."""
    g = Graph()
    clip = g.add("ZCTestClip", tokens=8)
    vae = g.add("VAELoader", vae_name=vae_name)
    hand = g.add("ZeroCopyLatentHandoff", clip=g.out(clip), vae=g.out(vae), prompt=f"seed {seed}", width=64,
                 height=64, length=17, buffer_tag=tag, continuity_mode="zero_copy_latent_only", blend_ratio=0.0)
    zero = g.add("LatentMultiply", samples=g.out(hand, 1), multiplier=0.0)
    shot = g.add("LatentAdd", samples1=g.out(zero), samples2=g.out(seeded(g, seed, shift)))
    store = g.add("ZeroCopyLatentStore", samples=g.out(shot), buffer_tag=tag)
    return g, hand, store


def test_a_drifted_hop_is_red_and_a_smooth_one_green(comfyui, captures, pack, wan21_vae):
    tag = "film_seams"
    store = shared_store(pack)
    comfyui.run(first_shot(tag, 1)[0].prompt)  # generation 1: a root, no seam
    assert store.hop_seam(tag, 1) is None  # a root has no hop
    comfyui.run(next_shot(wan21_vae.name, tag, 2, 0.0)[0].prompt)  # generation 2: same statistics
    g, hand, _ = next_shot(wan21_vae.name, tag, 3, 0.5)  # generation 3: every channel shifted
    run = comfyui.run(g.prompt)
    lineage = json.loads(store.get(tag, 2).meta["lineage"])
    assert lineage["version"] == 2 and lineage["trim"] == 1 and "seam" not in lineage, lineage
    smooth = {"seam": store.hop_seam(tag, 2)}  # the engine's record, measured after the put
    drifted = {"seam": store.hop_seam(tag, 3)}
    assert smooth["seam"]["skip"] == 1, smooth
    assert smooth["seam"]["score"] < 2 and 0.5 < smooth["seam"]["rms_step"] < 2, smooth["seam"]
    assert drifted["seam"]["score"] >= 4 and drifted["seam"]["mean_step"] >= 4, drifted["seam"]
    # the Handoff of shot 3 continued shot 2: its certificate names the hop that made shot 2
    info = comfyui.output(run, hand, 3)
    assert f"seam of the hop that made generation 2: score {smooth['seam']['score']:.3g} (green)" in info, info
    assert "latent statistics, not a perceptual score" in info

    film_view = pack_module(pack, "zc_nodes.film_view")
    doc = film_view.describe(tag)
    shots = {s["generation"]: s for s in doc["shots"]}
    assert shots[1]["seam"] is None and shots[2]["seam"]["verdict"] == "green"
    assert shots[3]["seam"]["verdict"] == "red" and doc["worst_seam"]["generation"] == 3, doc
    if not ZC.is_file():
        pytest.skip(f"zc binary not found at {ZC} (the film's seams were checked through the engine)")
    spill = store.spill_dir
    done = subprocess.run([str(ZC), "film", "--seams-fail-above", "4", str(spill), tag], capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 1 and "seams FAILED: the worst seam, hop 3 (shot 3)" in done.stderr, done
    assert "seam hop 2 <- 1 (shot 2): score" in done.stdout and "worst seam: hop 3 <- 2 (shot 3)" in done.stdout
    done = subprocess.run([str(ZC), "film", "--seams-fail-above", "1000", str(spill), tag], capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 0, done


def continued(g, latent, seed):
    return g.add("ZCTestContinueLatent", samples=latent, seed=seed, step=0.1)


def hop(vae_name, tag, seed, *, blend=False):
    """Handoff (zero-copy, or blend_with_fallback at ratio 0.5 with a noise image) -> a seeded
    continuation of the frame it placed -> Store."""
    g = Graph()
    clip = g.add("ZCTestClip", tokens=8)
    vae = g.add("VAELoader", vae_name=vae_name)
    extra = {"continuity_mode": "zero_copy_latent_only", "blend_ratio": 0.0}
    if blend:
        image = g.add("ZCTestNoiseImage", seed=9, width=64, height=64, frames=1)
        extra = {"continuity_mode": "blend_with_fallback", "blend_ratio": 0.5, "fallback_first_frame": g.out(image)}
    hand = g.add("ZeroCopyLatentHandoff", clip=g.out(clip), vae=g.out(vae), prompt=f"seed {seed}", width=64,
                 height=64, length=17, buffer_tag=tag, **extra)
    g.add("ZeroCopyLatentStore", samples=g.out(continued(g, g.out(hand, 1), seed)), buffer_tag=tag)
    return g


def test_a_blended_third_hop_is_flagged_and_the_film_has_its_drift(comfyui, captures, pack, wan21_vae):
    """A 4-shot film, each shot a smooth continuation of the frame its Handoff placed: the first two
    hops hand the tail over unchanged (green), the third blends it half-way with a fallback image
    (blend_with_fallback), so the continuation starts elsewhere: its seam is flagged (amber or red,
    the documented thresholds) and the others are not; the film JSON has the drift of 4 shots."""
    tag = "film_blend_seams"
    store = shared_store(pack)
    g = Graph()
    g.add("ZeroCopyLatentStore", samples=g.out(continued(g, g.out(seeded(g, 11, 0.0)), 11)), buffer_tag=tag)
    comfyui.run(g.prompt)  # generation 1: a root
    for seed, blend in ((12, False), (13, False), (14, True)):
        comfyui.run(hop(wan21_vae.name, tag, seed, blend=blend).prompt)
    film_view = pack_module(pack, "zc_nodes.film_view")
    seam_module = pack_module(pack, "zc_continuity.seam_plan")
    doc = film_view.describe(tag)
    assert doc["line"] == [1, 2, 3, 4], doc["line"]
    shots = {s["generation"]: s for s in doc["shots"]}
    assert shots[1]["seam"] is None
    for generation in (2, 3):
        assert shots[generation]["seam"]["verdict"] == "green", shots[generation]["seam"]
    blended = shots[4]["seam"]
    assert blended["verdict"] in ("amber", "red") and blended["score"] >= seam_module.GREEN_BELOW, blended
    assert doc["worst_seam"]["generation"] == 4
    assert store.hop_seam(tag, 4)["score"] == pytest.approx(blended["score"], rel=1e-3)
    drift = doc["drift"]
    assert drift is not None and drift["stream"] == "video" and drift["channels"] == 16, drift
    assert [s["generation"] for s in drift["shots"]] == [1, 2, 3, 4] and drift["reference_generation"] == 1
    assert drift["shots"][0]["mean_delta"] == [0.0] * 16 and drift["shots"][0]["std_ratio"] == [1.0] * 16
