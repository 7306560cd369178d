"""The one error a film render raises for anything the user can fix (bad input, a full disk, a
shot that does not fit the film); its message names the value, the expectation and the fix."""

from __future__ import annotations


class RenderError(Exception):
    """A film could not be rendered; the message says why and what to do."""
