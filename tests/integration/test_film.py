"""A film, not just shots, on real ComfyUI (CPU): lineage recorded through real samplers, the
encoded start image kept as the film's root; takes, a chosen line, stale shots, `zc film` after a
restart, a tampered hop, and the film assembled by ZeroCopyFilmAssemble."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import torch

from conftest import ComfyRunError, Graph
from test_families_support import ksampler, pack, pack_module, shared_store  # noqa: F401

REPO = Path(__file__).resolve().parents[2]
ZC = REPO / "build" / "zc"

WAN = dict(width=64, height=64, length=9)


def shot_graph(unet_name, vae_name, tag, seed, fallback=False, generation=0):
    """Handoff (no model; the VAE tells the family) -> KSampler -> Store; ``generation`` > 0
    continues from that stored shot (a take) instead of the newest."""
    g = Graph()
    model = g.add("UNETLoader", unet_name=unet_name, weight_dtype="default")
    clip = g.add("ZCTestClip", tokens=8)
    vae = g.add("VAELoader", vae_name=vae_name)
    extra = {}
    if fallback:
        image = g.add("ZCTestNoiseImage", seed=3, width=64, height=64, frames=1)
        extra["fallback_first_frame"] = g.out(image)
    if generation:
        extra["generation"] = generation
    hand = g.add("ZeroCopyLatentHandoff", clip=g.out(clip), vae=g.out(vae), prompt=f"shot with seed {seed}",
                 **WAN, buffer_tag=tag, continuity_mode="zero_copy_latent_only", blend_ratio=0.0, **extra)
    sampled = ksampler(g, model, g.out(hand, 1), g.out(hand, 0), g.out(hand, 2), seed=seed)
    store = g.add("ZeroCopyLatentStore", samples=g.out(sampled), buffer_tag=tag)
    return g, hand, store


def test_lineage_is_recorded_through_real_samplers(comfyui, captures, pack, tiny_wan21_t2v, wan21_vae):
    from zc_pack.zc_engine import digest_tensor

    tag = "film_lineage"
    store = shared_store(pack)
    g, hand, _ = shot_graph(tiny_wan21_t2v.name, wan21_vae.name, tag, 51, fallback=True)
    run = comfyui.run(g.prompt)
    start = store.get(tag, 1)
    assert start.meta["kind"] == "start_image" and start.tensors["latent_tensor"].shape == (1, 16, 1, 8, 8)
    assert "generation 1 (its anchor" in comfyui.output(run, hand, 3)
    shot1 = store.get(tag)
    first = json.loads(shot1.meta["lineage"])
    assert shot1.generation == 2 and first["parent_generation"] == 1 and first["seed"] == 51
    assert first["tail_digest"] == digest_tensor(start.tensors["latent_tensor"])
    assert first["prompt"] == "shot with seed 51"
    g, hand, _ = shot_graph(tiny_wan21_t2v.name, wan21_vae.name, tag, 52)
    comfyui.run(g.prompt)
    shot2 = store.get(tag)
    hop = json.loads(shot2.meta["lineage"])
    assert (hop["parent_tag"], hop["parent_generation"], hop["seed"]) == (tag, 2, 52)
    assert hop["tail_digest"] == digest_tensor(shot1.tensors["latent_tensor"][:, :, -1:]) == hop["used_digest"]
    assert hop["adapter"] == "temporal_inpaint" and hop["trim"] == 1 and hop["tail_frames"] == 1
    assert "keys_not_kept" not in shot2.meta or "zerocopy_lineage" not in shot2.meta["keys_not_kept"]
    assert not torch.equal(shot2.tensors["latent_tensor"], shot1.tensors["latent_tensor"])


def zc_film(spill_dir, tag, *extra):
    done = subprocess.run([str(ZC), "film", str(spill_dir), tag, *extra], capture_output=True, text=True,
                          timeout=60)
    return done.returncode, done.stdout + done.stderr


def rewrite_tail(path: Path, *, scale: float):
    """Rewrite a spill file with a different last latent frame and its own digest made consistent,
    its record digest dropped (what a tool that edits a shot and re-digests its tensors would
    leave): the file verifies ("record not covered"), the hop of the shot that continued from it
    must not."""
    from safetensors import safe_open
    from safetensors.torch import save_file
    from zc_pack.zc_engine import digest_tensor

    with safe_open(str(path), "pt") as f:
        meta = dict(f.metadata())
        tensors = {k: f.get_tensor(k) for k in f.keys()}
    latent = tensors["latent_tensor"].clone()
    latent[:, :, -1:] = latent[:, :, -1:] * scale + 0.25
    tensors["latent_tensor"] = latent
    meta["zc.digest.latent_tensor"] = digest_tensor(latent)
    meta.pop("zc.record", None)
    save_file(tensors, str(path), metadata=meta)


def vae_links(g, vae_name=None, audio=False):
    """(the vae link, {"audio_vae": link} or {}) for a finishing node in ``g``: a VAE file by name,
    else the fake decoding VAEs (with their LTX-2 audio one when ``audio`` is True, or the audio VAE
    of the node class ``audio`` names)."""
    if vae_name:
        return g.out(g.add("VAELoader", vae_name=vae_name)), {}
    fakes = g.add("ZCTestDecodingVAEs")
    if not audio:
        return g.out(fakes, 0), {}
    return g.out(fakes, 0), {"audio_vae": g.out(fakes, 1) if audio is True else g.out(g.add(audio), 0)}


def change_header(path: Path, old: bytes, new: bytes):
    """One byte of a spill file's header changed in place (same length, same file size)."""
    data = bytearray(path.read_bytes())
    length = int.from_bytes(data[:8], "little")
    at = bytes(data[8:8 + length]).index(old)
    data[8 + at:8 + at + len(old)] = new
    path.write_bytes(bytes(data))


