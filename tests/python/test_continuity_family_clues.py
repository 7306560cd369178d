"""Which family a latent belongs to, from its shape, the VAE and the text encoder (pure)."""

from __future__ import annotations

import pytest

from zc_pack.zc_continuity import ContinuityError
from zc_pack.zc_continuity.family_clues import (PartEvidence, families_for_streams, families_for_text_encoder,
                                       families_for_vae, infer_family)

WAN21_VAE = PartEvidence("VAE", "WanVAE", ("comfy.ldm.wan.vae.WanVAE", "torch.nn.modules.module.Module"),
                         channels=16, latent_dims=3, temporal_ratio=4, spatial_ratio=8)
HUNYUAN_VAE = PartEvidence("VAE", "AutoencoderKL", ("comfy.ldm.models.autoencoder.AutoencoderKL",
                                                    "comfy.ldm.modules.diffusionmodules.model.Encoder"),
                           channels=16, latent_dims=3, temporal_ratio=4, spatial_ratio=8)
WAN22_VAE = PartEvidence("VAE", "WanVAE", ("comfy.ldm.wan.vae2_2.WanVAE",), channels=48, latent_dims=3,
                         temporal_ratio=4, spatial_ratio=16)
FLUX_VAE = PartEvidence("VAE", "AutoencodingEngine", ("comfy.ldm.models.autoencoder.AutoencodingEngine",),
                        channels=16, latent_dims=2, spatial_ratio=8)
UMT5 = PartEvidence("CLIP", "WanTEModel", ("comfy.text_encoders.wan.te.<locals>.WanTEModel",
                                           "comfy.text_encoders.wan.WanT5Model",
                                           "comfy.text_encoders.wan.WanT5Tokenizer"))
FAKE_CLIP = PartEvidence("CLIP", "FakeUMT5Clip", ("tests.FakeUMT5Clip",))
WAN_VIDEO = [(1, 16, 3, 8, 8)]


def names(specs):
    return [s.name for s in specs]


def test_a_16_channel_video_shape_alone_is_ambiguous():
    assert names(families_for_streams(WAN_VIDEO)) == ["wan21", "hunyuan_video"]
    found = infer_family(WAN_VIDEO)
    assert found.spec is None and "Wan 2.1 / 2.2 A14B, HunyuanVideo 1.0" in found.tried[0]


def test_the_vae_class_tells_wan21_from_hunyuan_video():
    assert names(families_for_vae(WAN21_VAE)) == ["wan21"]
    assert names(families_for_vae(HUNYUAN_VAE)) == ["hunyuan_video"]
    found = infer_family(WAN_VIDEO, WAN21_VAE)
    assert found.spec.name == "wan21" and found.source == "the VAE WanVAE (16 channels, 4x8x8)"
    assert infer_family(WAN_VIDEO, HUNYUAN_VAE).spec.name == "hunyuan_video"


def test_geometry_must_agree_with_the_class():
    narrow = PartEvidence("VAE", "WanVAE", ("comfy.ldm.wan.vae.WanVAE",), channels=32, latent_dims=3)
    assert families_for_vae(narrow) == []


def test_a_declared_latent_format_names_the_family():
    taehv = PartEvidence("VAE", "TAEHV", ("comfy.taesd.taehv.TAEHV",), channels=16, latent_dims=3,
                         latent_format="HunyuanVideo")
    assert names(families_for_vae(taehv)) == ["hunyuan_video"]
    silent = PartEvidence("VAE", "TAEHV", ("comfy.taesd.taehv.TAEHV",), channels=16, latent_dims=3)
    assert families_for_vae(silent) == []


def test_the_text_encoder_narrows_what_the_vae_left_open():
    assert names(families_for_text_encoder(UMT5)) == ["wan21", "wan22_5b"]
    found = infer_family(WAN_VIDEO, PartEvidence("VAE", "RaisingVAE"), UMT5)
    assert found.spec.name == "wan21" and found.source.startswith("the CLIP WanTEModel")
    assert "the VAE RaisingVAE (no family this pack knows)" in found.tried


def test_no_clue_leaves_it_open_and_lists_what_was_tried():
    found = infer_family(WAN_VIDEO, PartEvidence("VAE", "RaisingVAE"), FAKE_CLIP)
    assert found.spec is None and len(found.tried) == 3


def test_a_first_shot_has_no_shape_and_the_vae_decides():
    assert infer_family(None, WAN22_VAE).spec.name == "wan22_5b"
    assert infer_family(None, None, UMT5).spec is None  # Wan 2.1 or Wan 2.2 5B: still open


def test_a_vae_of_another_latent_space_is_refused():
    with pytest.raises(ContinuityError, match=r"the connected VAE WanVAE \(48 channels, 4x16x16\) "
                                              r"belongs to Wan 2.2 TI2V 5B.*allow only Wan 2.1"):
        infer_family(WAN_VIDEO, WAN22_VAE)


def test_a_shape_shared_with_models_outside_the_pack_needs_a_clue():
    image = [(1, 16, 64, 64)]
    assert names(families_for_streams(image)) == ["flux"]
    assert infer_family(image).spec is None  # SD3 and Stable Cascade share it
    assert infer_family(image, FLUX_VAE).spec.name == "flux"


def test_audio_video_streams_decide_alone():
    h3 = [(1, 24, 7, 4, 4), (1, 32, 2, 37)]
    found = infer_family(h3)
    assert found.spec.name == "minimax_h3" and "shape" in found.source
    assert names(families_for_streams([(1, 128, 3, 4, 4), (1, 8, 25, 16)])) == ["ltx2"]
