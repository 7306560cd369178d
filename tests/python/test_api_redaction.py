"""What leaves through the API instead of a server path (zc_nodes/api/redaction.py): a path in
the spill folder keeps its place inside it; any other server path keeps only its file name and
is not claimed to be in the spill folder (a farm or engine fix that said "<spill folder>/main"
sent the user to a folder that does not hold it)."""

from __future__ import annotations

import pytest

from zc_pack.zc_nodes.api.redaction import redact_paths

SPILL = "/srv/comfy/user/zerocopy_continuity/spill"


@pytest.mark.parametrize("message, shown", [
    (f"cannot write {SPILL}/wan.g3.zc: No space left on device",
     "cannot write <spill folder>/wan.g3.zc: No space left on device"),
    (f"cannot open '{SPILL}/gray_padding/ab12.zc'", "cannot open '<spill folder>/gray_padding/ab12.zc'"),
    (f'the spill folder "{SPILL}" was removed', 'the spill folder "<spill folder>" was removed'),
    (f"the folder {SPILL} is read-only", "the folder <spill folder> is read-only"),
    ("ZC_LIBRARY names /tmp/x/no-engine/libzc.so, which does not exist; build one: make -C /opt/pack",
     "ZC_LIBRARY names <server path>/libzc.so, which does not exist; build one: make -C <server path>/pack"),
    (f"{SPILL}-old/wan.g1.zc is not ours", "<server path>/wan.g1.zc is not ours"),  # a sibling is not inside
    (r"cannot load C:\Users\me\zc.dll: missing", "cannot load <server path>/zc.dll: missing"),
    ("no path here: 3/4 done, ratio 0.5", "no path here: 3/4 done, ratio 0.5"),
    # the engine's temporary name (.zc-tmp-<process token>-<n>-<name>) is shown as the file it stands for
    (f"cannot create {SPILL}/.zc-tmp-6911e9fe0a1b2c3d-17-film@00000000000000000001.latent: Read-only file system",
     "cannot create <spill folder>/film@00000000000000000001.latent: Read-only file system"),
])
def test_spill_paths_keep_their_place_and_other_paths_only_their_name(message, shown):
    assert redact_paths(message, SPILL) == shown


def test_a_spill_folder_with_spaces_in_its_name_is_recognised_whole():
    spill = "/home/me/my films/zc spill"
    assert redact_paths(f"cannot create {spill}/film@1.latent: Read-only file system (to write {spill}/film@1.latent)",
                        spill) == ("cannot create <spill folder>/film@1.latent: Read-only file system (to write "
                                   "<spill folder>/film@1.latent)")
    # a sibling is not inside: never called the spill folder, and its head (the home folder) is not shown
    shown = redact_paths(f"the spill folder {spill} is read-only; {spill}-old/x is not", spill)
    assert shown.startswith("the spill folder <spill folder> is read-only; <server path>/") and \
        shown.count("<spill folder>") == 1 and "/home/me" not in shown, shown


def test_a_windows_spill_folder_is_recognised():
    assert redact_paths(r"write D:\films\spill\wan.g1.zc failed", "D:\\films\\spill") == \
        "write <spill folder>/wan.g1.zc failed"


def test_without_the_folder_named_it_is_the_stores(monkeypatch, tmp_path):
    monkeypatch.setenv("ZEROCOPY_SPILL_DIR", str(tmp_path / "spill"))
    from zc_pack.zc_nodes import runtime
    monkeypatch.setattr(runtime, "_store", None)  # no store open: the folder the next one will use
    assert redact_paths(f"cannot write {tmp_path}/spill/t.g1.zc") == "cannot write <spill folder>/t.g1.zc"
    assert redact_paths(f"cannot read {tmp_path}/other/t.g1.zc") == "cannot read <server path>/t.g1.zc"


# ------------------------------------------------------------------ every route's answer
#
# Answers used to carry server paths that no message redaction saw (the film route's
# problems, a shot's stored metadata). Every JSON answer now leaves through routes._encode; the
# walk below asks every route, in success and in error, and finds no server path in any string.

