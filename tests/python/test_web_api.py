"""Every /zerocopy/ route on a plain aiohttp application (no ComfyUI), with a real
LatentStore: the documents, the PNG preview, drop, residency, and hostile input
(path traversal in tags, huge and negative indices, malformed JSON, unknown tags,
wrong methods, oversized bodies). Every error must be JSON with a proper status and
must never carry a traceback."""

from __future__ import annotations

import asyncio
import json

import pytest
import torch

aiohttp = pytest.importorskip("aiohttp", reason="skipped: aiohttp not installed (ComfyUI's web server)")

from web_api_helpers import RoutesHarness, SyncClient, read_png  # noqa: E402

from zc_pack.zc_engine import LatentStore  # noqa: E402
from zc_pack.zc_nodes.api import preview, routes  # noqa: E402
from zc_pack.zc_nodes.api.validation import MAX_BODY_BYTES  # noqa: E402

CHANNELS = 16
FACTORS = [[((c * 7 + k * 3) % 11 - 5) / 20.0 for k in range(3)] for c in range(CHANNELS)]
BIAS = [0.05, -0.02, 0.01]


def scale_in(x):
    return x * 0.5


class Harness(RoutesHarness):
    def __init__(self, tmp_path):
        self.notified: list[tuple[str, dict]] = []
        self.report = None  # None: unavailable
        self.fail_projection = False
        super().__init__(LatentStore(spill_dir=tmp_path / "spill"), projection_for=self.projection,
                         residency_report=self.residency, notify=self.notify)

    def projection(self, meta, channels):
        if self.fail_projection:
            raise RuntimeError("secret internal detail /home/user/private")
        if meta.get("family") != "wan21" or channels != CHANNELS:
            return None
        return preview.RgbProjection("Wan21", FACTORS, BIAS, process_in=scale_in)

    def residency(self):
        if self.report is None:
            return {"available": False, "reason": "not part of this version"}
        return {"available": True, **self.report}

    def notify(self, event, data):
        self.notified.append((event, data))

    def put(self, tag, tensor, **meta):
        return self.store.put(tag, {"latent_tensor": tensor}, {"family": "wan21", **meta}, spill=True)


@pytest.fixture
def api(tmp_path):
    with Harness(tmp_path) as harness:
        yield harness


def video(seed=0, shape=(1, CHANNELS, 3, 8, 12)):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def assert_json_error(status, body, expected_status, code=None):
    assert status == expected_status, body
    assert set(body) >= {"error", "message"}, body
    if code:
        assert body["error"] == code, body
    text = json.dumps(body)
    assert "Traceback" not in text and 'File "' not in text


# ------------------------------------------------------------------ listing and inspect


def test_list_is_empty_then_shows_every_buffer(api):
    status, body = api.client.json("GET", "/zerocopy/buffers")
    assert status == 200 and body["buffers"] == [] and body["count"] == 0
    latent = video()
    api.put("film", latent)
    api.put("film", video(1))
    api.put("stills", torch.randn(2, 16, 8, 8), family="flux")
    status, body = api.client.json("GET", "/zerocopy/buffers")
    assert status == 200 and body["count"] == 2 and body["version"] == 1
    film = next(b for b in body["buffers"] if b["tag"] == "film")
    assert film["newest_generation"] == 2 and film["generations"] == [2, 1]
    assert film["shape"] == [1, 16, 3, 8, 12] and film["dtype"] == "F32" and film["tier"] == "host"
    assert film["bytes"] == 2 * latent.numel() * 4
    assert film["digest"] == api.store.get("film").info["latent_tensor"].digest
    assert film["digest_short"] == film["digest"][: len("xxh3:") + 8]
    assert film["age_s"] >= 0 and film["family"] == "wan21"
    assert [s["generation"] for s in film["slots"]] == [2, 1]
    assert "spill_dir" not in json.dumps(body) and str(api.store.spill_dir) not in json.dumps(body)
    assert body["spill"] is True


def test_inspect_one_buffer_has_every_slot_tensor_and_meta(api):
    api.put("shot_a", video(), latent_format="Wan21", created_unix="1.0")
    status, body = api.client.json("GET", "/zerocopy/buffers/shot_a")
    assert status == 200 and body["tag"] == "shot_a"
    slot = body["slots"][0]
    assert slot["meta"]["latent_format"] == "Wan21" and slot["meta"]["created_unix"] == "1.0"
    assert slot["tensors"][0]["name"] == "latent_tensor" and slot["tensors"][0]["digest"].startswith("xxh3:")
    # the API routes are also reachable through ComfyUI's /api mirror in a real server (browser test)


