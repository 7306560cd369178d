"""One render of a film at a time: an exclusive lock on a file in the film's cache folder.

The lock is the operating system's (flock; LockFileEx through msvcrt on Windows), so it is released
when the process ends, however it ends: a crashed render never blocks the next. A second render of
the same film while one runs is refused at once, with what to do; the cache's trim skips the
entries of a film whose lock is held (that render is using them).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from .errors import RenderError

LOCK = ".zc-render-lock"


def _try_lock(fd: int) -> bool:
    if os.name == "nt":
        import msvcrt

        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
            return True
        except OSError:
            return False
    import fcntl

    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False


@contextlib.contextmanager
def held(folder: Path, film: str):
    """Hold the film's render lock for the block; RenderError when another render holds it."""
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        if not _try_lock(fd):
            raise RenderError(f"film {film!r} is being rendered right now by another prompt or ComfyUI process "
                              "(one render of a film at a time: two would write the same files); let that render "
                              "finish, then queue this one again (what it already made is reused)")
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def busy(folder: Path) -> bool:
    """Whether a render holds the lock of the film whose cache folder this is."""
    path = folder / LOCK
    if not path.exists():
        return False
    try:
        fd = os.open(path, os.O_RDWR)
    except OSError:
        return False
    try:
        return not _try_lock(fd)
    finally:
        os.close(fd)
