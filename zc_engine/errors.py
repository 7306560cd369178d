"""Exceptions raised by the engine bridge, one per engine status code.

Every message comes from the C engine and names the value at fault, what was
expected, and the fix.
"""

from __future__ import annotations

# ComfyUI names a node's exception by its class's module and name (execution.py, full_type_name)
# and loads a pack as a module named by the pack's folder path, so these types read
# "<server path>.zc_engine.errors.NotFound" in its error panel and report. Each class here says
# "ZeroCopy.NotFound" instead; __reduce__ rebuilds an instance by name from this module, so
# pickle and copy do not look for a module named "ZeroCopy".
PUBLIC_MODULE = "ZeroCopy"


class ZeroCopyError(Exception):
    """Base class of every engine error. ``code`` is the engine's status."""

    __module__ = PUBLIC_MODULE
    code = -100

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls.__module__ = PUBLIC_MODULE

    def __reduce__(self):
        return _rebuild, (type(self).__qualname__, self.args), self.__dict__ or None

    def __init__(self, message: str, code: int | None = None):
        super().__init__(message)
        if code is not None:
            self.code = code


class EngineNotBuilt(ZeroCopyError, ImportError):
    """The engine library was not found, or could not be loaded (see _locate.py)."""


class InvalidInput(ZeroCopyError, ValueError):
    code = -1


class OutOfMemory(ZeroCopyError, MemoryError):
    code = -2


class NotFound(ZeroCopyError, KeyError):
    code = -3

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class BudgetExceeded(ZeroCopyError):
    code = -4


class LimitExceeded(ZeroCopyError, ValueError):
    code = -5


class EngineIOError(ZeroCopyError, OSError):
    code = -6


class CorruptFile(ZeroCopyError):
    code = -7


class AccessDenied(EngineIOError):
    """A spill file this process may not read (another user's private file). It is kept, never
    renamed; callers that want the newest readable shot go on to the next one, as for CorruptFile.
    An EngineIOError, so code that catches those catches it too."""

    code = -11


class InvalidState(ZeroCopyError, RuntimeError):
    code = -8


class Unsupported(ZeroCopyError):
    code = -9


class GenerationExists(ZeroCopyError):
    """The tag already holds that generation (in memory or in the spill folder): pick another."""

    code = -10


_BY_CODE = {
    cls.code: cls
    for cls in (InvalidInput, OutOfMemory, NotFound, BudgetExceeded, LimitExceeded,
                EngineIOError, CorruptFile, InvalidState, Unsupported, GenerationExists,
                AccessDenied)
}


def _rebuild(name: str, args: tuple) -> ZeroCopyError:
    """An error of the class ``name`` of this module with ``args`` (pickle's side of __reduce__)."""
    cls = globals()[name]
    if not (isinstance(cls, type) and issubclass(cls, ZeroCopyError)):
        raise TypeError(f"{name!r} is not an engine error")
    return cls(*args)


def error_for(code: int, message: str) -> ZeroCopyError:
    """The exception for an engine status code and message."""
    return _BY_CODE.get(code, ZeroCopyError)(message, code)
