"""The template thumbnails: example_workflows/<name>.jpg beside each <name>.json, a diagram of the
workflow drawn from the file itself (its groups, its nodes at their saved places with their
titles, its links), so that the picture shows what loading the template gives and nothing else.

ComfyUI serves a custom node pack's example_workflows/ folder as templates (GET
/api/workflow_templates lists the names; /api/workflow_templates/<pack>/<name>.json the workflow)
and the frontends ask for <name>.jpg beside it as the card's picture. Run after changing an
example (tools/build_examples.py writes the JSON):

    python tools/template_thumbnails.py          # write every thumbnail
    python tools/template_thumbnails.py --check  # exit 1 when one is missing or out of date

Pillow only; the pictures are committed, never fetched.
"""

from __future__ import annotations

import argparse
import io
import json
import sys
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "example_workflows"
SIZE = (400, 250)  # the template card's picture is about 16:10
MARGIN = 10
QUALITY = 70
TITLE_HEIGHT = 30  # LiteGraph.NODE_TITLE_HEIGHT: a node's title bar sits above its saved position
BACKGROUND = (32, 32, 36)
NODE = (58, 58, 64)
NODE_TITLE = (78, 78, 86)
ZEROCOPY = (46, 92, 140)  # the pack's own nodes stand out
ZEROCOPY_TITLE = (70, 130, 190)
NOTE = (70, 64, 40)
LINK = (150, 150, 160)
TEXT = (230, 230, 235)


def _font(size: int) -> ImageFont.ImageFont:
    return ImageFont.load_default(size=size)


def _label(node: dict) -> str:
    return node.get("title") or node["type"]


def render(workflow: dict) -> Image.Image:
    """The diagram of one workflow: groups, links, then nodes over them, scaled to fit SIZE."""
    boxes = {n["id"]: (n["pos"][0], n["pos"][1] - TITLE_HEIGHT, n["size"][0], n["size"][1] + TITLE_HEIGHT)
             for n in workflow["nodes"]}
    rects = list(boxes.values()) + [tuple(g["bounding"]) for g in workflow.get("groups", [])]
    x0 = min(x for x, _, _, _ in rects)
    y0 = min(y for _, y, _, _ in rects)
    x1 = max(x + w for x, _, w, _ in rects)
    y1 = max(y + h for _, y, _, h in rects)
    scale = min((SIZE[0] - 2 * MARGIN) / (x1 - x0), (SIZE[1] - 2 * MARGIN) / (y1 - y0))
    ox = (SIZE[0] - (x1 - x0) * scale) / 2
    oy = (SIZE[1] - (y1 - y0) * scale) / 2

    def at(x: float, y: float) -> tuple[float, float]:
        return (ox + (x - x0) * scale, oy + (y - y0) * scale)

    image = Image.new("RGB", SIZE, BACKGROUND)
    draw = ImageDraw.Draw(image)
    for group in workflow.get("groups", []):
        gx, gy, gw, gh = group["bounding"]
        colour = tuple(int(group.get("color", "#3f789e")[i:i + 2], 16) for i in (1, 3, 5))
        draw.rectangle([at(gx, gy), at(gx + gw, gy + gh)], fill=tuple(c // 3 for c in colour), outline=colour)
    by_id = {n["id"]: n for n in workflow["nodes"]}
    for link in workflow.get("links", []):
        _, source, source_slot, target, target_slot, _ = link[:6]
        if source not in by_id or target not in by_id:
            continue
        sx, sy, sw, _ = boxes[source]
        tx, ty, _, _ = boxes[target]
        start = at(sx + sw, sy + TITLE_HEIGHT + 20 * (source_slot + 0.5))
        end = at(tx, ty + TITLE_HEIGHT + 20 * (target_slot + 0.5))
        draw.line([start, end], fill=LINK, width=1)
    font = _font(max(8, min(12, int(28 * scale))))
    for node in workflow["nodes"]:
        x, y, w, h = boxes[node["id"]]
        ours = node["type"].startswith("ZeroCopy")
        note = node["type"] in ("MarkdownNote", "Note")
        body, head = (ZEROCOPY, ZEROCOPY_TITLE) if ours else (NOTE, NOTE) if note else (NODE, NODE_TITLE)
        left, top = at(x, y)
        right, bottom = at(x + w, y + h)
        draw.rectangle([left, top, right, bottom], fill=body, outline=head)
        draw.rectangle([left, top, right, at(x, y + TITLE_HEIGHT)[1]], fill=head)
        # the node's title, cut to its width, under the title bar when the bar is too thin for it
        text = _label(node)
        while text and draw.textlength(text, font=font) > right - left - 4:
            text = text[:-1]
        if text:
            draw.text((left + 2, top + 1), text, fill=TEXT, font=font)
    return image


def jpeg(workflow: dict) -> bytes:
    out = io.BytesIO()
    render(workflow).save(out, "JPEG", quality=QUALITY, optimize=True)
    return out.getvalue()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only check that every thumbnail is there and current")
    args = parser.parse_args(argv)
    stale = []
    for path in sorted(EXAMPLES.glob("*.json")):
        data = jpeg(json.loads(path.read_text()))
        target = path.with_suffix(".jpg")
        if target.is_file() and target.read_bytes() == data:
            continue
        if args.check:
            stale.append(target.name)
        else:
            target.write_bytes(data)
            print(f"wrote {target.relative_to(REPO)} ({len(data)} bytes)")
    if stale:
        print(f"missing or out of date (run python tools/template_thumbnails.py): {', '.join(stale)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
