"""Messages from the nodes to the pack's web extension (web/zerocopy.js), through
ComfyUI's websocket (``PromptServer.instance.send_sync``).

Every function is a no-op without a server (tests, in-process scripts) and never
raises: a UI message must not fail a node. The node id is taken from ComfyUI's
executing context, so a node calls e.g. ``ui_events.notify_store(tag, generation)``
without knowing its own id. Events (all broadcast; the payload always has ``node``
and ``prompt_id`` when known):

    zerocopy.store      a Store kept a shot: tag, generation, shape, dtype, tier, digest, family, bytes
    zerocopy.handoff    a Handoff used a shot: the certificate (tag, generation, digests,
                        bit_identical, adapter, family, tail_frames, ...) and the latent shape
    zerocopy.residency  the VRAM pin node's state (whatever its report dict holds)
    zerocopy.buffers    buffers changed outside a run (a drop from the API)
    zerocopy.spill_failed  a stored shot could not be written to disk: node, tag, generation,
                        message, memory_only (every [tag, generation] held only in memory)
    zerocopy.warning    something the user must see now: title, message, severity ("warn" or
                        "error"); the web extension shows it as a toast
"""

from __future__ import annotations

import sys

from .. import zc_log as log

# Events sent since start, by name (read by tests and the status route; never reset).
SENT: dict[str, int] = {}


def _server():
    """ComfyUI's PromptServer when a web server runs in this process, else None."""
    server = sys.modules.get("server")  # never imported here: in-process ComfyUI has no server
    return getattr(getattr(server, "PromptServer", None), "instance", None)


def _context() -> dict:
    try:
        from comfy_execution.utils import get_executing_context
        ctx = get_executing_context()
    except Exception:  # noqa: BLE001 - older ComfyUI: no context, no node id
        return {}
    if ctx is None:
        return {}
    return {"node": str(ctx.node_id), "prompt_id": ctx.prompt_id}


def send(event: str, data: dict) -> bool:
    """Broadcast one event to every connected browser; False when there is no server."""
    server = _server()
    if server is None:
        return False
    try:
        server.send_sync(event, data, None)
        SENT[event] = SENT.get(event, 0) + 1
        return True
    except Exception:  # noqa: BLE001 - never fail a node for a UI message
        log.debug("could not send %s", event, exc_info=True)
        return False


def _describe_slot(tag: str, generation: int) -> dict:
    """Shape, dtype, tier, digest, bytes and family of a stored slot, from the shared store: the
    one tag's description (``describe_tag``), whose cost does not grow with the tags held."""
    try:
        from . import runtime
        entry = runtime.store().describe_tag(tag) or {}
    except Exception:  # noqa: BLE001
        return {}
    slot = next((s for s in entry.get("slots", []) if s["generation"] == generation), None)
    if slot is None:
        return {}
    tensor = next((t for t in slot["tensors"] if t["name"] == "latent_tensor"),
                  slot["tensors"][0] if slot["tensors"] else None)
    out = {"family": slot.get("meta", {}).get("family"), "bytes": sum(t["nbytes"] for t in slot["tensors"])}
    if tensor is not None:
        out.update(shape=list(tensor["shape"]), dtype=tensor["dtype"], tier=tensor["tier"],
                   digest=tensor.get("digest"))
    return out


def notify_store(tag: str, generation: int, **extra) -> bool:
    """After a Store kept a shot. Shape, tier, digest... are read from the store; ``extra``
    (JSON values) overrides them."""
    if _server() is None:
        return False
    data = {**_context(), "tag": tag, "generation": int(generation), **_describe_slot(tag, int(generation))}
    data.update(extra)
    return send("zerocopy.store", data)


def notify_handoff(certificate, *, latent_shape=None, first_shot: bool = False, **extra) -> bool:
    """After a Handoff built its outputs. ``certificate``: a zc_continuity Certificate
    (anything with ``to_dict()``) or a dict; None for a first shot from the fallback image."""
    if _server() is None:
        return False
    if certificate is None:
        info = {}
    elif hasattr(certificate, "to_dict"):
        info = certificate.to_dict()
    else:
        info = dict(certificate)
    info.pop("notes", None)
    data = {**_context(), **info, "first_shot": bool(first_shot)}
    if latent_shape is not None:
        data["latent_shape"] = [int(d) for d in latent_shape]
    if info.get("tag") is not None and info.get("generation") is not None:
        stored = _describe_slot(info["tag"], int(info["generation"]))
        data.setdefault("shape", stored.get("shape"))
        data.setdefault("tier", stored.get("tier"))
        data.setdefault("digest", stored.get("digest"))
    data.update(extra)
    return send("zerocopy.handoff", data)


def notify_residency(state: dict, **extra) -> bool:
    """After the VRAM pin node ran: its state (resident or not, last reload time, ...)."""
    if _server() is None:
        return False
    return send("zerocopy.residency", {**_context(), **dict(state), **extra})


def warn(title: str, message: str, *, severity: str = "warn", **extra) -> bool:
    """A toast in every connected browser (the log line is the caller's)."""
    return send("zerocopy.warning", {**_context(), "title": title, "message": message,
                                     "severity": severity, **extra})
