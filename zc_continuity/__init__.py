"""Pure continuity logic: from a stored shot's latent to the next shot's latent and conditioning.

Only torch and the standard library are imported here, never ComfyUI: values
that need ComfyUI (a latent format's ``process_out(0)``, a VAE encoding of gray
frames) are passed in as tensors by the node layer's adapters. That keeps every
rule testable without a ComfyUI checkout.

The blend function is ``zc_continuity.blend.blend``: it is deliberately not
re-exported here, so ``zc_continuity.blend`` stays the module (the node layer
imports the modules by name).
"""

from . import (assemble, blend, bundle_layout, certificate, color, families, family_clues, hunyuan,
               img2img, kontext, ltx, minimax, resample, shapes, shot, streams, tail)
from .assemble import InpaintLatent, WanI2VConcat, temporal_inpaint, wan_i2v_concat
from .certificate import Certificate
from .errors import ContinuityError
from .families import (ADAPTER_FLUX_IMG2IMG, ADAPTER_FLUX_KONTEXT, ADAPTER_HUNYUAN15_I2V, ADAPTER_HUNYUAN_I2V,
                       ADAPTER_LTX_GUIDE, ADAPTER_MINIMAX_KEYFRAME, ADAPTER_PIXEL_BRIDGE,
                       ADAPTER_TEMPORAL_INPAINT, ADAPTER_WAN_I2V, FLUX, GENERIC_VIDEO,
                       HUNYUAN_VIDEO, HUNYUAN_VIDEO_15, LTX2, LTXV, MINIMAX_H3, WAN21, WAN22_5B,
                       AudioStreamSpec, FamilySpec, LengthRule, aligned_tail_frames,
                       causal_length_rule, family_by_name, family_from_latent_format,
                       infer_family_from_latent, infer_family_from_streams, known_families,
                       pixel_frames, register)
from .resample import CROP_MODES, RESAMPLE_METHODS, center_crop_box, resample_frames
from .shapes import (latent_frames, latent_size, overlap_pixel_frames, tail_pixel_span, target_shape,
                     validate_canvas, validate_latent_for_family, validate_length)
from .tail import take_tail

__all__ = [
    # modules
    "assemble", "blend", "bundle_layout", "certificate", "color", "families", "family_clues",
    "hunyuan", "img2img", "kontext", "ltx", "minimax", "resample", "shapes", "shot", "streams", "tail",
    # names
    "ADAPTER_FLUX_IMG2IMG", "ADAPTER_FLUX_KONTEXT", "ADAPTER_HUNYUAN15_I2V", "ADAPTER_HUNYUAN_I2V", "ADAPTER_LTX_GUIDE",
    "ADAPTER_MINIMAX_KEYFRAME", "ADAPTER_PIXEL_BRIDGE", "AudioStreamSpec", "FLUX", "HUNYUAN_VIDEO",
    "HUNYUAN_VIDEO_15", "LTX2", "LTXV", "MINIMAX_H3", "WAN22_5B", "aligned_tail_frames",
    "infer_family_from_streams", "tail_pixel_span",
    "ADAPTER_TEMPORAL_INPAINT", "ADAPTER_WAN_I2V", "CROP_MODES", "Certificate",
    "ContinuityError", "FamilySpec", "GENERIC_VIDEO", "InpaintLatent",
    "LengthRule", "RESAMPLE_METHODS", "WAN21", "WanI2VConcat", "causal_length_rule",
    "center_crop_box", "family_by_name", "family_from_latent_format",
    "infer_family_from_latent", "known_families", "latent_frames", "latent_size",
    "overlap_pixel_frames", "pixel_frames", "register", "resample_frames",
    "take_tail", "target_shape", "temporal_inpaint", "validate_canvas",
    "validate_latent_for_family", "validate_length", "wan_i2v_concat",
]
