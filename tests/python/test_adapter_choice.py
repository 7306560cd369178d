"""The family catalog and the Handoff's adapters agree.

The catalog (zc_continuity/families.py) is the one record of which adapters serve a family and
which one ``adapter=auto`` picks; the adapters in zc_nodes/adapters/ take their families from it.
These tests fail when the two drift apart: an adapter file no family lists, a family naming an
adapter that does not exist, an auto choice that is not one of the family's own adapters, a
model variant whose probe the node layer lacks or answers wrongly. They also pin what auto picks
per family and the ``adapter`` options, which users and saved workflows see.
"""

from __future__ import annotations

import importlib
import sys
import types
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from zc_pack.zc_continuity import families

REPO = Path(__file__).resolve().parents[2]
PACK = "zc_adapter_choice_pack"


@pytest.fixture(scope="module")
def pack():
    """The node layer's adapters package and ComfyUI glue, imported as part of the pack (their
    imports are relative to it); neither needs ComfyUI to be imported."""
    root = types.ModuleType(PACK)
    root.__path__ = [str(REPO)]
    sys.modules[PACK] = root
    try:
        adapters = importlib.import_module(f"{PACK}.zc_nodes.adapters")
        yield SimpleNamespace(adapters=adapters,
                              calls=sys.modules[f"{PACK}.zc_nodes.comfy_calls"],
                              families=sys.modules[f"{PACK}.zc_continuity.families"],
                              error=sys.modules[f"{PACK}.zc_continuity.errors"].ContinuityError,
                              inpaint=sys.modules[f"{PACK}.zc_nodes.adapters.temporal_inpaint"])
    finally:
        for name in [n for n in sys.modules if n == PACK or n.startswith(PACK + ".")]:
            del sys.modules[name]


def catalog(pack):
    return pack.families.known_families()


# -- the catalog and the adapter files name the same adapters -----------------------------------

def test_every_adapter_file_is_listed_by_a_family_and_every_listed_adapter_exists(pack):
    found = set(pack.adapters.FOUND)
    listed = {name for spec in catalog(pack) for name in spec.adapters}
    assert found - listed == set(), "adapters in zc_nodes/adapters/ that no catalog row lists"
    assert listed - found == set(), "adapters the catalog lists that zc_nodes/adapters/ does not define"
    assert set(pack.adapters.REGISTRY) == found


def test_an_adapter_serves_exactly_the_families_whose_row_lists_it(pack):
    for name, adapter in pack.adapters.REGISTRY.items():
        assert "families" not in vars(type(adapter)), (
            f"{type(adapter).__name__} restates its families; the catalog rows say them")
        listing = {spec.name for spec in catalog(pack) if name in spec.adapters}
        assert set(adapter.families) == listing
        for spec in catalog(pack):
            assert adapter.supports(spec) == (spec.name in listing)


def test_every_video_family_can_be_inpainted_and_no_family_lists_the_pixel_bridge(pack):
    for spec in catalog(pack):
        assert families.ADAPTER_PIXEL_BRIDGE not in spec.adapters, spec.name
        assert (families.ADAPTER_TEMPORAL_INPAINT in spec.adapters) == spec.is_video, spec.name


def test_temporal_inpaint_takes_its_per_family_notes_from_the_rows(pack):
    source = Path(pack.inpaint.__file__).read_text()
    for spec in catalog(pack):
        assert f'"{spec.name}"' not in source, f"temporal_inpaint names {spec.name}; its row says it"
        if spec.inpaint.hold_check:
            assert spec.inpaint.hold_check in pack.inpaint.HOLD_CHECKS, spec.name
            assert not spec.inpaint.hold, spec.name
        assert not spec.inpaint.core_differences or spec.inpaint.core_node, spec.name


# -- the auto choice is one of the family's own adapters ---------------------------------------

def test_every_auto_choice_is_a_legal_insertion_point_of_its_family(pack):
    for spec in catalog(pack):
        choices = [spec.auto, *(variant.auto for variant in spec.variants)]
        for choice in choices:
            assert choice.adapter in spec.adapters, (spec.name, choice)
            assert pack.adapters.REGISTRY[choice.adapter].supports(spec)
            assert choice.why
        variants = [variant.name for variant in spec.variants]
        assert len(set(variants)) == len(variants), spec.name


AUTO = {  # family: (auto adapter, {variant: adapter})
    "wan21": ("temporal_inpaint", {"i2v": "wan_i2v"}),
    "generic_video": ("temporal_inpaint", {}),
    "wan22_5b": ("temporal_inpaint", {}),
    "hunyuan_video": ("temporal_inpaint", {"i2v_concat": "hunyuan_i2v"}),
    "hunyuan_video15": ("hunyuan15_i2v", {"t2v": "temporal_inpaint"}),
    "ltxv": ("ltx_latent_guide", {}),
    "ltx2": ("ltx_latent_guide", {}),
    "minimax_h3": ("minimax_h3_keyframe", {}),
    "flux": ("flux_img2img", {}),
}