def test_long_metadata_is_cut_to_a_bound(api):
    api.put("long", video(), note="x" * 5000)
    status, body = api.client.json("GET", "/zerocopy/buffers/long")
    assert status == 200 and len(body["slots"][0]["meta"]["note"]) <= 1024 + 3


# ------------------------------------------------------------------ preview


def test_preview_is_the_tail_frame_through_the_latent_rgb_factors(api):
    latent = video(3)
    api.put("film", latent)
    status, headers, png = api.client.request("GET", "/zerocopy/buffers/film/preview.png?size=16")
    assert status == 200 and headers["Content-Type"] == "image/png"
    assert headers["X-ZeroCopy-Preview-Method"] == "latent_rgb_factors:Wan21"
    assert headers["X-ZeroCopy-Generation"] == "1"
    width, height, rgb = read_png(png)
    assert (width, height) == (12, 8)  # longest edge 12 >= 16? no: 12 < 16 -> factor 1
    tail = latent[0, :, -1] * 0.5
    expected = torch.nn.functional.linear(tail.movedim(0, -1), torch.tensor(FACTORS).t(), torch.tensor(BIAS))
    expected = ((expected.clamp(-1, 1) + 1) * 127.5).round().to(torch.uint8)
    assert rgb == expected.contiguous().numpy().tobytes()


def test_preview_of_any_frame_generation_and_size(api):
    api.put("film", video(1))
    api.put("film", video(2))
    status, headers, png = api.client.request(
        "GET", "/zerocopy/buffers/film/preview.png?generation=1&frame=0&size=96"
    )
    assert status == 200 and headers["X-ZeroCopy-Generation"] == "1"
    assert read_png(png)[:2] == (96, 64)  # 12x8 enlarged by 8
    status, headers, png = api.client.request("GET", "/zerocopy/buffers/film/preview.png?frame=-3&size=16")
    assert status == 200 and headers["X-ZeroCopy-Generation"] == "2"


def test_preview_without_factors_stretches_channels_and_says_so(api):
    api.store.put("other", {"latent_tensor": torch.randn(1, 4, 8, 8)}, {"family": "unknown"})
    status, headers, png = api.client.request("GET", "/zerocopy/buffers/other/preview.png")
    assert status == 200 and headers["X-ZeroCopy-Preview-Method"] == "channels"
    assert read_png(png)[:2] == (256, 256)


def test_preview_of_a_spilled_tag_after_a_restart(api, tmp_path):
    api.put("film", video(5))
    api.store.close()
    api.store = LatentStore(spill_dir=tmp_path / "spill")
    status, body = api.client.json("GET", "/zerocopy/buffers")
    assert body["buffers"][0]["in_memory"] is False and body["buffers"][0]["tier"] == "disk"
    status, headers, png = api.client.request("GET", "/zerocopy/buffers/film/preview.png")
    assert status == 200 and png.startswith(b"\x89PNG")


# ------------------------------------------------------------------ drop


def test_delete_drops_a_tag_and_tells_the_ui(api):
    api.put("film", video())
    status, body = api.client.json("DELETE", "/zerocopy/buffers/film?disk=true")
    assert status == 200 and body == {"dropped": ["film"], "missing": [], "not_dropped": [], "disk": True}
    assert api.client.json("GET", "/zerocopy/buffers")[1]["count"] == 0
    assert api.notified == [("zerocopy.buffers", {"reason": "dropped", "tags": ["film"]})]
    status, body = api.client.json("DELETE", "/zerocopy/buffers/film")
    assert_json_error(status, body, 404, "not_found")


def test_delete_without_disk_keeps_the_spill_file(api):
    api.put("film", video())
    api.store.flush()
    status, body = api.client.json("DELETE", "/zerocopy/buffers/film")
    assert status == 200 and body["disk"] is False
    entry = api.client.json("GET", "/zerocopy/buffers/film")[1]
    assert entry["in_memory"] is False and entry["disk_generations"] == [1]
    # held only on disk now: without disk=true there is nothing to drop, and the answer says how
    status, body = api.client.json("DELETE", "/zerocopy/buffers/film")
    assert_json_error(status, body, 409, "invalid_state")
    assert "only on disk" in body["message"] and "disk=true" in body["message"]


def test_post_drop_several_and_all(api):
    for tag in ("a", "b", "c"):
        api.put(tag, video())
    status, body = api.client.json("POST", "/zerocopy/drop", json={"tags": ["a", "zz"], "disk": True})
    assert status == 200 and body == {"dropped": ["a"], "missing": ["zz"], "not_dropped": [], "disk": True}
    status, body = api.client.json("POST", "/zerocopy/drop", json={"all": True, "disk": True})
    assert status == 200 and body["dropped"] == ["b", "c"]
    assert api.client.json("GET", "/zerocopy/buffers")[1]["count"] == 0


