"""The JSON documents the buffer routes return, built from ``LatentStore.describe()``.

Pure functions over the engine's description (plain dicts), so they are
tested without a server. The server's spill directory is never shown to a
client (only whether spilling is on), and metadata strings are cut to a bound.
"""

from __future__ import annotations

import json
import re
import time

from .redaction import redact_paths

MAX_META_VALUE_CHARS = 1024
MAX_META_KEYS = 64
MAX_BUFFERS_LISTED = 1000
# Metadata keys shown in the list (the full map is in the inspect document).
LIST_META_KEYS = ("family", "latent_format", "model", "model_variant", "pixel_frames", "source")


_DECODER = json.JSONDecoder()
_SPACE = re.compile(r"[ \t\n\r]*")


def parse_description(text: str) -> dict:
    """``json.loads`` of the store's description (``LatentStore.describe_text()``), its ``tags``
    decoded one tag at a time. The same value; but a thread that decodes thousands of tags in one
    C call holds the interpreter lock all along (tens of milliseconds, more on a loaded machine),
    while between tags the server's event loop gets its turn. Anything unexpected: json.loads."""
    try:
        return _parse_object(text)
    except (ValueError, IndexError):
        return json.loads(text)


def _parse_object(text: str) -> dict:
    def skip(i: int) -> int:
        return _SPACE.match(text, i).end()

    def expect(i: int, char: str) -> int:
        if text[i] != char:
            raise ValueError(f"expected {char!r} at {i}")
        return skip(i + 1)

    out: dict = {}
    i = expect(skip(0), "{")
    if text[i] == "}":
        return out
    while True:
        key, i = _DECODER.raw_decode(text, i)
        i = expect(skip(i), ":")
        if key == "tags" and text[i] == "[":
            items, i = [], skip(i + 1)
            while text[i] != "]":
                item, i = _DECODER.raw_decode(text, i)  # one tag: a short C call
                items.append(item)
                i = skip(i)
                if text[i] == ",":
                    i = skip(i + 1)
                elif text[i] != "]":
                    raise ValueError(f"expected ',' or ']' at {i}")
            value, i = items, i + 1
        else:
            value, i = _DECODER.raw_decode(text, i)
        out[key] = value
        i = skip(i)
        if text[i] == "}":
            if skip(i + 1) != len(text):
                raise ValueError("text after the object")
            return out
        i = expect(i, ",")


def short_digest(digest: str | None) -> str | None:
    """``xxh3:1234abcd`` (8 hex digits), for badges; None stays None."""
    if not digest:
        return None
    algo, _, hexdigits = digest.partition(":")
    return f"{algo}:{hexdigits[:8]}" if hexdigits else digest[:16]


def _age(created_ms: int | None, now: float) -> float | None:
    if not created_ms:
        return None
    return round(max(0.0, now - created_ms / 1000.0), 3)


def _tensor_doc(tensor: dict) -> dict:
    return {
        "name": tensor["name"],
        "shape": list(tensor["shape"]),
        "dtype": tensor["dtype"],
        "bytes": tensor["nbytes"],
        "tier": tensor["tier"],
        "host_copy": bool(tensor.get("host_copy", False)),
        "digest": tensor.get("digest"),
    }


def _meta_doc(meta: dict) -> dict:
    out = {}
    for key in sorted(meta)[:MAX_META_KEYS]:
        value = str(meta[key])
        out[key] = value if len(value) <= MAX_META_VALUE_CHARS else value[:MAX_META_VALUE_CHARS] + "..."
    return out


def _primary(tensors: list[dict]) -> dict | None:
    """The tensor a badge describes: the latent itself when present, else the first."""
    for tensor in tensors:
        if tensor["name"] == "latent_tensor":
            return tensor
    return tensors[0] if tensors else None


