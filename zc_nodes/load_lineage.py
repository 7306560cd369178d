"""Lineage for shots made from a ZeroCopyLatentLoad: the Load's tail is the shot's parent.

A Handoff marks the LATENT it builds; other nodes (KJNodes' WanImageToVideoSVIPro, core's
WanSoundImageToVideoExtend) build new LATENT dicts from the Load's output, so no marker reaches
the Store. Instead each Load remembers what it served, by node id, and a Store with no marker
looks upstream in the queued prompt for a Load that served a tail (``frames_from`` end, or the
whole shot): that shot is the new shot's parent, the digest of what the Load handed out is the
tail it used, bit-identical. Its ``trim`` is 0: what the consumer repeats of the tail is the
consumer's business (the film assembly can drop more at each seam).

When several Loads reach the Store, the tail of the highest generation is the parent (an
anchor load, ``frames_from`` start, never is: it is not a tail).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from . import prompt_graph
from ..zc_continuity import lineage

LOAD_CLASS = "ZeroCopyLatentLoad"
MAX_REMEMBERED = 256


@dataclass(frozen=True)
class ServedTail:
    tag: str
    generation: int
    tail_frames: int
    digest: str


_lock = threading.Lock()
_served: dict[str, ServedTail] = {}


def note(node_id, served: ServedTail | None) -> None:
    """Record what the Load node ``node_id`` served (None: nothing that can be a parent)."""
    if node_id is None:
        return
    with _lock:
        _served.pop(str(node_id), None)
        if served is not None:
            _served[str(node_id)] = served
            while len(_served) > MAX_REMEMBERED:
                _served.pop(next(iter(_served)))


def parent_marker(prompt: dict | None, store_node_id, input_name: str = "samples") -> dict | None:
    """The lineage marker of a Store's shot made from a Load's tail, or None."""
    upstream = prompt_graph.ancestors(prompt, store_node_id, input_name)
    loads = [n for n in upstream if prompt_graph.class_of(prompt, n) == LOAD_CLASS]
    with _lock:
        found = [(_served[n], n) for n in loads if n in _served]
    if not found:
        return None
    parent, load_id = max(found, key=lambda pair: pair[0].generation)
    users = prompt_graph.consumers(prompt, load_id, upstream)
    consumer = prompt_graph.class_of(prompt, users[0]) if users else None
    return lineage.marker(parent_tag=parent.tag, parent_generation=parent.generation,
                          tail_frames=parent.tail_frames, tail_digest=parent.digest,
                          used_digest=parent.digest, adapter=f"{LOAD_CLASS} -> {consumer or 'a node'}", trim=0)


def forget_all() -> None:
    """Forget every Load's record (the store they served from was closed)."""
    with _lock:
        _served.clear()
