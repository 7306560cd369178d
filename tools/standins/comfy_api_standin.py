"""The pack's node modules without ComfyUI: the repository mounted as a package of a given name
(the nodes' relative imports resolve as inside ComfyUI's custom_nodes) beside a stand-in for
ComfyUI's ``comfy_api.latest.io``, whose node base class is a plain class, whose ``NodeOutput``
returns its outputs as a tuple (and the ``ui=`` it was given, when ``with_ui``), and whose every
other name (io.Int, io.Schema, ...) is a MagicMock. For the node-layer tests and the benchmark;
real ComfyUI runs the same modules in tests/integration.

    modules = comfy_api_standin.modules("my_pack")   # {name: module} to put into sys.modules
    node = importlib.import_module("my_pack.zc_nodes.film_render_node")
    ...
    comfy_api_standin.forget("my_pack")              # drop the pack's modules again
"""

from __future__ import annotations

import sys
import types
from pathlib import Path
from unittest import mock

REPO = Path(__file__).resolve().parents[2]


def modules(package: str, *, with_ui: bool = False) -> dict[str, types.ModuleType]:
    """The stand-in comfy_api modules and the repository as ``package``, by module name."""
    io = types.ModuleType("comfy_api.latest.io")

    class ComfyNode:
        pass

    io.ComfyNode = ComfyNode
    io.NodeOutput = (lambda *outputs, ui=None: (outputs, ui)) if with_ui else (lambda *outputs, ui=None: outputs)
    io.__getattr__ = lambda name: mock.MagicMock(name=name)
    latest = types.ModuleType("comfy_api.latest")
    latest.io = io
    api = types.ModuleType("comfy_api")
    api.latest = latest
    pack = types.ModuleType(package)
    pack.__path__ = [str(REPO)]
    return {"comfy_api": api, "comfy_api.latest": latest, "comfy_api.latest.io": io, package: pack}


def forget(package: str) -> None:
    """Remove every module of the mounted pack from sys.modules."""
    for name in [n for n in sys.modules if n == package or n.startswith(package + ".")]:
        del sys.modules[name]
