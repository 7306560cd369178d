"""Strict parsing of what a web client sends to the /zerocopy/ routes.

Everything a client sends is untrusted: tags must match the engine's tag
charset exactly (so no path, no separator, no control character ever reaches
the engine), numbers are parsed as plain decimal integers within documented
bounds, unknown query parameters are refused, and JSON bodies are size-capped
before they are parsed. Every failure is an ``ApiError`` that the routes turn
into a JSON error with its HTTP status; nothing here touches the file system.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping

# The engine's tag rule (zc.h zc_tag_check): 1-64 bytes of letters, digits,
# '_', '-', '.', not starting with '.' or '-'. ASCII only: str.isalnum would
# accept other scripts' letters, which the engine refuses.
TAG_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]{0,63}")
TENSOR_NAME_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:\-]{0,63}")
INT_RE = re.compile(r"[+-]?[0-9]{1,20}")
MAX_GENERATION = 2**63 - 1
MAX_FRAME_INDEX = 1 << 20
MAX_BODY_BYTES = 64 * 1024
MAX_TAGS_PER_REQUEST = 256


class ApiError(Exception):
    """A client error (or a server one) with its HTTP status and a stable error code."""

    def __init__(self, status: int, code: str, message: str, **extra):
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.extra = extra

    def body(self) -> dict:
        return {"error": self.code, "message": self.message, **self.extra}


def _shown(value: str, limit: int = 40) -> str:
    """A client value quoted for an error message: cut short, control characters escaped."""
    text = value if len(value) <= limit else value[:limit] + "..."
    return ascii(text)


def parse_tag(raw: object) -> str:
    """A buffer tag, or ApiError 400 naming the rule."""
    if not isinstance(raw, str) or not TAG_RE.fullmatch(raw):
        shown = _shown(raw) if isinstance(raw, str) else type(raw).__name__
        raise ApiError(
            400,
            "invalid_tag",
            f"tag {shown} is not a buffer tag: use 1-64 characters from letters, digits, "
            "'_', '-' and '.', not starting with '.' or '-'",
        )
    return raw


def parse_tensor_name(raw: str) -> str:
    if not TENSOR_NAME_RE.fullmatch(raw):
        raise ApiError(
            400,
            "invalid_parameter",
            f"tensor {_shown(raw)} is not a tensor name: use 1-64 characters from letters, "
            "digits, '_', '-', '.', ':'",
        )
    return raw


def check_query(query: Mapping[str, str], allowed: Iterable[str]) -> None:
    """Refuse unknown and repeated query parameters (a typo must not be silently ignored)."""
    allowed = set(allowed)
    keys = [key for key, _ in query.items()]  # a MultiDict's keys() lists a repeated key once
    for key in keys:
        if key not in allowed:
            names = ", ".join(sorted(allowed)) or "none"
            raise ApiError(
                400, "invalid_parameter", f"unknown query parameter {_shown(key)}; this route takes: {names}"
            )
        if keys.count(key) > 1:
            raise ApiError(400, "invalid_parameter", f"query parameter {key!r} is given more than once")


def parse_int(query: Mapping[str, str], name: str, default: int, minimum: int, maximum: int) -> int:
    """A decimal integer query parameter within [minimum, maximum]."""
    raw = query.get(name)
    if raw is None:
        return default
    if not INT_RE.fullmatch(raw):
        raise ApiError(
            400, "invalid_parameter", f"{name}={_shown(raw)} is not an integer; expected {minimum}..{maximum}"
        )
    value = int(raw)
    if not minimum <= value <= maximum:
        raise ApiError(400, "out_of_range", f"{name}={value} is out of range; expected {minimum}..{maximum}")
    return value


def parse_bool(query: Mapping[str, str], name: str, default: bool = False) -> bool:
    raw = query.get(name)
    if raw is None:
        return default
    value = raw.lower()
    if value in ("1", "true", "yes"):
        return True
    if value in ("0", "false", "no"):
        return False
    raise ApiError(400, "invalid_parameter", f"{name}={_shown(raw)} is not a boolean; use true or false")


def parse_json_object(body: bytes, allowed_keys: Iterable[str]) -> dict:
    """A JSON object body of at most MAX_BODY_BYTES with only the allowed keys."""
    if len(body) > MAX_BODY_BYTES:
        raise ApiError(
            413, "body_too_large", f"the request body has {len(body)} bytes; the limit is {MAX_BODY_BYTES}"
        )
    try:
        data = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise ApiError(400, "invalid_json", "the request body is not valid UTF-8 JSON") from None
    if not isinstance(data, dict):
        raise ApiError(
            400, "invalid_json", f"the request body must be a JSON object, not {type(data).__name__}"
        )
    allowed = set(allowed_keys)
    unknown = sorted(k for k in data if k not in allowed)
    if unknown:
        raise ApiError(
            400,
            "invalid_parameter",
            f"unknown field {_shown(unknown[0])}; the body takes: {', '.join(sorted(allowed))}",
        )
    return data


def parse_tag_list(raw: object) -> list[str]:
    if not isinstance(raw, list) or not raw:
        raise ApiError(400, "invalid_parameter", "'tags' must be a non-empty list of buffer tags")
    if len(raw) > MAX_TAGS_PER_REQUEST:
        raise ApiError(
            413, "too_many_tags", f"'tags' has {len(raw)} entries; at most {MAX_TAGS_PER_REQUEST} per request"
        )
    tags = [parse_tag(t) for t in raw]
    return list(dict.fromkeys(tags))


def require_bool(data: dict, key: str, default: bool = False) -> bool:
    value = data.get(key, default)
    if not isinstance(value, bool):
        raise ApiError(400, "invalid_parameter", f"{key!r} must be true or false, not {type(value).__name__}")
    return value
