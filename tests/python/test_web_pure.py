"""The web API's pure parts, without aiohttp or ComfyUI: the tag rule agrees with
the engine's, the PNG encoder, frame selection and the latent->RGB projection, and
the buffer documents built from a real store's description."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from web_api_helpers import read_png

from zc_pack.zc_engine import InvalidInput, LatentStore, check_tag
from zc_pack.zc_nodes.api import buffers, preview
from zc_pack.zc_nodes.api.validation import ApiError, parse_int, parse_tag


def engine_accepts(tag: str) -> bool:
    try:
        check_tag(tag)
    except InvalidInput:
        return False
    return True


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8", exclude_characters="\x00"), max_size=70)
       | st.text(alphabet="ab._-/\\:%", max_size=70))
def test_the_api_tag_rule_is_the_engines(tag):
    try:
        parse_tag(tag)
        api_ok = True
    except ApiError as exc:
        assert exc.status == 400 and exc.code == "invalid_tag"
        api_ok = False
    assert api_ok == engine_accepts(tag), tag


@pytest.mark.parametrize("tag", ["..", "../x", "a/b", "a\\b", ".x", "-x", "", "x" * 65, "a b", "ü"])
def test_path_like_tags_are_refused(tag):
    with pytest.raises(ApiError):
        parse_tag(tag)


def test_parse_int_bounds():
    assert parse_int({"n": "-3"}, "n", 0, -5, 5) == -3
    assert parse_int({}, "n", 7, 0, 9) == 7
    for raw in ("6", "-6", "1e3", " 1", "0x1", "1" * 30, ""):
        with pytest.raises(ApiError):
            parse_int({"n": raw}, "n", 0, -5, 5)


def test_png_round_trip_and_fit():
    rgb = torch.randint(0, 256, (5, 7, 3), dtype=torch.uint8, generator=torch.Generator().manual_seed(0))
    width, height, raw = read_png(preview.png_bytes(rgb))
    assert (width, height) == (7, 5) and raw == rgb.numpy().tobytes()
    assert preview.fit(rgb, 28).shape == (20, 28, 3)  # enlarged by a whole factor (4)
    big = torch.zeros(300, 600, 3, dtype=torch.uint8)
    assert preview.fit(big, 100).shape == (50, 100, 3)


def test_select_frame_counts_from_the_end_and_checks_bounds():
    latent = torch.arange(2 * 3 * 4 * 2 * 2, dtype=torch.float32).reshape(2, 3, 4, 2, 2)
    assert torch.equal(preview.select_frame(latent, 0, -1), latent[0:1, :, 3:4])
    assert torch.equal(preview.select_frame(latent, -1, 1), latent[1:2, :, 1:2])
    for batch, frame in ((2, 0), (-3, 0), (0, 4), (0, -5)):
        with pytest.raises(IndexError):
            preview.select_frame(latent, batch, frame)
    image = torch.zeros(1, 4, 2, 2)
    assert preview.select_frame(image, 0, -1).shape == (1, 4, 2, 2)
    with pytest.raises(IndexError):
        preview.select_frame(image, 0, 1)


def test_projection_matches_comfyuis_latent2rgb_formula():
    torch.manual_seed(0)
    factors = torch.randn(16, 3) * 0.1
    bias = torch.tensor([0.1, -0.1, 0.0])
    latent = torch.randn(1, 16, 2, 3, 5)
    projection = preview.RgbProjection("T", factors.tolist(), bias.tolist(), process_in=lambda x: x * 2)
    rgb, method = preview.project(preview.select_frame(latent, 0, -1), projection)
    expected = torch.nn.functional.linear((latent[0, :, -1] * 2).movedim(0, -1), factors.t(), bias)
    expected = ((expected.clamp(-1, 1) + 1) * 127.5).round().to(torch.uint8)
    assert method == "latent_rgb_factors:T" and torch.equal(rgb, expected)


def test_projection_with_the_wrong_channel_count_falls_back():
    projection = preview.RgbProjection("T", [[0.1, 0.1, 0.1]] * 16)
    rgb, method = preview.project(torch.randn(1, 48, 1, 4, 4), projection)
    assert method == "channels" and rgb.shape == (4, 4, 3)
    flat, _ = preview.project(torch.zeros(1, 2, 3, 3), None)  # constant: no division by zero
    assert flat.dtype == torch.uint8 and int(flat.max()) == 0


def test_buffer_documents_from_a_real_store(tmp_path):
    with LatentStore(spill_dir=tmp_path) as store:
        store.put("b", {"latent_tensor": torch.zeros(1, 16, 2, 4, 4)}, {"family": "wan21", "secret": "x"})
        store.put("b", {"latent_tensor": torch.ones(1, 16, 2, 4, 4)}, {"family": "wan21"})
        doc = buffers.buffers_doc(store.describe(), now=None)
        b = next(e for e in store.describe()["tags"] if e["tag"] == "b")
        entry = buffers.buffer_doc(b, full_meta=True)
    listed = doc["buffers"][0]
    assert listed["generations"] == [2, 1] and listed["shape"] == [1, 16, 2, 4, 4]
    assert "secret" not in listed["slots"][1]["meta"]  # the list shows known keys only
    assert entry["slots"][1]["meta"]["secret"] == "x"  # inspect shows everything
    assert buffers.short_digest("xxh3:0123456789abcdef") == "xxh3:01234567"
    assert buffers.short_digest("xxh64:0123456789abcdef") == "xxh64:01234567"  # an old file's
