"""The ComfyExtension that registers the pack's nodes, and the engine's state for the UI.

ZeroCopyVRAMPin needs no C engine, so it is registered even when the engine (the
zerocopy-engine wheel) is missing or wrong; the continuity nodes need the engine and are left
out then. The user is told where they look, not only in the log: ``engine_status()`` is the
one-line message of install.py's ``engine_report`` (the missing nodes, the platform, the command
that fixes it here), logged at startup and served at GET /zerocopy/engine, which the web
extension shows as a toast and at the top of the ZeroCopy sidebar."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from .api_version import ComfyExtension, io

from .. import zc_log as log

PACK_ROOT = Path(__file__).resolve().parent.parent  # whatever custom_nodes/ calls the folder
ENGINE_ROUTE = "/zerocopy/engine"
STATUS_ROUTE = "/zerocopy/status"  # the engine's state and the startup self-check (self_check.py)
_status: dict | None = None


def _install_module():
    """install.py, loaded by path (standard library only; its main() runs only as a script)."""
    spec = importlib.util.spec_from_file_location("zc_pack_install", PACK_ROOT / "install.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def engine_status() -> dict:
    """The engine's state, decided once per process: {"ok": True, "engine": version, ...} or
    install.py's engine_report (ok False, missing_nodes, platform, problem, command, message)."""
    global _status
    if _status is not None:
        return _status
    try:
        from ..zc_engine import _library  # loads the library (zc_engine/_locate.py's order)

        version = _library.lib.zc_version().decode()
        _status = {"ok": True, "engine": version, "missing_nodes": [], "message": ""}
    # EngineNotBuilt is an ImportError (so is a missing torch); a library without one of the
    # functions the bridge declares raises AttributeError.
    except (ImportError, AttributeError) as exc:
        try:
            _status = _install_module().engine_report(str(exc))
        except Exception as report_exc:  # noqa: BLE001 - install.py missing or broken: still say it
            _status = {"ok": False, "missing_nodes": [], "platform": "", "command": "",
                       "problem": str(exc), "message": f"{exc} (and install.py could not say "
                                                       f"more: {report_exc})"}
    return _status


def continuity_nodes() -> list[type[io.ComfyNode]]:
    status = engine_status()
    if not status["ok"]:
        log.error("%s", status["message"])
        return []
    from .film_assemble_node import ZeroCopyFilmAssemble
    from .film_render_node import ZeroCopyFilmRender
    from .handoff_node import ZeroCopyLatentHandoff
    from .load_node import ZeroCopyLatentLoad
    from .store_node import ZeroCopyLatentStore
    return [ZeroCopyLatentStore, ZeroCopyLatentHandoff, ZeroCopyLatentLoad, ZeroCopyFilmAssemble,
            ZeroCopyFilmRender]


def register_engine_route() -> bool:
    """Add GET /zerocopy/engine (and ComfyUI's /api mirror of it) to the running server; False
    without one. Called from the pack's __init__ before the /zerocopy API, whose catch-all route
    would otherwise answer this path."""
    server = sys.modules.get("server")
    routes = getattr(getattr(getattr(server, "PromptServer", None), "instance", None), "routes", None)
    if routes is None:
        return False
    from aiohttp import web

    def _self_check() -> dict:
        from . import self_check
        return self_check.result().as_dict()

    @routes.get(ENGINE_ROUTE)
    async def engine(request: web.Request) -> web.Response:
        return web.json_response({"version": 1, **engine_status(), "self_check": _self_check()},
                                 headers={"Cache-Control": "no-store"})

    @routes.get(STATUS_ROUTE)
    async def status(request: web.Request) -> web.Response:
        return web.json_response({"version": 1, "engine": engine_status(), "self_check": _self_check()},
                                 headers={"Cache-Control": "no-store"})

    return True


class ZeroCopyContinuityExtension(ComfyExtension):
    async def get_node_list(self) -> list[type[io.ComfyNode]]:
        from . import self_check

        check = self_check.result()  # at load: one line per part whose ComfyUI contract is not met
        if not check.enabled("v3_nodes"):
            return []
        from .vram_pin_node import ZeroCopyVRAMPin

        return [ZeroCopyVRAMPin, *continuity_nodes()]
