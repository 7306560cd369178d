"""The example workflows against real ComfyUI: every example checked against the node
schemas (node types, input names and types, widget values, links), the shipped files
equal to what tools/build_examples.py builds, every pack node documented, and the Wan
2.1 I2V 3-shot chain run end to end on the tiny test models (same graph, tiny profile).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))

PACK_NODES = ("ZeroCopyLatentStore", "ZeroCopyLatentHandoff", "ZeroCopyLatentLoad", "ZeroCopyFilmAssemble", "ZeroCopyFilmRender",
              "ZeroCopyVRAMPin")


@pytest.fixture(scope="session")
def loaded_pack(comfyui, zc_test_nodes, tmp_path_factory):
    """This pack inside ComfyUI (reusing it if another test module loaded it already)."""
    module = sys.modules.get(str(REPO).replace(".", "_x_"))
    if module is None:
        os.environ.setdefault("ZEROCOPY_SPILL_DIR", str(tmp_path_factory.mktemp("zc_spill_examples")))
        module = comfyui.load_custom_node(REPO)
    return module


# Core nodes the shipped examples use that ComfyUI releases before v0.33.0 lack
# (the examples, like pyproject's requires-comfyui, target v0.33.0 and later).
CORE_NODES_OF_THE_EXAMPLES = ("SaveAnimatedWEBP", "CreateVideo", "LTXVConcatAVLatent",
                              "MiniMaxH3ImageToVideo")


@pytest.fixture(scope="session")
def schemas(comfyui, loaded_pack):
    import build_examples
    import nodes
    from loop_nodes import LoopSchemas

    for types, _, variable in build_examples.NEEDS_PACKS.values():  # peer packs, when given
        if os.environ.get(variable):
            comfyui.load_peer_pack(os.environ[variable], types[0])  # else its examples skip, saying why

    missing = [n for n in CORE_NODES_OF_THE_EXAMPLES if n not in nodes.NODE_CLASS_MAPPINGS]
    if missing:
        pytest.skip(f"this ComfyUI lacks core nodes the examples use ({', '.join(missing)}); "
                    "the examples target ComfyUI v0.33.0 and later")
    return LoopSchemas()  # with core's StartLoop/EndLoop as read (tools/loop_nodes.py): no tree here has loops


def example_files():
    return sorted((REPO / "example_workflows").glob("*.json"))


def test_there_is_an_example_per_family():
    names = {path.stem for path in example_files()}
    assert {"wan21_i2v_3shot_chain", "wan22_5b_2shot_chain", "ltx2_av_2shot_chain",
            "minimax_h3_av_2shot_chain", "flux_kontext_stills_chain"} <= names


@pytest.mark.parametrize("path", example_files(), ids=lambda p: p.stem)
def test_example_matches_the_node_schemas(schemas, path):
    import build_examples
    from comfy_workflows import validate

    why = build_examples.missing_pack(path.stem, schemas)
    if why:
        pytest.skip(f"skipped: {why}")

    workflow = json.loads(path.read_text())
    problems = validate(workflow, schemas)
    assert not problems, "\n".join(problems)
    types = {node["type"] for node in workflow["nodes"]}
    assert "ZeroCopyLatentStore" in types and types & {"ZeroCopyLatentHandoff", "ZeroCopyLatentLoad"}
    assert not any(t.startswith("ZCTest") for t in types), "a shipped example uses a test-only node"


def test_shipped_examples_and_their_index_are_what_the_builder_makes(schemas):
    import build_examples

    built = build_examples.build_all(schemas)
    stale = [name for name, text in built.items()
             if (REPO / "example_workflows" / f"{name}.json").read_text() != text]
    if (REPO / "examples" / "README.md").read_text() != build_examples.index_text(built, schemas):
        stale.append("examples/README.md")
    assert not stale, f"out of date: {stale}; run COMFYUI_PATH=... python tools/build_examples.py"
    # ComfyUI lists the JSON files of examples/ as templates too: a copy there would show twice
    assert not list((REPO / "examples").glob("*.json"))


def test_every_pack_node_has_a_description_and_input_tooltips(schemas):
    import nodes

    present = [name for name in PACK_NODES if name in nodes.NODE_CLASS_MAPPINGS]
    assert {"ZeroCopyLatentStore", "ZeroCopyLatentHandoff"} <= set(present)
    for name in present:
        info = schemas.info(name)
        assert info.get("description", "").strip(), f"{name} has no description"
        for section in ("required", "optional"):
            for input_name, spec in info["input"].get(section, {}).items():
                options = spec[1] if len(spec) > 1 else {}
                assert str(options.get("tooltip", "")).strip(), f"{name}.{input_name} has no tooltip"


def test_wan21_i2v_example_runs_on_the_tiny_models(comfyui, schemas, loaded_pack, tiny_wan21_i2v, wan21_vae):
    """The shipped Wan 2.1 I2V chain's graph, with the tiny profile: three shots, the second and
    third continued from the store, every handoff certified bit-identical."""
    import build_examples
    from comfy_workflows import to_api_prompt, validate

    tag = "zc_example_chain"
    runtime = sys.modules[loaded_pack.__name__ + ".zc_nodes.runtime"]
    with contextlib.suppress(Exception):  # a tag left by an earlier run, or none
        runtime.store().drop(tag, disk=True)
    workflow = build_examples.wan21_i2v_chain(
        schemas, build_examples.tiny_profile(tiny_wan21_i2v.name, wan21_vae.name, tag)).to_json()
    release = json.loads((REPO / "example_workflows" / "wan21_i2v_3shot_chain.json").read_text())
    shipped_types = {n["type"] for n in release["nodes"]}
    tiny_types = {n["type"] for n in workflow["nodes"]}
    # the tiny graph differs only where the models cannot be tiny
    assert tiny_types - shipped_types == {"ZCTestClip", "ZCTestNoiseImage"}
    assert shipped_types - tiny_types == {"CLIPLoader", "LoadImage", "CLIPVisionLoader", "CLIPVisionEncode"}
    assert not validate(workflow, schemas)
    prompt = to_api_prompt(workflow, schemas)
    residency = sys.modules[loaded_pack.__name__ + ".zc_residency"]
    try:
        run = comfyui.run(prompt)
    finally:  # the example's VRAM pin locks the model process-wide: leave no lock to later tests
        residency.get_service().release_all("example test finished")
    handoffs = [nid for nid, node in prompt.items() if node["class_type"] == "ZeroCopyLatentHandoff"]
    assert len(handoffs) == 2
    for nid in handoffs:
        info = comfyui.output(run, nid, 3)
        assert "bit-identical: yes" in info, info
    entry = next(t for t in runtime.store().describe()["tags"] if t["tag"] == tag)
    assert entry["last_generation"] == 3
    saved = sorted(p.name for p in Path(comfyui.output_dir, "zerocopy").glob("shot*.webp"))
    assert len(saved) >= 3, saved


def test_the_loop_example_expands_as_a_native_loop_does(schemas):
    """The native-loop example's API prompt (what the frontend queues), expanded the way core's
    StartLoop does (loop_emulation: ``_expand_loop`` of comfy_extras/nodes_loop.py @023f153c as
    read): one copy of the body per iteration with ids "{start}.0.0.{p}_{id}", iteration p's
    Handoff continuing iteration p-1's Store through the carried value, the models and the start
    image outside (one node for all iterations), no decode in the body (the loop carries tokens,
    never frames), and the film's render after the loop, fed the last Store's token."""
    from comfy_workflows import to_api_prompt, validate
    from loop_emulation import expand_loop, loop_body

    workflow = json.loads((REPO / "example_workflows" / "wan21_i2v_loop_film.json").read_text())
    assert not validate(workflow, schemas)
    prompt = to_api_prompt(workflow, schemas)
    ids = {node["class_type"]: node_id for node_id, node in prompt.items()}
    start, end = ids["StartLoop"], ids["EndLoop"]
    assert prompt[start]["inputs"]["mode"] == "simple"
    iterations = prompt[start]["inputs"]["mode.num_iterations"]
    assert iterations == 6
    body = loop_body(prompt, start, end)
    assert {prompt[i]["class_type"] for i in body} == {"ZeroCopyLatentHandoff", "KSampler", "ZeroCopyLatentStore"}
    assert "VAEDecode" not in {prompt[i]["class_type"] for i in body}, "frames decoded (and held) in the loop"
    # End Loop: the Store's token both carried and returned, nothing accumulated
    store = ids["ZeroCopyLatentStore"]
    assert prompt[end]["inputs"] == {"accumulate": False, "output_value": [store, 1],
                                     "next_iteration_value": [store, 1]}
    after = [i for i, node in prompt.items() if [end, 0] in node["inputs"].values()]
    assert [prompt[i]["class_type"] for i in after] == ["ZeroCopyFilmRender"]
    render = prompt[after[0]]["inputs"]
    assert render["vae"] == [ids["VAELoader"], 0] and render["continuity"] == [end, 0]
    assert (render["format"], render["frame_rate"], render["folder"]) == ("h264-mp4", 16.0, "zerocopy")
    out = expand_loop(prompt, start, end, iterations=iterations)
    prefix = f"{start}.0.0."
    hand, sampler = ids["ZeroCopyLatentHandoff"], ids["KSampler"]
    # after the loop: one render (not copied per iteration), of the last iteration's stored shot
    assert out[after[0]]["inputs"]["continuity"] == [f"{prefix}{iterations - 1}_{store}", 1]
    assert not [k for k in out if k.endswith(f"_{after[0]}")]
    for p in range(iterations):
        iteration = out[f"{prefix}iteration_{p}"]["inputs"]
        assert out[f"{prefix}{p}_{hand}"]["inputs"]["continuity"] == [f"{prefix}iteration_{p}", 4]
        assert out[f"{prefix}{p}_{sampler}"]["inputs"]["seed"] == [f"{prefix}iteration_{p}", 0]
        assert iteration["iteration_index"] == p
        assert iteration.get("current_iteration_value") == (None if p == 0 else [f"{prefix}{p - 1}_{store}", 1])
        # outside the loop: the same loader, image and VAE for every iteration
        assert out[f"{prefix}{p}_{hand}"]["inputs"]["fallback_first_frame"] == [ids["LoadImage"], 0]
        assert out[f"{prefix}{p}_{hand}"]["inputs"]["vae"] == [ids["VAELoader"], 0]
    once = ("UNETLoader", "ZeroCopyVRAMPin", "CLIPLoader", "VAELoader", "LoadImage")
    assert all(ids[kind] in out for kind in once)
    copied = [f"{prefix}{p}_{ids[kind]}" for p in range(iterations) for kind in once]
    assert not [k for k in copied if k in out], "a node outside the loop was copied into an iteration"
