"""Byte and time figures as people read them."""

from __future__ import annotations

GIB = 1 << 30
MIB = 1 << 20


def fmt_bytes(n: float | None) -> str:
    if n is None:
        return "n/a"
    n = float(n)
    sign = "-" if n < 0 else ""
    n = abs(n)
    for unit, size in (("GiB", GIB), ("MiB", MIB), ("KiB", 1 << 10)):
        if n >= size:
            return f"{sign}{n / size:.2f} {unit}"
    return f"{sign}{int(n)} B"


def fmt_ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms"