def slot_doc(slot: dict, now: float, *, full_meta: bool) -> dict:
    tensors = [_tensor_doc(t) for t in slot.get("tensors", [])]
    meta = slot.get("meta", {}) or {}
    doc = {
        "generation": slot["generation"],
        "age_s": _age(slot.get("created_unix_ms"), now),
        "created_unix_ms": slot.get("created_unix_ms"),
        "bytes": sum(t["bytes"] for t in tensors),
        "restored_from_disk": bool(slot.get("restored_from_disk", False)),
        # "written" (its spill file is complete), "pending" (queued), "failed" (memory only: the
        # spill failed; pinned in memory and retried), "off" (stored without a disk tier)
        "spill": slot.get("spill", "off"),
        "readers": slot.get("readers", 0),
        "tensors": tensors,
    }
    if full_meta:
        doc["meta"] = _meta_doc(meta)
    else:
        doc["meta"] = _meta_doc({k: meta[k] for k in LIST_META_KEYS if k in meta})
    return doc


def buffer_doc(entry: dict, now: float | None = None, *, full_meta: bool = False) -> dict:
    """One tag: the newest generation's shape, dtype, tier, digest and age, and every slot."""
    now = time.time() if now is None else now
    slots = sorted(entry.get("slots", []), key=lambda s: s["generation"], reverse=True)
    slot_docs = [slot_doc(s, now, full_meta=full_meta) for s in slots]
    disk = sorted(entry.get("disk_generations", []) or [], reverse=True)
    newest = slot_docs[0] if slot_docs else None
    primary = _primary(newest["tensors"]) if newest else None
    # The newest generation that exists (in memory or on disk), never one only counted: numbers
    # handed out for shots that are gone (a spill that failed before a restart) are not shots.
    existing = [s["generation"] for s in slot_docs] + disk
    doc = {
        "tag": entry["tag"],
        "depth": entry.get("depth"),
        "newest_generation": max(existing) if existing else None,
        "memory_only": [s["generation"] for s in slot_docs if s["spill"] == "failed"],
        "generations": [s["generation"] for s in slot_docs],
        "disk_generations": disk,
        "in_memory": bool(slot_docs),
        "bytes": sum(s["bytes"] for s in slot_docs),
        "family": (newest or {}).get("meta", {}).get("family"),
        "shape": primary["shape"] if primary else None,
        "dtype": primary["dtype"] if primary else None,
        "tier": primary["tier"] if primary else ("disk" if disk else None),
        "digest": primary["digest"] if primary else None,
        "digest_short": short_digest(primary["digest"]) if primary else None,
        "age_s": newest["age_s"] if newest else None,
        "tensors": [t["name"] for t in newest["tensors"]] if newest else [],
        "slots": slot_docs,
    }
    return doc


def _listing_order(entry: dict, now: float) -> tuple:
    """A tag's place in the listing: the age of its newest slot (as buffer_doc computes it),
    tags held only on disk last, then the tag."""
    slots = entry.get("slots") or []
    newest = max(slots, key=lambda s: s["generation"]) if slots else None
    age = _age(newest.get("created_unix_ms"), now) if newest else None
    return (age if age is not None else float("inf"), entry["tag"])


def buffers_doc(description: dict, now: float | None = None) -> dict:
    """GET /zerocopy/buffers: every tag (newest first by generation time), the store's stats.
    Only the listed tags (at most MAX_BUFFERS_LISTED) are made into documents."""
    now = time.time() if now is None else now
    entries = sorted(description.get("tags", []), key=lambda e: _listing_order(e, now))
    docs = [buffer_doc(e, now) for e in entries[:MAX_BUFFERS_LISTED]]
    return {
        "buffers": docs,
        "count": len(entries),
        "truncated": len(entries) > MAX_BUFFERS_LISTED,
        "stats": dict(description.get("stats", {})),
        "budgets": {"host_bytes": description.get("host_budget_bytes", 0),
                    "device_bytes": description.get("device_budget_bytes", 0)},
        "spill": bool(description.get("spill_dir")),
        # Why shots are memory-only (the newest spill failure, the server's folders left out),
        # or None when every stored shot is on disk.
        "spill_problem": _redacted(description.get("spill_problem")),
    }


def _redacted(message: str | None) -> str | None:
    if not message:
        return None
    return redact_paths(message)
