"""The inputs the continuity nodes share: the buffer tag (its default and its check) and the
fingerprint a node with a linked tag re-runs on. Every node takes these from here; no node
imports another node."""

from __future__ import annotations

from . import farm_link, runtime
from ..zc_engine import InvalidInput, check_tag

DEFAULT_TAG = "default_continuity"


def tag_problem(tag) -> str | None:
    """The engine's message for a bad tag, or None. It does not name the input: ComfyUI puts the
    input's name before what validate_inputs returns ("buffer_tag - tag ... has a space at
    character 3; ..."), and the tag itself is quoted in the message when a node raises it."""
    try:
        check_tag(tag, "buffer_tag")
    except (InvalidInput, TypeError) as exc:
        return str(exc)
    return None


def validate_tag(buffer_tag) -> bool | str:
    """validate_inputs for a tag input: a linked tag arrives as None (its value is not known
    before execution, where it is checked), a typed one is checked now."""
    if buffer_tag is None:
        return True
    return tag_problem(buffer_tag) or True


def store_state() -> str:
    """A fingerprint of every tag's newest generation: what a Handoff with a linked tag (unknown
    when ComfyUI asks fingerprints) re-runs on. The engine's change count (it grows when any
    tag's newest rises or a tag is dropped), so its cost does not grow with the tags held."""
    store = runtime.store()
    return f"store:{store.serial}.{store.changes()}" + farm_link.linked_state()
