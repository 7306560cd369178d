"""The film under a tag, as the nodes and the web API see it.

The engine reads the film from the spill files alone (zc_engine.film): each shot's lineage,
the takes at every place, the chosen line and the stale shots. The shared store writes its
spill files in the background, so a caller that needs the shots it just stored flushes first:
its own tag only (``flush_own``), so that one film's spill trouble never fails another film.

``continue_from`` is the one answer to "which stored shot does this tag continue from", for the
Handoff and the Load: the farm's newer shot first, then the generation asked for, else
``newest``, the end of the chosen line. With no take chosen that is the tag's newest generation
(the engine keeps that invariant), so only a film with choices pays for reading its files. Every
function here that reads the store takes it as an argument (default: the pack's shared one).
"""

from __future__ import annotations

from . import farm_link, runtime, ui_events
from .. import zc_log as log

from ..zc_engine import CorruptFile, NotFound, film as engine_film

START_IMAGE = "start_image"


def describe(tag: str, *, verify: bool = False, store=None) -> dict:
    """The film under ``tag`` (the engine's JSON, see docs/film.md), its own spills flushed first
    (``flush_own``: another tag's failed spill never fails this film). ``lost`` lists the
    generations whose file vanished while they were no longer in memory (said once, here)."""
    store = store or runtime.store()
    checked = flush_own(store, tag)
    doc = engine_film.describe_film(store.spill_dir, tag, verify=verify)
    doc.setdefault("drift", None)  # an engine older than the drift: none known
    doc["lost"] = checked["lost"]
    return doc


def lost_sentence(tag: str, generation: int) -> str:
    return (f"generation {generation} of film {tag!r} is lost: its spill file vanished from the spill folder "
            "and the shot was no longer in memory, so the film is shorter by it; render it again (or restore "
            "the file from a backup)")


def flush_own(store, tag: str) -> dict:
    """Write the tag's queued spills and raise only the tag's own spill failure (the store's
    ``flush_tag``); a spill file of the tag that vanished or changed under the store is written
    again from memory, or named lost when the shot is no longer there: either way said in the
    log and as a toast."""
    checked = store.flush_tag(tag)
    folder = store.spill_dir
    if checked["rewritten"]:
        gens = ", ".join(str(g) for g in checked["rewritten"])
        message = (f"the spill file of tag {tag!r} generation {gens} vanished from the spill folder {folder} or "
                   "changed there (a changed file is kept beside it as *.rejected); the shot was still in memory "
                   "and was written again")
        log.warning("%s", message)
        ui_events.warn("ZeroCopy: a spill file was written again", message)
    for generation in checked["lost"]:
        message = lost_sentence(tag, generation) + f" (spill folder: {folder})"
        log.warning("%s", message)
        ui_events.warn("ZeroCopy: a stored shot is lost", message, severity="error")
    return checked


def has_choices(tag: str, store=None) -> bool:
    """Whether the user chose a take anywhere in the film (cheap: one file's existence)."""
    return engine_film.has_choices((store or runtime.store()).spill_dir, tag)


def choices_state(tag: str) -> str:
    """A fingerprint of the takes chosen in the film ("" when none): it changes when the user
    chooses, so nodes that follow the chosen line re-run. One stat of the choices file: no
    flush, no reading of the shots."""
    try:
        info = engine_film.choices_file(runtime.store().spill_dir, tag).stat()
    except FileNotFoundError:
        return ""
    return f"{info.st_mtime_ns}:{info.st_size}"


def continue_from(store, tag: str, generation: int = 0):
    """(bundle, notes): the stored shot ``tag`` continues from, verified (its tensors' digests and,
    read from a file, its record digest: dtype, shape, lineage and every other metadata entry). A
    newer shot another worker stored is imported first (or the asked generation, when this worker
    lacks it); then ``generation`` when it is not 0, else ``newest``. The notes say what ``newest``
    skipped or followed, that the shot's record is not covered when its file predates record
    digests, then which worker the shot came from; a shot the farm published that Redis no longer
    holds (evicted) is said first. NotFound when there is no such shot (its message then says what
    the farm lacks too), CorruptFile when none verifies."""
    farm_notes = farm_link.pull(tag, generation)
    try:
        if generation:
            bundle, notes = store.get(tag, generation, verify=True), []
        else:
            bundle, notes = newest(store, tag)
    except NotFound as exc:
        if not farm_notes:
            raise
        raise NotFound(f"{exc}; {'; '.join(farm_notes)}") from None
    record = [bundle.record_note] if getattr(bundle, "record_note", None) else []
    return bundle, farm_notes + notes + record + farm_link.origin_notes(bundle.meta)


def newest(store, tag: str):
    """(bundle, notes): what "newest" means for a Handoff or a Load. Without chosen takes, the
    tag's newest generation that verifies. With them, the end of the chosen line, or the shot
    before it on the line when the end does not verify. The notes say each generation skipped
    and why (also logged as a warning), then which chosen takes were followed."""
    bundle, skipped, line_notes = _newest(store, tag)
    notes = [s.describe() for s in skipped]
    if skipped:
        notes.append(f"used generation {bundle.generation}, the newest that verifies")
        log.warning("tag %r: %s", tag, "; ".join(notes))
    return bundle, notes + line_notes


def _newest(store, tag: str):
    """(bundle, skipped, notes on the chosen takes) behind ``newest``."""
    if not has_choices(tag, store):
        bundle, skipped = store.get_newest_verified(tag)
        return bundle, skipped, []
    doc = describe(tag, store=store)
    bundle, skipped = store.first_verified(tag, reversed(doc.get("line", [])))
    if bundle is not None:
        # a newer shot whose header no longer matches its record digest is off the film (its
        # lineage cannot be trusted): say so, as a skipped newest is said
        notes = [f"generation {s['generation']} left out: {s.get('problem')}" for s in doc.get("shots", [])
                 if s.get("record") == "bad" and s["generation"] > bundle.generation]
        if bundle.generation != doc.get("newest"):
            notes.append(f"followed the chosen takes: generation {bundle.generation} ends the chosen line "
                         f"(the newest stored is {doc.get('newest')}; clear the choices in the storyboard "
                         "to continue from it)")
        return bundle, skipped, notes
    raise CorruptFile(f"no shot on the chosen line of film {tag!r} verifies: "
                      + ("; ".join(s.describe() for s in skipped) or "the line is empty")
                      + "; choose another take in the storyboard or clear the choices")


def line(doc: dict) -> list[dict]:
    """The shots of the chosen line, in film order, without the start image."""
    on_line = {g: i for i, g in enumerate(doc.get("line", []))}
    shots = [s for s in doc.get("shots", []) if s["generation"] in on_line and s.get("kind") != START_IMAGE]
    return sorted(shots, key=lambda s: on_line[s["generation"]])


def choose(tag: str, generation: int) -> dict:
    """Choose a take (0: clear every choice): the chosen line passes through it. Returns the film
    as it stands after, with ``choice`` saying whether the line passes through the chosen take (it
    does unless a choice made at the same time came after it; see zc_engine.film.choose). The
    engine's errors (NotFound for a generation the film does not hold, InvalidState for a take
    that cannot be on any line, InvalidInput for a bad tag) pass through: they name the value and
    the fix."""
    store = runtime.store()
    flush_own(store, tag)
    return engine_film.choose(store.spill_dir, tag, generation)
