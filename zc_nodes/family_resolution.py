"""Which model family a handoff builds for: from the connected model's latent
format, else from what the Store recorded. Unknown latent formats fall back to
the generic temporal-inpaint family with the format's own channel count and
compression ratios (read by feature, where ComfyUI exposes them)."""

from __future__ import annotations

from . import comfy_adapter
from ..zc_continuity import families
from ..zc_continuity.errors import ContinuityError


def spec_for_latent_format(latent_format):
    """The family of a ComfyUI latent format object, or None if it cannot be known."""
    if latent_format is None:
        return None
    spec = families.family_from_latent_format(type(latent_format).__name__)
    if spec is not None:
        return spec
    channels = getattr(latent_format, "latent_channels", None)
    spatial = getattr(latent_format, "spacial_downscale_ratio", None)
    temporal = getattr(latent_format, "temporal_downscale_ratio", None)
    dims = getattr(latent_format, "latent_dimensions", 2)
    if dims == 3 and all(isinstance(v, int) and v > 0 for v in (channels, spatial, temporal)):
        return families.family_by_name("generic_video").resolved(channels, spatial, temporal)
    return None


def spec_for_model(model):
    if model is None:
        return None
    latent_format = comfy_adapter.latent_format_of_model(model)
    spec = spec_for_latent_format(latent_format)
    if latent_format is not None and spec is None:
        raise ContinuityError(
            f"the connected model uses latent format {type(latent_format).__name__}, which this "
            "ComfyUI does not describe well enough (channels and compression ratios) to build a "
            "video latent for it; this version hands off Wan 2.1 and video models whose latent "
            "format carries its ratios")
    return spec


def spec_from_meta(meta: dict | None):
    """The family the Store recorded, or None."""
    name = (meta or {}).get("family")
    if name in (None, "", "unknown"):
        return None
    spec = families.family_by_name(name)
    if not spec.is_resolved:
        try:
            spec = spec.resolved(int(meta["channels"]), int(meta["spatial_ratio"]),
                                 int(meta["temporal_ratio"]))
        except (KeyError, ValueError) as exc:
            raise ContinuityError(
                f"the stored latent's metadata names family {name!r} without its channels and "
                "compression ratios; connect the model to the Handoff's 'model' input") from exc
    return spec


def metadata_for(spec) -> dict[str, str]:
    """What the Store records about a family, so a Handoff without a model can rebuild it."""
    if spec is None:
        return {"family": "unknown"}
    meta = {"family": spec.name}
    if spec.channels is not None:
        meta["channels"] = str(spec.channels)
        meta["spatial_ratio"] = str(spec.spatial_ratio)
        meta["temporal_ratio"] = str(spec.temporal_ratio or 1)
    return meta


def resolve(model, stored_meta: dict | None, stored_shape=None):
    """The family to build for; a clear error when model and stored latent disagree."""
    from_model = spec_for_model(model)
    recorded = spec_from_meta(stored_meta)
    if from_model is not None and recorded is not None and from_model.name != recorded.name:
        raise ContinuityError(
            f"family mismatch: the stored latent was made by a {recorded.display_name} model "
            f"(latent format {stored_meta.get('latent_format', '?')}) but the connected model is "
            f"{from_model.display_name}; latent spaces of different families are not "
            "interchangeable. Use a tag stored by the same family, or connect the matching model")
    spec = from_model or recorded
    if spec is None and stored_shape is not None:
        spec = families.infer_family_from_latent(tuple(stored_shape))
    if spec is None:
        raise ContinuityError(
            "cannot tell which model family this latent belongs to: the Store recorded none and "
            "the latent's shape is ambiguous (a 16-channel video latent may be Wan 2.1, "
            "HunyuanVideo or Cosmos); connect the diffusion model to the Handoff's 'model' input")
    return spec
