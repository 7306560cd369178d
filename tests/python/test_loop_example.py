"""The native-loop example (example_workflows/wan21_i2v_loop_film.json, built by
tools/build_examples.py) against core's loop nodes as read: the schema of StartLoop and EndLoop
in ``comfy_extras/nodes_loop.py`` of Comfy-Org/ComfyUI at commit 023f153c (transcribed below by
reading it; no ComfyUI here has loops, so this is a check against that reading, not against a
running ComfyUI), and the wiring docs/compatibility.md ("Loops") gives for the Store and Handoff:
the loop carries continuity tokens only (no frame is decoded in the body, none accumulated by End
Loop) and ZeroCopyFilmRender renders the film from the store after the loop. Its expansion through
real ComfyUI is tests/integration/test_loop_film.py's emulation."""

from __future__ import annotations

import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "example_workflows" / "wan21_i2v_loop_film.json"

# As read at 023f153c: (name, V3 type, optional); MatchType sockets take the linked type.
START_LOOP_INPUTS = [
    ("mode", "DynamicCombo", False),  # options: simple [num_iterations], For [...], List [list]
    ("cache_iterations", "Boolean", False),  # default False, advanced
    ("parent_iteration", "Int", True),  # force_input
    ("initial_iteration_value", "MatchType", True),
]
START_LOOP_MODE_OPTIONS = {"simple": ["num_iterations"], "For": ["start_iteration_index", "max_iteration", "step"],
                           "List": ["list"]}
START_LOOP_OUTPUTS = [("iteration_index", "Int"), ("is_first", "Boolean"), ("is_last", "Boolean"),
                      ("list_item", "MatchType"), ("current_iteration_value", "MatchType")]
END_LOOP_INPUTS = [("output_value", "MatchType", True), ("next_iteration_value", "MatchType", True),
                   ("accumulate", "Boolean", False), ("terminations", "Autogrow", True)]
END_LOOP_OUTPUTS = [("outputs", "MatchType")]  # is_output_list
# V3 type -> the socket type the frontend shows (MatchType: the linked type, "*" until linked)
FRONTEND_TYPE = {"Int": "INT", "Boolean": "BOOLEAN", "MatchType": "*"}


def example():
    return json.loads(EXAMPLE.read_text())


def by_type(workflow, kind):
    (node,) = [n for n in workflow["nodes"] if n["type"] == kind]
    return node


def links(workflow):
    """(source type, source output name) -> [(target type, target input name)]."""
    nodes = {n["id"]: n for n in workflow["nodes"]}
    out = {}
    for _, source, slot, target, target_slot, _ in workflow["links"]:
        src, dst = nodes[source], nodes[target]
        key = (src["type"], src["outputs"][slot]["name"])
        out.setdefault(key, []).append((dst["type"], dst["inputs"][target_slot]["name"]))
    return out


def test_start_loop_matches_the_schema_as_read():
    start = by_type(example(), "StartLoop")
    assert [(o["name"], o["type"]) for o in start["outputs"]] == [
        (name, FRONTEND_TYPE[kind]) for name, kind in START_LOOP_OUTPUTS]
    sockets = {name: kind for name, kind, _ in START_LOOP_INPUTS if kind in ("Int", "MatchType")}
    assert {i["name"]: i["type"] for i in start["inputs"]} == {n: FRONTEND_TYPE[k] for n, k in sockets.items()}
    # widgets, in the frontend's order: the DynamicCombo, its chosen option's inputs, cache_iterations
    mode, iterations, cache = start["widgets_values"]
    assert mode == "simple" and START_LOOP_MODE_OPTIONS[mode] == ["num_iterations"]
    assert isinstance(iterations, int) and iterations >= 0  # num_iterations: min 0
    assert cache is False  # cache_iterations: default False (the example works either way)


def test_end_loop_matches_the_schema_as_read():
    end = by_type(example(), "EndLoop")
    assert [(o["name"], o["type"]) for o in end["outputs"]] == [
        (name, FRONTEND_TYPE[kind]) for name, kind in END_LOOP_OUTPUTS]
    read = {name for name, kind, _ in END_LOOP_INPUTS if kind == "MatchType"}
    assert {i["name"] for i in end["inputs"]} == read
    # accumulate off: End Loop returns the last iteration's output_value only (never the film's frames)
    assert end["widgets_values"] == [False]


