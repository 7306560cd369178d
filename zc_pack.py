"""The repository as one Python package for the tests, the benchmark and the tools:
``from zc_pack import zc_engine``, ``from zc_pack.zc_nodes import runtime``.

ComfyUI imports this folder as a package (``custom_nodes/<folder>``) whose __init__.py registers
the nodes and needs ComfyUI. This module stands for that package without running it: its
``__path__`` is the repository, so the pack's packages import beneath it and their relative
imports (``from ..zc_engine import ...``) resolve as inside ComfyUI. Each module is imported once,
under one name, so an exception class a test catches is the class the pack raises. Needs only the
repository's root on ``sys.path`` (pytest's ``pythonpath``, or ``PYTHONPATH``); never shipped
(.comfyignore lets in only the runtime). tests/python/test_package_imports.py keeps the pack's
packages from being imported any other way."""

from pathlib import Path

__path__ = [str(Path(__file__).resolve().parent)]
