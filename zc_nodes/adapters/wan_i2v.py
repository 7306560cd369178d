"""wan_i2v: Wan 2.1 I2V / Wan 2.2 A14B I2V concat conditioning from the tail.

As core's WanImageToVideo with tail latents in place of an encoded start
image: ``concat_latent_image`` (tail, then padding) and ``concat_mask`` on
positive and negative, and an empty (all-zero) latent. Works for any Wan
model with 36 input channels: 2.1 I2V (CLIP-vision projection, detected as
I2V) and 2.2 A14B I2V (no CLIP vision, detected as T2V with 36 channels).

The padding frames hold the VAE encoding of mid-gray (0.5) frames, as core's
(``gray_padding``: encoded once per VAE and canvas with the Handoff's VAE,
cached in memory and next to the store's spill files). The first shot of a film
(fallback_first_frame) has the start image's pixels, so there the padding is
encoded exactly as core encodes it: the start image followed by gray, one video.
If the VAE cannot encode, the padding falls back to the latent format's empty
value, and the certificate, the log and a UI warning say so.

Differs from core in one line each (also in the certificate and docs/families.md):
- core encodes the gray frames after the start image in one causal pass, so its
  padding latents carry that image's context; ours are gray encoded alone (not on the
  first shot, which encodes them after its start image as core does);
- no ``clip_vision_output`` (it needs pixels);
- slot 0 holds a continuation latent where core has a one-pixel-frame latent (causal first frame);
- with a stored batch B > 1 ``concat_latent_image`` has batch B (one tail per item), core's has 1.
"""

from __future__ import annotations

import time

from .. import comfy_calls, ui_events
from ... import zc_log as log
from ...zc_continuity import assemble
from ...zc_continuity._checks import shape_text
from ...zc_continuity.errors import ContinuityError
from ...zc_continuity.families import ADAPTER_WAN_I2V
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


START, GRAY, EMPTY = "start", "gray", "empty"
"""Which padding a build used (``WanI2V.padding``)."""


def warn_fallback(why: str) -> None:
    """The gray encode failed: the hop goes on with the old padding, and the user is told where
    they look (the log, and a toast through the pack's UI warning path), not only in the info."""
    log.warning("wan_i2v: the VAE could not encode the gray padding (%s); the padding holds "
                "the latent format's empty value instead", why)
    ui_events.warn("ZeroCopy: Wan I2V padding fell back",
                   f"The VAE could not encode the gray padding ({why}). This shot's concat_latent_image "
                   "pads with the latent format's empty value, which core's WanImageToVideo never uses; "
                   "connect the model's VAE to the Handoff's 'vae' input.")


def _interrupt(exc: BaseException) -> bool:
    """ComfyUI's 'stop' (InterruptProcessingException) must never be taken for a failed encode."""
    return type(exc).__name__ == "InterruptProcessingException"


class WanI2V(Adapter):
    name = ADAPTER_WAN_I2V
    core_node = "WanImageToVideo"
    summary = ("concat_latent_image = tail + the VAE encoding of gray frames (cached), concat_mask 0 "
               "on the tail (both conditionings)")

    def check_model(self, model) -> None:
        if not comfy_calls.is_wan_i2v(model):
            raise ContinuityError(f"adapter '{ADAPTER_WAN_I2V}' needs an image-to-video Wan model (36 input "
                                  "channels); the connected model is text-to-video and would ignore "
                                  "the concat conditioning. Use 'temporal_inpaint' or 'auto'")

    def padding(self, request: BuildRequest, target) -> tuple[object, list[str], str]:
        """The padding for ``assemble.wan_i2v_concat``, the certificate notes about it, and which
        padding it is: ``START`` (the first shot: gray encoded after its start image, exactly as
        core), ``GRAY`` (gray encoded alone, cached) or ``EMPTY`` (the empty-value stand-in)."""
        spec = request.spec
        frames, height, width = target[2:]
        pixels = (frames - 1) * spec.temporal_ratio + 1
        w, h = width * spec.spatial_ratio, height * spec.spatial_ratio
        if request.vae is None:
            return self.empty_fill(request), [
                "padding: no VAE connected, so the padding frames hold the latent format's empty value "
                "(process_out(0)); core's WanImageToVideo pads with the VAE encoding of gray frames: "
                "connect the model's VAE"], EMPTY
        start = request.start_pixels if request.fresh_first_frame else None
        try:
            if start is not None:
                began = time.perf_counter()
                latent = gray_padding.encode_after_start(request.vae, start, pixels)
                got = None
            else:
                got = gray_padding.gray_padding(request.vae, w, h, pixels, request.spill_dir)
                latent = got.latent
        except Exception as exc:  # noqa: BLE001 - said in the certificate, the log and the UI
            if _interrupt(exc):
                raise
            why = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:200]
            warn_fallback(why)
            return self.empty_fill(request), [
                f"padding: WARNING the VAE could not encode the gray padding ({why}); the padding "
                "frames hold the latent format's empty value (process_out(0)), which core's "
                "WanImageToVideo never uses: connect the model's VAE"], EMPTY
        want = (1,) + tuple(target[1:])
        if tuple(latent.shape) != want:
            raise ContinuityError(
                f"wan_i2v: the VAE encodes {pixels} gray frames at {w}x{h} as "
                f"{shape_text(latent.shape)}, but the new shot's concat image is {shape_text(want)}; "
                "connect the Wan 2.1 VAE of the model (16 channels, 4x8x8) to 'vae'")
        if got is None:
            grays = pixels - start.shape[0]
            return latent, [f"padding: the VAE encoding of the start image followed by {grays} "
                            f"mid-gray (0.5) frames at {w}x{h}, encoded as one video as WanImageToVideo "
                            f"does ({time.perf_counter() - began:.2f} s; the first shot only, not cached: "
                            "it depends on the image)"], START
        return latent, [got.note(w, h, pixels)], GRAY

    @staticmethod
    def empty_fill(request: BuildRequest):
        """The old padding: the latent format's empty value per channel (process_out(0))."""
        return comfy_calls.empty_fill(request.latent_format, request.spec.channels)

    def build(self, request: BuildRequest) -> BuildResult:
        target = request.target()
        padding, notes, kind = self.padding(request, target)
        # the cached gray padding is never written (gray_padding hands out the cache entry itself),
        # so the next hop's copy of it can be made ahead, between shots
        result = assemble.wan_i2v_concat(target, request.video, padding, padding_constant=kind == GRAY)
        values = result.conditioning_values()
        differences = {START: [], GRAY: [CAUSAL_PADDING], EMPTY: [EMPTY_PADDING]}[kind] + [NO_CLIP_VISION]
        if not request.fresh_first_frame:
            differences.append(CAUSAL_SLOT0)
        if target[0] > 1:
            differences.append(f"concat_latent_image has batch {target[0]} (one tail per item); "
                               "core's has batch 1")
        return BuildResult(
            comfy_calls.conditioning_with(request.positive, values),
            comfy_calls.conditioning_with(request.negative, values),
            result.latent_dict(), notes, differences)