def test_the_builders_schema_is_the_same_reading():
    sys.path.insert(0, str(REPO / "tools"))
    from loop_nodes import AS_READ

    start, end = AS_READ["StartLoop"], AS_READ["EndLoop"]
    assert start["output_name"] == [name for name, _ in START_LOOP_OUTPUTS]
    drawn = [*start["input"]["required"], *start["input"]["optional"]]
    assert drawn == ["mode", "mode.num_iterations", "cache_iterations", "parent_iteration", "initial_iteration_value"]
    assert start["input"]["required"]["mode"][0] == list(START_LOOP_MODE_OPTIONS)
    assert start["input"]["required"]["mode.num_iterations"][1] == {
        "default": 4, "min": 0, "tooltip": "Number of times to execute the loop body."}
    assert end["output_name"] == ["outputs"]
    assert [*end["input"]["required"], *end["input"]["optional"]] == ["accumulate", "output_value",
                                                                      "next_iteration_value"]


def test_the_wiring_is_the_documented_one():
    workflow = example()
    wired = links(workflow)
    # the carried shot: Store -> End Loop -> (next iteration's) Start Loop -> Handoff
    # and the same token is End Loop's output_value: after the loop, End Loop gives the last shot's token
    assert sorted(wired[("ZeroCopyLatentStore", "continuity")]) == [("EndLoop", "next_iteration_value"),
                                                                   ("EndLoop", "output_value")]
    assert wired[("StartLoop", "current_iteration_value")] == [("ZeroCopyLatentHandoff", "continuity")]
    assert wired[("StartLoop", "iteration_index")] == [("KSampler", "seed")]
    assert ("ZeroCopyLatentStore", "samples") not in wired  # no frame leaves the Store: nothing decoded in the loop
    # after the loop: the render of that token's film, from the store, with the loaders' VAE
    assert wired[("EndLoop", "outputs")] == [("ZeroCopyFilmRender", "continuity")]
    assert ("ZeroCopyFilmRender", "vae") in wired[("VAELoader", "VAE")]
    assert ("ZeroCopyLatentHandoff", "fallback_first_frame") in wired[("LoadImage", "IMAGE")]
    render = by_type(workflow, "ZeroCopyFilmRender")
    # widgets: buffer_tag, format, frame_rate, quality, folder, ... (the Store's tag; the linked token wins)
    tag, fmt, rate, _, folder = render["widgets_values"][:5]
    assert (tag, fmt, rate, folder) == (by_type(workflow, "ZeroCopyLatentStore")["widgets_values"][0], "h264-mp4",
                                        16.0, "zerocopy")
    assert not [n for n in workflow["nodes"] if n["type"] in ("VAEDecode", "SaveAnimatedWEBP", "SaveImage")]


def test_the_body_holds_the_shot_and_no_terminal_output():
    """Validation's body (downstream of Start Loop, upstream of End Loop): Handoff, KSampler,
    Store; loaders, the VRAM pin and the render outside. No VAE Decode in the body: no frame is made
    in the loop, so none is accumulated (the film is rendered from the store after it, one shot in
    memory at a time). No output node in the body (a terminal output there is validation's
    loop_escape)."""
    workflow = example()
    nodes = {n["id"]: n for n in workflow["nodes"]}
    edges = [(link[1], link[3]) for link in workflow["links"]]
    start, end = by_type(workflow, "StartLoop")["id"], by_type(workflow, "EndLoop")["id"]

    def reach(origin, forward):
        seen, todo = set(), [origin]
        while todo:
            here = todo.pop()
            for a, b in edges:
                step = b if forward else a
                if (a if forward else b) == here and step not in seen:
                    seen.add(step)
                    todo.append(step)
        return seen

    body = (reach(start, True) & reach(end, False)) - {start, end}
    assert sorted(nodes[i]["type"] for i in body) == ["KSampler", "ZeroCopyLatentHandoff", "ZeroCopyLatentStore"]
    assert "VAEDecode" not in {nodes[i]["type"] for i in body}, "frames decoded in the loop body"
    outside = {nodes[i]["type"] for i in nodes if i not in body}
    assert {"UNETLoader", "ZeroCopyVRAMPin", "CLIPLoader", "VAELoader", "LoadImage", "ZeroCopyFilmRender"} <= outside
    # the render runs after the loop: downstream of End Loop, not of the body alone
    assert by_type(workflow, "ZeroCopyFilmRender")["id"] in reach(end, True)
    consumed = {a for a, _ in edges}
    assert all(i in consumed for i in body), "a body node whose output nothing uses"
