"""Files that appear under their final name only when whole, and disk errors said plainly.

A render writes every file (piece, clip, film, timeline) to a temporary name beside its final one
and renames it when complete and flushed, so a crash, a signal or a full disk never leaves a
half-written file where a player, an editor or the cache would take it for a whole one.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import uuid
from pathlib import Path

from .errors import RenderError

PART = ".zc-part-"  # temporary names start with this: a render removes its own stale ones


def fsync_path(path: Path) -> None:
    # Windows flushes only a handle opened for writing (_commit); POSIX takes any descriptor
    fd = os.open(path, os.O_RDWR if os.name == "nt" else os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_folder(folder: Path) -> None:
    if os.name == "nt":  # Windows cannot open a folder for fsync; its renames are metadata-journaled
        return
    fsync_path(folder)


@contextlib.contextmanager
def staged(final: Path, *, what: str, needed: int | None = None):
    """Yield a temporary path beside ``final``; when the block ends without error the file there is
    flushed and renamed to ``final`` (replacing it). On any error it is removed; a full or
    read-only disk becomes a RenderError naming ``what``, the folder and the free space."""
    final = Path(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    temp = final.with_name(f"{PART}{uuid.uuid4().hex[:12]}-{final.name}")
    try:
        yield temp
        fsync_path(temp)
        os.replace(temp, final)
        fsync_folder(final.parent)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            temp.unlink()
        if is_disk_error(exc):
            raise disk_error(exc, what, final.parent, needed) from exc
        raise


def is_disk_error(exc: BaseException) -> bool:
    code = getattr(exc, "errno", None)
    return isinstance(exc, OSError) and code in (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM)


def free_bytes(folder: Path) -> int | None:
    probe = Path(folder)
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    try:
        return shutil.disk_usage(probe).free
    except OSError:
        return None


def size_text(count: float | None) -> str:
    if count is None:
        return "unknown"
    for unit in ("B", "KB", "MB", "GB"):
        if abs(count) < 1000 or unit == "GB":
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1000.0
    return f"{count:.1f} GB"


def disk_error(exc: BaseException, what: str, folder: Path, needed: int | None = None) -> RenderError:
    code = getattr(exc, "errno", None)
    free = free_bytes(folder)
    if code in (errno.ENOSPC, errno.EDQUOT):
        need = f"; the file needs about {size_text(needed)}" if needed else ""
        return RenderError(f"{what}: the disk of {folder} is full ({size_text(free)} free{need}); free space there "
                           "(or point the output or ZEROCOPY_RENDER_CACHE elsewhere) and render again: the shots "
                           "finished so far are kept and will not be decoded again")
    return RenderError(f"{what}: {folder} cannot be written ({os.strerror(code) if code else exc}); make it writable "
                       "or choose another folder, then render again: the shots finished so far are kept")


def remove_stale_parts(folder: Path) -> int:
    """Remove the temporary files an interrupted render left in ``folder`` (call with the film's lock
    held: no other render of it is writing). Returns how many were removed."""
    removed = 0
    with contextlib.suppress(FileNotFoundError):
        for path in Path(folder).iterdir():
            if path.name.startswith(PART) and path.is_file():
                with contextlib.suppress(OSError):
                    path.unlink()
                    removed += 1
    return removed
