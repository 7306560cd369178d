"""The film under a tag, as the nodes and the web API see it.

The engine reads the film from the spill files alone (zc_engine.film): each shot's lineage,
the takes at every place, the chosen line and the stale shots. The shared store writes its
spill files in the background, so a caller that needs the shots it just stored flushes first.

``newest`` for a Handoff or a Load means the end of the chosen line. With no take chosen that is
the tag's newest generation (the engine keeps that invariant), so only a film with choices pays
for reading its files.
"""

from __future__ import annotations

from . import runtime
from ._pack import log
from ..zc_engine import CorruptFile, film as engine_film

START_IMAGE = "start_image"


def describe(tag: str, *, verify: bool = False) -> dict:
    """The film under ``tag`` (the engine's JSON, see docs/film.md), spills flushed first."""
    store = runtime.store()
    store.flush()
    doc = engine_film.describe_film(store.spill_dir, tag, verify=verify)
    doc.setdefault("drift", None)  # an engine older than the drift: none known
    return doc


def has_choices(tag: str) -> bool:
    """Whether the user chose a take anywhere in the film (cheap: one file's existence)."""
    return engine_film.has_choices(runtime.store().spill_dir, tag)


def choices_state(tag: str) -> str:
    """A fingerprint of the takes chosen in the film ("" when none): it changes when the user
    chooses, so nodes that follow the chosen line re-run. One stat of the choices file: no
    flush, no reading of the shots."""
    try:
        info = engine_film.choices_file(runtime.store().spill_dir, tag).stat()
    except FileNotFoundError:
        return ""
    return f"{info.st_mtime_ns}:{info.st_size}"


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
    if not has_choices(tag):
        bundle, skipped = store.get_newest_verified(tag)
        return bundle, skipped, []
    doc = describe(tag)
    bundle, skipped = store.first_verified(tag, reversed(doc.get("line", [])))
    if bundle is not None:
        notes = []
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
    """Choose a take (0: clear every choice); returns the film as it stands after. The engine's
    errors (NotFound for a generation the film does not hold, InvalidInput for a bad tag) pass
    through: they name the value and the fix."""
    store = runtime.store()
    store.flush()
    if generation == 0:
        engine_film.clear_choices(store.spill_dir, tag)
    else:
        engine_film.choose_take(store.spill_dir, tag, generation)
    return engine_film.describe_film(store.spill_dir, tag)
