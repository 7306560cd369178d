"""The ComfyExtension that registers the pack's nodes."""

from comfy_api.latest import ComfyExtension, io

from .handoff_node import ZeroCopyLatentHandoff
from .store_node import ZeroCopyLatentStore
from .vram_pin_node import ZeroCopyVRAMPin


class ZeroCopyContinuityExtension(ComfyExtension):
    async def get_node_list(self) -> list[type[io.ComfyNode]]:
        return [ZeroCopyVRAMPin, ZeroCopyLatentStore, ZeroCopyLatentHandoff]
