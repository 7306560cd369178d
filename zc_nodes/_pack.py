"""What the node layer's ComfyUI-free modules take from the packages beside it: the pack's logger
(zc_engine/log.py, the bottom floor), the engine's film reader and its CorruptFile (film_view),
the farm's shot identity (which worker made a shot: farm_link), and the wrapper set residency's hooks are built with (zc_residency/hooks.py).
zc_nodes is imported inside ComfyUI (``<pack>.zc_nodes``, relative imports) and, by the tests,
partly as a top-level package beside zc_engine (the modules that need no ComfyUI: runtime,
durability, ui_events, ...)."""

from __future__ import annotations

if __package__ and "." in __package__:  # <pack>.zc_nodes
    from ..zc_engine import CorruptFile, log
    from ..zc_engine import film as engine_film
    from ..zc_farm import identity as farm_identity
    from ..zc_residency.hooks import HookSet, mark
else:  # zc_nodes on sys.path beside zc_engine
    from zc_engine import CorruptFile, log
    from zc_engine import film as engine_film
    from zc_farm import identity as farm_identity
    from zc_residency.hooks import HookSet, mark

__all__ = ["CorruptFile", "HookSet", "engine_film", "farm_identity", "log", "mark"]
