"""The colour anchor's bookkeeping in the store: the first shot's per-channel statistics
travel with every later shot of the tag.

The store keeps only the last few generations of a tag, so the first shot may
be long gone when shot 12 is handed off. Every bundle therefore carries its
tag's anchor in its metadata: ``color_anchor`` (JSON: per-channel ``mean`` and
``std`` of the video stream, float32 values written exactly) and
``color_anchor_from``. The first shot of a tag anchors itself ("self"); each
later shot copies the anchor of the newest shot before it. A shot whose
channel count differs from the anchor's (another latent space under the same
tag) starts a new anchor, and ``color_anchor_reset`` says why. A newest shot
whose spill file is damaged (found while storing the next one: the engine sets
the file aside as ``.rejected``) is logged as a warning naming the tag, its
generation and the file, and the anchor comes from the shot before it; the
metadata never holds a server path (it is served by the REST API and written
into the spill file). Metadata, not
tensors, so a plain latent's bundle still holds exactly ``latent_tensor``
(a valid .latent file). The statistics are recorded whether or not any
Handoff uses them: two floats per channel.
"""

from __future__ import annotations

import functools
import json
import re

import torch

from .. import zc_log as log
from ..zc_continuity import color
from ..zc_engine import NotFound

ANCHOR_KEY = "color_anchor"
SOURCE_KEY = "color_anchor_from"
RESET_KEY = "color_anchor_reset"
SELF = "self"
MAX_DAMAGED = 8  # damaged newest shots passed over before the anchor starts again at this shot


def encode_stats(stats: color.ChannelStats) -> str:
    """JSON of float32 statistics; Python floats of float32 values round-trip exactly."""
    return json.dumps({"mean": [float(v) for v in stats.mean.tolist()],
                       "std": [float(v) for v in stats.std.tolist()]}, separators=(",", ":"))


@functools.lru_cache(maxsize=8)
def _anchor_lists(text: str) -> tuple[tuple, tuple] | None:
    """The anchor's mean and std values when ``text`` is a well-formed anchor (two equally long
    lists of numbers), else None. Every shot of a tag carries the same text: it is checked once."""
    try:
        data = json.loads(text)
        mean, std = data["mean"], data["std"]
    except (ValueError, KeyError, TypeError):
        return None
    if not (isinstance(mean, list) and isinstance(std, list) and len(mean) == len(std)):
        return None
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in mean + std):
        return None
    return tuple(mean), tuple(std)


def decode_stats(text: str) -> color.ChannelStats | None:
    lists = _anchor_lists(text)
    if lists is None:
        return None
    return color.ChannelStats(torch.tensor(lists[0], dtype=torch.float32),
                              torch.tensor(lists[1], dtype=torch.float32))


def _damaged_generation(tag: str, message: str) -> int | None:
    """The generation named by the spill file in an engine message (``<tag>@<20 digits>.latent``,
    docs/engine.md), or None when it names none."""
    found = re.search(re.escape(tag) + r"@(\d{20})\.latent", message)
    return int(found.group(1)) if found else None


def _path_free(message: str, spill_dir) -> str:
    from .api.redaction import redact_paths  # the REST API's rule: <spill folder>/<file>
    return redact_paths(message, spill_dir if spill_dir is not None else "")


def _newest_readable(store, tag: str) -> tuple[int, dict[str, str], list[str]]:
    """(generation, anchor metadata) of the newest shot of ``tag`` this store knows and can read,
    and what was said of each damaged newer one (path-free). Raises NotFound when there is none."""
    damaged: list[str] = []
    for _ in range(MAX_DAMAGED):
        try:
            # no tensor exported, and no look for other processes' newer files: each carries the
            # same anchor (a copy of the first shot's), so the newest this store knows tells it
            generation, meta = store.meta(tag, keys=(ANCHOR_KEY, SOURCE_KEY), look=False)
            return generation, meta, damaged
        except NotFound:
            if damaged:
                raise _Unreadable(damaged) from None
            raise
        except Exception as exc:  # noqa: BLE001 - a damaged spill file must not stop the new shot
            which = _damaged_generation(tag, str(exc))
            shot = f"generation {which}" if which is not None else "its newest shot"
            log.warning("storing a new shot of tag %r: %s could not be read (%s: %s); the new shot's colour "
                        "anchor comes from the newest older shot that reads, or starts again at the new shot",
                        tag, shot, type(exc).__name__, exc)
            damaged.append(f"{shot}: {_path_free(str(exc), getattr(store, 'spill_dir', None))}")
            if which is None:  # nothing tells that the engine set it aside: do not read it again
                break
    raise _Unreadable(damaged)


class _Unreadable(Exception):
    """No shot of the tag could be read: the damaged ones, as said (path-free)."""

    def __init__(self, damaged: list[str]):
        super().__init__("; ".join(damaged))


def anchor_for_new_shot(store, tag: str, video: torch.Tensor) -> dict[str, str]:
    """Metadata to put with a new shot of ``tag`` whose video stream is ``video``."""
    def fresh(reset: str | None = None) -> dict[str, str]:
        # computed only when this shot starts the anchor: a pass over the whole latent
        meta = {ANCHOR_KEY: encode_stats(color.channel_stats(video)), SOURCE_KEY: SELF}
        return dict(meta, **{RESET_KEY: reset}) if reset else meta

    try:
        generation, meta, _ = _newest_readable(store, tag)
    except NotFound:
        return fresh()
    except _Unreadable as exc:
        return fresh(f"the previous shot could not be read ({exc})")
    anchor = _anchor_lists(meta.get(ANCHOR_KEY, ""))  # checked, not made into tensors: no torch op
    if anchor is None:
        return fresh("the previous shot of the tag carried no anchor")
    channels = int(video.shape[1])
    if len(anchor[0]) != channels:
        return fresh(f"the previous shot has {len(anchor[0])} channels, this one {channels} "
                     "(another latent space)")
    return {ANCHOR_KEY: meta[ANCHOR_KEY], SOURCE_KEY: _source(meta, generation)}


def _source(meta: dict, generation: int) -> str:
    """Which generation a shot's anchor came from: its own ("self") or the one it names."""
    source = meta.get(SOURCE_KEY, SELF)
    return f"generation {generation}" if source == SELF else source


def anchor_of(shot) -> tuple[color.ChannelStats, str] | None:
    """The anchor a stored shot carries and which generation it came from, or None."""
    anchor = decode_stats(shot.meta.get(ANCHOR_KEY, ""))
    if anchor is None:
        return None
    return anchor, _source(shot.meta, shot.generation)