def assemble(comfyui, tag, *, vae_name=None, audio=False, **settings):
    """ZeroCopyFilmAssemble run on the film (a VAE file by name, else the fake decoding VAEs, with
    the audio one when ``audio``); its three outputs (images, audio, info)."""
    g = Graph()
    vae, extra = vae_links(g, vae_name, audio)
    inputs = {"crossfade_frames": 0, "first_shot": 1, "last_shot": 0, "seam_trim": -1, **settings}
    node = g.add("ZeroCopyFilmAssemble", buffer_tag=tag, vae=vae, **extra, **inputs)
    run = comfyui.run(g.prompt, targets=[node])
    return tuple(comfyui.output(run, node, i) for i in range(3))


def test_takes_choices_stale_shots_restart_tamper_and_assembly(comfyui, captures, pack, tiny_wan21_t2v, wan21_vae):
    """The issue's proof: a 4-shot film with two takes of shot 2, shot 3 from the second take;
    choosing the first take turns shots 3-4 stale; after a restart `zc film` verifies the chosen
    line from the spill files alone; a parent rewritten with another tail breaks its hop and
    `zc film` names it, and ZeroCopyFilmAssemble notes it; a shot whose lineage is rewritten in
    place (its parent_generation, one byte) fails its record digest: `zc film` names the shot and
    the field and ZeroCopyFilmAssemble refuses the film instead of joining another one; the
    assembled film has sum(frames) - trims frames."""
    tag = "film_takes"
    store = shared_store(pack)
    film_view = pack_module(pack, "zc_nodes.film_view")
    unet, vae = tiny_wan21_t2v.name, wan21_vae.name
    comfyui.run(shot_graph(unet, vae, tag, 61, fallback=True)[0].prompt)  # gen 1 start image, gen 2 shot 1
    comfyui.run(shot_graph(unet, vae, tag, 62, generation=2)[0].prompt)  # gen 3: shot 2, take 1
    comfyui.run(shot_graph(unet, vae, tag, 63, generation=2)[0].prompt)  # gen 4: shot 2, take 2
    comfyui.run(shot_graph(unet, vae, tag, 64, generation=4)[0].prompt)  # gen 5: shot 3 from take 2
    g, hand, _ = shot_graph(unet, vae, tag, 65)  # gen 6: shot 4 (newest)
    comfyui.run(g.prompt)
    doc = film_view.describe(tag, verify=True)
    shots = {s["generation"]: s for s in doc["shots"]}
    assert doc["ok"] and doc["line"] == [1, 2, 4, 5, 6] and doc["end"] == 6, doc
    assert (shots[3]["take"], shots[4]["take"], shots[4]["takes"]) == (1, 2, 2)
    assert shots[3]["state"] == "alternative" and shots[5]["parent"] == 4 and shots[6]["parent"] == 5
    assert all(shots[g]["hop"] == "ok" and shots[g]["file"] == "ok" for g in (2, 3, 4, 5, 6)), shots
    # choose the first take of shot 2: shots 3-4 (gens 5, 6) are now stale
    doc = film_view.choose(tag, 3)
    shots = {s["generation"]: s for s in doc["shots"]}
    assert doc["line"] == [1, 2, 3] and doc["pins"] == [1, 2, 3], doc  # the take and its ancestors
    assert (shots[5]["state"], shots[6]["state"], shots[4]["state"]) == ("stale", "stale", "alternative")
    # a Handoff asked for "newest" now continues the end of the chosen line, and says so
    g, hand, _ = shot_graph(unet, vae, tag, 66)  # gen 7: shot 3 after take 1
    run = comfyui.run(g.prompt)
    assert "followed the chosen takes: generation 3 ends the chosen line" in comfyui.output(run, hand, 3)
    assert json.loads(store.get(tag, 7).meta["lineage"])["parent_generation"] == 3
    spill = store.spill_dir
    pack_module(pack, "zc_nodes.runtime").reset()  # a restart: the store closes, spills flushed

    rc, out = zc_film(spill, tag)
    assert rc == 0, out
    assert "4 shots on the line, all hops verified" in out, out  # shot 1, take 1, gen 7 (+ start image)
    assert "stale" in out and " 5 " in out.replace("\t", " ") and " 6 " in out.replace("\t", " "), out
    listed = json.loads(zc_film(spill, tag, "--json")[1])
    assert listed["line"] == [1, 2, 3, 7] and listed["ok"] is True

    # the assembled film of the chosen line: every clip decoded, each seam's trim dropped
    images, audio, info = assemble(comfyui, tag, vae_name=vae)
    trims = [json.loads(shared_store(pack).get(tag, gen).meta["lineage"])["trim"] for gen in (3, 7)]
    assert images.ndim == 4 and images.shape[1:] == (64, 64, 3) and audio is None
    assert images.shape[0] == 3 * WAN["length"] - sum(trims), (images.shape, trims, info)
    assert f"3 shots, {images.shape[0]} frames = {3 * WAN['length']} decoded - {sum(trims)} trimmed" in info, info
    # with a crossfade of 2 frames the two seams shorten it by 4 more
    faded = assemble(comfyui, tag, vae_name=vae, crossfade_frames=2, first_shot=2, last_shot=3)[0]
    assert faded.shape[0] == 2 * WAN["length"] - trims[1] - 2

    # a parent rewritten with another tail (its own digest consistent): its file verifies, the hop
    # of the shot that continued from it does not, and `zc film` names that hop; nothing is lost
    rewrite_tail(Path(spill) / f"{tag}@{3:020d}.latent", scale=-1.0)
    rc, out = zc_film(spill, tag)
    assert rc == 1, out
    assert "hop 7 <- 3" in out, out
    listed = json.loads(zc_film(spill, tag, "--json")[1])
    shots = {s["generation"]: s for s in listed["shots"]}
    assert shots[3]["file"] == "ok" and shots[7]["hop"] == "bad" and not listed["ok"], shots
    assert shots[3]["record"] == "not_covered" and shots[7]["record"] == "ok", shots
    assert sorted(p.name for p in Path(spill).glob(f"{tag}@*.latent")) == [f"{tag}@{i:020d}.latent" for i in range(1, 8)]
    # the assembly reads the film verified: it joins the line and says which hop fails
    images, _, info = assemble(comfyui, tag, vae_name=vae)
    assert images.shape[0] == 3 * WAN["length"] - sum(trims), info
    assert "note: shot 3 (generation 7): the hop from generation 3: tail digest" in info, info

    # generation 7 (shot 3)'s lineage rewritten in place to continue generation 2 instead of 3 (one byte; its tensors
    # untouched): its record digest no longer matches, so no reader follows it
    change_header(Path(spill) / f"{tag}@{7:020d}.latent", b'\\"parent_generation\\":3', b'\\"parent_generation\\":2')
    field = 'the record (dtype, shape or metadata) changed since it was written: metadata "lineage" changed'
    rc, out = zc_film(spill, tag)
    assert rc == 1 and f"generation 7 (not on the line): {field}" in out, out
    with pytest.raises(ComfyRunError) as caught:  # frame_rate (audio only) differs: not ComfyUI's cached run
        assemble(comfyui, tag, vae_name=vae, frame_rate=24.0)
    assert f"generation 7 (not on the line): {field}" in str(caught.value) and "is not whole" in str(caught.value), caught.value
    images, _, info = assemble(comfyui, tag, vae_name=vae, assemble_incomplete=True)
    assert images.shape[0] == 2 * WAN["length"] - trims[0], info
    assert f"LEFT OUT (assemble_incomplete is on): generation 7 (not on the line): {field}" in info, info


