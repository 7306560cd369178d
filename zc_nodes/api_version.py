"""Which ``comfy_api`` version the pack's nodes are written against: the one line to change.

Every node module imports ``io`` (and the extension ``ComfyExtension``) from here, never from
``comfy_api.<version>`` itself. Why ``latest``: see docs/compatibility.md, "The comfy_api version".
"""

from __future__ import annotations

import importlib

API_VERSION = "latest"  # a package of comfy_api: "latest", or a numbered one such as "v0_0_2"

_api = importlib.import_module(f"comfy_api.{API_VERSION}")
io = _api.io
ComfyExtension = getattr(_api, "ComfyExtension", None)


def comfy_api():
    """The comfy_api package the nodes use (its io, ui, ComfyExtension)."""
    return _api


def _inputs_take_advanced() -> bool:
    """Whether this ComfyUI's V3 inputs take ``advanced=`` (folded away as expert inputs; v0.33.0
    and later: ``comfy_api/latest/_io.py`` Input.__init__), read from the signature."""
    import inspect

    init = getattr(getattr(io, "Input", None), "__init__", None)
    try:
        return init is not None and "advanced" in inspect.signature(init).parameters
    except (TypeError, ValueError):
        return False


# Keyword arguments for an expert input: folded where ComfyUI supports it, shown elsewhere.
FOLDED: dict = {"advanced": True} if _inputs_take_advanced() else {}
