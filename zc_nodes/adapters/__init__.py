"""The Handoff's adapters by name, and the choice ``adapter=auto`` makes.

Each adapter is a legal insertion point of the families whose row in the
family catalog (``zc_continuity/families.py``) lists its name; the catalog also
says which one ``adapter=auto`` picks, per model variant. This package holds
one file per adapter: every ``Adapter`` subclass defined in a module of this
folder is found when the package is imported, so a new adapter is its file
and its name in the catalog rows of the families it serves (docs/families.md,
"Adding a family"). ``pixel_bridge`` is not an insertion point but an opt-in
way to make the tail from pixels (one VAE decode, one encode), for a family the
pack cannot hand off in latent space; the Handoff then uses the target family's
own adapter with the freshly encoded frame.
"""

from __future__ import annotations

import importlib
import pkgutil

from ..comfy_calls import model_variant
from ...zc_continuity.errors import ContinuityError
from ...zc_continuity.families import ADAPTER_PIXEL_BRIDGE, insertion_points, known_families
from .base import Adapter, BuildRequest, BuildResult

AUTO = "auto"
PIXEL_BRIDGE = ADAPTER_PIXEL_BRIDGE


def _adapters_in_this_folder() -> dict[str, Adapter]:
    """One instance of every named ``Adapter`` subclass defined in a module of this package."""
    found: dict[str, Adapter] = {}
    for info in pkgutil.iter_modules(__path__):
        module = importlib.import_module(f"{__name__}.{info.name}")
        for value in vars(module).values():
            if (isinstance(value, type) and issubclass(value, Adapter) and value.name
                    and value.__module__ == module.__name__):
                if value.name in found:
                    raise ValueError(f"two adapters are named {value.name!r}: "
                                     f"{type(found[value.name]).__name__} and {value.__name__}")
                found[value.name] = value()
    return found


FOUND: dict[str, Adapter] = _adapters_in_this_folder()
"""Every adapter this folder defines, whether or not a family lists it (the tests compare the two)."""

REGISTRY: dict[str, Adapter] = {name: FOUND[name] for name in insertion_points() if name in FOUND}
"""The adapters the catalog's families list, in the catalog's order."""

COMBO = [AUTO, *REGISTRY, PIXEL_BRIDGE]
"""The Handoff's ``adapter`` options; the first three were the first release's and keep their names."""

__all__ = ["AUTO", "COMBO", "PIXEL_BRIDGE", "REGISTRY", "Adapter", "BuildRequest", "BuildResult",
           "auto_choice", "choose", "model_variant"]


def auto_choice(spec, model, meta: dict | None) -> tuple[str, str]:
    """(adapter name, why) for ``adapter=auto``: the family's choice for the connected model's
    variant, else for the variant the Store recorded."""
    variant = model_variant(spec, model) if model is not None else (meta or {}).get("model_variant")
    choice = spec.auto_choice(variant)
    return choice.adapter, choice.why


def _served(adapter: Adapter) -> str:
    """The families an adapter serves, as the refusal names them."""
    video = {spec.name for spec in known_families() if spec.is_video}
    served = adapter.families
    return "video families" if set(served) == video else ", ".join(served)


def choose(requested: str, spec, model, meta: dict | None) -> tuple[Adapter, str]:
    """The adapter to build with and why; raises when a requested one cannot serve the family."""
    if requested == AUTO:
        name, why = auto_choice(spec, model, meta)
        return REGISTRY[name], f"auto: {why}"
    adapter = REGISTRY.get(requested)
    if adapter is None:
        raise ContinuityError(f"adapter {requested!r} is unknown; use one of {', '.join(COMBO)}")
    if not adapter.supports(spec):
        raise ContinuityError(
            f"adapter {requested!r} serves {_served(adapter)}, but the family is {spec.display_name}; use "
            f"'auto' (which picks {auto_choice(spec, model, meta)[0]}) or one of "
            f"{', '.join(n for n, a in REGISTRY.items() if a.supports(spec))}")
    if model is not None:
        adapter.check_model(model)
    return adapter, "requested"