def store_av_film(store, tag, video_shape, audio_shape, family, adapter, shots=3, trim=8):
    """``shots`` audio-video shots of seeded noise stored under ``tag`` as bundles of ``family``, each
    continuing the one before (one tail frame, ``trim`` pixel frames repeated), spilled."""
    from zc_pack.zc_continuity import bundle_layout, lineage
    from zc_pack.zc_engine import digest_tensor

    parent = None
    for seed in range(1, shots + 1):
        g = torch.Generator().manual_seed(seed)
        video, audio = torch.randn(*video_shape, generator=g), torch.randn(*audio_shape, generator=g)
        tensors, meta = bundle_layout.bundle_tensors([video, audio])
        meta["family"] = family
        if parent is not None:
            tail = store.get(tag, parent).tensors["latent_tensor"][:, :, -1:]
            meta["lineage"] = lineage.record(lineage.marker(
                parent_tag=tag, parent_generation=parent, tail_frames=1, tail_digest=digest_tensor(tail),
                used_digest=digest_tensor(tail), adapter=adapter, trim=trim))
        parent = store.put(tag, tensors, meta, spill=True)


def test_assemble_joins_the_audio_of_an_audio_video_film(comfyui, captures, pack):
    """Three LTX-2-shaped audio-video shots stored with lineage (trim 8 frames), assembled with fake
    decoding VAEs (named as fakes: no tiny LTX-2 VAE exists): the picture and the sound are cut at
    the same seams, and the sound lasts exactly as long as the picture."""
    tag = "film_av_assemble"
    store = shared_store(pack)
    store_av_film(store, tag, (1, 128, 3, 2, 2), (1, 8, 17, 16), "ltxav", "ltx_latent_guide")
    images, audio, info = assemble(comfyui, tag, audio=True, frame_rate=25.0)
    assert images.shape == (3 * 17 - 2 * 8, 16, 16, 3), (images.shape, info)
    assert audio["sample_rate"] == 16000 and audio["waveform"].shape == (1, 2, (3 * 17 - 2 * 8) * 640)
    # the frame after the first seam is shot 2's 9th frame (its first 8 repeat shot 1)
    second = store.get(tag, 2).tensors["latent_tensor"].float().mean(dim=1)
    assert torch.equal(images[17, 0, 0, 0], second[0, 1 + (8 - 1) // 8, 0, 0])
    wave2 = store.get(tag, 2).tensors["latent_tensor_1"].float().mean(dim=(1, 3))
    assert torch.equal(audio["waveform"][0, 0, 17 * 640], wave2[0, 8])
    assert "3 shots, 35 frames = 51 decoded - 16 trimmed" in info, info
    # without the audio VAE there is no sound; a fixed seam trim of 0 keeps every frame
    images, audio, _ = assemble(comfyui, tag, first_shot=2, last_shot=3, seam_trim=0)
    assert audio is None and images.shape[0] == 2 * 17


def test_assemble_refuses_bad_ranges_and_unknown_films(comfyui, captures, pack):
    with pytest.raises(ComfyRunError, match="film_never_stored.*ZeroCopyLatentStore"):
        assemble(comfyui, "film_never_stored")
    with pytest.raises(ComfyRunError, match="not on the film's line of 3 shots"):
        assemble(comfyui, "film_av_assemble", first_shot=5)