def test_what_auto_picks_per_family_and_recorded_variant(pack):
    assert {spec.name for spec in catalog(pack)} == set(AUTO)
    for spec in catalog(pack):
        default, variants = AUTO[spec.name]
        assert {variant.name: variant.auto.adapter for variant in spec.variants} == variants
        assert pack.adapters.auto_choice(spec, None, None)[0] == default
        assert pack.adapters.auto_choice(spec, None, {"model_variant": "other"})[0] == default
        for variant, adapter in variants.items():
            assert pack.adapters.auto_choice(spec, None, {"model_variant": variant})[0] == adapter
            adapter_obj, why = pack.adapters.choose("auto", spec, None, {"model_variant": variant})
            assert adapter_obj.name == adapter and why.startswith("auto: ")


def test_the_adapter_options_are_unchanged(pack):
    assert pack.adapters.COMBO == [
        "auto", "temporal_inpaint", "wan_i2v", "hunyuan_i2v", "hunyuan15_i2v", "ltx_latent_guide",
        "minimax_h3_keyframe", "flux_img2img", "flux_kontext_reference", "pixel_bridge"]
    assert families.ADAPTER_WAN_I2V == "wan_i2v" == pack.adapters.REGISTRY["wan_i2v"].name


def test_a_refused_adapter_names_what_it_serves_and_what_the_family_takes(pack):
    flux = pack.families.family_by_name("flux")
    with pytest.raises(pack.error, match=r"'temporal_inpaint' serves video families, but the family "
                                              r"is FLUX\.1; use 'auto' \(which picks flux_img2img\) or one "
                                              r"of flux_img2img, flux_kontext_reference"):
        pack.adapters.choose("temporal_inpaint", flux, None, None)
    wan = pack.families.family_by_name("wan21")
    with pytest.raises(pack.error, match=r"'ltx_latent_guide' serves ltxv, ltx2, but the family"):
        pack.adapters.choose("ltx_latent_guide", wan, None, None)


# -- each family's probe: a connected model of the variant picks the variant's adapter ---------

def wan(i2v: bool):
    return SimpleNamespace(model=SimpleNamespace(image_to_video=i2v))


def hunyuan(concat: bool):
    return SimpleNamespace(model=SimpleNamespace(concat_keys=("concat_image",) if concat else ()))


def hunyuan15(image_channels: bool):
    weight = torch.empty(8, 32 * 2 + 1 if image_channels else 32)
    dit = SimpleNamespace(img_in=SimpleNamespace(proj=SimpleNamespace(weight=weight)))
    return SimpleNamespace(model=SimpleNamespace(diffusion_model=dit,
                                                 latent_format=SimpleNamespace(latent_channels=32)))


MODELS = {  # family: (a model of the variant, one of none)
    "wan21": (wan(True), wan(False)),
    "hunyuan_video": (hunyuan(True), hunyuan(False)),
    "hunyuan_video15": (hunyuan15(False), hunyuan15(True)),
}


def test_every_variant_probe_exists_and_every_probe_serves_a_variant(pack):
    probes = {variant.probe for spec in catalog(pack) for variant in spec.variants}
    assert probes == set(pack.calls.MODEL_PROBES)
    assert {spec.name for spec in catalog(pack) if spec.variants} == set(MODELS)


@pytest.mark.parametrize("family", sorted(MODELS))
def test_each_familys_probe_tells_its_variant_from_a_connected_model(pack, family):
    spec = pack.families.family_by_name(family)
    (variant,) = spec.variants
    of_variant, plain = MODELS[family]
    assert pack.calls.MODEL_PROBES[variant.probe](of_variant) is True
    assert pack.calls.MODEL_PROBES[variant.probe](plain) is False
    assert pack.adapters.model_variant(spec, of_variant) == variant.name
    assert pack.adapters.model_variant(spec, plain) is None
    assert pack.adapters.auto_choice(spec, of_variant, None) == (variant.auto.adapter, variant.auto.why)
    assert pack.adapters.auto_choice(spec, plain, None) == (spec.auto.adapter, spec.auto.why)
    # the connected model decides over what the Store recorded
    assert pack.adapters.auto_choice(spec, plain, {"model_variant": variant.name})[0] == spec.auto.adapter


def test_a_requested_wan_i2v_needs_an_image_to_video_model(pack):
    spec = pack.families.family_by_name("wan21")
    assert pack.adapters.choose("wan_i2v", spec, wan(True), None)[1] == "requested"
    with pytest.raises(pack.error, match="adapter 'wan_i2v' needs an image-to-video Wan model"):
        pack.adapters.choose("wan_i2v", spec, wan(False), None)
