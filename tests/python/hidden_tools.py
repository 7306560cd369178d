"""A PATH on which some system tools really are absent: a folder of symlinks to every program
on the current PATH except those named (shell patterns), for tests that show what a machine
without them does (a newcomer's machine has no redis-server, mingw-w64 or wine).

Debian's wine64 package puts its loader in /usr/lib/wine/wine64, off the PATH; test.sh looks
there too. ``run_without_wine_dir`` masks that folder with an empty tmpfs in a private mount
namespace of the child alone (``unshare -rm``, no root needed), where the kernel allows it.
"""

from __future__ import annotations

import fnmatch
import os
import shutil
import subprocess
from pathlib import Path

NEWCOMER_LACKS = ("redis-server", "x86_64-w64-mingw32-*", "wine*")
WINE_DIR = Path("/usr/lib/wine")


def path_without(patterns, bin_dir: Path, path: str | None = None) -> str:
    """Fill bin_dir with symlinks to the first program of each name on ``path`` (default: this
    process's PATH) that matches none of ``patterns``; returns bin_dir, to be the whole PATH."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    for folder in (path if path is not None else os.environ.get("PATH", "")).split(os.pathsep):
        try:
            entries = list(os.scandir(folder or "."))
        except OSError:
            continue
        for entry in entries:
            link = bin_dir / entry.name
            if any(fnmatch.fnmatchcase(entry.name, p) for p in patterns) or os.path.lexists(link):
                continue
            if entry.is_file() and os.access(entry.path, os.X_OK):
                os.symlink(os.path.abspath(entry.path), link)
    for pattern in patterns:  # really hidden: nothing of that name is reachable on the new PATH
        assert not [p for p in os.listdir(bin_dir) if fnmatch.fnmatchcase(p, pattern)], pattern
    return str(bin_dir)


def can_mask_wine_dir() -> bool:
    """Whether an empty tmpfs can be mounted over /usr/lib/wine for a child (user namespaces)."""
    if not WINE_DIR.is_dir() or shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "-rm", "sh", "-c", f"mount -t tmpfs none {WINE_DIR}"],
                           capture_output=True, timeout=30)
    return probe.returncode == 0


def without_wine_dir(command: list[str]) -> list[str]:
    """``command`` run with /usr/lib/wine empty (see can_mask_wine_dir), when that folder exists."""
    if not WINE_DIR.is_dir():
        return command
    script = f'mount -t tmpfs none {WINE_DIR} && exec "$@"'
    return [shutil.which("unshare") or "unshare", "-rm", "sh", "-c", script, "sh", *command]
