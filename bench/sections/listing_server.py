"""A server for the scale section's S7 row, in a process of its own: the pack's REST routes on a
real aiohttp application (as ComfyUI's PromptServer registers them), a store holding N tags,
and two stand-ins:

    GET /queue          ComfyUI's own route (a small JSON answer, as ComfyUI's get_queue)
    GET /old/buffers    the listing as the pack used to answer it: the whole-store
                        describe and the document built on the event loop (the comparison)

    python -m bench.sections.listing_server SPILL_DIR TAGS

Prints ``port <n>`` once it listens; runs until killed.
"""

from __future__ import annotations

import asyncio
import sys

import torch


def build_app(store):
    from aiohttp import web

    from zc_pack.zc_nodes.api import buffers, routes

    app = web.Application()

    async def queue(request):  # what ComfyUI's GET /queue costs itself: a lock and two small lists
        return web.json_response({"queue_running": [], "queue_pending": []})

    async def old_listing(request):  # as it used to be: on the event loop
        doc = buffers.buffers_doc(store.describe())
        return web.json_response({"version": 1, **doc})

    app.router.add_get("/queue", queue)
    app.router.add_get("/old/buffers", old_listing)
    routes.add_to_app(app, routes.Services(store=lambda: store, projection_for=lambda meta, channels: None,
                                           residency_report=lambda: {"available": False},
                                           spill_dir=lambda: store.spill_dir))
    return app


async def serve(spill_dir: str, tags: int) -> None:
    from aiohttp import web

    from zc_pack.zc_engine import LatentStore

    torch.set_num_threads(1)
    store = LatentStore(spill_dir=spill_dir)
    x = torch.randn(1, 16, 2, 8, 8)
    meta = {"family": "wan21", "latent_format": "Wan21", "source": "bench"}
    for index in range(tags):
        store.put(f"shot_{index:05}", {"latent_tensor": x}, meta, spill=True)
    store.flush()
    runner = web.AppRunner(build_app(store))
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]
    print(f"port {port}", flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(serve(sys.argv[1], int(sys.argv[2])))