import json  # noqa: E402
import logging  # noqa: E402
import re  # noqa: E402

import torch  # noqa: E402
from film_shots import put_shot  # noqa: E402
from web_api_helpers import FilmOfStore  # noqa: E402

from zc_pack.zc_engine import LatentStore  # noqa: E402
from zc_pack.zc_nodes import color_anchor  # noqa: E402
from zc_pack.zc_nodes.api import routes  # noqa: E402

FILM = "walk_film"
# An absolute path anywhere in a string: /x/ or C:\x\ after a start, a space, a quote or (=:.
ABSOLUTE = re.compile(r"(?:^|[\s\"'(=:,\[])(?:/[^\s/\"']+/|[A-Za-z]:\\[^\s\\\"']+\\)")


def strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, sub in value.items():
            yield key
            yield from strings(sub)
    elif isinstance(value, list):
        for sub in value:
            yield from strings(sub)


class FarmWithPaths:
    """A farm link whose state names server files (a unix socket, a CA file in an error)."""

    def status(self):
        return {"enabled": True, "url": "unix:///var/run/redis/redis.sock", "worker": "w1", "connected": False,
                "last_error": "ConnectionError: Error 2 connecting to unix socket: /var/run/redis/redis.sock."}

    def listing(self):
        return [{"tag": "x", "generation": 1, "error": "record names /srv/farm/cache/x.bin"}]

    def configure(self, url):
        raise ValueError(f"ssl_ca_certs=/etc/ssl/private/ca.pem is not allowed in {url!r}")


def video(seed):
    return torch.randn(1, 16, 3, 4, 4, generator=torch.Generator().manual_seed(seed))


def put_film_shot(store, seed, parent=None):
    return put_shot(store, FILM, seed, parent)


def spill_file(spill, tag, generation):
    return spill / f"{tag}@{generation:020d}.latent"


def damage(path):
    data = bytearray(path.read_bytes())
    data[-3] ^= 0xFF  # the tensor bytes: the file still parses, its digest no longer matches
    path.write_bytes(data)


@pytest.fixture
def walked(tmp_path, caplog):
    """A server after a restart: a film whose middle shot is damaged, a tag whose newest file was
    damaged and then stored into (its anchor came from the shot before), a tag whose only file
    was damaged and then stored into (its anchor started again), a tag held only on disk."""
    aiohttp = pytest.importorskip("aiohttp", reason="skipped: aiohttp not installed (ComfyUI's web server)")
    from web_api_helpers import SyncClient

    spill = tmp_path / "spill"
    store = LatentStore(spill_dir=spill)
    first = put_film_shot(store, 1)
    second = put_film_shot(store, 2, parent=first)
    put_film_shot(store, 3, parent=second)
    for tag in ("anchored", "anchored", "lonely", "disk_only"):
        store.put(tag, {"latent_tensor": video(4)}, color_anchor.anchor_for_new_shot(store, tag, video(4)),
                  spill=True)
    store.flush()
    store.close()
    damage(spill_file(spill, FILM, second))
    damage(spill_file(spill, "anchored", 2))
    damage(spill_file(spill, "lonely", 1))
    store = LatentStore(spill_dir=spill)  # the restart
    with caplog.at_level(logging.WARNING):
        for tag in ("anchored", "lonely"):
            store.put(tag, {"latent_tensor": video(5)}, color_anchor.anchor_for_new_shot(store, tag, video(5)),
                      spill=True)
    warned = [r.getMessage() for r in caplog.records if "storing a new shot of tag" in r.getMessage()]
    store.flush()
    services = routes.Services(store=lambda: store, projection_for=lambda meta, channels: None,
                               residency_report=lambda: {"available": True, "model": "/srv/models/wan21.safetensors"},
                               notify=lambda event, data: None, farm=FarmWithPaths(), film=FilmOfStore(store),
                               spill_dir=lambda: store.spill_dir)
    app = aiohttp.web.Application()
    routes.add_to_app(app, services)
    client = SyncClient(app)
    yield client, store, spill, services, warned
    client.close()
    store.close()


