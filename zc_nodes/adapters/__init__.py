"""The Handoff's adapters by name, and the choice ``adapter=auto`` makes.

Each adapter is one family's legal insertion point (docs/families.md).
``pixel_bridge`` is not an insertion point but an opt-in way to make
the tail from pixels (one VAE decode, one encode), for a family the pack
cannot hand off in latent space; the Handoff then uses the target family's
own adapter with the freshly encoded frame.
"""

from __future__ import annotations

from .. import comfy_calls
from ...zc_continuity.errors import ContinuityError
from .base import Adapter, BuildRequest, BuildResult
from .flux_img2img import FluxImg2Img
from .flux_kontext import FluxKontextReference
from .hunyuan import V1_CONCAT, Hunyuan15I2V, HunyuanI2V
from .ltx_guide import LtxLatentGuide
from .minimax_h3 import MiniMaxH3Keyframe
from .temporal_inpaint import TemporalInpaint
from .wan_i2v import WanI2V

AUTO = "auto"
PIXEL_BRIDGE = "pixel_bridge"

REGISTRY: dict[str, Adapter] = {a.name: a for a in (
    TemporalInpaint(), WanI2V(), HunyuanI2V(), Hunyuan15I2V(), LtxLatentGuide(), MiniMaxH3Keyframe(),
    FluxImg2Img(), FluxKontextReference())}

COMBO = [AUTO, *REGISTRY, PIXEL_BRIDGE]
"""The Handoff's ``adapter`` options; the first three were the first release's and keep their names."""

__all__ = ["AUTO", "COMBO", "PIXEL_BRIDGE", "REGISTRY", "Adapter", "BuildRequest", "BuildResult",
           "auto_choice", "choose", "model_variant"]


def model_variant(spec, model) -> str | None:
    """What the Store records about a model beyond its family, for a later Handoff without it."""
    if model is None:
        return None
    if spec.name == "wan21" and comfy_calls.is_wan_i2v(model):
        return "i2v"
    if spec.name == "hunyuan_video" and comfy_calls.hunyuan_concat_i2v(model):
        return V1_CONCAT
    if spec.name == "hunyuan_video15" and not comfy_calls.hunyuan15_has_image_channels(model):
        return "t2v"
    return None


def auto_choice(spec, model, meta: dict | None) -> tuple[str, str]:
    """(adapter name, why) for ``adapter=auto``."""
    variant = model_variant(spec, model) if model is not None else (meta or {}).get("model_variant")
    name = spec.name
    if name == "wan21":
        if variant == "i2v":
            return "wan_i2v", "Wan image-to-video model (36 input channels)"
        return "temporal_inpaint", "Wan text-to-video model"
    if name == "hunyuan_video":
        if variant == V1_CONCAT:
            return "hunyuan_i2v", "HunyuanVideo 1.0 v1 (concat) image-to-video checkpoint"
        return "temporal_inpaint", ("HunyuanVideo 1.0 model that takes no concat image; choose "
                                    "adapter hunyuan_i2v for the v2 (replace) I2V checkpoint")
    if name == "hunyuan_video15":
        if variant == "t2v":
            return "temporal_inpaint", "HunyuanVideo 1.5 model without image input channels"
        return "hunyuan15_i2v", "HunyuanVideo 1.5 (image channels next to the noise)"
    if name in ("ltxv", "ltx2"):
        return "ltx_latent_guide", "LTX latent guides"
    if name == "minimax_h3":
        return "minimax_h3_keyframe", "MiniMax H3 keyframes"
    if name == "flux":
        return "flux_img2img", ("FLUX.1 Dev/Schnell img2img (Kontext loads as the same architecture; "
                                "choose flux_kontext_reference for a Kontext model)")
    return "temporal_inpaint", "video latent inpainting (any video family)"


def choose(requested: str, spec, model, meta: dict | None) -> tuple[Adapter, str]:
    """The adapter to build with and why; raises when a requested one cannot serve the family."""
    if requested == AUTO:
        name, why = auto_choice(spec, model, meta)
        return REGISTRY[name], f"auto: {why}"
    adapter = REGISTRY.get(requested)
    if adapter is None:
        raise ContinuityError(f"adapter {requested!r} is unknown; use one of {', '.join(COMBO)}")
    if not adapter.supports(spec):
        served = ", ".join(adapter.families) if adapter.families else "video families"
        raise ContinuityError(
            f"adapter {requested!r} serves {served}, but the family is {spec.display_name}; use "
            f"'auto' (which picks {auto_choice(spec, model, meta)[0]}) or one of "
            f"{', '.join(n for n, a in REGISTRY.items() if a.supports(spec))}")
    if requested == "wan_i2v" and model is not None and not comfy_calls.is_wan_i2v(model):
        raise ContinuityError("adapter 'wan_i2v' needs an image-to-video Wan model (36 input "
                              "channels); the connected model is text-to-video and would ignore "
                              "the concat conditioning. Use 'temporal_inpaint' or 'auto'")
    return adapter, "requested"
