"""Every shipped template (example_workflows/<name>.json) has its thumbnail beside it
(<name>.jpg, which the frontends ask ComfyUI for as the template card's picture), a JPEG of the
size tools/template_thumbnails.py draws, small enough for the pack's zip."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))
EXAMPLES = sorted((REPO / "example_workflows").glob("*.json"))


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_each_template_has_its_thumbnail(example):
    from PIL import Image

    import template_thumbnails

    thumbnail = example.with_suffix(".jpg")
    assert thumbnail.is_file(), f"{thumbnail.name} is missing: run python tools/template_thumbnails.py"
    with Image.open(thumbnail) as image:
        assert image.format == "JPEG" and image.size == template_thumbnails.SIZE
    assert thumbnail.stat().st_size < 20_000


def test_no_thumbnail_without_its_template():
    stems = {p.stem for p in EXAMPLES}
    assert {p.stem for p in (REPO / "example_workflows").glob("*.jpg")} == stems