def test_drop_all_without_disk_drops_every_tag_it_lists_and_names_a_disk_only_one(api):
    """A tag held only on disk ("b", after a restart or a memory-only drop) used to
    stop drop-all half-way with a 404, after some tags were dropped and before the others."""
    for tag in ("a", "b", "c"):
        api.put(tag, video())
    api.store.flush()
    assert api.client.json("DELETE", "/zerocopy/buffers/b")[0] == 200  # b: its spill file only
    api.notified.clear()
    status, body = api.client.json("POST", "/zerocopy/drop", json={"all": True, "disk": False})
    assert status == 200, body
    assert body["dropped"] == ["a", "c"] and body["missing"] == [] and body["disk"] is False
    assert [entry["tag"] for entry in body["not_dropped"]] == ["b"]
    assert "only on disk" in body["not_dropped"][0]["reason"]
    assert api.notified == [("zerocopy.buffers", {"reason": "dropped", "tags": ["a", "c"]})]
    listing = api.client.json("GET", "/zerocopy/buffers")[1]
    assert {b["tag"]: b["in_memory"] for b in listing["buffers"]} == {"a": False, "b": False, "c": False}
    # the same list by name, then with disk: every tag goes
    status, body = api.client.json("POST", "/zerocopy/drop", json={"tags": ["b", "zz"], "disk": False})
    assert status == 200 and body["dropped"] == [] and body["missing"] == ["zz"]
    assert [entry["tag"] for entry in body["not_dropped"]] == ["b"]
    status, body = api.client.json("POST", "/zerocopy/drop", json={"all": True, "disk": True})
    assert status == 200 and body["dropped"] == ["a", "b", "c"] and body["not_dropped"] == []
    assert api.client.json("GET", "/zerocopy/buffers")[1]["count"] == 0


# ------------------------------------------------------------------ residency


def test_residency_degrades_until_the_report_exists(api):
    status, body = api.client.json("GET", "/zerocopy/residency")
    assert status == 200 and body["available"] is False and body["reason"]
    api.report = {"state": "resident", "last_reload_unix": 12.5}
    status, body = api.client.json("GET", "/zerocopy/residency")
    assert status == 200 and body["available"] is True and body["state"] == "resident"


# ------------------------------------------------------------------ hostile input

TRAVERSAL_TAGS = [
    "..",
    "../etc",
    "..%2F..%2Fetc%2Fpasswd",
    "%2e%2e",
    ".hidden",
    "-flag",
    "a%20b",
    "a%00b",
    "x" * 65,
    "%C3%BCber",
    "C:%5Cwindows",
    "a%2Fb",
    "%252e%252e",
    "a;b",
    "a%0Ab",
]


@pytest.mark.parametrize("raw", TRAVERSAL_TAGS)
@pytest.mark.parametrize("suffix", ["", "/preview.png"])
def test_hostile_tags_are_refused_with_json(api, raw, suffix):
    api.put("film", video())
    status, body = api.client.json("GET", f"/zerocopy/buffers/{raw}{suffix}")
    assert status in (400, 404), (raw, body)
    assert_json_error(status, body, status)
    if status == 400:
        assert body["error"] == "invalid_tag"
    status, body = api.client.json("DELETE", f"/zerocopy/buffers/{raw}")
    assert status in (400, 404) and body["error"] in ("invalid_tag", "not_found")
    assert api.client.json("GET", "/zerocopy/buffers")[1]["count"] == 1  # nothing was dropped


@pytest.mark.parametrize(
    "query, code",
    [
        ("generation=-1", "out_of_range"),
        ("generation=99999999999999999999", "out_of_range"),
        ("generation=123456789012345678901234567890", "invalid_parameter"),
        ("generation=1.5", "invalid_parameter"),
        ("generation=0x10", "invalid_parameter"),
        ("frame=3", "out_of_range"),
        ("frame=-4", "out_of_range"),
        ("frame=-1000000000", "out_of_range"),
        ("frame=1e9", "invalid_parameter"),
        ("frame=", "invalid_parameter"),
        ("batch=1", "out_of_range"),
        ("batch=-99999", "out_of_range"),
        ("size=0", "out_of_range"),
        ("size=100000", "out_of_range"),
        ("size=-256", "out_of_range"),
        ("tensor=../x", "invalid_parameter"),
        ("path=/etc/passwd", "invalid_parameter"),
        ("frame=0&frame=1", "invalid_parameter"),
    ],
)
def test_bad_preview_parameters_are_400(api, query, code):
    api.put("film", video())
    status, body = api.client.json("GET", f"/zerocopy/buffers/film/preview.png?{query}")
    assert_json_error(status, body, 400, code)


