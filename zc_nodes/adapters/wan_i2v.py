"""wan_i2v: Wan 2.1 I2V / Wan 2.2 A14B I2V concat conditioning from the tail.

As core's WanImageToVideo with tail latents in place of an encoded start
image: ``concat_latent_image`` (tail, then padding) and ``concat_mask`` on
positive and negative, and an empty (all-zero) latent. Works for any Wan
model with 36 input channels: 2.1 I2V (CLIP-vision projection, detected as
I2V) and 2.2 A14B I2V (no CLIP vision, detected as T2V with 36 channels).

The padding frames hold the VAE encoding of mid-gray (0.5) frames, as core's
(``gray_padding``: encoded once per VAE and canvas with the Handoff's VAE,
cached in memory and next to the store's spill files).

Differs from core in one line each (also in the certificate and docs/families.md):
- core encodes the gray frames after the start image in one causal pass, so its
  padding latents carry that image's context; ours are gray encoded alone;
- no ``clip_vision_output`` (it needs pixels);
- slot 0 holds a continuation latent where core has a one-pixel-frame latent (causal first frame);
- with a stored batch B > 1 ``concat_latent_image`` has batch B (one tail per item), core's has 1.
"""

from __future__ import annotations

from .. import comfy_adapter, log
from ...zc_continuity import assemble
from ...zc_continuity._checks import shape_text
from ...zc_continuity.errors import ContinuityError
from . import gray_padding
from .base import Adapter, BuildRequest, BuildResult

CAUSAL_PADDING = ("padding: core encodes its gray frames after the start image in one causal pass, so "
                  "its padding latents carry the start image's context; ours are gray encoded alone "
                  "(docs/families.md gives the measured difference)")
EMPTY_PADDING = ("padding: the latent format's empty value (process_out(0)) where core has the VAE "
                 "encoding of gray frames")
NO_CLIP_VISION = "no clip_vision_output: it needs the start image's pixels"
CAUSAL_SLOT0 = ("slot 0 holds a continuation latent (4 pixel frames) where core has the encoding of "
                "one pixel frame")


def _interrupt(exc: BaseException) -> bool:
    """ComfyUI's 'stop' (InterruptProcessingException) must never be taken for a failed encode."""
    return type(exc).__name__ == "InterruptProcessingException"


class WanI2V(Adapter):
    name = "wan_i2v"
    families = ("wan21",)
    core_node = "WanImageToVideo"
    summary = ("concat_latent_image = tail + the VAE encoding of gray frames (cached), concat_mask 0 "
               "on the tail (both conditionings)")

    def padding(self, request: BuildRequest, target) -> tuple[object, list[str], bool]:
        """The padding for ``assemble.wan_i2v_concat``, the certificate notes about it, and whether
        it is the gray encoding (False: the empty-value stand-in)."""
        spec = request.spec
        frames, height, width = target[2:]
        pixels = (frames - 1) * spec.temporal_ratio + 1
        w, h = width * spec.spatial_ratio, height * spec.spatial_ratio
        fill = comfy_adapter.empty_fill(request.latent_format, spec.channels)
        if request.vae is None:
            return fill, ["padding: no VAE connected, so the padding frames hold the latent format's "
                          "empty value (process_out(0)); core's WanImageToVideo pads with the VAE "
                          "encoding of gray frames: connect the model's VAE"], False
        try:
            got = gray_padding.gray_padding(request.vae, w, h, pixels, request.spill_dir)
        except Exception as exc:  # noqa: BLE001 - said in the certificate and the log
            if _interrupt(exc):
                raise
            why = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:200]
            log.warning("wan_i2v: the VAE could not encode the gray padding (%s); the padding holds "
                        "the latent format's empty value instead", why)
            return fill, [f"padding: WARNING the VAE could not encode the gray padding ({why}); the "
                          "padding frames hold the latent format's empty value (process_out(0)), "
                          "which core's WanImageToVideo never uses: connect the model's VAE"], False
        want = (1,) + tuple(target[1:])
        if tuple(got.latent.shape) != want:
            raise ContinuityError(
                f"wan_i2v: the VAE encodes {pixels} gray frames at {w}x{h} as "
                f"{shape_text(got.latent.shape)}, but the new shot's concat image is {shape_text(want)}; "
                "connect the Wan 2.1 VAE of the model (16 channels, 4x8x8) to 'vae'")
        return got.latent, [got.note(w, h, pixels)], True

    def build(self, request: BuildRequest) -> BuildResult:
        target = request.target()
        padding, notes, gray = self.padding(request, target)
        result = assemble.wan_i2v_concat(target, request.video, padding)
        values = result.conditioning_values()
        differences = [CAUSAL_PADDING if gray else EMPTY_PADDING, NO_CLIP_VISION]
        if not request.fresh_first_frame:
            differences.append(CAUSAL_SLOT0)
        if target[0] > 1:
            differences.append(f"concat_latent_image has batch {target[0]} (one tail per item); "
                               "core's has batch 1")
        return BuildResult(
            comfy_adapter.conditioning_with(request.positive, values),
            comfy_adapter.conditioning_with(request.negative, values),
            result.latent_dict(), notes, differences)
