"""The film as an OpenTimelineIO timeline, so an editor (DaVinci Resolve reads ``.otio``) gets the
cut with every shot as its own clip, the crossfades as dissolves and the other takes in reach.

One video track, in film order. Shot k is a Clip over its per-shot clip file, which holds exactly
its ``kept`` frames (the trim is already cut away), so the media's available range is [0, kept).

A crossfade of c frames is a ``SMPTE_Dissolve`` Transition between the two clips. OTIO places a
transition on the cut point between its neighbours, takes no track time of its own, and covers
[cut - in_offset, cut + out_offset): ``in_offset`` frames of the outgoing clip before the cut and
``out_offset`` frames of the incoming clip after it; the rest of the blend comes from the clips'
handles (media beyond their source ranges: the outgoing clip's tail handle is the transition's
``out_offset``, the incoming clip's head handle its ``in_offset``). The cut sits in the middle of
the blend, ``in_offset = c // 2`` and ``out_offset = c - c // 2``, so the transition covers exactly
the c blended film frames [start of shot k+1, end of shot k), each clip's range plus its handles
covers exactly its film frames [start, end), and the track lasts ``plan.total_frames``: the film's
frames, one for one. A centred dissolve is what an editor makes by hand, with media to spare on
both sides.

Alternates: OTIO has no first-class "other takes of this shot". Extra tracks would show takes of
other lengths as if they played at the same time, and a Stack per shot is flattened or refused by
Resolve's import. So the other takes of a place go where an editor sees them and a tool reads them:
a marker on the clip, named "2 other takes: gen 14 (take 2/3), gen 19 (take 3/3)", whose note lists
each take's prompt and clip file (Resolve shows it as a clip marker with that name and note), and
the full records in the clip's ``metadata["zerocopy"]["alternates"]`` (kept in the file and by
OTIO tools; Resolve does not show metadata). Swapping a take is then: import its clip, drop it in.

Paths are relative to the folder the ``.otio`` is written to, so the folder can move as a whole.
``opentimelineio`` is imported inside the functions: without it the render still writes the video
and says plainly why there is no timeline (``available()``).
"""

from __future__ import annotations

import itertools
import math
import os
import tempfile

from .errors import RenderError
from .plan import ShotCut, total_frames

PIN = "opentimelineio==0.18.1"
REQUIRED_TAKE_KEYS = ("generation", "take", "takes", "state")


def available() -> str | None:
    """None when opentimelineio imports; else one line naming why and the fix."""
    try:
        import opentimelineio  # noqa: F401
    except ImportError as error:
        return (f"no editor timeline: opentimelineio does not import ({error}); install it with ComfyUI's "
                f"Python: python -m pip install {PIN}")
    return None


