"""zc_nodes.ui_events: the nodes' messages to the web UI. A no-op without a server,
never raising, and carrying what the badges show (shape, tier, digest, verdict)."""

from __future__ import annotations

import sys
import types

import pytest
import torch

from zc_pack.zc_continuity.certificate import Certificate
from zc_pack.zc_engine import LatentStore
from zc_pack.zc_nodes import runtime, ui_events


class RecordingServer:
    def __init__(self, fail=False):
        self.sent = []
        self.fail = fail

    def send_sync(self, event, data, sid=None):
        if self.fail:
            raise RuntimeError("socket closed")
        self.sent.append((event, data, sid))


@pytest.fixture
def server(monkeypatch, tmp_path):
    recorder = RecordingServer()
    module = types.ModuleType("server")
    module.PromptServer = type("PromptServer", (), {"instance": recorder})
    monkeypatch.setitem(sys.modules, "server", module)
    store = LatentStore(spill_dir=tmp_path)
    monkeypatch.setattr(runtime, "_store", store)
    yield recorder
    store.close()


def test_without_a_server_nothing_is_sent(monkeypatch):
    monkeypatch.delitem(sys.modules, "server", raising=False)
    assert ui_events.notify_store("film", 1) is False
    assert ui_events.notify_handoff({"tag": "film", "generation": 1}) is False
    assert ui_events.notify_residency({"state": "locked"}) is False


def test_store_event_carries_the_slot(server):
    latent = torch.randn(1, 16, 3, 8, 8)
    generation = runtime.store().put("film", {"latent_tensor": latent}, {"family": "wan21"})
    assert ui_events.notify_store("film", generation)
    event, data, sid = server.sent[-1]
    assert event == "zerocopy.store" and sid is None
    assert data["tag"] == "film" and data["generation"] == generation
    assert data["shape"] == [1, 16, 3, 8, 8] and data["tier"] == "host" and data["dtype"] == "F32"
    assert data["digest"] == runtime.store().get("film").info["latent_tensor"].digest
    assert data["family"] == "wan21" and data["bytes"] == latent.numel() * 4


def test_handoff_event_carries_the_certificate(server):
    runtime.store().put("film", {"latent_tensor": torch.zeros(1, 16, 2, 4, 4)}, {"family": "wan21"})
    cert = Certificate(tag="film", generation=1, stored_digest="xxh3:1", used_digest="xxh3:1",
                       adapter="wan_i2v", family="wan21", tail_frames=1, notes=["long note"])
    assert ui_events.notify_handoff(cert, latent_shape=(1, 16, 3, 8, 8))
    event, data, _ = server.sent[-1]
    assert event == "zerocopy.handoff" and data["bit_identical"] is True
    assert data["latent_shape"] == [1, 16, 3, 8, 8] and data["shape"] == [1, 16, 2, 4, 4]
    assert "notes" not in data and data["first_shot"] is False
    assert ui_events.notify_handoff(None, first_shot=True)
    assert server.sent[-1][1]["first_shot"] is True


def test_a_failing_socket_never_fails_the_node(server):
    server.fail = True
    assert ui_events.notify_residency({"state": "locked"}) is False
    assert ui_events.send("zerocopy.buffers", {}) is False
