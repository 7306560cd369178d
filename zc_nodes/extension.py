"""The ComfyExtension that registers the pack's nodes.

ZeroCopyVRAMPin needs no C engine, so it is registered even when the engine
(the zerocopy-engine wheel) is missing; the continuity nodes need the engine and are left out then (the log
says in one line how to build it)."""

from comfy_api.latest import ComfyExtension, io

from . import log
from .vram_pin_node import ZeroCopyVRAMPin


def continuity_nodes() -> list[type[io.ComfyNode]]:
    try:
        from ..zc_engine import EngineNotBuilt  # noqa: F401  (loads libzc.so)
    except ImportError as exc:
        log.error("%s; the continuity nodes (ZeroCopyLatentStore, ZeroCopyLatentHandoff, "
                  "ZeroCopyLatentLoad, ZeroCopyFilmAssemble) are not registered", exc)
        return []
    from .film_assemble_node import ZeroCopyFilmAssemble
    from .handoff_node import ZeroCopyLatentHandoff
    from .load_node import ZeroCopyLatentLoad
    from .store_node import ZeroCopyLatentStore
    return [ZeroCopyLatentStore, ZeroCopyLatentHandoff, ZeroCopyLatentLoad, ZeroCopyFilmAssemble]


class ZeroCopyContinuityExtension(ComfyExtension):
    async def get_node_list(self) -> list[type[io.ComfyNode]]:
        return [ZeroCopyVRAMPin, *continuity_nodes()]
