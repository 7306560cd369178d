"""The render cache: each shot's encoded pieces on disk, keyed by everything that made them.

An entry is a folder named by the SHA-256 of its ``what`` (canonical JSON: the film format and
settings, the VAE's identity and decode settings, the shot's digest, trim and crossfades, ...);
``entry.json`` lists its files with their sizes and SHA-256 digests and repeats ``what``. Before an
entry is reused every file is checked against it and ``what`` compared whole, so an entry is never
served for another shot, and a damaged one is dropped (and its shot decoded again), never used.

Entries appear atomically (built in a temporary folder, renamed into place when whole), so a crash
leaves either a whole entry or none. The cache is bounded: ``trim`` removes the least recently used
entries beyond the byte limit, never those the current render uses.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from . import film_lock
from .files import PART, disk_error, fsync_folder, fsync_path, is_disk_error

ENTRY = "entry.json"
VERSION = 1


def key_of(what: dict) -> str:
    return hashlib.sha256(json.dumps(what, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@dataclass
class Entry:
    key: str
    folder: Path
    facts: dict
    files: dict = field(default_factory=dict)  # name -> {"size", "sha256"}

    def path(self, name: str) -> Path | None:
        return self.folder / name if name in self.files else None

    @property
    def size(self) -> int:
        return sum(int(f["size"]) for f in self.files.values())


class Stage:
    """A folder to write an entry's files into; ``facts`` are kept with them; ``entry`` is the entry
    once it is in place (its files just checksummed: no second read)."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.facts: dict = {}
        self.entry: Entry | None = None  # the entry in place, once the block has ended without error


class SegmentCache:
    def __init__(self, base: Path, film: str, limit_bytes: int):
        """The cache under ``base``, one folder per film (``film``: a tag, already checked as a
        file name); the byte limit holds for every film's entries together."""
        self.base = Path(base)
        self.root = self.base / film
        self.limit = int(limit_bytes)
        self.notes: list[str] = []  # what the cache found and did, for the render's info

    def _folder(self, key: str) -> Path:
        return self.root / key

    def get(self, what: dict) -> Entry | None:
        """The entry for ``what`` when it exists and every file checks; else None (a damaged entry
        is removed and noted)."""
        key = key_of(what)
        folder = self._folder(key)
        try:
            record = json.loads((folder / ENTRY).read_text())
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            return self._drop(folder, f"its record cannot be read ({exc})")
        if record.get("version") != VERSION or record.get("what") != what:
            return self._drop(folder, "its record describes something else")
        files = record.get("files") or {}
        for name, facts in files.items():
            path = folder / name
            try:
                if path.stat().st_size != int(facts["size"]) or file_sha256(path) != facts["sha256"]:
                    return self._drop(folder, f"{name} changed since it was written")
            except (OSError, KeyError, TypeError, ValueError) as exc:
                return self._drop(folder, f"{name} cannot be checked ({exc})")
        with contextlib.suppress(OSError):
            os.utime(folder / ENTRY)  # most recently used
        return Entry(key, folder, record.get("facts") or {}, files)

    def _drop(self, folder: Path, why: str) -> None:
        self.notes.append(f"cache entry {folder.name[:12]} dropped: {why}; made again")
        shutil.rmtree(folder, ignore_errors=True)

    @contextlib.contextmanager
    def stage(self, what: dict, *, what_for: str):
        """Build the entry for ``what``: write its files into the yielded Stage's folder; when the
        block ends without error the entry is recorded and renamed into place. A full disk is a
        RenderError naming ``what_for``; entries already in place are kept."""
        key = key_of(what)
        temp = self.root / f"{PART}{uuid.uuid4().hex[:12]}"
        try:
            temp.mkdir(parents=True)
            stage = Stage(temp)
            yield stage
            files = {}
            for path in sorted(temp.iterdir()):
                fsync_path(path)
                files[path.name] = {"size": path.stat().st_size, "sha256": file_sha256(path)}
            record = {"version": VERSION, "key": key, "what": what, "facts": stage.facts, "files": files}
            (temp / ENTRY).write_text(json.dumps(record, indent=1, sort_keys=True))
            fsync_path(temp / ENTRY)
            fsync_folder(temp)
            final = self._folder(key)
            if final.exists():  # made by another render meanwhile, or left damaged: ours replaces it
                shutil.rmtree(final, ignore_errors=True)
            os.replace(temp, final)
            fsync_folder(self.root)
            stage.entry = Entry(key, final, stage.facts, files)
        except BaseException as exc:
            shutil.rmtree(temp, ignore_errors=True)
            if is_disk_error(exc):
                raise disk_error(exc, what_for, self.root) from exc
            raise

    def entries(self) -> list[tuple[float, int, Path]]:
        """(last used, bytes, folder) of every entry of every film, but those of a film another
        render is running (its lock is held)."""
        out = []
        films = [p for p in self.base.iterdir() if p.is_dir()] if self.base.is_dir() else []
        for film in films:
            if film != self.root and film_lock.busy(film):
                continue  # another film's render is using its entries now
            for folder in film.iterdir():
                record = folder / ENTRY
                if folder.name.startswith(PART) or not record.is_file():
                    continue
                try:
                    size = sum(p.stat().st_size for p in folder.iterdir())
                    out.append((record.stat().st_mtime, size, folder))
                except OSError:
                    continue
        return out

    def usage(self) -> int:
        return sum(size for _, size, _ in self.entries())

    def trim(self, keep: set[str]) -> tuple[int, int]:
        """Remove least recently used entries, never one in ``keep``, until the cache fits its limit.
        Returns (entries removed, bytes freed)."""
        entries = sorted(self.entries())
        total = sum(size for _, size, _ in entries)
        removed = freed = 0
        for _, size, folder in entries:
            if total <= self.limit:
                break
            if folder.name in keep:
                continue
            shutil.rmtree(folder, ignore_errors=True)
            total -= size
            removed += 1
            freed += size
        return removed, freed

    def remove_stale_stages(self) -> None:
        """Temporary folders an interrupted render of this film left (call with the film's lock
        held: no other render of it is writing)."""
        with contextlib.suppress(FileNotFoundError):
            for folder in self.root.iterdir():
                if folder.name.startswith(PART):
                    shutil.rmtree(folder, ignore_errors=True)