def test_unknown_tag_generation_and_tensor_are_404(api):
    api.put("film", video())
    for path in (
        "/zerocopy/buffers/nope",
        "/zerocopy/buffers/nope/preview.png",
        "/zerocopy/buffers/film/preview.png?generation=7",
        "/zerocopy/buffers/film/preview.png?tensor=audio",
    ):
        status, body = api.client.json("GET", path)
        assert_json_error(status, body, 404, "not_found")


@pytest.mark.parametrize(
    "body, status, code",
    [
        (b"{", 400, "invalid_json"),
        (b"", 400, "invalid_json"),
        (b"[]", 400, "invalid_json"),
        (b"null", 400, "invalid_json"),
        (b"\xff\xfe{}", 400, "invalid_json"),
        (b'{"tags": "film"}', 400, "invalid_parameter"),
        (b'{"tags": []}', 400, "invalid_parameter"),
        (b'{"tags": ["../x"]}', 400, "invalid_tag"),
        (b'{"tags": [42]}', 400, "invalid_tag"),
        (b'{"tags": ["film"], "disk": "yes"}', 400, "invalid_parameter"),
        (b'{"tags": ["film"], "path": "/tmp"}', 400, "invalid_parameter"),
        (b'{"tags": ["film"], "all": true}', 400, "invalid_parameter"),
        (b"{}", 400, "invalid_parameter"),
        (json.dumps({"tags": [f"t{i}" for i in range(300)]}).encode(), 413, "too_many_tags"),
        (b'{"tags": ["' + b"a" * (MAX_BODY_BYTES + 10) + b'"]}', 413, "body_too_large"),
        (b"[" * 100000, 413, "body_too_large"),
        (b"[" * 50000, 400, "invalid_json"),
    ],
)
def test_malformed_drop_bodies_are_refused(api, body, status, code):
    api.put("film", video())
    got, answer = api.client.json(
        "POST", "/zerocopy/drop", data=body, headers={"Content-Type": "application/json"}
    )
    assert_json_error(got, answer, status, code)
    assert api.client.json("GET", "/zerocopy/buffers")[1]["count"] == 1


def test_wrong_methods_unknown_routes_and_unknown_query_parameters(api):
    status, body = api.client.json("POST", "/zerocopy/buffers")
    assert_json_error(status, body, 405, "method_not_allowed")
    status, headers, _ = api.client.request("PUT", "/zerocopy/buffers/film")
    assert status == 405 and headers["Allow"] == "GET, DELETE"
    status, body = api.client.json("GET", "/zerocopy/drop")
    assert_json_error(status, body, 405)
    for path in ("/zerocopy/", "/zerocopy/nothing", "/zerocopy/buffers/a/b/c", "/zerocopy/buffers/%2E%2E/x"):
        status, body = api.client.json("GET", path)
        assert_json_error(status, body, 404)
    # dot segments are resolved before routing: this path leaves /zerocopy/ and reaches no route
    status, _, body = api.client.request("GET", "/zerocopy/../../etc/passwd")
    assert status == 404 and b"root:" not in body
    status, body = api.client.json("GET", "/zerocopy/buffers?all=1")
    assert_json_error(status, body, 400, "invalid_parameter")


def test_internal_errors_are_generic_json_without_details(api, caplog):
    api.put("film", video())
    api.fail_projection = True
    status, body = api.client.json("GET", "/zerocopy/buffers/film/preview.png")
    assert_json_error(status, body, 500, "internal")
    assert "secret" not in json.dumps(body) and "/home/user" not in json.dumps(body)
    assert any("secret internal detail" in (r.exc_text or "") or r.exc_info for r in caplog.records)


def test_a_store_that_cannot_open_is_503(tmp_path):
    def broken():
        raise OSError("cannot open /private/path")

    services = routes.Services(
        store=broken,
        projection_for=lambda m, c: None,
        residency_report=lambda: {"available": False, "reason": "-"},
    )
    app = aiohttp.web.Application()
    routes.add_to_app(app, services)
    client = SyncClient(app)
    try:
        status, body = client.json("GET", "/zerocopy/buffers")
        assert_json_error(status, body, 503, "store_unavailable")
        assert "/private/path" not in json.dumps(body)
    finally:
        client.close()


# ------------------------------------------------------------------ the listing and the event loop


