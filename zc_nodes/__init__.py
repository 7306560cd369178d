"""The ComfyUI node layer: V3 node definitions and the one adapter that talks
to ComfyUI's internals. Imported only inside ComfyUI (relative to the pack)."""
