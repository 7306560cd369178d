"""The pack's REST API on ComfyUI's aiohttp server, under /zerocopy/.

    GET    /zerocopy/buffers                       every buffer: tag, generations, shapes,
                                                   dtypes, bytes, tier, digest, age
    GET    /zerocopy/buffers/{tag}                 one buffer in full (every slot, tensor, digest
                                                   and metadata)
    GET    /zerocopy/buffers/{tag}/preview.png     PNG of one stored latent frame (no VAE);
                                                   ?generation=0&frame=-1&batch=0&size=256&tensor=
    DELETE /zerocopy/buffers/{tag}[?disk=true]     drop a tag (disk=true also deletes its spill files)
    POST   /zerocopy/drop  {"tags": [...], "disk": false} | {"all": true, "disk": false}
    GET    /zerocopy/residency                     the VRAM residency / allocator report
    GET    /zerocopy/farm                          the farm tier: on or off (and why), Redis URL
                                                   (password hidden), worker, connection, pending
                                                   publishes, and the newest shot of each farm tag
    POST   /zerocopy/farm  {"url": "redis://..."}  use this Redis URL ("": ZEROCOPY_REDIS_URL or
                                                   off); what ComfyUI's settings panel sends
    GET    /zerocopy/film/{tag}[?verify=true]      the film under a tag, read from its spill files:
                                                   the chosen line, takes, stale shots, lineage of
                                                   every shot (verify: every file and hop digest)
    POST   /zerocopy/film/{tag}/choose {"generation": g}
                                                   choose take g (the line follows it; the shots
                                                   after other takes turn stale); 0 clears choices

ComfyUI also serves every route under /api/ (what the frontend's fetchApi uses).
Every answer is JSON except the PNG; every error is JSON
``{"error": code, "message": text}`` with its HTTP status, and no traceback ever
reaches the client (it goes to the log). Every JSON answer, errors included, leaves
through ``_encode``, which takes the server's folders out of every string
(redaction.redact_document): no route shows a server path, whatever a message, a
film's problems or a shot's metadata carried. What grows with the tags held (the
listing, drop-all) runs on a worker thread, never on the server's event loop, and
concurrent listings share one run. The handlers depend on ``Services``, so tests
run them on a plain aiohttp application without ComfyUI.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
from collections.abc import Callable
from dataclasses import dataclass

from aiohttp import web

from ... import zc_log as log
from . import buffers, preview
from .redaction import redact_document, spill_folder as redaction_folder
from .validation import (
    MAX_FRAME_INDEX,
    MAX_GENERATION,
    ApiError,
    check_query,
    parse_bool,
    parse_int,
    parse_json_object,
    parse_tag,
    parse_tag_list,
    parse_tensor_name,
    require_bool,
)

PREFIX = "/zerocopy"
API_VERSION = 1

# The engine's exception classes (zc_engine/errors.py, one per zc.h status code), by name so that
# this module imports no engine -> HTTP status and error code.
_ENGINE_STATUS = {
    "InvalidInput": (400, "invalid_input"),
    "NotFound": (404, "not_found"),
    "BudgetExceeded": (507, "budget_exceeded"),
    "LimitExceeded": (400, "limit_exceeded"),
    "CorruptFile": (409, "corrupt_file"),
    "InvalidState": (409, "invalid_state"),
    "EngineIOError": (503, "storage_unavailable"),  # the spill folder refused: read-only, full, removed
    "AccessDenied": (403, "access_denied"),  # a spill file of another user, not readable by this process
    "Unsupported": (400, "unsupported"),
}

@dataclass
class Services:
    """What the routes need from the running pack (injected, so tests can supply their own).

    store: returns the shared LatentStore. projection_for(meta, channels): the
    RgbProjection for a stored latent, or None. residency_report(): the
    residency/cuda_allocator report dict. notify(event, data): tells connected
    browsers that buffers changed (may be None). farm: the farm link (status(),
    listing(), configure(url)), or None (the farm routes answer 503). film: describe(tag,
    verify=) and choose(tag, generation), or None (the film routes answer 503)."""

    store: Callable[[], object]
    projection_for: Callable[[dict, int], preview.RgbProjection | None]
    residency_report: Callable[[], dict]
    notify: Callable[[str, dict], None] | None = None
    farm: object | None = None
    film: object | None = None
    # The spill folder answers are redacted against (a path in it keeps its place inside it);
    # None: the pack's store's (redaction.py).
    spill_dir: Callable[[], object] | None = None

    def folder(self):
        if self.spill_dir is None:
            return None
        try:
            return self.spill_dir()
        except Exception:  # noqa: BLE001 - no folder known: every path becomes <server path>/name
            return ""


LONG_LIST = 64  # a top-level list longer than this is encoded item by item


def _redacted_json(value, spill_dir) -> str:
    """``value`` as JSON without server paths. A path needs a '/' or a '\\', which its JSON text
    keeps (a backslash as an escape): a text without either holds none and is the answer as it is;
    only the others are walked (redaction.redact_document) and encoded again."""
    text = json.dumps(value)
    if "/" not in text and "\\" not in text:
        return text
    return json.dumps(redact_document(value, spill_dir))


def _encode(data: dict, spill_dir=None) -> bytes:
    """The one way out of every JSON answer: the document without server paths (every string
    that may hold one through redaction.redact_document; ``spill_dir``: the store's folder, else
    the pack's), as UTF-8 JSON. The listing calls it on a worker thread, where a long top-level
    list (its buffers) is encoded and checked item by item: short steps, never one long C call
    that would keep the event loop's thread from the interpreter lock."""
    long = {key: value for key, value in data.items() if isinstance(value, list) and len(value) > LONG_LIST}
    if not long:
        return _redacted_json(data, spill_dir).encode("utf-8")
    if spill_dir is None:
        spill_dir = redaction_folder()  # resolved once for all the items
    parts = [_redacted_json({key: value for key, value in data.items() if key not in long}, spill_dir)[:-1]]
    for key, value in long.items():
        items = ",".join([_redacted_json(item, spill_dir) for item in value])
        parts.append(("," if len(parts[0]) > 1 or len(parts) > 1 else "") + f"{_redacted_json(key, spill_dir)}:[{items}]")
    return ("".join(parts) + "}").encode("utf-8")


def _body(body: bytes, status: int = 200, **headers) -> web.Response:
    return web.Response(body=body, status=status, content_type="application/json", charset="utf-8",
                        headers={"Cache-Control": "no-store", **headers})


def _answer(services: Services, data: dict, status: int = 200, **headers) -> web.Response:
    """A JSON answer (through _encode, on the event loop: for documents of bounded size)."""
    return _body(_encode(data, services.folder()), status, **headers)


@contextlib.contextmanager
def _collector_paused():
    """Python's cyclic garbage collector paused while the listing is built (on its worker thread).
    The listing makes tens of thousands of short-lived containers (its tags' documents), freed by
    reference counting when it ends; while they live they trigger collections, and a full one
    walks every object of the process (all of ComfyUI's) holding the interpreter lock: the event
    loop waited 140 ms for it behind 16 listings of 2,000 tags (bench row S7). The caller frees
    what it made before the block ends, so the collector, running again, never walks it."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


class _OneAtATime:
    """A thread's work that concurrent requests share: at most one run at a time, and requests
    that arrive while one runs share the next one, which starts when it ends. Every answer is
    computed after its request arrived (never a run that began before it), N concurrent requests
    cost at most two runs, and the event loop only waits for the result."""

    def __init__(self, work: Callable[[], object]):
        self._work = work
        self._current: asyncio.Future | None = None
        self._queued: asyncio.Future | None = None

    async def __call__(self):
        if self._queued is not None:
            task = self._queued
        else:
            running = self._current if self._current is not None and not self._current.done() else None
            task = asyncio.ensure_future(self._start(running))
            if running is None:
                self._current = task
            else:
                self._queued = task
        return await asyncio.shield(task)  # a client that goes away does not cancel the others' run

    async def _start(self, running):
        if running is not None:
            await asyncio.wait([running])
            self._current, self._queued = self._queued, None
        return await asyncio.get_running_loop().run_in_executor(None, self._work)


def _error(services: Services, exc: ApiError) -> web.Response:
    headers = {"Allow": exc.extra.pop("allow")} if "allow" in exc.extra else {}
    return _answer(services, exc.body(), exc.status, **headers)


def _engine_error(exc: BaseException) -> ApiError | None:
    """An ApiError for an engine exception (its message names value, expectation and fix)."""
    if not any(cls.__name__ == "ZeroCopyError" for cls in type(exc).__mro__):
        return None
    if type(exc).__name__ == "EngineNotBuilt":
        return ApiError(503, "engine_unavailable", str(exc))  # _encode takes the paths out
    status, code = next((_ENGINE_STATUS[cls.__name__] for cls in type(exc).__mro__ if cls.__name__ in _ENGINE_STATUS),
                        (500, "engine_error"))
    return ApiError(status, code, str(exc))


def _guarded(services: Services, methods: tuple[str, ...], handler):
    """One aiohttp handler per path: method check, then ApiError/engine errors -> JSON,
    anything else -> a generic 500 (the traceback goes to the log only)."""

    async def route(request: web.Request) -> web.StreamResponse:
        try:
            if request.method not in methods:
                raise ApiError(
                    405,
                    "method_not_allowed",
                    f"{request.method} is not allowed on this route; use {', '.join(methods)}",
                    allow=", ".join(methods),
                )
            return await handler(request)
        except ApiError as exc:
            return _error(services, exc)
        except Exception as exc:  # noqa: BLE001 - the boundary to the client
            mapped = _engine_error(exc)
            if mapped is not None:
                return _error(services, mapped)
            log.exception("%s %s failed", request.method, request.path)
            return _answer(
                services,
                {
                    "error": "internal",
                    "message": "internal error in the ZeroCopy API; the ComfyUI log has the details",
                },
                500,
            )

    route.__name__ = f"zerocopy_{handler.__name__}"
    return route


def _store(services: Services):
    try:
        return services.store()
    except ApiError:
        raise
    except Exception as exc:  # noqa: BLE001
        mapped = _engine_error(exc)
        if mapped is not None:
            raise mapped from None
        log.exception("the latent store is unavailable")
        raise ApiError(
            503, "store_unavailable", "the latent store is unavailable; the ComfyUI log has the details"
        ) from None


async def _off_loop(fn, *args):
    """fn(*args) on a worker thread: what grows with the tags held, or waits for the disk (a drop
    with disk=True waits for pending spills and fsyncs), must not stall the server's event loop
    (ComfyUI's own routes, its websockets)."""
    return await asyncio.get_running_loop().run_in_executor(None, lambda: fn(*args))


ONLY_ON_DISK = ("held only on disk (its spill files): nothing in memory to drop; drop it with "
                "\"disk\": true (DELETE ...?disk=true) to delete its files")


def _drop_tags(store, tags: list[str] | None, disk: bool) -> dict:
    """Drop ``tags`` (None: every tag the store lists), on a worker thread. Each tag is first
    checked to be droppable, then dropped: every tag asked for ends up in exactly one list of
    the answer: ``dropped``, ``missing`` (the store holds nothing under it) or ``not_dropped``
    (with the reason: e.g. held only on disk while ``disk`` is false). Nothing stops half-way."""
    if tags is None:
        entries = {entry["tag"]: entry for entry in store.describe().get("tags", [])}
        tags = sorted(entries)
    else:
        entries = {tag: store.describe_tag(tag) for tag in tags}
    dropped, missing, not_dropped = [], [], []
    for tag in tags:
        entry = entries.get(tag)
        if entry is None:
            missing.append(tag)
        elif not disk and not entry.get("slots"):
            not_dropped.append({"tag": tag, "reason": ONLY_ON_DISK})
        else:
            try:
                store.drop(tag, disk=disk)
            except Exception as exc:  # noqa: BLE001 - said in the answer, with the engine's words
                if type(exc).__name__ == "NotFound":  # dropped by someone else meanwhile
                    missing.append(tag)
                    continue
                if _engine_error(exc) is None:
                    raise
                not_dropped.append({"tag": tag, "reason": str(exc)})
            else:
                dropped.append(tag)
    return {"dropped": dropped, "missing": missing, "not_dropped": not_dropped, "disk": disk}


def build_routes(services: Services) -> list[tuple[str, str, Callable]]:
    """(method, path, handler) for every route; method '*' (each handler checks its methods)."""

    def listing() -> bytes:
        """GET /zerocopy/buffers, encoded: on a worker thread (its cost grows with the tags), the
        description decoded and the answer encoded a tag at a time (the event loop's thread gets
        the interpreter lock between them)."""
        store = _store(services)
        text = getattr(store, "describe_text", None)
        with _collector_paused():
            description = buffers.parse_description(text()) if text is not None else store.describe()
            doc = buffers.buffers_doc(description)
            del description  # freed while the collector is paused: it never walks them
            body = _encode({"version": API_VERSION, **doc}, services.folder())
            del doc
        return body

    shared_listing = _OneAtATime(listing)

    async def list_buffers(request: web.Request) -> web.Response:
        check_query(request.query, ())
        return _body(await shared_listing())

    async def buffer(request: web.Request) -> web.Response:
        tag = parse_tag(request.match_info["tag"])
        if request.method == "DELETE":
            check_query(request.query, ("disk",))
            disk = parse_bool(request.query, "disk", False)
            store = _store(services)
            entry = await _off_loop(store.describe_tag, tag)
            if entry is None:
                raise ApiError(404, "not_found", f"no buffer is tagged {tag!r}")
            if not disk and not entry.get("slots"):
                raise ApiError(409, "invalid_state", f"tag {tag!r} is {ONLY_ON_DISK}")
            await _off_loop(lambda: store.drop(tag, disk=disk))
            _notify_dropped(services, [tag])
            return _answer(services, {"dropped": [tag], "missing": [], "not_dropped": [], "disk": disk})
        check_query(request.query, ())
        entry = await _off_loop(_store(services).describe_tag, tag)  # one tag: its cost, not the store's
        if entry is None:
            raise ApiError(404, "not_found", f"no buffer is tagged {tag!r}")
        return _answer(services, {"version": API_VERSION, **buffers.buffer_doc(entry, full_meta=True)})

    async def preview_png(request: web.Request) -> web.Response:
        tag = parse_tag(request.match_info["tag"])
        query = request.query
        check_query(query, ("generation", "frame", "batch", "size", "tensor"))
        generation = parse_int(query, "generation", 0, 0, MAX_GENERATION)
        frame = parse_int(query, "frame", -1, -MAX_FRAME_INDEX, MAX_FRAME_INDEX)
        batch = parse_int(query, "batch", 0, -4096, 4095)
        size = parse_int(query, "size", preview.DEFAULT_SIZE, preview.MIN_SIZE, preview.MAX_SIZE)
        name = parse_tensor_name(query["tensor"]) if "tensor" in query else None
        store = _store(services)

        def render():
            shot = store.get(tag, generation)
            chosen = name or (
                "latent_tensor"
                if "latent_tensor" in shot.tensors
                else next((n for n, t in shot.tensors.items() if t.dim() in (4, 5)), None)
            )
            if chosen not in shot.tensors:
                raise ApiError(
                    404,
                    "not_found",
                    f"tag {tag!r} generation {shot.generation} has no image or video tensor "
                    f"{chosen!r}; it holds: {', '.join(sorted(shot.tensors))}",
                )
            tensor = shot.tensors[chosen]
            if tensor.dim() not in (4, 5):
                raise ApiError(
                    400,
                    "unsupported",
                    f"tensor {chosen!r} of shape {list(tensor.shape)} is not an image or video "
                    "latent; previews show [B,C,H,W] and [B,C,T,H,W] tensors",
                )
            projection = services.projection_for(shot.meta, int(tensor.shape[1]))
            try:
                png, method, (width, height) = preview.preview_png(
                    tensor, projection, batch=batch, frame=frame, size=size
                )
            except IndexError as exc:
                raise ApiError(400, "out_of_range", str(exc)) from None
            return png, method, shot.generation, width, height

        png, method, generation, width, height = await asyncio.get_running_loop().run_in_executor(
            None, render
        )
        return web.Response(
            body=png,
            content_type="image/png",
            headers={
                "Cache-Control": "no-store",
                "X-ZeroCopy-Generation": str(generation),
                "X-ZeroCopy-Preview-Method": method,
                "X-ZeroCopy-Preview-Size": f"{width}x{height}",
            },
        )

    async def drop(request: web.Request) -> web.Response:
        check_query(request.query, ())
        data = parse_json_object(await _read_body(request), ("tags", "all", "disk"))
        disk = require_bool(data, "disk", False)
        every = require_bool(data, "all", False)
        if every == ("tags" in data):
            raise ApiError(
                400, "invalid_parameter", "give either 'tags' (a list of buffer tags) or 'all': true"
            )
        wanted = None if every else parse_tag_list(data["tags"])
        store = _store(services)
        answer = await _off_loop(_drop_tags, store, wanted, disk)
        if answer["dropped"]:
            _notify_dropped(services, answer["dropped"])
        return _answer(services, answer)

    async def residency(request: web.Request) -> web.Response:
        check_query(request.query, ())
        report = await asyncio.get_running_loop().run_in_executor(None, services.residency_report)
        return _answer(services, {"version": API_VERSION, **report})

    async def farm(request: web.Request) -> web.Response:
        check_query(request.query, ())
        link = services.farm
        if link is None:
            raise ApiError(503, "farm_unavailable", "this server has no farm tier")
        loop = asyncio.get_running_loop()
        if request.method == "POST":
            data = parse_json_object(await _read_body(request), ("url",))
            url = data.get("url", "")
            if not isinstance(url, str):
                raise ApiError(400, "invalid_parameter", f"'url' must be a string, not {type(url).__name__}")
            try:
                doc = await loop.run_in_executor(None, link.configure, url)
            except ValueError as exc:  # FarmConfigError: names the value (password hidden) and the fix
                raise ApiError(400, "invalid_parameter", str(exc)) from None
        else:
            doc = await loop.run_in_executor(None, link.status)
        doc = dict(doc, tags=[])
        if doc.get("enabled"):
            try:
                doc["tags"] = await loop.run_in_executor(None, link.listing)
            except RuntimeError as exc:  # FarmUnavailable: Redis unreachable now
                doc["listing_error"] = str(exc)
        return _answer(services, {"version": API_VERSION, **doc})

    def _film():
        if services.film is None:
            raise ApiError(503, "film_unavailable", "this server has no film view (the engine is not loaded)")
        return services.film

    async def film(request: web.Request) -> web.Response:
        tag = parse_tag(request.match_info["tag"])
        check_query(request.query, ("verify",))
        verify = parse_bool(request.query, "verify", False)
        view = _film()
        doc = await asyncio.get_running_loop().run_in_executor(None, lambda: view.describe(tag, verify=verify))
        return _answer(services, {**doc, "version": API_VERSION})

    async def film_choose(request: web.Request) -> web.Response:
        tag = parse_tag(request.match_info["tag"])
        check_query(request.query, ())
        data = parse_json_object(await _read_body(request), ("generation",))
        generation = data.get("generation")
        if not isinstance(generation, int) or isinstance(generation, bool) or not 0 <= generation <= MAX_GENERATION:
            raise ApiError(400, "invalid_parameter", f"'generation' must be a whole number 0..{MAX_GENERATION} "
                           f"(the take to choose; 0 clears every choice), not {generation!r}")
        view = _film()
        doc = await asyncio.get_running_loop().run_in_executor(None, lambda: view.choose(tag, generation))
        _notify(services, "zerocopy.film", {"reason": "chosen", "tag": tag, "generation": generation})
        return _answer(services, {**doc, "version": API_VERSION})

    async def unknown(request: web.Request) -> web.Response:
        raise ApiError(
            404, "not_found", f"no ZeroCopy route {request.path!r}; the routes are listed in docs/web-api.md"
        )

    any_method = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
    return [
        ("*", f"{PREFIX}/buffers", _guarded(services, ("GET",), list_buffers)),
        ("*", f"{PREFIX}/buffers/{{tag}}", _guarded(services, ("GET", "DELETE"), buffer)),
        ("*", f"{PREFIX}/buffers/{{tag}}/preview.png", _guarded(services, ("GET",), preview_png)),
        ("*", f"{PREFIX}/drop", _guarded(services, ("POST",), drop)),
        ("*", f"{PREFIX}/residency", _guarded(services, ("GET",), residency)),
        ("*", f"{PREFIX}/farm", _guarded(services, ("GET", "POST"), farm)),
        ("*", f"{PREFIX}/film/{{tag}}", _guarded(services, ("GET",), film)),
        ("*", f"{PREFIX}/film/{{tag}}/choose", _guarded(services, ("POST",), film_choose)),
        ("*", f"{PREFIX}/{{tail:.*}}", _guarded(services, any_method, unknown)),
    ]


async def _read_body(request: web.Request) -> bytes:
    """At most MAX_BODY_BYTES + 1 bytes of the body (enough to refuse a larger one)."""
    from .validation import MAX_BODY_BYTES

    if request.content_length is not None and request.content_length > MAX_BODY_BYTES:
        raise ApiError(
            413,
            "body_too_large",
            f"the request body has {request.content_length} bytes; the limit is {MAX_BODY_BYTES}",
        )
    chunks, total = [], 0
    while True:
        chunk = await request.content.read(16384)
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
        if total > MAX_BODY_BYTES:
            break
    return b"".join(chunks)


def _notify_dropped(services: Services, tags: list[str]) -> None:
    _notify(services, "zerocopy.buffers", {"reason": "dropped", "tags": tags})


def _notify(services: Services, event: str, data: dict) -> None:
    if services.notify is None:
        return
    try:
        services.notify(event, data)
    except Exception:  # noqa: BLE001 - a UI message must never fail the request
        log.debug("could not notify the UI", exc_info=True)


def add_to_app(app: web.Application, services: Services) -> None:
    """Register the routes on a plain aiohttp application (tests, embedding)."""
    for method, path, handler in build_routes(services):
        app.router.add_route(method, path, handler)


def add_to_route_table(routes: web.RouteTableDef, services: Services) -> None:
    """Register the routes on ComfyUI's PromptServer.instance.routes (it later mirrors them under /api)."""
    for method, path, handler in build_routes(services):
        routes.route(method, path)(handler)
