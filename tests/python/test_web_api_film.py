"""The film routes (GET /zerocopy/film/{tag}, POST /zerocopy/film/{tag}/choose) on a plain aiohttp
application with a real LatentStore and the real engine film reader: the chosen line, takes,
choosing and clearing, the UI event, and hostile input."""

from __future__ import annotations

import pytest
import torch

aiohttp = pytest.importorskip("aiohttp", reason="skipped: aiohttp not installed (ComfyUI's web server)")

from film_shots import put_shot  # noqa: E402
from web_api_helpers import FilmOfStore, RoutesHarness  # noqa: E402

from zc_pack.zc_engine import LatentStore  # noqa: E402

TAG = "web_film"


class Harness(RoutesHarness):
    def __init__(self, tmp_path, film=True):
        store = LatentStore(spill_dir=tmp_path / "spill")
        self.notified = []
        super().__init__(store, projection_for=lambda meta, channels: None,
                         residency_report=lambda: {"available": False},
                         notify=lambda event, data: self.notified.append((event, data)),
                         film=FilmOfStore(store) if film else None)

    def shot(self, seed, parent=None):
        """Store one shot (continuing ``parent``'s last latent frame when given); its generation."""
        return put_shot(self.store, TAG, seed, parent)


@pytest.fixture
def api(tmp_path):
    with Harness(tmp_path) as harness:
        yield harness


def assert_error(status, body, expected, code):
    assert status == expected and body["error"] == code, body
    assert "Traceback" not in str(body)


def states(doc):
    return {s["generation"]: s["state"] for s in doc["shots"]}


def test_the_film_its_takes_and_choosing_one(api):
    one = api.shot(1)
    two = api.shot(2, one)
    three = api.shot(3, two)
    status, doc = api.client.json("GET", f"/zerocopy/film/{TAG}?verify=true")
    assert status == 200 and doc["version"] == 1 and doc["tag"] == TAG
    assert doc["line"] == [one, two, three] and doc["ok"] is True and doc["verified"] is True
    assert all(s["hop"] in ("ok", "root") and s["file"] == "ok" for s in doc["shots"]), doc
    other = api.shot(4, one)  # a second take of shot 2: the newest, so the line follows it
    status, doc = api.client.json("GET", f"/zerocopy/film/{TAG}")
    assert doc["line"] == [one, other] and states(doc)[two] == "alternative" and states(doc)[three] == "stale"
    status, doc = api.client.json("POST", f"/zerocopy/film/{TAG}/choose", json={"generation": two})
    assert status == 200 and doc["line"] == [one, two, three] and doc["pins"] == [one, two]
    assert doc["choice"] == {"generation": two, "on_line": True, "note": None}
    assert states(doc)[other] == "alternative"
    assert api.notified[-1] == ("zerocopy.film", {"reason": "chosen", "tag": TAG, "generation": two})
    status, doc = api.client.json("POST", f"/zerocopy/film/{TAG}/choose", json={"generation": 0})
    assert status == 200 and doc["pins"] == [] and doc["line"] == [one, other]


def test_bad_film_requests_are_clear_json_errors(api):
    api.shot(1)
    assert_error(*api.client.json("GET", "/zerocopy/film/nothing_here"), 404, "not_found")
    assert_error(*api.client.json("GET", f"/zerocopy/film/{TAG}?verify=maybe"), 400, "invalid_parameter")
    assert_error(*api.client.json("GET", f"/zerocopy/film/{TAG}?depth=2"), 400, "invalid_parameter")
    assert_error(*api.client.json("GET", "/zerocopy/film/..%2Fetc"), 400, "invalid_tag")
    status, body = api.client.json("POST", f"/zerocopy/film/{TAG}/choose", json={"generation": 99})
    assert_error(status, body, 404, "not_found")
    assert "99" in body["message"]
    for bad in ({"generation": "2"}, {"generation": True}, {"generation": -1}, {}, {"generation": 1, "x": 1}):
        status, body = api.client.json("POST", f"/zerocopy/film/{TAG}/choose", json=bad)
        assert status == 400, (bad, body)
    status, body = api.client.json("POST", f"/zerocopy/film/{TAG}/choose", data=b"{not json")
    assert status == 400
    assert_error(*api.client.json("DELETE", f"/zerocopy/film/{TAG}"), 405, "method_not_allowed")
    status, doc = api.client.json("GET", f"/zerocopy/film/{TAG}")
    assert status == 200 and doc["pins"] == []  # nothing was chosen by the bad requests


def test_without_a_film_view_the_routes_answer_503(tmp_path):
    harness = Harness(tmp_path, film=False)
    try:
        assert_error(*harness.client.json("GET", f"/zerocopy/film/{TAG}"), 503, "film_unavailable")
    finally:
        harness.close()


def test_a_shot_of_another_folder_hard_linked_in_is_not_previewed(api, tmp_path):
    """Before: a valid shot of another folder, hard-linked into the spill folder, was served (the
    preview answered 200, the film verified ok). Now neither serves it, and both say why."""
    import os
    other = tmp_path / "other"
    with LatentStore(spill_dir=other) as store:
        store.put("secret", {"latent_tensor": torch.randn(1, 16, 3, 4, 4)}, {"family": "wan21"}, spill=True)
        store.flush()
    name = f"secret@{1:020d}.latent"
    os.link(other / name, api.store.spill_dir / name)
    status, doc = api.client.json("GET", "/zerocopy/film/secret?verify=true")
    assert status == 200 and doc["ok"] is False and "hard link" in doc["shots"][0]["problem"]
    status, body = api.client.json("GET", "/zerocopy/buffers/secret/preview.png?generation=1")
    assert status == 409 and body["error"] == "corrupt_file", body
    assert "is not served" in body["message"] and "hard link" in body["message"]
    assert (other / name).exists() and (api.store.spill_dir / (name + ".rejected")).samefile(other / name)
