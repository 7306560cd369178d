"""The one error a film render raises for anything the user can fix (bad input, a full disk, a
shot that does not fit the film); its message names the value, the expectation and the fix."""

from __future__ import annotations


class RenderError(Exception):
    """A film could not be rendered; the message says why and what to do. Its module reads
    "ZeroCopy": ComfyUI names an error by module and class, and the real module's name is the
    server's path to the pack (see zc_continuity/errors.py)."""

    __module__ = "ZeroCopy"

    def __reduce__(self):  # pickle and copy rebuild it from this module, not from "ZeroCopy"
        return _rebuild, (self.args,), self.__dict__ or None


def _rebuild(args: tuple) -> RenderError:
    return RenderError(*args)
