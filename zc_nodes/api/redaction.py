"""Engine messages as a client may see them: without the server's folders.

docs/web-api.md promises that no route shows a system path and that the spill
directory is never shown. Engine messages name files with their full paths (for
the log); every message that leaves through the API goes through
``redact_paths``, which keeps each file's own name and says which folder it was
in only where that is the spill folder: a path inside it becomes
``<spill folder>/<its path inside>``, any other server path ``<server path>/<name>`` (an
engine library or a checkout is not in the spill folder, and a fix that said so
would send the user to the wrong place).
"""

from __future__ import annotations

import os
import re

# A server path in an engine message: quoted ("/a/b/f", 'C:\\a\\f') or bare (/a/b/f: ...).
_QUOTED_PATH = re.compile(r'(["\'])((?:/|[A-Za-z]:[\\/])[^"\']*?([^"\'/\\]*))\1')
_BARE_PATH = re.compile(r'(?<![\w.<>])((?:/|[A-Za-z]:\\)(?:[^\s"\':/\\]+[/\\])+([^\s"\':/\\]*))')
# The engine's temporary file names (".zc-tmp-<random>-<pid>-<final name>"): internal, never shown;
# the final name they stand for stays.
_TEMPORARY_NAME = re.compile(r"\.zc-tmp-[^\s\"'/\\]*?-\d+-")


def without_temporary_names(message: str) -> str:
    """``message`` with each of the engine's temporary file names cut to the file it stands for."""
    return _TEMPORARY_NAME.sub("", message)


def _relative(path: str, folder: str | None) -> str | None:
    """``path`` relative to ``folder`` ("" for the folder itself), or None when it is outside."""
    if not folder:
        return None
    path, folder = os.path.normpath(path), os.path.normpath(folder)
    if path == folder:
        return ""
    prefix = folder.rstrip("/\\") + ("\\" if "\\" in folder and "/" not in folder else "/")
    return path[len(prefix):] if path.startswith(prefix) else None


def _shown(path: str, name: str, spill_dir: str | None) -> str:
    inside = _relative(path, spill_dir)
    if inside is None:
        return f"<server path>/{name}"
    return f"<spill folder>/{inside}" if inside else "<spill folder>"


def redact_paths(message: str, spill_dir: str | os.PathLike | None = None) -> str:
    """An engine message without the server's folders: each path becomes ``<spill folder>/<its
    path inside it>`` when it lies in ``spill_dir`` (default: the shared store's spill folder), else
    ``<server path>/<its file name>`` (docs/web-api.md: the spill directory is never shown). The
    engine's temporary file names become the name of the file they stand for."""
    folder = str(spill_dir) if spill_dir is not None else _store_spill_dir()
    message = without_temporary_names(message)
    if folder:  # the spill folder itself first, as written: its name may hold spaces the patterns stop at
        message = _literal_folder(folder).sub(lambda m: "<spill folder>" + (m.group(1) and "/"), message)
    message = _QUOTED_PATH.sub(lambda m: f"{m.group(1)}{_shown(m.group(2), m.group(3), folder)}{m.group(1)}",
                               message)
    return _BARE_PATH.sub(lambda m: _shown(m.group(1), m.group(2), folder), message)


def _literal_folder(folder: str) -> re.Pattern:
    """The spill folder as it is written in a message, then a separator or the end of the path."""
    trimmed = os.path.normpath(folder).rstrip("/\\") or folder
    return re.compile(re.escape(trimmed) + r"([/\\]|(?=[\s\"':;,)]|$))")


def spill_folder() -> str:
    """The folder answers are redacted against when the caller names none: the pack's store's
    ("" when none is known: every path then keeps only its name)."""
    return _store_spill_dir() or ""


def _store_spill_dir() -> str | None:
    """The open store's spill folder, else the one the next store will use."""
    try:
        from .. import runtime
        store = runtime.store_if_open()
        spill = store.spill_dir if store is not None else runtime.default_spill_dir()
        return str(spill) if spill is not None else None
    except Exception:  # noqa: BLE001 - outside the pack (a unit test of this module): no spill folder known
        return None


def _may_hold_a_path(text: str) -> bool:
    return "/" in text or "\\" in text


def redact_document(value, spill_dir: str | os.PathLike | None = None):
    """``value`` (a JSON document: dicts, lists, strings, numbers) with every string passed
    through ``redact_paths``, keys included; what holds no path is returned as it is. The REST
    API's one exit (routes.py ``_encode``) runs every answer through it, so no route can leak a
    path that a message, a problem list or stored metadata carried."""
    folder = spill_folder() if spill_dir is None else str(spill_dir)

    def walk(item):
        if isinstance(item, str):
            return redact_paths(item, folder) if _may_hold_a_path(item) else item
        if isinstance(item, dict):
            return {walk(key): walk(sub) for key, sub in item.items()}
        if isinstance(item, (list, tuple)):
            return [walk(sub) for sub in item]
        return item

    return walk(value)
