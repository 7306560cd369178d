"""The film line both finishing nodes read (ZeroCopyFilmAssemble, ZeroCopyFilmRender): the tag's
film from the engine (verified or not), its shots that cannot be placed refused or, with
``assemble_incomplete``, left out and said, the range of shots asked for and each seam's trim; the
inputs that choose them; and the fingerprint that re-runs a node when a shot is stored or a take
chosen. One place, so the two nodes read the same film the same way.
"""

from __future__ import annotations

from dataclasses import dataclass

from .api_version import io

from . import farm_link, film_view, runtime
from .. import zc_log as log
from .tag_inputs import store_state
from ..zc_continuity import bundle_layout, film_join
from ..zc_continuity.errors import ContinuityError
from ..zc_engine import NotFound, ZeroCopyError


def gaps(doc: dict) -> list[str]:
    """Why the film in doc (film_view.describe) is not whole: one sentence per shot that cannot
    be placed on it (state ``broken``: a missing parent, a parent not older, a cycle, a header that
    no longer matches its record digest)."""
    out = []
    for shot in doc.get("shots", []):
        if shot.get("state") == "broken":
            out.append(shot.get("problem") or f"generation {shot['generation']} cannot be placed on the film "
                                               f"(hop {shot.get('hop')})")
    return out


def partial_line(doc: dict) -> dict:
    """doc with its line made of what can be assembled when the engine's line is empty (the
    film's first shot lacks its parent): the newest shot and its ancestors down to the gap."""
    if doc.get("line"):
        return doc
    by_generation = {s["generation"]: s for s in doc.get("shots", [])}
    line, generation = [], doc.get("newest")
    while generation in by_generation and generation not in line and len(line) < len(by_generation):
        line.append(generation)
        generation = by_generation[generation].get("parent")
    return {**doc, "line": line[::-1]}


def incomplete_error(tag: str, problems: list[str], line_count: int, farm: bool) -> str:
    """Why the film cannot be finished: each shot's problem (named as the user sees it, with its
    fix, from the engine), what assembling would give, and, with a farm configured (``farm``),
    where the missing shots may be."""
    where = " on this worker" if farm else ""
    farm_advice = ("On a farm, assemble on the worker that made the film (Redis keeps only the newest "
                   "ZEROCOPY_REDIS_KEEP shots of a tag, so a worker that never received the first ones cannot "
                   "fetch them), or raise ZEROCOPY_REDIS_KEEP above the film's length on every worker before "
                   "the film is made. ") if farm else ""
    return (f"film {tag!r} is not whole{where}: {'; '.join(problems)}. Assembling it would give {line_count} "
            f"shot(s) without them, so nothing was assembled. {farm_advice}To join only the shots that "
            "verify, turn on assemble_incomplete")


@dataclass
class Line:
    """The shots a node finishes: the film document, the shots first_shot..last_shot of its line,
    each one's trim (0 for the first), and why any shot was left out (assemble_incomplete)."""

    doc: dict
    shots: list[dict]
    trims: list[int]
    missing: list[str]


def read(tag: str, first_shot: int, last_shot: int, seam_trim: int, assemble_incomplete: bool, *, verify: bool,
         verb: str) -> Line:
    """The film's line as a finishing node takes it (``verb``: "assembled", "rendered"); the farm's
    ancestors fetched first when Redis holds them."""
    farm_link.complete_film(tag)  # on a farm: the ancestors this worker lacks, if Redis has them
    try:
        doc = film_view.describe(tag, verify=verify)
    except NotFound as exc:
        raise ContinuityError(f"{exc}; store the film's shots with ZeroCopyLatentStore under tag {tag!r} "
                              "first") from None
    missing = [film_view.lost_sentence(tag, g) for g in doc.get("lost", [])] + gaps(doc)
    if missing and not assemble_incomplete:
        raise ContinuityError(incomplete_error(tag, missing, len(film_view.line(doc)), farm_link.configured()))
    if missing:
        doc = partial_line(doc)
        log.warning("film %r %s incomplete (assemble_incomplete is on): %s", tag, verb, "; ".join(missing))
    if not film_view.line(doc):
        raise ContinuityError(f"film {tag!r} has no shot on its line that can be {verb}"
                              + (f": {'; '.join(missing)}" if missing else ""))
    shots = film_join.shot_range(film_view.line(doc), first_shot, last_shot)
    return Line(doc, shots, film_join.seam_trims(shots, seam_trim), missing)


def range_inputs(verb: str) -> list:
    """The inputs that choose the shots and their seams (``verb``: "join", "render")."""
    return [
        io.Int.Input("crossfade_frames", default=0, min=0, max=64,
                     tooltip="Frames blended at each seam (0: a cut). Each seam shortens the film by this many "
                             "frames."),
        io.Int.Input("first_shot", default=1, min=1, max=100000,
                     tooltip=f"The first shot to {verb} (1: the film's first)."),
        io.Int.Input("last_shot", default=0, min=0, max=100000,
                     tooltip=f"The last shot to {verb} (0: the end of the line)."),
        io.Int.Input("seam_trim", default=-1, min=-1, max=4096,
                     tooltip="-1: drop the frames each shot's lineage says repeat the shot before. 0 or more: "
                             "drop this many at every seam instead."),
    ]


def fingerprint(tag) -> str | float:
    """What a finishing node re-runs on: the tag's newest generation and its chosen takes (a linked
    tag, unknown when ComfyUI asks: every tag's newest stands in for it, as on the Handoff)."""
    try:
        if tag is None:
            return store_state()
        entry = runtime.store().describe_tag(tag)
        return f"{entry['last_generation'] if entry else 0}:{film_view.choices_state(tag)}"
    except Exception:  # noqa: BLE001 - an unknown state re-runs the node (NaN never equals itself)
        return float("nan")


def shot_streams(store, tag: str, place: int, generation: int, verb: str) -> list:
    """The streams of one shot of the line, read verified (``verb``: "joins", "renders"): a shot that
    cannot be read, or holds a batch, is refused naming its place and generation and what to do."""
    try:
        stored = store.get(tag, generation, verify=True)
    except ZeroCopyError as exc:
        raise ContinuityError(f"shot {place} of film {tag!r} (generation {generation}) cannot be read: {exc}; "
                              "choose another take of it in the storyboard, or render it again") from None
    streams = bundle_layout.streams_of(stored)
    if streams[0].shape[0] != 1:
        raise ContinuityError(f"shot {place} (generation {generation}) holds a batch of {streams[0].shape[0]}; "
                              f"a film {verb} one clip per shot, so store batch 1 shots (or split the batch before "
                              "the Store)")
    return streams


def audio_stream(streams: list, place: int, generation: int, verb: str):
    """A shot's audio latent, for a node given an audio VAE (``verb``: "assemble", "render")."""
    if len(streams) < 2:
        raise ContinuityError(f"shot {place} (generation {generation}) has no audio stream; disconnect audio_vae, "
                              f"or {verb} an audio-video (LTX-2) film")
    return streams[1]
