"""Expand a native loop (ComfyUI v0.36+ StartLoop/EndLoop) into the prompt its expansion
produces, for ComfyUI trees without loops, so the expanded graph runs through real ComfyUI.

Emulates ``_expand_loop`` of ``comfy_extras/nodes_loop.py`` (Comfy-Org/ComfyUI @023f153c) as read
there, reimplemented here:

- the body: every node that depends on StartLoop and that EndLoop depends on (what validation
  puts in ``_loop_body``); nodes outside it stay as they are and run once;
- per position ``p``: an iteration node ``iteration_p`` (StartLoop's outputs for that iteration:
  index, is_first/is_last only if a body node uses them, list item, the carried value) and a
  copy of every body node with id ``"{p}_{node_id}"``, its links to StartLoop turned into links
  to the iteration node and its links inside the body to the same iteration's copies;
- the carried link: iteration ``p``'s ``current_iteration_value`` is the copy of EndLoop's
  ``next_iteration_value`` source in iteration ``p-1`` (StartLoop's ``initial_iteration_value``
  on the first);
- ordering: iteration ``p`` takes as ``dependency*`` inputs the previous iteration's output value,
  carried value and ``termination*`` sources; a progress node per position, output nodes, chained;
  a result node at the end with the accumulated outputs and the last dependencies;
- every id gets GraphBuilder's prefix ``"{start_id}.{call_index}.{graph_index}."`` (``"12.0.0."``:
  so a body node 7 of iteration 3 runs as ``"12.0.0.3_7"``);
- fingerprints: the iteration node is NaN (always re-runs) unless ``cache_iterations``; the
  progress and result nodes always NaN (tests/integration/zc_loop_test_nodes);
- EndLoop's output used after the loop, with ``accumulate`` off: core overrides EndLoop (its loop
  inputs removed) and, once the result node releases it, EndLoop returns a list of one value, the
  last iteration's ``output_value``, which ComfyUI runs each node after the loop on once. Here a
  link to EndLoop's output becomes a link to the last iteration's copy of that source (the same
  value, the same single run; the node runs after that copy, though not necessarily after the
  progress and result nodes, which hold nothing it reads).

Not emulated (say so where it matters): the display id (``override_display_id``: a real loop's
copies report their original node id as display id; here there is none), that the expansion
happens at run time (here the whole expanded prompt is validated up front, so links into the body
are type-checked, which a real expansion does not do), and EndLoop outputs used after the loop with
``accumulate`` on (a list of every iteration's value) or from a loop of no iteration (an empty list:
the nodes after it do not run).
"""

from __future__ import annotations

import copy

ITERATION, PROGRESS, RESULT = "ZCTestLoopIteration", "ZCTestLoopProgress", "ZCTestLoopResult"
START_OUTPUTS = ("iteration_index", "is_first", "is_last", "list_item", "current_iteration_value")


def _is_link(value) -> bool:
    return isinstance(value, list) and len(value) == 2 and isinstance(value[0], str) and isinstance(value[1], int)


def _links(node: dict):
    return [v for v in node.get("inputs", {}).values() if _is_link(v)]


def loop_body(prompt: dict, start_id: str, end_id: str) -> set[str]:
    """Nodes downstream of StartLoop and upstream of EndLoop (neither included)."""
    downstream, changed = {start_id}, True
    while changed:
        changed = False
        for node_id, node in prompt.items():
            if node_id not in downstream and any(link[0] in downstream for link in _links(node)):
                downstream.add(node_id)
                changed = True
    upstream, todo = set(), [link[0] for link in _links(prompt[end_id])]
    while todo:
        node_id = todo.pop()
        if node_id in upstream or node_id == start_id:
            continue
        upstream.add(node_id)
        todo.extend(link[0] for link in _links(prompt[node_id]))
    return (downstream & upstream) - {start_id, end_id}


