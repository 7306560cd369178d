"""The one exception type users of the continuity logic can hit.

It subclasses ValueError because every such error is a bad value (a length, a
size, a tail that does not fit): ComfyUI shows ValueError messages verbatim in
the node's error box, and callers that already catch ValueError keep working.
Messages name the value, the expectation and the fix, in that order.
"""


class ContinuityError(ValueError):
    """A value given to the continuity logic cannot be used; the message says how to fix it."""