def test_a_damaged_file_found_while_storing_is_logged_and_no_path_enters_the_metadata(walked):
    _, store, spill, _, warned = walked
    assert any("'anchored': generation 2 could not be read" in m for m in warned), warned
    assert any("'lonely': generation 1 could not be read" in m for m in warned), warned
    _, anchored = store.meta("anchored", 3)
    assert anchored["color_anchor_from"] == "generation 1" and "color_anchor_reset" not in anchored
    _, lonely = store.meta("lonely", 2)
    reset = lonely["color_anchor_reset"]
    assert reset.startswith("the previous shot could not be read (generation 1: ")
    assert str(spill) not in reset and "<spill folder>/lonely@00000000000000000001.latent" in reset
    assert not ABSOLUTE.search(reset), reset
    # and the spill file written with it holds the same path-free text
    assert str(spill).encode() not in spill_file(spill, "lonely", 2).read_bytes()


def test_no_route_answers_a_server_path(walked):
    client, store, spill, services, _ = walked
    store.put("paths", {"latent_tensor": video(6)},
              {"family": "wan21", "source": "/home/artist/secret/input.png",
               "note": f"written to {spill}/paths@00000000000000000001.latent"}, spill=True)
    store.flush()
    asked = [
        ("GET", "/zerocopy/buffers", {}, 200),
        ("GET", "/zerocopy/buffers/paths", {}, 200),
        ("GET", "/zerocopy/buffers/lonely", {}, 200),
        ("GET", f"/zerocopy/film/{FILM}?verify=true", {}, 200),  # generation 2's file is damaged
        ("GET", f"/zerocopy/film/{FILM}", {}, 200),
        ("GET", f"/zerocopy/buffers/{FILM}/preview.png?generation=2", {}, 409),  # (then set aside)
        ("POST", f"/zerocopy/film/{FILM}/choose", {"json": {"generation": 1}}, 200),
        ("GET", "/zerocopy/residency", {}, 200),
        ("GET", "/zerocopy/farm", {}, 200),
        ("POST", "/zerocopy/farm", {"json": {"url": "redis://h/0?ssl_ca_certs=/etc/ssl/private/ca.pem"}}, 400),
        ("POST", "/zerocopy/drop", {"json": {"tags": ["paths"], "disk": False}}, 200),
        ("DELETE", "/zerocopy/buffers/disk_only", {}, 409),  # held only on disk after the restart
        ("DELETE", "/zerocopy/buffers/disk_only?disk=true", {}, 200),
        ("GET", "/zerocopy/no/such/route", {}, 404),
    ]
    seen = set()
    for method, path, kwargs, expected in asked:
        status, headers, body = client.request(method, path, **kwargs)
        assert status == expected, (method, path, status, body[:300])
        assert headers["Content-Type"].startswith("application/json"), (path, headers)
        doc = json.loads(body)
        leaks = [s for s in strings(doc) if str(spill) in s or str(store.spill_dir.parent) in s or ABSOLUTE.search(s)]
        assert leaks == [], (method, path, leaks)
        seen.add(path.split("?")[0])
        if path == f"/zerocopy/film/{FILM}?verify=true":  # the damaged file is said, with its place
            problems = doc["problems"] + [s["problem"] for s in doc["shots"] if s.get("problem")]
            assert any(f"<spill folder>/{FILM}@" in p for p in problems), problems
        if path == "/zerocopy/buffers/paths":  # stored metadata: each value keeps its file's name
            meta = doc["slots"][0]["meta"]
            assert meta["source"] == "<server path>/input.png"
            assert meta["note"] == "written to <spill folder>/paths@00000000000000000001.latent"
    # every route of the API was asked (a new route joins this walk)
    templates = {path for _, path, _ in routes.build_routes(services)}
    asked_templates = {re.sub(r"/(paths|lonely|disk_only|walk_film)(?=/|$)", "/{tag}", p) for p in seen}
    asked_templates = {"/zerocopy/{tail:.*}" if p == "/zerocopy/no/such/route" else p for p in asked_templates}
    assert templates == asked_templates, templates ^ asked_templates
