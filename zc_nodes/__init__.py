"""The ComfyUI node layer: V3 node definitions, the Handoff's adapters (``adapters/``) and the
one module that talks to ComfyUI's internals (``comfy_calls``). Imported only inside ComfyUI
(relative to the pack)."""
