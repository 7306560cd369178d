"""The ComfyUI node layer: V3 node definitions, the Handoff's adapters (``adapters/``) and the
one module that talks to ComfyUI's internals (``comfy_calls``). Imported only inside ComfyUI
(relative to the pack)."""

from . import store_wiring  # noqa: F401 - what happens when the shared store opens and is reset
