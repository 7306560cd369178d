"""The Handoff's conditioning equals core's own node's for the same request, except for the tail.

Wan 2.1 / 2.2 A14B I2V: the same request is built two ways on real ComfyUI (CPU):

- core's ``WanImageToVideo`` (called in-process) with a start image, encoded by the real
  Wan 2.1 VAE architecture with random weights (the ``wan21_vae`` fixture) at 64x64;
- the Handoff, from a stored shot whose tail is exactly core's encoding of that start
  image (the first k latents of core's ``concat_latent_image``).

Every conditioning key, the mask and the LATENT must equal core's bit for bit, the tail slots
must equal the stored tail bit for bit, and the padding frames must equal core's:

- bit for bit when the start image is itself mid-gray (core then encodes gray frames
  only, the very computation the Handoff caches);
- within ``TOLERANCE`` for a noise start image, where core's padding latents are encoded
  with the start image in the causal cache and ours are not (docs/families.md, "As core
  builds it", gives the measured sizes).

The old padding (the latent format's empty value, ``process_out(0)``) must fail the same
comparison: the ``old_empty_value`` cases expect an AssertionError.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

from conftest import Graph
from test_families_support import pack, pack_module, same_bits, shared_store  # noqa: F401

W, H, LENGTH = 64, 64, 13  # latent [1, 16, 4, 8, 8]
TOLERANCE = {"max_abs": 0.6, "mean_abs": 0.15}
"""Largest |ours - core| allowed per padding latent where core's causal context differs. Measured
(random Wan 2.1 VAE, noise start image): max 0.10-0.18 and mean 0.025-0.036 at width 16, max
0.31-0.39 and mean 0.07-0.085 at the released width 96; the old empty-value padding is off by
max >= 1.5 and mean >= 0.5, so it fails either bound."""

START = {"gray": 1, "noise_k1": 1, "noise_k2": 2}  # start case -> tail latents k
_core_cache: dict = {}


def module(pack, name):
    return pack_module(pack, name)


def start_image(case: str) -> torch.Tensor:
    k = START[case]
    frames = (k - 1) * 4 + 1
    if case == "gray":
        return torch.full((frames, H, W, 3), 0.5)
    return torch.rand(frames, H, W, 3, generator=torch.Generator().manual_seed(40 + k))


def loaders(comfyui, vae_name):
    """The VAE, positive and negative as graph nodes (the Handoff's graph reuses their outputs)."""
    g = Graph()
    vae = g.add("VAELoader", vae_name=vae_name)
    pos = g.add("ZCTestConditioning", seed=1, tokens=8)
    neg = g.add("ZCTestConditioning", seed=2, tokens=8)
    run = comfyui.run(g.prompt, targets=[vae, pos, neg])
    return g, (vae, pos, neg), [comfyui.output(run, n) for n in (vae, pos, neg)]


def core_wan_i2v(comfyui, vae_name, case):
    """core's WanImageToVideo for the start case: (positive, negative, latent), computed once."""
    if case not in _core_cache:
        import nodes
        _, _, (vae, positive, negative) = loaders(comfyui, vae_name)
        core = nodes.NODE_CLASS_MAPPINGS["WanImageToVideo"]
        with torch.inference_mode():  # as ComfyUI's executor runs every node
            out = core.execute(positive=positive, negative=negative, vae=vae, width=W, height=H,
                               length=LENGTH, batch_size=1, start_image=start_image(case))
        _core_cache[case] = out.args if hasattr(out, "args") else out
    return _core_cache[case]


def handoff_wan_i2v(comfyui, pack, vae_name, unet_name, tag, k):
    g, (vae, pos, neg), _ = loaders(comfyui, vae_name)
    model = g.add("UNETLoader", unet_name=unet_name, weight_dtype="default")
    clip = g.add("ZCTestClip", tokens=8)
    hand = g.add("ZeroCopyLatentHandoff", clip=g.out(clip), vae=g.out(vae), prompt="", width=W,
                 height=H, length=LENGTH, buffer_tag=tag, continuity_mode="zero_copy_latent_only",
                 blend_ratio=0.0, model=g.out(model), tail_frames=k, positive=g.out(pos),
                 negative=g.out(neg))
    comfyui.reset_cache()  # the Handoff runs again even where the store did not change
    run = comfyui.run(g.prompt, targets=[hand])
    return [comfyui.output(run, hand, i) for i in range(4)]


def store_tail(pack, tag, tail):
    """A previous shot whose last k latents are ``tail`` (one random latent before it)."""
    before = torch.randn(1, 16, 1, H // 8, W // 8, generator=torch.Generator().manual_seed(3))
    shared_store(pack).put(tag, {"latent_tensor": torch.cat([before, tail], 2).contiguous()},
                           {"family": "wan21", "latent_format": "Wan21", "channels": "16",
                            "spatial_ratio": "8", "temporal_ratio": "4", "model_variant": "i2v"})


def assert_as_core(ours, core, k, stored_tail, *, exact_padding: bool, marker: str):
    """Every key and value of ours equals core's; the tail slots equal the stored tail; the padding
    equals core's bit for bit (exact_padding) or within TOLERANCE."""
    (pos, latent, neg), (core_pos, core_neg, core_latent) = ours, core
    for mine, theirs in ((pos, core_pos), (neg, core_neg)):
        assert len(mine) == len(theirs)
        for (cond, extra), (core_cond, core_extra) in zip(mine, theirs):
            assert same_bits(cond, core_cond)
            assert set(extra) == set(core_extra), (sorted(extra), sorted(core_extra))
            for key, value in core_extra.items():
                if key == "concat_latent_image":
                    continue
                if isinstance(value, torch.Tensor):
                    assert same_bits(extra[key], value), key
                else:
                    assert extra[key] == value, key
            image, core_image = extra["concat_latent_image"], core_extra["concat_latent_image"]
            assert image.shape == core_image.shape and image.dtype == core_image.dtype
            assert same_bits(image[:, :, :k], stored_tail)
            assert same_bits(image[:, :, :k], core_image[:, :, :k])
            if exact_padding:
                assert same_bits(image[:, :, k:], core_image[:, :, k:]), "padding differs from core's"
            for t in range(k, image.shape[2]):
                diff = (image[:, :, t] - core_image[:, :, t]).abs()
                assert diff.max() <= TOLERANCE["max_abs"], f"padding latent {t}: max {diff.max():.3g}"
                assert diff.mean() <= TOLERANCE["mean_abs"], f"padding latent {t}: mean {diff.mean():.3g}"
    assert set(latent) - {marker} == set(core_latent)
    assert same_bits(latent["samples"], core_latent["samples"])


@pytest.mark.parametrize("padding", ["vae_gray", "old_empty_value"])
@pytest.mark.parametrize("case", list(START))
def test_wan_i2v_conditioning_equals_core_wan_image_to_video(comfyui, captures, pack, wan21_vae,
                                                              tiny_wan21_i2v, monkeypatch, case,
                                                              padding):
    k = START[case]
    core = core_wan_i2v(comfyui, wan21_vae.name, case)
    tail = core[0][0][1]["concat_latent_image"][:, :, :k].contiguous()  # core's encoding of the start
    tag = f"as_core_{case}_{padding}"
    store_tail(pack, tag, tail)
    if padding == "old_empty_value":  # what the adapter did before: process_out(0) everywhere
        gray = module(pack, "zc_nodes.adapters.gray_padding")

        def old(vae, width, height, length, spill_dir=None):
            import comfy.latent_formats
            fill = comfy.latent_formats.Wan21().process_out(torch.zeros(1, 16, 1, 1, 1))
            shape = (1, 16, (length - 1) // 4 + 1, height // 8, width // 8)
            return gray.Padding(fill.expand(shape).clone(), "encoded", 0.0, None)
        monkeypatch.setattr(gray, "gray_padding", old)
    positive, latent, negative, info = handoff_wan_i2v(comfyui, pack, wan21_vae.name,
                                                       tiny_wan21_i2v.name, tag, k)
    assert "adapter wan_i2v" in info and "bit-identical: yes" in info
    assert "as core's WanImageToVideo builds it" in info
    marker = module(pack, "zc_continuity.lineage").MARKER
    check = lambda: assert_as_core((positive, latent, negative), core, k, tail,  # noqa: E731
                                   exact_padding=case == "gray", marker=marker)
    if padding == "old_empty_value":
        with pytest.raises(AssertionError):
            check()
    else:
        check()
        assert "VAE encoding of 13 mid-gray (0.5) frames at 64x64" in info


def test_wan_i2v_gray_padding_is_cached_in_memory_and_on_disk(comfyui, captures, pack, wan21_vae,
                                                              tiny_wan21_i2v):
    gray = module(pack, "zc_nodes.adapters.gray_padding")
    gray.forget_memory()
    tag = "as_core_cache"
    store_tail(pack, tag, torch.randn(1, 16, 1, H // 8, W // 8))
    spill = Path(shared_store(pack).spill_dir)
    folder = spill / gray.FOLDER
    for old in folder.glob("*.safetensors") if folder.exists() else []:
        old.unlink()

    first = handoff_wan_i2v(comfyui, pack, wan21_vae.name, tiny_wan21_i2v.name, tag, 1)
    assert "encoded now with the VAE" in first[3] and "cached in memory and in" in first[3]
    files = list(folder.glob("wan_gray_*_64x64x13.safetensors"))
    assert len(files) == 1, files
    padding = first[0][0][1]["concat_latent_image"][:, :, 1:]

    again = handoff_wan_i2v(comfyui, pack, wan21_vae.name, tiny_wan21_i2v.name, tag, 1)
    assert "from the in-memory cache (no VAE call)" in again[3]
    assert same_bits(again[0][0][1]["concat_latent_image"][:, :, 1:], padding)

    gray.forget_memory()  # what a restart does; the file stays
    restarted = handoff_wan_i2v(comfyui, pack, wan21_vae.name, tiny_wan21_i2v.name, tag, 1)
    assert "from the disk cache" in restarted[3] and "no VAE call" in restarted[3]
    assert same_bits(restarted[0][0][1]["concat_latent_image"][:, :, 1:], padding)

    gray.forget_memory()  # a damaged file is a cache miss: encoded again, rewritten
    data = bytearray(files[0].read_bytes())
    data[-4] ^= 0xFF
    files[0].write_bytes(bytes(data))
    damaged = handoff_wan_i2v(comfyui, pack, wan21_vae.name, tiny_wan21_i2v.name, tag, 1)
    assert "encoded now with the VAE" in damaged[3]
    assert same_bits(damaged[0][0][1]["concat_latent_image"][:, :, 1:], padding)
    key = gray.cache_key(comfy_vae(comfyui, wan21_vae.name), W, H, LENGTH)
    assert gray.read_file(files[0], key) is not None  # rewritten whole


def comfy_vae(comfyui, name):
    return loaders(comfyui, name)[2][0]


def test_wan_i2v_padding_difference_is_measured(comfyui, captures, pack, wan21_vae):
    """Prints the per-latent difference of core's padding from ours (docs/families.md's figures)."""
    gray = module(pack, "zc_nodes.adapters.gray_padding")
    vae = comfy_vae(comfyui, wan21_vae.name)
    with torch.inference_mode():
        ours = gray.encode_gray(vae, W, H, LENGTH)
    for case in ("noise_k1", "noise_k2"):
        k = START[case]
        core = core_wan_i2v(comfyui, wan21_vae.name, case)[0][0][1]["concat_latent_image"]
        for t in range(k, core.shape[2]):
            diff = (core[:, :, t] - ours[:, :, t]).abs()
            rel = (core[:, :, t] - ours[:, :, t]).norm() / core[:, :, t].norm()
            print(f"{case} latent {t}: max {diff.max():.3g} mean {diff.mean():.3g} relative {rel:.3g}",
                  file=sys.stderr)
            assert diff.max() <= TOLERANCE["max_abs"] and diff.mean() <= TOLERANCE["mean_abs"]


def test_wan_i2v_first_shot_equals_core_wan_image_to_video(comfyui, captures, pack, wan21_vae,
                                                           tiny_wan21_i2v):
    """The first shot (no stored tail, fallback_first_frame) builds exactly what core builds:
    the Handoff has the start image's pixels, so it encodes it followed by gray in one video."""
    image = start_image("noise_k1")  # torch.rand(1, H, W, 3) seeded 41
    core = core_wan_i2v(comfyui, wan21_vae.name, "noise_k1")
    g, (vae, pos, neg), _ = loaders(comfyui, wan21_vae.name)
    model = g.add("UNETLoader", unet_name=tiny_wan21_i2v.name, weight_dtype="default")
    clip = g.add("ZCTestClip", tokens=8)
    frame = g.add("ZCTestNoiseImage", seed=41, width=W, height=H, frames=1)  # core's start image
    hand = g.add("ZeroCopyLatentHandoff", clip=g.out(clip), vae=g.out(vae), prompt="", width=W,
                 height=H, length=LENGTH, buffer_tag="as_core_first_shot",
                 continuity_mode="zero_copy_latent_only", blend_ratio=0.0, model=g.out(model),
                 tail_frames=1, positive=g.out(pos), negative=g.out(neg), fallback_first_frame=g.out(frame))
    comfyui.reset_cache()
    run = comfyui.run(g.prompt, targets=[hand, frame])
    assert same_bits(comfyui.output(run, frame), image)
    positive, latent, negative, info = [comfyui.output(run, hand, i) for i in range(4)]
    assert "holds no latent yet" in info and "start image followed by 12 mid-gray" in info
    assert "as core's WanImageToVideo builds it" in info and "gray encoded alone" not in info
    marker = module(pack, "zc_continuity.lineage").MARKER
    core_image = core[0][0][1]["concat_latent_image"]
    assert_as_core((positive, latent, negative), core, 1, core_image[:, :, :1], exact_padding=True,
                   marker=marker)
    assert same_bits(positive[0][1]["concat_latent_image"], core_image)  # the whole image, slot 0 too
    stored = shared_store(pack).get("as_core_first_shot").tensors["latent_tensor"]
    assert same_bits(stored[:, :, :1], core_image[:, :, :1])  # the start image kept as the film's first
    bad = positive[0][1]["concat_latent_image"].clone()
    bad[0, 0, 2, 0, 0] = torch.nextafter(bad[0, 0, 2, 0, 0], bad[0, 0, 2, 0, 0] + 1)
    wrong = [[positive[0][0], dict(positive[0][1], concat_latent_image=bad)]]
    with pytest.raises(AssertionError):
        assert_as_core((wrong, latent, negative), core, 1, core_image[:, :, :1], exact_padding=True,
                       marker=marker)


def test_wan_i2v_padding_falls_back_loudly_when_the_vae_cannot_encode(comfyui, captures, pack,
                                                                      tiny_wan21_i2v, monkeypatch):
    """A VAE whose encode raises: the hop goes on with the old padding (the latent format's empty
    value), the certificate says which padding it used, and a warning reaches the UI and the log."""
    from comfy import latent_formats

    ui = module(pack, "zc_nodes.ui_events")
    sent = []
    monkeypatch.setattr(ui, "send", lambda event, data: sent.append((event, data)) or True)
    tag = "as_core_raising_vae"
    tail = torch.randn(1, 16, 1, H // 8, W // 8, generator=torch.Generator().manual_seed(9))
    store_tail(pack, tag, tail)
    g = Graph()
    vae = g.add("ZCTestRaisingVAE")  # its encode raises
    model = g.add("UNETLoader", unet_name=tiny_wan21_i2v.name, weight_dtype="default")
    clip = g.add("ZCTestClip", tokens=8)
    hand = g.add("ZeroCopyLatentHandoff", clip=g.out(clip), vae=g.out(vae), prompt="", width=W,
                 height=H, length=LENGTH, buffer_tag=tag, continuity_mode="zero_copy_latent_only",
                 blend_ratio=0.0, model=g.out(model), tail_frames=1)
    comfyui.reset_cache()
    run = comfyui.run(g.prompt, targets=[hand])
    positive, latent, negative, info = [comfyui.output(run, hand, i) for i in range(4)]
    assert "WARNING the VAE could not encode the gray padding (AssertionError" in info
    assert "except:" in info and "padding: the latent format's empty value (process_out(0))" in info
    image = positive[0][1]["concat_latent_image"]
    assert same_bits(image[:, :, :1], tail)
    fill = latent_formats.Wan21().process_out(torch.zeros(1, 16, 1, 1, 1))
    assert same_bits(image[:, :, 1:], fill.expand(1, 16, image.shape[2] - 1, H // 8, W // 8).contiguous())
    warnings = [d for e, d in sent if e == "zerocopy.warning"]
    assert len(warnings) == 1 and "Wan I2V padding fell back" in warnings[0]["title"]
    assert "connect the model's VAE" in warnings[0]["message"]
