"""The Store's one pure step: a sampler's output described for the store."""

from __future__ import annotations

import pytest
import torch

from zc_pack.zc_continuity import ContinuityError, ltx
from zc_pack.zc_continuity.shot import ModelFacts, describe_shot, metadata_for


def test_a_model_names_the_family_and_is_recorded():
    video = torch.zeros(1, 16, 3, 8, 8)
    shot = describe_shot([video], model=ModelFacts("Wan21", "WAN21", variant="i2v"),
                         other_keys=["noise_mask", "batch_index"], now=12.5)
    assert shot.spec.name == "wan21" and list(shot.tensors) == ["latent_tensor"]
    assert shot.tensors["latent_tensor"] is video  # a view, never a copy
    assert shot.meta == {"latent_format": "Wan21", "model": "WAN21", "model_variant": "i2v",
                         "family": "wan21", "channels": "16", "spatial_ratio": "8", "temporal_ratio": "4",
                         "pixel_frames": "9", "dtype": "float32", "shape": "1x16x3x8x8",
                         "created_unix": "12.500", "source": "ZeroCopyLatentStore",
                         "keys_not_kept": "batch_index,noise_mask"}


def test_without_a_model_an_ambiguous_shape_stays_unknown():
    shot = describe_shot([torch.zeros(1, 16, 3, 8, 8)])
    assert shot.spec is None and shot.meta["family"] == "unknown" and "pixel_frames" not in shot.meta


def test_an_unknown_3d_latent_format_with_its_geometry_is_generic():
    facts = ModelFacts("MysteryVideo", "Mystery", generic_geometry=(12, 8, 6))
    shot = describe_shot([torch.zeros(1, 12, 4, 2, 2)], model=facts)
    assert shot.meta["family"] == "generic_video" and shot.meta["temporal_ratio"] == "6"
    assert shot.meta["pixel_frames"] == str(1 + 3 * 6)


def test_audio_video_streams_are_bundled_together():
    video, audio = torch.zeros(1, 24, 7, 4, 4), torch.zeros(1, 32, 2, 37)
    shot = describe_shot([video, audio])
    assert shot.spec.name == "minimax_h3" and list(shot.tensors) == ["latent_tensor", "latent_tensor_1"]
    assert shot.meta["streams"] == "2" and shot.meta["stream_shapes"] == "1x24x7x4x4;1x32x2x37"


def test_guides_an_ltx_handoff_appended_are_cropped_off():
    video = torch.arange(1 * 128 * 5 * 1 * 1, dtype=torch.float32).reshape(1, 128, 5, 1, 1)
    shot = describe_shot([video], model=ModelFacts("LTXV", "LTXV"), guide_marker=ltx.guide_marker(2, 3))
    assert shot.meta["guide_frames_removed"] == "2" and torch.equal(shot.video, video[:, :, :3])


def test_latents_the_store_cannot_hand_off_are_refused():
    with pytest.raises(ContinuityError, match=r"neither an image latent"):
        describe_shot([torch.zeros(16, 8)])
    with pytest.raises(ContinuityError, match=r"MiniMax H3 .* latent has 2 streams"):
        describe_shot([torch.zeros(1, 24, 7, 4, 4), torch.zeros(1, 32, 2, 37), torch.zeros(1, 2)],
                      model=ModelFacts("MiniMaxH3AV", "H3"))


def test_metadata_for_no_family():
    assert metadata_for(None) == {"family": "unknown"}


def test_large_fresh_latents_get_the_first_touch_hint():
    from zc_pack.zc_continuity import assemble, fresh_latents

    seen = []
    fresh_latents.set_first_touch_hint(lambda t: seen.append(t.numel() * t.element_size()))
    try:
        tail = torch.randn(1, 16, 1, 90, 160)
        built = assemble.temporal_inpaint((1, 16, 21, 90, 160), tail, torch.zeros(16))
        small = fresh_latents.filled((2, 3), torch.ones(1))
    finally:
        fresh_latents.set_first_touch_hint(None)
    assert seen == [16 * 21 * 90 * 160 * 4]  # the 19 MB samples; the 1.2 MB mask and tiny tensors are left alone
    assert torch.equal(built.samples[:, :, :1], tail) and built.samples[:, :, 1:].eq(0).all()
    assert small.eq(1).all() and small.shape == (2, 3)
