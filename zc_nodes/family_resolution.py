"""Which model family a handoff builds for: from the connected model's latent
format, else from what the Store recorded, else from the latent itself where
its shape leaves no doubt (channel count, rank, an audio stream). Unknown
latent formats fall back to the generic temporal-inpaint family with the
format's own channel count and compression ratios (read by feature, where
ComfyUI exposes them). Where the shape is shared by several families (a
16-channel video latent: Wan 2.1, HunyuanVideo 1.0, ...), the error names
them and asks for the model."""

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
            f"the connected model uses latent format {type(latent_format).__name__}, which this pack "
            "has no latent-space insertion point for (it hands off Wan 2.1/2.2, HunyuanVideo "
            "1.0/1.5, LTX-Video/LTX-2, MiniMax H3, FLUX.1 Kontext, and video models whose latent "
            "format carries its channels and compression ratios); a stored tail cannot continue "
            "this model without pixels")
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


def candidates_for_shape(shape) -> list[str]:
    """Display names of the registered families whose latents have this rank and channel count."""
    dims = len(shape) - 2
    names = [s.display_name for s in families.known_families()
             if s.channels == shape[1] and s.latent_dims == dims]
    for spec in families.known_families():
        if spec.channels == shape[1] and spec.latent_dims == dims:
            names += [n for n in spec.shares_latent_shape_with if n not in names]
    return names


def stored_family(stored_meta: dict | None, stream_shapes) -> object | None:
    """The family of a stored latent from its metadata, else from its stream shapes (or None)."""
    recorded = spec_from_meta(stored_meta)
    if recorded is None and stream_shapes:
        recorded = families.infer_family_from_streams([tuple(s) for s in stream_shapes])
    return recorded


def _shapes(stored_shape, stream_shapes):
    if stream_shapes:
        return [tuple(s) for s in stream_shapes]
    return [tuple(stored_shape)] if stored_shape is not None else []


def resolve(model, stored_meta: dict | None, stored_shape=None, *, stream_shapes=None,
            allow_mismatch: bool = False):
    """The family to build for; a clear error when model and stored latent disagree.

    Only a family the Store *recorded* can conflict with the model's; one
    inferred from the latent's shape yields to the model (the channel check
    then names the difference). With ``allow_mismatch`` (the pixel bridge) the
    connected model's family wins, since the tail is re-encoded from pixels.
    """
    shapes_ = _shapes(stored_shape, stream_shapes)
    from_model = spec_for_model(model)
    recorded = spec_from_meta(stored_meta)
    if (from_model is not None and recorded is not None and from_model.name != recorded.name
            and not allow_mismatch):
        raise ContinuityError(
            f"family mismatch: the stored latent was made by a {recorded.display_name} model "
            f"(latent format {(stored_meta or {}).get('latent_format', '?')}) but the connected model "
            f"is {from_model.display_name}; latent spaces of different families are not "
            "interchangeable. Use a tag stored by the same family, connect the matching model, or "
            "opt in to adapter 'pixel_bridge' (one VAE decode of the stored shot with bridge_vae and "
            "one encode of its last frame with vae; lossy, counted in the certificate)")
    spec = from_model or recorded
    if spec is None and shapes_:
        spec = families.infer_family_from_streams(shapes_)
    if spec is None:
        shared = candidates_for_shape(shapes_[0]) if shapes_ else []
        which = (f"a latent of shape {list(shapes_[0])} may be " + ", ".join(shared)
                 if len(shared) > 1 else "its shape matches no family this pack knows")
        raise ContinuityError(
            "cannot tell which model family this latent belongs to: the Store recorded none and "
            f"{which}; connect the diffusion model to the Handoff's 'model' input (or to the "
            "Store's, so it records the family)")
    return spec
