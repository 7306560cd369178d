"""The film of a tag, read by the engine from its spill files alone (``zc_film_describe``).

A tag's spill files are its shots; each shot's ``lineage`` metadata names the shot it continued.
Shots of one parent are the takes of a shot; the chosen take is the pinned one, else the one whose
descendants hold the newest generation, so with no pins the film ends at the newest shot. Pins live
in ``<spill_dir>/.zc-film-<tag>.json``. The dict is the engine's JSON (docs/film.md, "The film
from the spill files"); nothing here needs a store or torch tensors.
"""

from __future__ import annotations

import ctypes
import json
import os
from pathlib import Path

from ._library import check, encode, lib

FILM_VERIFY = 1


def _dir(spill_dir) -> bytes:
    return encode(os.fspath(spill_dir), "spill_dir")


def describe_film(spill_dir, tag: str, *, verify: bool = False) -> dict:
    """The film of ``tag`` in ``spill_dir``: the engine's description as a dict (``line``,
    ``end``, ``shots`` with their ``state`` ...). With ``verify`` every file is read against its
    digests and every hop's tail checked; then ``ok`` says whether all held. Raises NotFound when
    the tag has no files there, InvalidInput for a bad tag, EngineIOError for an unreadable folder."""
    out = ctypes.c_void_p()
    check(lib.zc_film_describe(_dir(spill_dir), encode(tag, "tag"), FILM_VERIFY if verify else 0,
                               ctypes.byref(out)))
    try:
        # a problem sentence cut at the engine's message bound may end inside a character
        return json.loads(ctypes.string_at(out.value).decode("utf-8", errors="replace"))
    finally:
        lib.zc_free(out)


def choose_take(spill_dir, tag: str, generation: int) -> None:
    """Choose take ``generation`` of ``tag``'s film: the chosen line passes through it from now on
    (it and its ancestors are pinned, replacing their siblings' pins; pins below it that the line
    followed stay, every other pin goes). The choices file is read, changed and written under the
    spill folder's lock, so choices made at once apply one after the other and the last one wins.
    Raises NotFound when the tag has no such generation, InvalidState when the take cannot be on
    any line (its lineage, or an ancestor's, cannot be followed: the message says why),
    CorruptFile when the choices file (or the folder lock) was not the engine's own file (renamed
    aside: choose again)."""
    generation = int(generation)
    if generation <= 0:
        from .errors import InvalidInput
        raise InvalidInput(f"generation {generation} is not a take; pass a generation >= 1 "
                           "(clear_choices removes every pin)")
    check(lib.zc_film_choose(_dir(spill_dir), encode(tag, "tag"), generation))


def choose(spill_dir, tag: str, generation: int) -> dict:
    """Choose take ``generation`` (0: clear every choice) and describe the film as it stands after
    (unverified), with ``choice``: ``{"generation", "on_line", "note"}``. ``on_line`` says whether
    the line passes through the chosen take; it does, unless another choice made at the same time
    (another tab, another client) came after this one, which ``note`` then says (the line shown is
    the film as it stands: through that later choice)."""
    if generation:
        choose_take(spill_dir, tag, generation)
    else:
        clear_choices(spill_dir, tag)
    doc = describe_film(spill_dir, tag)
    on_line = not generation or generation in doc.get("line", [])
    note = None
    if not on_line:
        note = (f"generation {generation} was chosen, but another choice made at the same time came after it: "
                f"the line now follows the takes chosen last (pins {doc.get('pins', [])}); choose "
                f"{generation} again to follow it")
    doc["choice"] = {"generation": int(generation), "on_line": on_line, "note": note}
    return doc


def clear_choices(spill_dir, tag: str) -> None:
    """Remove every pin of ``tag``'s film: it follows the newest takes again."""
    check(lib.zc_film_choose(_dir(spill_dir), encode(tag, "tag"), 0))


def choices_file(spill_dir, tag: str) -> Path:
    """Where ``tag``'s chosen takes are kept (the file ``zc_film_choose`` writes; docs/film.md)."""
    return Path(spill_dir) / f".zc-film-{tag}.json"


def has_choices(spill_dir, tag: str) -> bool:
    """Whether ``tag``'s film has at least one pinned take (one small file read)."""
    return lib.zc_film_has_choices(_dir(spill_dir), encode(tag, "tag")) == 1
