"""The one exception type users of the continuity logic can hit.

It subclasses ValueError because every such error is a bad value (a length, a
size, a tail that does not fit): ComfyUI shows ValueError messages verbatim in
the node's error box, and callers that already catch ValueError keep working.
Messages name the value, the expectation and the fix, in that order.

ComfyUI names the type by its module and class (``module + "." + qualname``) and loads a pack as
a module named by the pack's folder path; the class therefore says its module is "ZeroCopy", so
the error panel reads "ZeroCopy.ContinuityError", and never the server's install path.
"""


class ContinuityError(ValueError):
    """A value given to the continuity logic cannot be used; the message says how to fix it."""

    __module__ = "ZeroCopy"

    def __reduce__(self):  # pickle and copy rebuild it from this module, not from "ZeroCopy"
        return _rebuild, (self.args,), self.__dict__ or None


def _rebuild(args: tuple) -> ContinuityError:
    return ContinuityError(*args)
