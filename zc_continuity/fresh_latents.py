"""New latents the continuity logic fills, allocated so the first touch is cheap.

A Handoff makes the next shot's latent fresh every hop (19 MB for a Wan 2.1 720p, 81-frame
shot), and filling fresh memory costs its page faults more than the writes: 10.6 ms for that
latent with 4 KiB pages, 1.4 ms once the range is backed by 2 MiB huge pages (measured on the
development machine, one thread, after idle). The memory hint is an OS matter, so this pure
package only offers the hook: the node layer registers the engine's hint
(``set_first_touch_hint``), and every large CPU tensor made here goes through it before it is
filled. Without a hint (tests, other callers), ``empty`` is plain ``torch.empty``.

A second hook lets the node layer hand out latents it filled ahead of time, off the critical
path (``set_prepared_source``): ``filled`` asks it first, and it answers with a tensor nobody
else holds, of exactly the shape, dtype, device and fill asked for, or None (then the tensor is
made here, as without a source). A fill is usually a few values (one per channel); it can also
be a whole latent that its owner never writes (``constant``: Wan I2V's cached gray padding), which
a source recognises by identity instead of by its values.
"""

from __future__ import annotations

from typing import Callable

import torch

HINT_MIN_BYTES = 4 << 20  # below a couple of huge pages the hint cannot help

_hint: Callable[[torch.Tensor], None] | None = None
_prepared: Callable[..., torch.Tensor | None] | None = None


def set_first_touch_hint(hint: Callable[[torch.Tensor], None] | None) -> None:
    """Call ``hint(tensor)`` on every large fresh CPU tensor before it is filled (None: no hint)."""
    global _hint
    _hint = hint


def empty(shape, *, dtype: torch.dtype, device) -> torch.Tensor:
    """``torch.empty``, with the first-touch hint applied to a large CPU tensor."""
    tensor = torch.empty(tuple(int(d) for d in shape), dtype=dtype, device=device)
    if _hint is not None and tensor.device.type == "cpu" and tensor.numel() * tensor.element_size() >= HINT_MIN_BYTES:
        _hint(tensor)
    return tensor


def set_prepared_source(source: Callable[..., torch.Tensor | None] | None) -> None:
    """``source(shape, value, constant=...)`` answers ``filled`` first: a fresh tensor of ``shape``
    holding ``value`` broadcast that no one else holds, or None (None: no source)."""
    global _prepared
    _prepared = source


def filled(shape, value: torch.Tensor, *, constant: bool = False) -> torch.Tensor:
    """A new tensor of ``shape`` holding ``value`` broadcast (e.g. a per-channel fill), on its
    device and dtype; the caller owns it (it may write it).

    ``constant``: the caller promises that nobody writes ``value`` for as long as it lives (a
    cache entry), so a prepared source may know it by identity and keep a reference to it rather
    than compare or copy its values (a whole latent: too large to compare on every request)."""
    shape = tuple(int(d) for d in shape)
    if _prepared is not None:
        ready = _prepared(shape, value, constant=constant)
        if ready is not None:
            return ready
    out = empty(shape, dtype=value.dtype, device=value.device)
    out.copy_(value.expand(out.shape))
    return out
