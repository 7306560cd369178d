"""What the node layer takes from the packages beside it: the pack's logger (zc_engine/log.py, the
bottom floor) and the wrapper set residency's hooks are built with (zc_residency/hooks.py).
zc_nodes is imported inside ComfyUI (``<pack>.zc_nodes``, relative imports) and, by the tests,
partly as a top-level package beside zc_engine (the modules that need no ComfyUI: runtime,
durability, ui_events, ...)."""

from __future__ import annotations

if __package__ and "." in __package__:  # <pack>.zc_nodes
    from ..zc_engine import log
    from ..zc_residency.hooks import HookSet, mark
else:  # zc_nodes on sys.path beside zc_engine
    from zc_engine import log
    from zc_residency.hooks import HookSet, mark

__all__ = ["HookSet", "log", "mark"]
