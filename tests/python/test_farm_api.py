"""GET/POST /zerocopy/farm on a plain aiohttp application, over a real Farm and a real Redis
server: the status (password hidden), the farm's tags, a URL set the way the settings panel
sets it, and the errors."""

from __future__ import annotations

import aiohttp.web
import pytest
import torch

from redis_server import RedisServer, skip_reason
from web_api_helpers import SyncClient
from zc_pack.zc_engine import LatentStore
from zc_pack.zc_nodes.api import routes

pytestmark = pytest.mark.skipif(skip_reason() is not None, reason=skip_reason() or "")


class FarmLink:
    """What the routes call on zc_nodes.farm_link (status, listing, configure), over a real Farm:
    farm_link itself imports zc_farm relative to the pack, which these tests do not load."""

    def __init__(self, store):
        self.store, self.farm, self.url = store, None, None

    def configure(self, url):
        from zc_pack.zc_farm import Farm, FarmConfig
        from zc_pack.zc_farm.config import check_url
        url = check_url(url, "the Redis URL") if url else None
        if self.farm is not None:
            self.farm.close(timeout=1)
            self.farm = None
        if url:
            self.farm = Farm(self.store, FarmConfig(url=url, worker_id="api-worker", retry_s=0.2))
        return self.status()

    def status(self):
        if self.farm is None:
            return {"enabled": False, "reason": "no Redis URL"}
        return {**self.farm.status(), "source": "settings"}

    def listing(self):
        return self.farm.listing()


@pytest.fixture
def api(tmp_path):
    server = RedisServer(tmp_path / "redis", password="pa55word").start()
    store = LatentStore(spill_dir=tmp_path / "spill")
    link = FarmLink(store)
    app = aiohttp.web.Application()
    routes.add_to_app(app, routes.Services(store=lambda: store, projection_for=lambda m, c: None,
                                           residency_report=dict, farm=link))
    client = SyncClient(app)
    yield client, link, server
    client.close()
    if link.farm is not None:
        link.farm.close(timeout=1)
    store.close()
    server.stop()


def test_the_settings_panel_turns_the_farm_on_and_the_status_hides_the_password(api):
    client, link, server = api
    status, doc = client.json("GET", "/zerocopy/farm")
    assert status == 200 and doc["enabled"] is False and doc["tags"] == []
    url = f"redis://:pa55word@127.0.0.1:{server.port}/0"
    status, doc = client.json("POST", "/zerocopy/farm", json={"url": url})
    assert status == 200 and doc["enabled"] is True and doc["worker"] == "api-worker"
    assert doc["url"] == f"redis://:***@127.0.0.1:{server.port}/0"
    link.farm.put("film", {"latent_tensor": torch.zeros(1, 16, 2, 4, 4)}, {"family": "wan21"})
    assert link.farm.wait_published(10)
    status, doc = client.json("GET", "/zerocopy/farm")
    assert "pa55word" not in str(doc) and doc["connected"] is True
    [tag] = doc["tags"]
    assert (tag["tag"], tag["generation"], tag["worker"], tag["shape"], tag["family"]) == \
        ("film", 1, "api-worker", [1, 16, 2, 4, 4], "wan21")
    server.stop()  # Redis gone: the status says so, the listing says why it is empty
    status, doc = client.json("GET", "/zerocopy/farm")
    assert status == 200 and doc["tags"] == [] and "unreachable" in doc["listing_error"]
    status, doc = client.json("POST", "/zerocopy/farm", json={"url": ""})
    assert status == 200 and doc["enabled"] is False


@pytest.mark.parametrize("body, code, words", [
    ({"url": "http://:pa55word@h:6379"}, "invalid_parameter", ["not a Redis URL", "***"]),
    ({"url": 6379}, "invalid_parameter", ["must be a string"]),
    ({"host": "h"}, "invalid_parameter", ["host"]),
])
def test_a_bad_url_is_refused_with_the_fix(api, body, code, words):
    client, _, _ = api
    status, doc = client.json("POST", "/zerocopy/farm", json=body)
    assert status == 400 and doc["error"] in (code, "unknown_key", "invalid_json"), doc
    for word in words:
        assert word in doc["message"]
    assert "pa55word" not in doc["message"]


def test_without_a_farm_link_the_route_says_so(tmp_path):
    with LatentStore(spill_dir=tmp_path / "s") as store:
        app = aiohttp.web.Application()
        routes.add_to_app(app, routes.Services(store=lambda: store, projection_for=lambda m, c: None,
                                               residency_report=dict))
        client = SyncClient(app)
        status, doc = client.json("GET", "/zerocopy/farm")
        client.close()
    assert status == 503 and doc["error"] == "farm_unavailable"
