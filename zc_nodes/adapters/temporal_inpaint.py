"""temporal_inpaint: the tail in the first latent frames, kept by the noise mask (any video family).

Wan 2.2 TI2V 5B (as core's Wan22ImageToVideoLatent), and the generic path for
every video family. For audio-video families both streams are held: the video
tail in the first k latents and the aligned audio tail at the start of the
audio stream, with a nested noise mask (ComfyUI prepares each stream's mask
against its own shape).

How firmly the kept frames hold depends on the model (ComfyUI's
``scale_latent_inpaint`` and ``process_timestep``): Wan 2.2 5B and LTX turn
the mask into per-frame / per-token timesteps and see the kept frames clean;
HunyuanVideo sees them clean at the global timestep; Wan 2.1 / A14B and
MiniMax H3 (v0.33.0) re-noise them to the current sigma every step. In every
case the sampler restores them exactly at the end (``KSamplerX0Inpaint``).

As core builds it: for Wan 2.2 TI2V 5B this is ``Wan22ImageToVideoLatent``
exactly (samples, ``process_out(0)`` empty frames, ``noise_mask`` [B, 1, T, H, W]
float32, no conditioning keys), except one line: slot 0 holds a continuation
latent where core has a one-pixel-frame latent. For LTX-Video it is
``LTXVImgToVideo`` (strength 1): the same samples and the same mask values, except one
line: the mask is per latent pixel [B, 1, T, H, W] where core's is per frame
[B, 1, T, 1, 1] (the sampler resizes core's to the latent size). Other families have no
core node that starts a clip from latents this way (core's video I2V nodes are per family).
"""

from __future__ import annotations

from .. import comfy_calls
from ...zc_continuity import assemble, streams
from ...zc_continuity.families import ADAPTER_TEMPORAL_INPAINT
from .base import Adapter, BuildRequest, BuildResult

CAUSAL_SLOT0 = ("slot 0 holds a continuation latent (4 pixel frames) where core has the encoding of "
                "one pixel frame")

HOLD_CHECKS = {"minimax_kept_rows_hold": comfy_calls.minimax_kept_rows_hold}
"""The checks a catalog row names (``InpaintNotes.hold_check``) where how the model holds the kept
frames depends on the ComfyUI version, by that name; each returns the note."""


def hold_note(spec) -> str:
    """How the family's model holds the kept frames, as the certificate says it (may be empty)."""
    if spec.inpaint.hold_check:
        return HOLD_CHECKS[spec.inpaint.hold_check]()
    return spec.inpaint.hold


def build_streams(request: BuildRequest, video_samples, video_mask):
    """Join the video result with the audio stream (held tail, or all generated) for AV families."""
    spec = request.spec
    if not spec.is_audio_video:
        return {"samples": video_samples, "noise_mask": video_mask}
    audio, audio_mask = streams.audio_inpaint(request.audio_shape, request.audio, spec)
    audio, audio_mask = audio.to(video_samples.device), audio_mask.to(video_mask.device)
    return {"samples": comfy_calls.nested([video_samples, audio]),
            "noise_mask": comfy_calls.nested([video_mask, audio_mask])}


class TemporalInpaint(Adapter):
    name = ADAPTER_TEMPORAL_INPAINT
    summary = ("samples[:, :, :k] = tail, noise_mask 0 there and 1 elsewhere, empty frames = "
               "process_out(0); AV: both streams, nested mask")

    def build(self, request: BuildRequest) -> BuildResult:
        spec = request.spec
        target = request.target()
        fill = comfy_calls.empty_fill(request.latent_format, spec.channels)
        video = assemble.temporal_inpaint(target, request.video, fill)
        latent = build_streams(request, video.samples, video.noise_mask)
        notes = []
        if not request.fresh_first_frame:
            hold = hold_note(spec)
            if hold:
                notes.append(f"temporal_inpaint: {hold}")
        if spec.is_audio_video:
            notes.append(request.audio_note())
        core = spec.inpaint.core_node
        differences = [CAUSAL_SLOT0] if core and not request.fresh_first_frame else []
        differences += spec.inpaint.core_differences
        return BuildResult(request.positive, request.negative, latent, notes, differences,
                           core_node=core)
