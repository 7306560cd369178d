"""What the node layer's ComfyUI-free modules take from the packages beside it: the pack's logger
(zc_log, the bottom floor) and the wrapper set residency's hooks are built with
(zc_residency/hooks.py). Neither loads the engine, so a pack without one still imports.
zc_nodes is imported inside ComfyUI (``<pack>.zc_nodes``, relative imports) and, by the tests,
partly as a top-level package beside the others (the modules that need no ComfyUI: runtime,
durability, ui_events, ...)."""

from __future__ import annotations

if __package__ and "." in __package__:  # <pack>.zc_nodes
    from .. import zc_log as log
    from ..zc_residency.hooks import HookSet, mark
else:  # zc_nodes on sys.path beside zc_log
    import zc_log as log
    from zc_residency.hooks import HookSet, mark

__all__ = ["HookSet", "log", "mark"]
