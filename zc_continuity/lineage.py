"""What a shot continued from: the lineage that ties a film's hops together.

A Handoff marks the LATENT it builds with ``MARKER``: a plain dict naming the
parent shot (tag, generation), the digests of the tail it took and of what it
placed, the adapter, the pixel frames to trim and a short summary of the
prompt. Samplers copy their input LATENT dict (KSampler:
``out = latent.copy()``), so the marker reaches the Store that keeps the new
shot, which records it under the metadata key ``LINEAGE_KEY`` as JSON (with
the sampler's seed when it can read it from the prompt). A shot without a
marker is the root of its film (a first shot, or one made without a Handoff).

The JSON is what ``zc film`` reads from the spill files alone, so its fields
are part of the file format (see docs/film.md).
"""

from __future__ import annotations

import json

from .errors import ContinuityError

MARKER = "zerocopy_lineage"
"""LATENT dict key of the Handoff's lineage marker (removed by the Store, never stored as a tensor)."""

LINEAGE_KEY = "lineage"
"""Bundle metadata key of a shot's lineage (JSON, version 2; version 1 files still read)."""

VERSION = 2
"""Version 2 adds ``seam`` (the engine's seam record, docs/film.md), written by the Store; nothing else
changed."""
READABLE = (1, 2)
SEAM = "seam"
PROMPT_CHARS = 200

_FIELDS = {
    "parent_tag": str, "parent_generation": int, "tail_frames": int, "tail_digest": str,
    "used_digest": str, "adapter": str, "trim": int,
}


def summarize_prompt(text: str | None) -> str:
    """A prompt as the film shows it: one line, at most PROMPT_CHARS characters."""
    if not text:
        return ""
    line = " ".join(str(text).split())
    return line if len(line) <= PROMPT_CHARS else line[: PROMPT_CHARS - 1] + "\u2026"


def marker(*, parent_tag: str, parent_generation: int, tail_frames: int, tail_digest: str | None,
           used_digest: str | None, adapter: str, trim: int, prompt: str | None = None,
           audio_digests: tuple | None = None, audio_span: tuple | None = None) -> dict:
    """The marker a Handoff puts into the LATENT it builds for the next shot. ``audio_span`` is
    (axis, start, count) of the parent's audio stream that the audio tail digests cover."""
    out = {"version": VERSION, "parent_tag": parent_tag, "parent_generation": int(parent_generation),
           "tail_frames": int(tail_frames), "tail_digest": tail_digest or "", "used_digest": used_digest or "",
           "adapter": adapter, "trim": int(trim), "prompt": summarize_prompt(prompt)}
    if audio_digests:
        out["audio_tail_digest"], out["audio_used_digest"] = audio_digests[0] or "", audio_digests[1] or ""
    if audio_span:
        out["audio_axis"], out["audio_start"], out["audio_count"] = (int(v) for v in audio_span)
    return out


def check(value) -> dict:
    """The marker if it is one this version understands, else a ContinuityError naming the problem."""
    if not isinstance(value, dict):
        raise ContinuityError(f"the LATENT's {MARKER!r} entry is a {type(value).__name__}, not the lineage a "
                              "ZeroCopyLatentHandoff writes; remove it, or let the Handoff's latent reach "
                              "the sampler unchanged")
    for name, kind in _FIELDS.items():
        if not isinstance(value.get(name), kind) or isinstance(value.get(name), bool):
            raise ContinuityError(f"the LATENT's {MARKER!r} entry lacks a valid {name!r} ({value.get(name)!r}); "
                                  "it was not written by this version's ZeroCopyLatentHandoff")
    if value.get("version") not in READABLE or isinstance(value.get("version"), bool):
        raise ContinuityError(f"lineage version {value.get('version')!r} is not one of {READABLE}; "
                              "update the pack")
    return value


def record(value: dict, *, seed=None, seam: dict | None = None) -> str:
    """The JSON the Store keeps under LINEAGE_KEY: the marker, plus the sampler's seed if known and
    the hop's ``seam`` (the engine's seam record) when one was measured; always written as VERSION.

    A parent in another tag is recorded as is: the film of the shot's own tag then says it
    continues another film (``zc film`` reports it; the store loses nothing)."""
    out = dict(check(value), version=VERSION)
    out.pop(SEAM, None)  # a seam is the Store's measure of this shot, never copied from a marker
    if seed is not None:
        out["seed"] = int(seed)
    if seam:
        out[SEAM] = seam
    return json.dumps(out, sort_keys=True, separators=(",", ":"))


def parse(text: str | None) -> dict | None:
    """A stored shot's lineage, or None for a root (or unreadable) record."""
    if not text:
        return None
    try:
        value = json.loads(text)
        return check(value)
    except (ValueError, ContinuityError):
        return None


def with_seam(text: str, seam: dict | None) -> str:
    """A recorded lineage (``record``'s JSON) with the hop's seam added; unchanged when there is none."""
    if not seam:
        return text
    value = json.loads(text)
    return record(value, seed=value.get("seed"), seam=seam)


def seam_of(value: dict | None) -> dict | None:
    """The seam a parsed lineage records (a version 2 one measured by the Store), else None."""
    seam = (value or {}).get(SEAM)
    return seam if isinstance(seam, dict) and isinstance(seam.get("score"), (int, float)) else None


def seam_of_meta(meta) -> dict | None:
    """The seam a stored shot's metadata records in its lineage, else None."""
    return seam_of(parse((meta or {}).get(LINEAGE_KEY)))
