"""Install routes on a real ComfyUI server (``main.py --cpu``), the pack in a folder named as the
Comfy Registry names it (custom_nodes/zerocopy-continuity):

- with the engine: all five nodes are in /object_info;
- with ZC_LIBRARY naming a missing file (an engine that cannot load): ComfyUI starts, only
  ZeroCopyVRAMPin registers, and GET /api/zerocopy/engine carries exactly the line install.py's
  engine_report makes, which the web extension shows as a toast and in the ZeroCopy sidebar.
"""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path

import pytest
from comfy_server import STARTUP_TIMEOUT_S, Server, get

REPO = Path(__file__).resolve().parents[2]
ALL_NODES = {"ZeroCopyVRAMPin", "ZeroCopyLatentStore", "ZeroCopyLatentHandoff", "ZeroCopyLatentLoad",
             "ZeroCopyFilmAssemble", "ZeroCopyFilmRender"}


def _install_module():
    spec = importlib.util.spec_from_file_location("zc_install_for_test", REPO / "install.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _start(tmp_path: Path, env: dict) -> Server:
    base = tmp_path / "comfy_base"
    (base / "custom_nodes").mkdir(parents=True)
    os.symlink(REPO, base / "custom_nodes" / "zerocopy-continuity")
    srv = Server(base, tmp_path / "server.log", env=env)
    try:
        srv.wait_ready("/api/zerocopy/engine", STARTUP_TIMEOUT_S)
    except AssertionError:
        srv.stop()
        raise
    return srv


def _zerocopy_nodes(srv: Server) -> set[str]:
    status, _, body = get(srv.url + "/object_info", 30)
    assert status == 200
    return {name for name in json.loads(body) if name.startswith("ZeroCopy")}


@pytest.fixture
def server(tmp_path):
    started = []

    def run(**env) -> Server:
        srv = _start(tmp_path / f"s{len(started)}", env)
        started.append(srv)
        return srv

    yield run
    for srv in started:
        if srv.process.poll() is None:
            srv.stop()


def test_with_the_engine_all_five_nodes_register_from_the_registry_folder_name(server):
    if not (REPO / "build" / "libzc.so").is_file():
        pytest.skip("skipped: the C engine is not built (make)")
    srv = server(ZC_LIBRARY=str(REPO / "build" / "libzc.so"))
    assert _zerocopy_nodes(srv) == ALL_NODES
    status, _, body = get(srv.url + "/api/zerocopy/engine")
    doc = json.loads(body)
    assert status == 200 and doc["ok"] is True and doc["engine"] == "0.4.0" and doc["missing_nodes"] == []


def test_an_engine_that_cannot_load_leaves_the_pin_and_one_exact_message_in_the_ui(server, tmp_path, monkeypatch):
    missing = tmp_path / "no-engine" / "libzc.so"
    srv = server(ZC_LIBRARY=str(missing))
    assert _zerocopy_nodes(srv) == {"ZeroCopyVRAMPin"}
    status, _, body = get(srv.url + "/api/zerocopy/engine")
    doc = json.loads(body)
    monkeypatch.setenv("ZC_LIBRARY", str(missing))  # the server's environment, for the expected line
    loc = _install_module().locate()
    expected = _install_module().engine_report(
        f"ZC_LIBRARY names {missing}, which does not exist (expected libzc.so for {loc.platform_label()})", loc)
    assert status == 200 and doc["ok"] is False
    assert doc["message"] == expected["message"], doc["message"]
    assert doc["missing_nodes"] == ["ZeroCopyLatentStore", "ZeroCopyLatentHandoff", "ZeroCopyLatentLoad",
                                    "ZeroCopyFilmAssemble", "ZeroCopyFilmRender"]
    assert doc["platform"] == loc.platform_label() and doc["command"] == expected["command"]
    # ComfyUI keeps serving, and the rest of the pack's API answers (the store says why it cannot)
    assert get(srv.url + "/api/zerocopy/buffers")[0] == 503
    assert get(srv.url + "/system_stats")[0] == 200
    srv.log.flush()
    assert expected["message"] in srv.log_path.read_text(errors="replace")
