"""The pack's web API (routes.py) and its wiring into a running ComfyUI server.

``register()`` is called from the pack's root ``__init__`` and does nothing when
there is no server (tests, scripts that import ComfyUI in-process): the pack
must import anywhere. Only validation.py, buffers.py and preview.py are pure;
this module may import ComfyUI lazily, inside functions.
"""

from __future__ import annotations

from ... import zc_log as log

_registered = False


def projection_for(meta: dict, channels: int):
    """The RgbProjection of a stored latent, read from the running ComfyUI's latent formats
    (the format the Store recorded, else the family's), or None."""
    from ...zc_continuity import families
    from .. import comfy_calls
    from . import preview

    names = []
    if meta.get("latent_format"):
        names.append(meta["latent_format"])
    family = meta.get("family")
    if family and family != "unknown":
        try:
            names.extend(families.family_by_name(family).latent_format_names)
        except Exception:  # noqa: BLE001 - an unknown family name: no factors
            pass
    for name in names:
        latent_format = comfy_calls.latent_format_by_name(name)
        factors = getattr(latent_format, "latent_rgb_factors", None)
        if latent_format is None or not factors or len(factors) != channels:
            continue
        return preview.RgbProjection(
            name=name, factors=[list(map(float, row)) for row in factors],
            bias=getattr(latent_format, "latent_rgb_factors_bias", None),
            process_in=latent_format.process_in,
            reshape=getattr(latent_format, "latent_rgb_factors_reshape", None))
    return None


def residency_report() -> dict:
    """GET /zerocopy/residency: zc_residency's ``report()``, or why there is none. Called only
    inside ComfyUI (``register``), where the pack's packages are siblings."""
    from ...zc_residency import get_service
    from ...zc_residency.report import report

    try:
        data = report(get_service())
    except Exception as exc:  # noqa: BLE001 - shown to the user, logged in full
        log.exception("residency report() failed")
        return {"available": False, "reason": f"the residency report failed: {type(exc).__name__}: {exc}"}
    return {"available": True, **_jsonable(data)}


def _jsonable(value):
    """Plain JSON values (dataclasses, tuples, paths, enums and numbers become dicts, lists, strings)."""
    import dataclasses
    import enum
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = dataclasses.asdict(value)
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_jsonable(v) for v in value]
    if isinstance(value, enum.Enum):
        return _jsonable(value.value)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def register() -> bool:
    """Add the /zerocopy/ routes to ComfyUI's server; False (and nothing done) without a server."""
    global _registered
    if _registered:
        return True
    import sys

    # main.py imports server before it loads custom nodes; never import it ourselves
    # (in-process ComfyUI and tests have no server, and importing one has side effects).
    server = sys.modules.get("server")
    routes = getattr(getattr(getattr(server, "PromptServer", None), "instance", None), "routes", None)
    if routes is None:
        return False
    from .. import farm_link, runtime, ui_events
    from . import routes as api_routes

    try:
        from .. import film_view  # the engine reads films: without it the film routes answer 503
    except ImportError:
        film_view = None

    services = api_routes.Services(store=runtime.store, projection_for=projection_for,
                                   residency_report=residency_report, notify=ui_events.send,
                                   farm=farm_link, film=film_view)
    api_routes.add_to_route_table(routes, services)
    _registered = True
    log.debug("web API registered under %s/", api_routes.PREFIX)
    return True
