"""Family registry and length rules: lookups, inference refusals, rule arithmetic."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zc_pack.zc_continuity import (ADAPTER_TEMPORAL_INPAINT, ADAPTER_WAN_I2V, GENERIC_VIDEO,
                           HUNYUAN_VIDEO, LTX2, WAN21, WAN22_5B,
                           ContinuityError, FamilySpec, LengthRule, causal_length_rule,
                           family_by_name, family_from_latent_format, infer_family_from_latent,
                           known_families)
from zc_pack.zc_continuity import families as families_module


def test_wan21_facts():
    assert (WAN21.channels, WAN21.spatial_ratio, WAN21.temporal_ratio) == (16, 8, 4)
    assert WAN21.latent_dims == 3 and WAN21.is_video and WAN21.is_resolved
    assert WAN21.canvas_multiple == 16
    assert WAN21.latent_format_names == ("Wan21",)
    assert set(WAN21.adapters) == {ADAPTER_TEMPORAL_INPAINT, ADAPTER_WAN_I2V}


def test_lookup_by_name_and_latent_format():
    assert family_by_name("wan21") is WAN21
    assert family_by_name("generic_video") is GENERIC_VIDEO
    assert family_from_latent_format("Wan21") is WAN21
    # Wan22 subclasses Wan21 in ComfyUI but is another latent space: exact names only.
    assert family_from_latent_format("Wan22") is WAN22_5B
    assert family_from_latent_format("HunyuanVideo") is HUNYUAN_VIDEO
    assert family_from_latent_format("LTXAV") is LTX2  # LTXAV subclasses LTXV: exact names only
    assert family_from_latent_format("Cosmos1CV8x8x8") is None
    assert {s.name for s in known_families()} >= {"wan21", "generic_video"}


def test_unknown_family_name_lists_known_ones():
    with pytest.raises(ContinuityError) as err:
        family_by_name("wan99")
    assert "'wan99'" in str(err.value) and "wan21" in str(err.value)


def test_sixteen_channel_video_is_ambiguous():
    # Wan 2.1 and HunyuanVideo 1.0 latents look the same; the caller must ask for the model.
    assert infer_family_from_latent((1, 16, 21, 60, 104)) is None
    assert infer_family_from_latent((1, 16, 60)) is None
    # 48 channels, 5D: only Wan 2.2's VAE makes these.
    assert infer_family_from_latent((1, 48, 21, 44, 80)) is WAN22_5B


def test_unique_shape_is_inferred(monkeypatch):
    registry = dict(families_module._REGISTRY)
    monkeypatch.setattr(families_module, "_REGISTRY", registry)
    spec = families_module.register(FamilySpec(
        name="test_unique", display_name="Test", channels=7, spatial_ratio=8, temporal_ratio=4,
        latent_dims=3, length_rule=causal_length_rule(4), canvas_multiple=8, canvas_reason="test",
        latent_format_names=("TestFormat",)))
    assert infer_family_from_latent((1, 7, 3, 4, 4)) is spec
    assert infer_family_from_latent((1, 7, 4, 4)) is None
    assert family_from_latent_format("TestFormat") is spec
    with pytest.raises(ValueError):
        families_module.register(spec)
    with pytest.raises(ValueError):
        families_module.register(FamilySpec(
            name="test_clash", display_name="Clash", channels=7, spatial_ratio=8,
            temporal_ratio=4, latent_dims=3, length_rule=causal_length_rule(4), canvas_multiple=8,
            canvas_reason="test", latent_format_names=("TestFormat",)))


def test_generic_needs_metadata():
    assert not GENERIC_VIDEO.is_resolved
    with pytest.raises(ContinuityError) as err:
        GENERIC_VIDEO.require_resolved()
    assert "metadata" in str(err.value)
    spec = GENERIC_VIDEO.resolved(channels=48, spatial_ratio=16, temporal_ratio=4)
    assert spec.is_resolved and spec.channels == 48 and spec.canvas_multiple == 16
    assert spec.length_rule.describe() == "pixel lengths are 4k+1"


@pytest.mark.parametrize("bad", [0, -1, 2.0, True, None])
def test_generic_rejects_bad_metadata(bad):
    with pytest.raises(ContinuityError) as err:
        GENERIC_VIDEO.resolved(channels=bad, spatial_ratio=8, temporal_ratio=4)
    assert "channels" in str(err.value) and repr(bad) in str(err.value)


@given(ratio=st.integers(1, 16), latents=st.integers(1, 200))
@settings(max_examples=60, deadline=None)
def test_causal_rule_matches_comfy_formula(ratio, latents):
    rule = causal_length_rule(ratio)
    pixels = rule.pixels_for_latents(latents)
    assert pixels == (latents - 1) * ratio + 1
    assert rule.is_valid_pixel_length(pixels)
    assert rule.latents_for_pixels(pixels) == (pixels - 1) // ratio + 1 == latents


def test_minimax_h3_style_rule():
    # Spans (1, 4, 4, 4, 4) repeating, T = 5k+2: F = 17k+5, as ComfyUI's video_latent_t.
    rule = LengthRule(head_spans=(), cycle_spans=(1, 4, 4, 4, 4), latent_step=5, first_latents=2)
    assert (rule.pixel_offset, rule.pixel_step) == (5, 17)
    assert rule.describe() == "pixel lengths are 17k+5"
    for frames in (5, 22, 124):
        assert rule.latents_for_pixels(frames) == ((frames - 5) // 17) * 5 + 2
    assert rule.pixels_for_latents(3) == 9


@given(length=st.integers(-50, 500))
@settings(max_examples=80, deadline=None)
def test_nearest_lengths_bracket(length):
    rule = causal_length_rule(4)
    below, above = rule.nearest_valid_pixel_lengths(length)
    assert rule.is_valid_pixel_length(above) and above > length
    assert above - 4 <= length or above == 1
    if below is not None:
        assert rule.is_valid_pixel_length(below) and below < length and above - below <= 8


@pytest.mark.parametrize("kwargs", [
    dict(head_spans=(1,), cycle_spans=()),
    dict(head_spans=(0,), cycle_spans=(4,)),
    dict(head_spans=(1, 1), cycle_spans=(4,), first_latents=1),
    dict(head_spans=(), cycle_spans=(1, 4), latent_step=3, first_latents=1),
])
def test_inconsistent_rules_are_refused(kwargs):
    with pytest.raises(ValueError):
        LengthRule(**kwargs)


# -- the Handoff's tooltips are the catalog summed up ---------------------------------------------

def test_the_tooltip_summaries_name_every_family_of_the_catalog():
    concrete = families_module.concrete_families()
    assert GENERIC_VIDEO not in concrete and set(concrete) == set(known_families()) - {GENERIC_VIDEO}
    canvas = families_module.canvas_steps_text()
    lengths = families_module.length_rules_text()
    for spec in concrete:
        assert f"{spec.canvas_multiple} (" in canvas and spec.short_name in canvas, spec.name
        assert spec.short_name in lengths, spec.name
        if spec.is_video:
            assert spec.length_rule.formula in lengths, spec.name
        if spec.length_example is not None:
            assert spec.length_rule.is_valid_pixel_length(spec.length_example), spec.name
            assert f"e.g. {spec.length_example}" in lengths, spec.name