def build(film_name: str, cuts: list[ShotCut], clips: list[str | None], rate: float,
          takes: list[list[dict]], *, film_file: str | None = None, width: int | None = None,
          height: int | None = None):
    """The film's timeline (an ``otio.schema.Timeline``): one clip per shot of ``cuts``, over
    ``clips[k]`` (relative to the .otio's folder, or None: a MissingReference), dissolves for the
    crossfades, ``takes[k]`` (the other takes at shot k's place) as a marker and metadata."""
    reason = available()
    if reason:
        raise RenderError(reason)
    import opentimelineio as otio

    _check(cuts, clips, rate, takes)

    def frames(count: int):
        return otio.opentime.RationalTime(count, rate)

    def span(first: int, count: int):
        return otio.opentime.TimeRange(frames(first), frames(count))

    track = otio.schema.Track(name="film", kind=otio.schema.TrackKind.Video)
    for shot, clip, others in zip(cuts, clips, takes):
        head, tail = shot.fade_in // 2, shot.fade_out - shot.fade_out // 2  # the handles the dissolves use
        if clip is None:
            media = otio.schema.MissingReference(available_range=span(0, shot.kept))
        else:
            media = otio.schema.ExternalReference(target_url=clip, available_range=span(0, shot.kept))
        take = _chosen_take(others)
        item = otio.schema.Clip(name=_name(shot, take), media_reference=media,
                                source_range=span(head, shot.kept - head - tail))
        item.metadata["zerocopy"] = {
            "place": shot.place, "generation": shot.generation, "decoded": shot.decoded, "trim": shot.trim,
            "kept": shot.kept, "fade_in": shot.fade_in, "fade_out": shot.fade_out, "film_start": shot.start,
            "take": take[0] if take else None, "takes": take[1] if take else None,
            "alternates": [dict(other) for other in others]}
        if others:
            item.markers.append(otio.schema.Marker(
                name=_alternates_line(others), marked_range=span(head, 0),
                color=otio.schema.MarkerColor.PURPLE, comment=_alternates_note(others)))
        c = shot.fade_in  # the crossfade with the shot before (0 for the first shot, or a cut)
        if c:
            track.append(otio.schema.Transition(
                name=f"crossfade {c} frames", transition_type=otio.schema.TransitionTypes.SMPTE_Dissolve,
                in_offset=frames(c // 2), out_offset=frames(c - c // 2)))
        track.append(item)

    meta = {"film": film_name, "rate": rate, "total_frames": total_frames(cuts), "width": width,
            "height": height}
    if film_file is not None:
        meta["film_file"] = film_file
    return otio.schema.Timeline(name=film_name, tracks=[track], global_start_time=frames(0),
                                metadata={"zerocopy": meta})


def write(timeline, path: str) -> None:
    """Write the timeline to ``path`` atomically: a reader sees the old file or the whole new one,
    never a half-written one (a temporary name in the same folder, fsync, os.replace)."""
    folder = os.path.dirname(os.path.abspath(path))
    text = timeline.to_json_string()
    temp = None
    try:
        fd, temp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=folder)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp, path)
    except OSError as error:
        if temp is not None and os.path.exists(temp):
            os.remove(temp)
        raise RenderError(f"could not write the timeline {path}: {error}; free disk space or choose a "
                          "writable output folder") from error


def _check(cuts, clips, rate, takes) -> None:
    if not cuts:
        raise RenderError("no shots to put on the timeline; the film's line needs at least one shot")
    if len(clips) != len(cuts):
        raise RenderError(f"{len(clips)} clip paths for {len(cuts)} shots; pass one per shot (None where a "
                          "shot has no clip file)")
    if len(takes) != len(cuts):
        raise RenderError(f"{len(takes)} lists of other takes for {len(cuts)} shots; pass one per shot "
                          "([] where a place has one take)")
    if not (isinstance(rate, (int, float)) and math.isfinite(rate) and rate > 0):
        raise RenderError(f"frame rate {rate!r} is not a positive number; pass the film's frames per second")
    for before, after in itertools.pairwise(cuts):
        if before.fade_out != after.fade_in or after.start != before.end - before.fade_out:
            raise RenderError(f"shots {before.place} and {after.place} do not meet (fade out "
                              f"{before.fade_out}, fade in {after.fade_in}, end {before.end}, start "
                              f"{after.start}); build the cuts with plan.cut")
    for shot, others in zip(cuts, takes):
        for other in others:
            missing = ", ".join(key for key in REQUIRED_TAKE_KEYS if key not in other)
            if missing:
                raise RenderError(f"another take at shot {shot.place} lacks {missing}: {other!r}; each "
                                  f"needs {', '.join(REQUIRED_TAKE_KEYS)}")


def _chosen_take(others: list[dict]) -> tuple[int, int] | None:
    """(take, takes) of the shot on the line: the one take number its place's other takes leave
    free (1/1 when there are none); None when they do not leave exactly one."""
    if not others:
        return (1, 1)
    total = others[0]["takes"]
    free = set(range(1, total + 1)) - {other["take"] for other in others}
    return (free.pop(), total) if len(free) == 1 else None


def _name(shot: ShotCut, take: tuple[int, int] | None) -> str:
    taken = [f"take {take[0]}/{take[1]}"] if take else []
    return " · ".join([f"shot {shot.place}", *taken, f"gen {shot.generation}"])


def _label(other: dict) -> str:
    stale = ", stale" if other["state"] == "stale" else ""
    return f"gen {other['generation']} (take {other['take']}/{other['takes']}{stale})"


def _alternates_line(others: list[dict]) -> str:
    count = len(others)
    return f"{count} other take{'s' if count > 1 else ''}: " + ", ".join(_label(other) for other in others)


def _alternates_note(others: list[dict]) -> str:
    """One line per other take: its prompt and its clip file, for the marker's note."""
    return "\n".join(f"{_label(other)}: {other.get('prompt') or '(no prompt)'}"
                     + (f" [{other['clip']}]" if other.get("clip") else "") for other in others)
