"""Install wrappers on module or class attributes once, and remove them exactly.

A HookSet replaces ``owner.name`` with ``make(original)`` and remembers the
original object as it was stored (for a class: the raw ``__dict__`` entry), so
removing the hook puts back the identical object. Rules that keep us a good
neighbour of other packs that wrap the same functions:

- installing is idempotent, also across reloads of this pack: a wrapper of ours
  (marked ``__zc_residency_hook__``) found anywhere in the ``__wrapped__`` chain
  is not wrapped again;
- wrappers call through to whatever was installed before them;
- removing only restores an attribute that still holds our wrapper; if another
  pack wrapped on top of ours, ours stays in its chain (inert once no model is
  locked) rather than cutting that pack's wrapper out.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

MARK = "__zc_residency_hook__"


@dataclass
class InstalledHook:
    owner: object
    name: str
    original: object  # exactly what was stored before (class __dict__ entry or module attribute)
    wrapper: object

    @property
    def label(self) -> str:
        owner = getattr(self.owner, "__qualname__", None) or getattr(self.owner, "__name__", repr(self.owner))
        return f"{owner}.{self.name}"


def stored(owner, name: str):
    """The object stored under name: a class's own __dict__ entry, or a module attribute."""
    if isinstance(owner, type):
        return owner.__dict__.get(name)
    return getattr(owner, name, None)


def is_ours(obj, marker: str = MARK) -> bool:
    """True if obj is one of our wrappers (marked ``marker``) or wraps one (through __wrapped__)."""
    seen = 0
    while obj is not None and seen < 32:
        if getattr(obj, marker, False):
            return True
        obj = getattr(obj, "__wrapped__", None)
        seen += 1
    return False


def mark(wrapper, original, marker: str = MARK):
    """Make wrapper look like original (name, docs, __wrapped__) and mark it as ours."""
    functools.update_wrapper(wrapper, original)
    setattr(wrapper, marker, True)
    return wrapper


class HookSet:
    """The hooks of one feature. ``marker`` names the feature's wrappers, so two features of
    the pack (the residency lock, the store's memory release) may wrap the same function."""

    def __init__(self, marker: str = MARK):
        self.marker = marker
        self._hooks: dict[tuple[int, str], InstalledHook] = {}

    def __len__(self) -> int:
        return len(self._hooks)

    def installed(self) -> list[InstalledHook]:
        return list(self._hooks.values())

    def install(self, owner, name: str, make: Callable[[object], object]) -> bool:
        """Wrap owner.name with make(original) unless one of our wrappers is already there.
        Returns True if a wrapper was installed now."""
        key = (id(owner), name)
        if key in self._hooks:
            return False
        original = stored(owner, name)
        if original is None or not callable(original) or is_ours(original, self.marker):
            return False
        wrapper = make(original)
        setattr(owner, name, wrapper)
        self._hooks[key] = InstalledHook(owner, name, original, wrapper)
        return True

    def uninstall_all(self) -> list[str]:
        """Remove every hook; returns the labels of hooks another pack wrapped over (left in place)."""
        left = []
        for key, hook in list(self._hooks.items()):
            if stored(hook.owner, hook.name) is hook.wrapper:
                setattr(hook.owner, hook.name, hook.original)
            else:
                left.append(hook.label)
            del self._hooks[key]
        return left
