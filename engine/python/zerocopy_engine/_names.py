"""The engine library's file name on each OS: the one table of it. Standard library only and
free of imports, because the node pack also loads this file by path (zc_engine/_locate.py, which
install.py uses before anything else of the pack can be imported) to find a developer build
when this package is not installed."""

from __future__ import annotations

import platform

_LIBRARY_NAMES = {"Windows": "zc.dll", "Darwin": "libzc.dylib"}


def library_name(system: str | None = None) -> str:
    """The library's file name on an OS (``platform.system()`` spelling), default this one."""
    return _LIBRARY_NAMES.get(system or platform.system(), "libzc.so")
