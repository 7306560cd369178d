"""Shared helpers for the web API tests: a PNG reader for our encoder's output
(filter 0, 8-bit RGB), a synchronous client for an aiohttp application, the routes on a
plain application over a real LatentStore, and the film view over that store."""

from __future__ import annotations

import asyncio
import struct
import zlib


def read_png(data: bytes) -> tuple[int, int, bytes]:
    """(width, height, raw RGB bytes) of an 8-bit RGB PNG with filter 0 rows."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, width, height, idat = 8, None, None, b""
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind = data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])
        assert zlib.crc32(kind + body) == crc, f"bad CRC in {kind!r}"
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", body[:10])
            assert (depth, color) == (8, 2)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * 3 + 1
    assert len(raw) == stride * height
    assert all(raw[y * stride] == 0 for y in range(height))
    return width, height, b"".join(raw[y * stride + 1:(y + 1) * stride] for y in range(height))


class SyncClient:
    """Runs requests against an aiohttp Application on a private event loop."""

    def __init__(self, app):
        from aiohttp.test_utils import TestClient, TestServer

        self.loop = asyncio.new_event_loop()
        self.client = TestClient(TestServer(app), loop=self.loop)
        self.loop.run_until_complete(self.client.start_server())

    def request(self, method: str, path: str, **kwargs):
        async def go():
            response = await self.client.request(method, path, **kwargs)
            body = await response.read()
            return response.status, dict(response.headers), body

        return self.loop.run_until_complete(go())

    def json(self, method: str, path: str, **kwargs):
        import json

        status, headers, body = self.request(method, path, **kwargs)
        assert headers.get("Content-Type", "").startswith("application/json"), (status, headers, body[:200])
        return status, json.loads(body)

    def close(self):
        self.loop.run_until_complete(self.client.close())
        self.loop.close()


class FilmOfStore:
    """What zc_nodes.film_view does, on a harness's own store: the engine's film reader over its
    spill folder, flushed first."""

    def __init__(self, store):
        self.store = store

    def describe(self, tag, verify=False):
        from zc_pack.zc_engine import film as engine_film

        self.store.flush()
        return engine_film.describe_film(self.store.spill_dir, tag, verify=verify)

    def choose(self, tag, generation):
        from zc_pack.zc_engine import film as engine_film

        self.store.flush()
        return engine_film.choose(self.store.spill_dir, tag, generation)


class RoutesHarness:
    """The /zerocopy/ routes (zc_nodes.api.routes) on a plain aiohttp application over ``store``
    (a real LatentStore): ``services`` are routes.Services' other fields; ``client`` is a
    SyncClient. close() (or leaving a ``with``) closes the client, then the store."""

    def __init__(self, store, **services):
        import aiohttp.web

        from zc_pack.zc_nodes.api import routes

        self.store = store
        app = aiohttp.web.Application()
        routes.add_to_app(app, routes.Services(store=lambda: self.store, **services))
        self.client = SyncClient(app)

    def close(self):
        self.client.close()
        self.store.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