class GatedStore:
    """The harness's store, whose whole-store describe waits until ``gate`` is set (by a request
    that only a free event loop can answer) and counts its calls; describe_tag is counted too."""

    def __init__(self, store):
        import threading
        self.store = store
        self.gate = threading.Event()
        self.calls = {"describe": 0, "describe_tag": 0}

    def describe(self):
        return json.loads(self.describe_text())

    def describe_text(self):
        self.calls["describe"] += 1
        assert self.gate.wait(10), "the listing ran on the event loop: the other request never answered"
        return self.store.describe_text()

    def describe_tag(self, tag):
        self.calls["describe_tag"] += 1
        return self.store.describe_tag(tag)

    def __getattr__(self, name):
        return getattr(self.store, name)


def test_listings_run_off_the_event_loop_and_concurrent_ones_share_a_run(tmp_path):
    """GET /zerocopy/buffers used to describe the store on the server's event loop, so
    ComfyUI's own routes (GET /queue) waited behind it. Here the describe cannot finish until
    another route of the same server has answered; 16 listings at once cost at most two
    describes, and inspecting one tag never describes the whole store."""
    store = LatentStore(spill_dir=tmp_path / "spill")
    gated = GatedStore(store)
    for i in range(5):
        store.put(f"t{i}", {"latent_tensor": video(i)}, {"family": "wan21"})
    app = aiohttp.web.Application()

    async def queue(request):  # stands in for ComfyUI's own GET /queue
        gated.gate.set()
        return aiohttp.web.json_response({"queue_running": []})

    app.router.add_get("/queue", queue)
    routes.add_to_app(app, routes.Services(store=lambda: gated, projection_for=lambda m, c: None,
                                           residency_report=lambda: {"available": False}))
    client = SyncClient(app)
    try:
        async def together():
            listings = [client.client.get("/zerocopy/buffers") for _ in range(16)]
            answers = await asyncio.gather(*listings[:8], client.client.get("/queue"), *listings[8:])
            return [(r.status, await r.json()) for r in answers]

        answers = client.loop.run_until_complete(together())
        assert all(status == 200 for status, _ in answers)
        assert [doc["count"] for _, doc in answers if "count" in doc] == [5] * 16
        assert 1 <= gated.calls["describe"] <= 2, gated.calls
        # one tag: its own description, not the store's
        before = dict(gated.calls)
        assert client.json("GET", "/zerocopy/buffers/t3")[0] == 200
        assert client.json("DELETE", "/zerocopy/buffers/t4")[0] == 200
        assert client.json("POST", "/zerocopy/drop", json={"tags": ["t0"]})[0] == 200
        assert gated.calls["describe"] == before["describe"] and gated.calls["describe_tag"] > before["describe_tag"]
        # a listing asked after a change is computed after it (never a run that began before)
        assert client.json("GET", "/zerocopy/buffers")[1]["count"] == 3
    finally:
        client.close()
        store.close()


def test_the_listing_decodes_and_encodes_tag_by_tag_to_the_same_values(tmp_path):
    """What the listing's thread does in small pieces (so that the event loop gets the interpreter
    lock between them) gives exactly what one json.loads / json.dumps would."""
    from zc_pack.zc_nodes.api import buffers

    with LatentStore(spill_dir=tmp_path / "spill") as store:
        for i in range(100):
            store.put(f"t{i:03}", {"latent_tensor": video(i, (1, 16, 1, 2, 2))},
                      {"family": "wan21", "prompt": f'a "quoted" {i} \\ /x/y', "uni": "é✓"}, spill=True)
        store.flush()
        text = store.describe_text()
        assert buffers.parse_description(text) == json.loads(text)
    for odd in ('{}', ' { "tags" : [ ] , "a" : 1 } ', '{"tags":[{"a":[1,{"b":"]"}]} , {"c":"}"}],"z":null}',
                '{"tags":[1,2', '[1]', '{"tags":[1 2]}'):
        try:
            expected = json.loads(odd)
        except ValueError:
            with pytest.raises(ValueError):
                buffers.parse_description(odd)
            continue
        assert buffers.parse_description(odd) == expected
    doc = {"version": 1, "buffers": [{"tag": f"t{i}", "meta": {"p": "/srv/x/y.png"}} for i in range(100)],
           "count": 100, "empty": []}
    encoded = json.loads(routes._encode(doc, ""))
    assert encoded["count"] == 100 and encoded["empty"] == [] and len(encoded["buffers"]) == 100
    assert encoded["buffers"][7] == {"tag": "t7", "meta": {"p": "<server path>/y.png"}}
    assert json.loads(routes._encode({"buffers": doc["buffers"]}, ""))["buffers"][0]["tag"] == "t0"
