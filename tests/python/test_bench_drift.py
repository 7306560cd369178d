"""The benchmark's drift section: the generated video, the tiny video AE, the PNG roundtrip,
the store chain and the section end to end (smoke mode). No timing is asserted."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from bench.common import INFO, NOT_MEASURED, PASS, Context, png_roundtrip
from bench.sections import drift
from bench.sections import tiny_video_ae as tiny
from zc_pack.zc_engine.store import is_bookkeeping_file

# --------------------------------------------------------------------------- generated video

def test_pattern_generator_is_deterministic_per_seed():
    first = tiny.make_batch(torch.Generator().manual_seed(5), 3, frames=6, size=16)
    again = tiny.make_batch(torch.Generator().manual_seed(5), 3, frames=6, size=16)
    other = tiny.make_batch(torch.Generator().manual_seed(6), 3, frames=6, size=16)
    assert first.shape == (3, 3, 6, 16, 16)
    assert torch.equal(first, again)
    assert not torch.equal(first, other)
    assert torch.equal(tiny.held_out_clip(1, 4, 16), tiny.held_out_clip(1, 4, 16))


def test_pattern_generator_makes_moving_video_in_range():
    clips = tiny.make_batch(torch.Generator().manual_seed(0), 8, frames=8, size=32)
    assert clips.dtype == torch.float32
    assert float(clips.min()) >= 0.0 and float(clips.max()) <= 1.0
    for clip in clips:
        assert clip.std() > 0.01                                  # not a flat frame
        assert not torch.equal(clip[:, 0], clip[:, -1])           # something moves


def test_the_test_clip_is_not_a_training_clip():
    training_stream = torch.Generator().manual_seed(0)
    training = tiny.make_batch(training_stream, 16, frames=4, size=16)
    held_out = tiny.held_out_clip(0, 4, 16)[0]
    assert all(not torch.equal(held_out, clip) for clip in training)


# --------------------------------------------------------------------------- autoencoder

def test_space_to_depth_is_inverted_by_depth_to_space():
    video = torch.randn(2, 3, 5, 8, 12)
    patches = tiny.space_to_depth(video)
    assert patches.shape == (2, 48, 5, 2, 3)
    assert torch.equal(tiny.depth_to_space(patches), video)
    # one latent position holds exactly its own 4×4 patch
    assert torch.equal(patches[0, :, 1, 1, 2].view(3, 4, 4), video[0, :, 1, 4:8, 8:12])


def test_autoencoder_shapes_and_pixel_range():
    model = tiny.build_model(0)
    pixels = tiny.make_batch(torch.Generator().manual_seed(1), 2, frames=5, size=32)
    with torch.no_grad():
        latent = model.encode(pixels)
        decoded = model.decode(latent)
    assert latent.shape == (2, 8, 5, 8, 8)
    assert decoded.shape == pixels.shape
    assert float(decoded.min()) >= 0.0 and float(decoded.max()) <= 1.0


def test_build_model_depends_only_on_the_seed():
    torch.manual_seed(123)
    first = tiny.build_model(3).state_dict()
    torch.manual_seed(456)
    second = tiny.build_model(3).state_dict()
    assert all(torch.equal(first[key], second[key]) for key in first)


def test_two_seconds_of_training_lower_the_loss():
    model = tiny.build_model(0)
    untrained = tiny.evaluation_loss(model, seed=77)
    threads = torch.get_num_threads()
    result = tiny.train(model, 2.0, seed=0)
    trained = tiny.evaluation_loss(model, seed=77)
    assert result.steps >= 1 and len(result.losses) == result.steps
    assert all(math.isfinite(loss) for loss in result.losses)
    assert trained < untrained / 2
    assert torch.get_num_threads() == threads  # restored after training


# --------------------------------------------------------------------------- measuring helpers

def test_png_roundtrip_quantizes_like_comfyui_and_cleans_up(tmp_path):
    frames = torch.rand(3, 8, 10, 3, generator=torch.Generator().manual_seed(2))
    frames[0, 0, 0] = torch.tensor([1.2, -0.3, 0.5])              # out of range: clipped
    loaded = png_roundtrip(frames, tmp_path)
    # ComfyUI SaveImage: clip(255 x, 0, 255).astype(uint8); LoadImage: / 255
    expected = np.clip(255.0 * frames.numpy(), 0, 255).astype(np.uint8).astype(np.float32) / 255.0
    assert loaded.shape == frames.shape and loaded.dtype == torch.float32
    assert np.array_equal(loaded.numpy(), expected)
    assert float((loaded - frames.clamp(0, 1)).abs().max()) < 1.0 / 255.0 + 1e-6
    assert list(tmp_path.iterdir()) == []


def test_mse_and_psnr():
    a = torch.zeros(4, 4)
    b = torch.full((4, 4), 0.1)
    assert tiny.mse(a, a) == 0.0
    assert tiny.psnr(a, a) is None                                # identical: infinite
    assert tiny.psnr(a, b) == pytest.approx(20.0)


def test_same_bits_sees_a_one_ulp_change_and_signed_zero():
    z = torch.randn(2, 3, 4)
    nudged = z.clone()
    nudged.view(-1)[5] = torch.nextafter(nudged.view(-1)[5], torch.tensor(math.inf))
    assert drift.same_bits(z, z.clone())
    assert not drift.same_bits(z, nudged)
    assert not drift.same_bits(torch.zeros(3), -torch.zeros(3))   # == but not bit-identical
    assert not drift.same_bits(z, z.double())


def test_roundtrip_chain_with_an_identity_codec_only_loses_the_8_bit_step(tmp_path):
    frames = torch.rand(2, 8, 8, 3, generator=torch.Generator().manual_seed(4))
    chain = drift.roundtrip_chain(lambda z: z.clamp(0, 1), lambda f: f.clone(), frames, frames,
                                  hops=3, png_dir=tmp_path)
    assert chain.latent_mse[0] > 0.0
    # quantized values are on the 8-bit grid already: later hops add nothing
    assert chain.latent_mse[1] == chain.latent_mse[0] == chain.latent_mse[2]
    assert chain.psnr_vs_first_decode_db[0] > 40.0
    float_chain = drift.roundtrip_chain(lambda z: z, lambda f: f.clone(), frames, frames, hops=2,
                                        png_dir=None)
    assert float_chain.latent_mse == [0.0, 0.0]
    assert float_chain.psnr_vs_first_decode_db == [None, None]


# --------------------------------------------------------------------------- ours

def test_store_chain_is_bit_identical_with_equal_digests_across_restarts(tmp_path):
    z0 = torch.randn(1, 8, 4, 8, 8, generator=torch.Generator().manual_seed(9))
    z0.view(-1)[0] = -0.0                                         # survives only a bitwise copy
    chain = drift.store_chain(z0, hops=4, spill_dir=tmp_path / "spill")
    assert chain.passed
    assert chain.latent_mse == [0.0] * 4
    assert chain.bit_identical == [True] * 4
    assert chain.through_disk == [False, True, False, True]
    assert chain.reference_digest.startswith("xxh3:")
    assert chain.stored_digest == [chain.reference_digest] * 4
    assert chain.tensor_digest == [chain.reference_digest] * 4
    json.dumps(chain.to_json())
    left = [p for p in (tmp_path / "spill").rglob("*") if not is_bookkeeping_file(p.name)]
    assert left == []                                             # dropped with its files


def test_store_chain_would_fail_on_a_changed_latent(tmp_path):
    z0 = torch.randn(1, 4, 2, 4, 4)
    chain = drift.store_chain(z0, hops=2, spill_dir=tmp_path / "spill")
    assert chain.passed
    chain.bit_identical[1] = False                                # what a changed byte records
    assert not chain.passed
    chain.bit_identical[1] = True
    chain.latent_mse[0] = 1e-30
    assert not chain.passed


# --------------------------------------------------------------------------- real VAE

def test_real_vae_not_measured_reasons(tmp_path):
    ctx = Context(mode="smoke", out_dir=tmp_path, tmp_dir=tmp_path, comfyui_path=None)
    assert drift.real_vae_drift(ctx, 3, tmp_path) == {"reason": "no --vae PATH given"}
    ctx.vae_path = tmp_path / "some_vae.safetensors"
    reason = drift.real_vae_drift(ctx, 3, tmp_path)["reason"]
    assert reason == "--vae needs COMFYUI_PATH: ComfyUI's VAE loader reads the weights"


class _VideoVaeShape:
    """The two attributes of a ComfyUI VAE that say how its time axis compresses."""

    def __init__(self, factor: int):
        self.downscale_ratio = (lambda a: max(0, math.floor((a + factor - 1) / factor)), 8, 8)
        self.upscale_ratio = (lambda a: max(0, a * factor - (factor - 1)), 8, 8)


def test_real_vae_clip_length_survives_the_roundtrip():
    assert drift._consistent_frames(_VideoVaeShape(4), 17) == 17   # Wan, Hunyuan: 1 + 4k
    assert drift._consistent_frames(_VideoVaeShape(8), 9) == 9     # LTX: 1 + 8k
    assert drift._consistent_frames(_VideoVaeShape(6), 17) == 19   # 1 + 6k
    assert drift._consistent_frames(object(), 17) == 17           # says nothing: as asked


# --------------------------------------------------------------------------- the section

def test_section_smoke_run(tmp_path):
    out, scratch = tmp_path / "out", tmp_path / "tmp"
    ctx = Context(mode="smoke", out_dir=out, tmp_dir=scratch, comfyui_path=None)
    section = drift.run(ctx)
    rows = {row.id: row for row in section.rows}
    assert rows["D1"].result == PASS
    assert rows["D2"].result == INFO
    assert rows["D3"].result == NOT_MEASURED and rows["D3"].measured == "no --vae PATH given"
    assert section.plots == ["drift.png"] and (out / "drift.png").stat().st_size > 0
    data = json.loads(json.dumps(section.to_json()))["data"]
    assert data["hops"] == 3
    assert data["ours"]["latent_mse"] == [0.0, 0.0, 0.0] and data["ours"]["passed"]
    assert len(data["roundtrip_png"]["latent_mse"]) == 3
    assert all(value > 0 for value in data["roundtrip_png"]["latent_mse"])
    assert "What was measured" in section.details
    assert list(scratch.iterdir()) == []                          # its scratch files are gone
