"""Which model family a handoff builds for: from the connected model's latent
format, else from what the Store recorded, else from what the latent's own
shape, the connected VAE and the text encoder allow together
(``zc_continuity.family_clues``). Unknown latent formats fall back to the generic
temporal-inpaint family with the format's own channel count and compression
ratios (read by feature, where ComfyUI exposes them). When nothing decides (a
16-channel video latent with a VAE and a CLIP that name no family), the error
says what each clue allowed and asks for the model."""

from __future__ import annotations

from dataclasses import dataclass

from . import comfy_calls
from ..zc_continuity import families, family_clues
from ..zc_continuity.shot import ModelFacts
from ..zc_continuity.errors import ContinuityError


def spec_for_latent_format(latent_format):
    """The family of a ComfyUI latent format object, or None if it cannot be known."""
    name, geometry = comfy_calls.latent_format_facts(latent_format)
    return ModelFacts(name, "", generic_geometry=geometry).family()


def _broken_format(latent_format) -> str:
    """The startup self-check's reason, when it turned this latent format's family off."""
    from . import self_check
    name = type(latent_format).__name__ if latent_format is not None else None
    problem = self_check.result().broken_formats.get(name) if name else None
    return (f"latent format {name} is off (ZeroCopy startup self-check: {problem}); this ComfyUI's "
            "class does not meet what the pack reads from it, so its family cannot be handed off") if problem else ""


def spec_for_model(model):
    if model is None:
        return None
    latent_format = comfy_calls.latent_format_of_model(model)
    broken = _broken_format(latent_format)
    if broken:
        raise ContinuityError(broken)
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


def stored_family(stored_meta: dict | None, stream_shapes) -> object | None:
    """The family of a stored latent from its metadata, else from its stream shapes (or None)."""
    recorded = spec_from_meta(stored_meta)
    if recorded is None and stream_shapes:
        recorded = families.infer_family_from_streams([tuple(s) for s in stream_shapes])
    return recorded


@dataclass
class Resolution:
    """The family a Handoff builds for, and the clue that decided it (for the certificate)."""

    spec: object
    source: str


def resolve(model, stored_meta: dict | None, *, stream_shapes=None, vae=None, clip=None,
            allow_mismatch: bool = False) -> Resolution:
    """The family to build for, from every clue in order of trust: the connected model's latent
    format, the family the Store recorded, then what the stored latent's shape, the VAE and the
    text encoder allow together (``zc_continuity.family_clues``). A clear error when model and
    stored latent disagree, or when nothing decides (it says what each clue allowed).

    Only a family the Store *recorded* can conflict with the model's; one inferred from the
    latent's shape yields to the model (the channel check then names the difference). With
    ``allow_mismatch`` (the pixel bridge) the connected model's family wins, since the tail is
    re-encoded from pixels.
    """
    shapes_ = [tuple(s) for s in stream_shapes or ()]
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
    if from_model is not None:
        return Resolution(from_model, f"the connected model ({comfy_calls.model_identity(model)})")
    vae_clue, clip_clue = comfy_calls.vae_evidence(vae), comfy_calls.text_encoder_evidence(clip)
    if allow_mismatch:  # the bridge builds for the new shot: its VAE and text encoder say which
        target = family_clues.infer_family(None, vae_clue, clip_clue)
        if target.spec is not None:
            return Resolution(target.spec, target.source)
    if recorded is not None:
        return Resolution(recorded, "the family the Store recorded")
    found = family_clues.infer_family(shapes_, vae_clue, clip_clue)
    if found.spec is not None:
        return Resolution(found.spec, found.source)
    tried = ["the 'model' input (not connected)",
             "the Store's metadata (no family recorded)" if stored_meta is not None else None,
             *found.tried]
    raise ContinuityError(
        "cannot tell which model family to build for; tried "
        + "; ".join(t for t in tried if t)
        + ". Connect the diffusion model to the Handoff's 'model' input (or to the Store's, so it "
          "records the family), or the VAE of the film's model to 'vae'")
