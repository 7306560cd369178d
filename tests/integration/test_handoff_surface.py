"""The Handoff's node surface: the ten original inputs first, the expert rest folded where this
ComfyUI's V3 inputs take ``advanced=True`` (feature-detected), names and order unchanged so saved
workflows keep their links and widget values (tests/integration/test_examples.py validates and
runs the shipped examples against the same schema)."""

from __future__ import annotations

import inspect
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SPEC = ["clip", "vae", "prompt", "width", "height", "length", "fallback_first_frame", "buffer_tag",
        "continuity_mode", "blend_ratio"]
SHOWN = ["negative", "model", "continuity"]  # sockets every shipped example links
FOLDED = ["negative_prompt", "tail_frames", "adapter", "generation", "color_anchor", "bridge_vae", "positive"]


@pytest.fixture(scope="module")
def handoff_inputs(comfyui, zc_test_nodes):
    name = str(REPO.resolve()).replace(".", "_x_")
    sys.modules.get(name) or comfyui.load_custom_node(REPO)
    types = comfyui.nodes.NODE_CLASS_MAPPINGS["ZeroCopyLatentHandoff"].INPUT_TYPES()
    return {**types.get("required", {}), **types.get("optional", {})}


def test_the_spec_inputs_come_first_and_the_expert_rest_is_folded_where_supported(handoff_inputs):
    from comfy_api.latest import io

    # ComfyUI lists required inputs before optional ones: fallback_first_frame (optional) ends the ten
    names = list(handoff_inputs)
    assert names[:10] == [n for n in SPEC if n != "fallback_first_frame"] + ["fallback_first_frame"]
    assert names[10:] == ["negative_prompt", "negative", "model", "tail_frames", "adapter", "generation",
                          "continuity", "color_anchor", "bridge_vae", "positive"]
    supported = "advanced" in inspect.signature(io.Input.__init__).parameters
    folded = sorted(name for name, entry in handoff_inputs.items()
                    if len(entry) > 1 and isinstance(entry[1], dict) and entry[1].get("advanced"))
    assert folded == (sorted(FOLDED) if supported else [])


def test_the_size_tooltips_name_every_family_of_the_catalog(handoff_inputs):
    from zc_pack.zc_continuity import families

    width, length = handoff_inputs["width"][1]["tooltip"], handoff_inputs["length"][1]["tooltip"]
    for spec in families.concrete_families():
        assert f"{spec.canvas_multiple} (" in width and spec.short_name in width, spec.name
        assert spec.short_name in length, spec.name