def expand_loop(prompt: dict, start_id: str, end_id: str, *, iterations: int | None = None,
                list_items: list | None = None, cache_iterations: bool = False, call_index: int = 0,
                graph_index: int = 0) -> dict:
    """The prompt as ComfyUI runs it once StartLoop ``start_id`` has expanded (see the module)."""
    prompt = copy.deepcopy(prompt)
    start, end = prompt[start_id], prompt[end_id]
    assert start["class_type"] == "StartLoop" and end["class_type"] == "EndLoop"
    body = loop_body(prompt, start_id, end_id)
    outside = {k: v for k, v in prompt.items() if k not in body and k not in (start_id, end_id)}
    values = list(range(len(list_items) if list_items is not None else iterations))
    prefix = f"{start_id}.{call_index}.{graph_index}."
    close = end["inputs"]
    output_source, next_source = close.get("output_value"), close.get("next_iteration_value")
    terminations = [v for k, v in sorted(close.items()) if k.startswith("termination") and _is_link(v)]
    accumulate = bool(close.get("accumulate", False))
    after = set()  # nodes after the loop, fed by EndLoop's output
    for node_id, node in outside.items():
        assert not any(link[0] in body | {start_id} for link in _links(node)), (
            f"node {node_id} uses the loop body's or Start Loop's outputs outside the loop: not emulated")
        if any(link[0] == end_id for link in _links(node)):
            assert not accumulate and _is_link(output_source) and values, (
                f"node {node_id} uses End Loop's output after a loop that accumulates, has no output_value "
                "or no iteration: not emulated")
            after.add(node_id)
    used = {link[1] for node_id in (*body, end_id) for link in _links(prompt[node_id]) if link[0] == start_id}
    carried = start["inputs"].get("initial_iteration_value")
    dependencies: list = []
    progress_link = None
    expanded: dict = {}
    result_inputs: dict = {"close_id": end_id}
    for position in values:
        iteration_id = f"{prefix}iteration_{position}"
        expanded[iteration_id] = {"class_type": ITERATION, "inputs": {
            "iteration_index": position, "is_first": 1 in used and position == 0,
            "is_last": 2 in used and position == len(values) - 1,
            "list_item": list_items[position] if list_items is not None else None,
            "current_iteration_value": carried, "reuse_cache": cache_iterations,
            **{f"dependency{i}": d for i, d in enumerate(dependencies)}}}
        # None constants (no list item, no initial value) are left out: the input is then absent,
        # which the node receives as None all the same, and validation has nothing to check
        inputs = expanded[iteration_id]["inputs"]
        for name in [k for k, v in inputs.items() if v is None]:
            del inputs[name]
        copies = {node_id: f"{prefix}{position}_{node_id}" for node_id in body}

        def relinked(value, copies=copies, iteration_id=iteration_id):
            if not _is_link(value):
                return value
            if value[0] == start_id:
                return [iteration_id, value[1]]
            if value[0] in copies:
                return [copies[value[0]], value[1]]
            return value

        for node_id, copy_id in copies.items():
            original = prompt[node_id]
            expanded[copy_id] = {"class_type": original["class_type"],
                                 "inputs": {k: relinked(v) for k, v in original.get("inputs", {}).items()}}
        dependencies = []
        if _is_link(output_source):
            out = relinked(output_source)
            last_output = out
            if accumulate:
                result_inputs[f"output{position}"] = out
            elif position == len(values) - 1:
                result_inputs["output0"] = out
            dependencies.append(out)
        if _is_link(next_source):
            carried = relinked(next_source)
            dependencies.append(carried)
        dependencies.extend(relinked(t) for t in terminations)
        progress_id = f"{prefix}progress_{position}"
        expanded[progress_id] = {"class_type": PROGRESS, "inputs": {
            "start_id": start_id, "position": position + 1, "total": len(values),
            **{f"dependency{i}": d for i, d in enumerate(dependencies)},
            **({"previous_progress": progress_link} if progress_link is not None else {})}}
        progress_link = [progress_id, 0]
    if progress_link is not None:
        result_inputs["progress"] = progress_link
    result_inputs.update({f"dependency{i}": d for i, d in enumerate(dependencies)})
    expanded[f"{prefix}result"] = {"class_type": RESULT, "inputs": result_inputs}
    for node_id in after:  # End Loop's output (a list of the last output_value): that value itself
        inputs = outside[node_id]["inputs"]
        for name, value in inputs.items():
            if _is_link(value) and value[0] == end_id:
                inputs[name] = list(last_output)
    return {**outside, **expanded}
