"""The shipped example workflows' layout, read from the files: no two nodes overlap, counting
the title bar a frontend draws above a node's saved position and the room below its saved size
that frontends take when they draw a node taller than saved (Nodes 2.0 on frontend 1.58.1 draws
loaders up to 26 px taller; tests/integration/test_browser_ui.py measures every example as each
frontend and renderer draws it). Every group holds its nodes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((REPO / "example_workflows").glob("*.json"))
TITLE = 30  # LiteGraph.NODE_TITLE_HEIGHT
ROOM = 26  # the most Nodes 2.0 added to a saved height (frontend 1.58.1, every example)


def boxes(workflow: dict) -> list[tuple[str, tuple[float, float, float, float]]]:
    out = []
    for node in workflow["nodes"]:
        (x, y), (w, h) = node["pos"], node["size"]
        out.append((f"{node.get('title') or node['type']} (node {node['id']})", (x, y - TITLE, w, h + TITLE + ROOM)))
    return out


def overlaps(items):
    found = []
    for i, (a, (ax, ay, aw, ah)) in enumerate(items):
        for b, (bx, by, bw, bh) in items[i + 1:]:
            dx, dy = min(ax + aw, bx + bw) - max(ax, bx), min(ay + ah, by + bh) - max(ay, by)
            if dx > 0 and dy > 0:
                found.append(f"{a} and {b} overlap by {dx:g} x {dy:g}")
    return found


def test_there_are_examples():
    assert len(EXAMPLES) >= 8


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_no_two_nodes_of_an_example_overlap(path):
    problems = overlaps(boxes(json.loads(path.read_text())))
    assert not problems, "\n".join(problems)


def test_the_check_finds_an_overlap():
    """The check itself: the Wan 2.1 example's VRAM pin as it was shipped before (230 high, with
    ModelSamplingSD3 at y 390) overlaps, as frontend 1.58.1 under Nodes 2.0 drew it."""
    pin = {"id": 1, "type": "ZeroCopyVRAMPin", "pos": [0, 120], "size": [340, 230]}
    sampling = {"id": 2, "type": "ModelSamplingSD3", "pos": [0, 390], "size": [340, 60]}
    assert overlaps(boxes({"nodes": [pin, sampling]})) == [
        "ZeroCopyVRAMPin (node 1) and ModelSamplingSD3 (node 2) overlap by 340 x 16"]


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_every_group_holds_its_nodes_whole_or_not_at_all(path):
    workflow = json.loads(path.read_text())
    for group in workflow["groups"]:
        gx, gy, gw, gh = group["bounding"]
        inside = []
        for name, (x, y, w, h) in boxes(workflow):
            dx, dy = min(gx + gw, x + w) - max(gx, x), min(gy + gh, y + h - ROOM) - max(gy, y)
            if dx > 0 and dy > 0:  # a node that touches a group lies inside it
                assert gx <= x and x + w <= gx + gw and gy <= y and y + h - ROOM <= gy + gh, (group["title"], name)
                inside.append(name)
        assert inside, f"group {group['title']!r} holds no node"
