"""Why a locked model was loaded again: the causes this pack can see, and what each says.

Every cause is built from something observed (an attribute ComfyUI set, an event
our wrappers saw), never guessed. Each has a short form for the node's badge and a
sentence for the report and the log. When bytes moved and none of these explains
it, the cause says exactly that (UNSEEN) instead of naming one.

Only plain values live here (no comfy.* import): comfy_memory.py reads
ComfyUI's attributes into PatchState / ModelIdentity, reasons.py decides which
causes explain a reload.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from .units import fmt_bytes


class CauseKind(str, Enum):
    FIRST_LOAD = "first_load"
    PATCH_CHANGE = "patch_change"
    DTYPE_CHANGE = "dtype_change"
    MODEL_CHANGE = "model_change"
    CACHE_DROP = "cache_drop"
    EXPLICIT_FREE = "explicit_free"
    OOM_RECOVERY = "oom_recovery"
    PARTIAL_TOP_UP = "partial_top_up"
    UNSEEN = "no_visible_cause"


@dataclass(frozen=True)
class Cause:
    kind: CauseKind
    short: str  # the badge's few words
    detail: str  # the report's and the log's sentence


@dataclass(frozen=True)
class PatchState:
    """The patch set a patcher puts on the weights (read from ComfyUI's ModelPatcher).
    ``uuid`` is ComfyUI's patches_uuid: a new one on every add_patches, weight wrapper or
    set_model_compute_dtype; ComfyUI re-patches when it differs from the weights' own."""
    uuid: object
    weight_patches: int  # weights with patches (LoRA and other add_patches users)
    object_patches: int
    weight_wrappers: int
    compute_dtype: str | None  # set_model_compute_dtype's object patch, if any


@dataclass(frozen=True)
class ModelIdentity:
    """What a loader built (read from the BaseModel and, where ComfyUI has it, the patcher's
    cached_patcher_init: the loader function and its arguments)."""
    dtype: str | None  # weight dtype of the diffusion model
    compute_dtype: str | None  # the model's manual cast dtype (None: computes in the weight dtype)
    file: str | None  # the file name the loader read, when ComfyUI records it
    loader_key: str | None  # loader function + every argument (file, options); None if not recorded


@dataclass(frozen=True)
class CacheMode:
    short: str  # "classic", "none", "LRU", "RAM pressure", "unknown"
    detail: str  # with the flag that selects it


UNKNOWN_CACHE_MODE = CacheMode("unknown", "unknown: comfy.cli_args.args could not be read or has no cache "
                                           "flag this pack knows")

FIRST_LOAD = Cause(CauseKind.FIRST_LOAD, "first load",
                   "first load since the model was locked (not a reload)")


def dtype_name(dtype) -> str | None:
    """'float8_e4m3fn' for torch.float8_e4m3fn; None stays None."""
    if dtype is None:
        return None
    return str(dtype).removeprefix("torch.")


def _patch_count(state: PatchState) -> str:
    return f"{state.weight_patches} patched weight{'s' if state.weight_patches != 1 else ''}"


def patch_change(before: PatchState | None, after: PatchState, *, forced: bool = False) -> Cause:
    """The weights carried another patch set than the patcher being loaded, so ComfyUI
    unpatches them and patches them again (classic: via the offload device)."""
    if forced and (before is None or before.uuid == after.uuid):
        return Cause(CauseKind.PATCH_CHANGE, "patches forced again",
                     "ComfyUI was asked to patch the weights again (force_patch_weights): it unpatched "
                     "and re-patched them")
    if before is not None and before.compute_dtype != after.compute_dtype:
        old, new = before.compute_dtype or "the model's own", after.compute_dtype or "the model's own"
        return Cause(CauseKind.DTYPE_CHANGE, f"compute dtype {old} → {new}",
                     f"compute dtype changed ({old} → {new}, set_model_compute_dtype): a new patch set, so "
                     "ComfyUI unpatched the weights and patched them again")
    if before is None:
        what = (f"the weights carried a patch set from before this lock saw them, this run's model has "
                f"{_patch_count(after)}")
    else:
        what = f"{_patch_count(before)} before, {after.weight_patches} now"
        if before.weight_patches == after.weight_patches:
            what += " (same count: a LoRA strength or a patch's value changed, or a patch of another kind)"
    return Cause(CauseKind.PATCH_CHANGE, "LoRA/patch change",
                 f"LoRA or other patch change: {what}; ComfyUI unpatched the weights and patched them again")


def _identity_changes(old: ModelIdentity, new: ModelIdentity) -> list[tuple[CauseKind, str, str]]:
    """(kind, short, phrase) for each difference between two loaded models that we can see."""
    changes = []
    if old.file and new.file and old.file != new.file:
        changes.append((CauseKind.MODEL_CHANGE, "another model file",
                        f"another model file ({old.file} → {new.file})"))
    if old.dtype and new.dtype and old.dtype != new.dtype:
        computes = new.compute_dtype or new.dtype
        changes.append((CauseKind.DTYPE_CHANGE, f"weight dtype {old.dtype} → {new.dtype}",
                        f"weight dtype changed ({old.dtype} → {new.dtype}, computing in {computes})"))
    elif old.dtype and old.compute_dtype != new.compute_dtype:
        before, after = old.compute_dtype or old.dtype, new.compute_dtype or new.dtype
        changes.append((CauseKind.DTYPE_CHANGE, f"compute dtype {before} → {after}",
                        f"compute dtype changed ({before} → {after})"))
    if not changes and old.loader_key and new.loader_key and old.loader_key != new.loader_key:
        changes.append((CauseKind.MODEL_CHANGE, "loader options changed",
                        "the loader ran with other options (same file, same weight dtype)"))
    return changes


def model_change(old: ModelIdentity, new: ModelIdentity, *, collected: bool, cache: CacheMode) -> Cause:
    """The node now holds another model object than before: what differs, or, if nothing
    does, that ComfyUI's cache let the old one go (collected: its weak reference died)."""
    changes = _identity_changes(old, new)
    if changes:
        kinds = [kind for kind, _, _ in changes]
        kind = CauseKind.DTYPE_CHANGE if CauseKind.DTYPE_CHANGE in kinds else CauseKind.MODEL_CHANGE
        short = next(s for k, s, _ in changes if k is kind)
        return Cause(kind, short, "; ".join(p for _, _, p in changes)
                     + ": its node received a new model object, loaded in full")
    same_load = old.loader_key is not None and old.loader_key == new.loader_key
    if collected:
        again = "the same file with the same options" if same_load else "a new model object"
        return Cause(CauseKind.CACHE_DROP, f"cache dropped the model ({cache.short})",
                     f"ComfyUI's node cache dropped the model object (cache mode: {cache.detail}); "
                     f"the loader built {again} again")
    if same_load:
        return Cause(CauseKind.CACHE_DROP, f"cache dropped the model ({cache.short})",
                     "the loader built the same file with the same options again (a new model object): "
                     f"ComfyUI's node cache no longer held its earlier output (cache mode: {cache.detail})")
    same = f"; same weight dtype {new.dtype}" if new.dtype else ""
    return Cause(CauseKind.MODEL_CHANGE, "new model object",
                 f"its node received a new model object (the loader ran again{same}); the loader did not "
                 "record what it read (ComfyUI's cached_patcher_init), so why it ran again is not visible "
                 "here")


def explicit_free(policy: str) -> Cause:
    return Cause(CauseKind.EXPLICIT_FREE, "explicit free",
                 "an explicit free (POST /free: the Unload Models / Free memory buttons) unloaded it; the "
                 f"lock stepped aside for it (policy {policy})")


def oom_recovery(policy: str) -> Cause:
    return Cause(CauseKind.OOM_RECOVERY, "OOM recovery",
                 "ComfyUI's out-of-memory recovery unloaded it (unload_all_models after a node ran out of "
                 f"memory); the lock was released for it (policy {policy})")


def partial_top_up(loaded_before: int, size: int) -> Cause:
    return Cause(CauseKind.PARTIAL_TOP_UP, "partial load topped up",
                 f"it was partially loaded ({fmt_bytes(loaded_before)} of {fmt_bytes(size)}): ComfyUI loaded "
                 "more of it")


def unseen(moved_bytes: int, device) -> Cause:
    return Cause(CauseKind.UNSEEN, f"{fmt_bytes(moved_bytes)} moved, no visible cause",
                 f"ComfyUI moved {fmt_bytes(moved_bytes)} onto {device}; no cause this pack can see (not a "
                 "patch or dtype change, a new model object, an explicit free or an OOM recovery)")
