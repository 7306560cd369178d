"""ComfyUI-ZeroCopy-Continuity: keep video DiTs resident between shots and hand
shot N to shot N+1 in latent space, bit-identical (see README.md).

Importing this pack never raises: if the C engine is missing or wrong, the continuity
nodes are not registered (ZeroCopyVRAMPin, which needs no engine, still is), and one
line naming the missing nodes, the platform and the fix goes to the log and, through
GET /zerocopy/engine, to a toast and the ZeroCopy sidebar (zc_nodes/extension.py).
"""

from . import zc_log as _log  # loads no engine: this file must import without one

# The frontend extension (badges, tail thumbnails, the buffers sidebar), served by
# ComfyUI at /extensions/<this folder>/.
WEB_DIRECTORY = "./web"

# GET /zerocopy/engine: the engine's state for the UI (the missing nodes and the fix), first, so
# that the API's catch-all /zerocopy/ route below does not answer it.
try:
    from .zc_nodes import extension as _extension

    _extension.register_engine_route()
except ImportError as _exc:  # no ComfyUI (comfy_api) here: nothing to show it in
    _log.debug("engine status route not registered: %s", _exc)
except Exception as _exc:  # noqa: BLE001 - the pack must import
    _log.warning("engine status route not registered: %s", _exc)

# The /zerocopy/ REST API, only when a ComfyUI web server exists (never in tests).
try:
    from .zc_nodes import api as _api

    _api.register()
except Exception as _exc:  # noqa: BLE001 - the pack must import even if the API cannot register
    _log.warning("web API not registered: %s", _exc)


# Stored shots reach the disk before a prompt is recorded as done, and SIGTERM/SIGHUP write them
# before the process stops (zc_nodes/durability.py). Importing it loads no engine.
try:
    from .zc_nodes import durability as _durability

    _hooked = _durability.install()
    _log.info("durability: flush at prompt end %s; stop signals %s",
              "on" if _hooked.get("prompt_end") else "OFF", ", ".join(_hooked.get("signals") or []) or "none")
except Exception as _exc:  # noqa: BLE001 - the pack must import; say what is not protected
    _log.error("durability hooks not installed (shots may be lost at a stop): %s", _exc)


async def comfy_entrypoint():
    from .zc_nodes.extension import ZeroCopyContinuityExtension
    return ZeroCopyContinuityExtension()
