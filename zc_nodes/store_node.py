"""ZeroCopyLatentStore: capture a sampler's output latent into the resident store.

Image and video latents are one tensor; audio-video latents (NestedTensor: LTX-2,
MiniMax H3) are one bundle with a tensor per stream (``av_bundle``). The shot's
metadata records its family (from the model, else from the shapes where they are
unambiguous), the colour anchor (``color_anchor``), and what was not kept:
``noise_mask`` and other LATENT keys, and the guide latents an LTX Handoff
appended (``zc_continuity.ltx``).
"""

from __future__ import annotations

import math
import time

from comfy_api.latest import io

from . import adapters, av_bundle, color_anchor, comfy_adapter, family_resolution, log, runtime
from .sockets import ContinuityToken
from ..zc_continuity import families, ltx, streams
from ..zc_continuity.errors import ContinuityError
from ..zc_engine import InvalidInput
from ..zc_engine._library import check, encode, lib

try:  # the web UI's websocket messages (a no-op without a server, never raises)
    from . import ui_events
except ImportError:  # a build of the pack without the web extension
    ui_events = None

DEFAULT_TAG = "default_continuity"


def tag_problem(tag: str) -> str | None:
    """The engine's message for a bad tag, or None."""
    try:
        check(lib.zc_tag_check(encode(tag, "buffer_tag")))
    except (InvalidInput, TypeError) as exc:
        return f"buffer_tag: {exc}"
    return None


def describe_family(model, stream_shapes) -> tuple[dict[str, str], object]:
    """Metadata about where the latent came from (family, latent format, ratios), and the family.

    ``stream_shapes`` are the shapes of the latent's streams, video first (one
    for a plain latent). Without a model the family is inferred from the
    shapes where they leave no doubt, else recorded as unknown.
    """
    meta: dict[str, str] = {}
    spec = None
    video_shape = tuple(stream_shapes[0])
    if model is not None:
        latent_format = comfy_adapter.latent_format_of_model(model)
        if latent_format is not None:
            meta["latent_format"] = type(latent_format).__name__
        meta["model"] = comfy_adapter.model_identity(model)
        spec = family_resolution.spec_for_latent_format(latent_format)
        variant = adapters.model_variant(spec, model) if spec is not None else None
        if variant:
            meta["model_variant"] = variant
    if spec is None:
        spec = families.infer_family_from_streams(stream_shapes)
    meta.update(family_resolution.metadata_for(spec))
    if spec is not None and len(video_shape) == 5 and spec.is_resolved and spec.is_video:
        meta["pixel_frames"] = str(families.pixel_frames(video_shape[2], spec))
    return meta, spec


def check_streams(streams_, spec) -> None:
    """Refuse latents this store could not hand off faithfully, naming what is wrong."""
    video = streams_[0]
    if len(streams_) == 1:
        if video.dim() not in (4, 5):
            raise ValueError(f"ZeroCopyLatentStore: samples of shape {list(video.shape)} are neither "
                             "an image latent [B,C,H,W] nor a video latent [B,C,T,H,W]")
        return
    if video.dim() != 5:
        raise ValueError(f"ZeroCopyLatentStore: the first stream of this audio-video latent has shape "
                         f"{list(video.shape)}, not a video latent [B,C,T,H,W]")
    if spec is not None and spec.is_audio_video:
        if len(streams_) != 2:
            raise ValueError(f"ZeroCopyLatentStore: a {spec.display_name} latent has 2 streams (video, "
                             f"audio), this one {len(streams_)}")
        streams.check_audio_stream(streams_[1], spec, video.shape[0])


class ZeroCopyLatentStore(io.ComfyNode):
    @classmethod
    def define_schema(cls):
        return io.Schema(
            node_id="ZeroCopyLatentStore",
            display_name="ZeroCopy Latent Store",
            category="CineFlux/Continuity",
            description=(
                "Captures a sampler's output latent into a resident, tagged store (bit-identical, "
                "with a digest) and passes it through untouched. The store keeps the last shots "
                "of each tag in memory and spills them to disk in the background, so the next "
                "queue run, or a restarted ComfyUI, can continue the film with "
                "ZeroCopyLatentHandoff. noise_mask is never kept. Audio-video latents (LTX-2, "
                "MiniMax H3) are kept as one bundle with a tensor per stream; guide latents an "
                "LTX Handoff appended are dropped."),
            inputs=[
                io.Latent.Input("samples", tooltip="The latent to capture, usually a KSampler output: "
                                                   "image, video, or audio-video (both streams)."),
                io.String.Input("buffer_tag", default=DEFAULT_TAG,
                                tooltip="Name of the buffer (letters, digits, '_', '-', '.'; up to 64). "
                                        "The Handoff of the next shot reads the same tag."),
                io.Model.Input("model", optional=True,
                               tooltip="The diffusion model that made the latent; records its family and "
                                       "latent format so the Handoff can check compatibility."),
            ],
            outputs=[
                io.Latent.Output(display_name="samples", tooltip="The input latent, passed through untouched."),
                ContinuityToken.Output(display_name="continuity",
                                       tooltip="Link to ZeroCopyLatentHandoff's 'continuity' input so it "
                                               "runs after this node and uses exactly this shot."),
            ],
        )

    @classmethod
    def validate_inputs(cls, buffer_tag=DEFAULT_TAG):
        # Only buffer_tag in the signature: ComfyUI attributes the message to these inputs.
        return tag_problem(buffer_tag) or True

    @classmethod
    def fingerprint_inputs(cls, buffer_tag=DEFAULT_TAG, **kwargs):
        # Re-run only when the buffer lost the tag (dropped or evicted while the
        # output stayed cached); otherwise the linked inputs decide.
        try:
            known = buffer_tag in runtime.store().tags()
        except Exception:
            known = False
        return 0 if known else math.nan

    @classmethod
    def execute(cls, samples, buffer_tag=DEFAULT_TAG, model=None) -> io.NodeOutput:
        problem = tag_problem(buffer_tag)
        if problem:
            raise ValueError(problem)
        streams_ = comfy_adapter.unbind_streams(samples["samples"])
        meta = {}
        marker = samples.get(ltx.GUIDE_MARKER)
        if marker is not None:  # LTX guides a Handoff appended: not part of the shot
            try:
                streams_[0], removed = ltx.crop_appended_guides(streams_[0], marker)
            except ContinuityError as exc:
                raise ValueError(f"ZeroCopyLatentStore: {exc}") from None
            if removed:
                meta["guide_frames_removed"] = str(removed)
        family_meta, spec = describe_family(model, [s.shape for s in streams_])
        check_streams(streams_, spec)
        meta.update(family_meta)
        video = streams_[0]
        meta.update({"dtype": str(video.dtype).replace("torch.", ""),
                     "shape": "x".join(str(d) for d in video.shape),
                     "created_unix": f"{time.time():.3f}", "source": "ZeroCopyLatentStore"})
        dropped = sorted(k for k in samples if k != "samples")
        if dropped:
            meta["keys_not_kept"] = ",".join(dropped)
        tensors, stream_meta = av_bundle.bundle_tensors(streams_)
        meta.update(stream_meta)
        store = runtime.store()
        meta.update(color_anchor.anchor_for_new_shot(store, buffer_tag, video))
        generation = store.put(buffer_tag, tensors, meta, spill=True)
        shot = store.get(buffer_tag, generation)
        digest = shot.info[av_bundle.VIDEO_KEY].digest
        log.info("stored tag %r generation %d: %s %s, %s%s%s", buffer_tag, generation, meta["family"],
                 [list(s.shape) for s in streams_] if len(streams_) > 1 else list(video.shape), digest,
                 f" (not kept: {meta['keys_not_kept']})" if dropped else "",
                 f" ({meta['guide_frames_removed']} appended guide latents dropped)"
                 if "guide_frames_removed" in meta else "")
        token = {"tag": buffer_tag, "generation": generation, "digest": digest}
        if ui_events is not None:
            ui_events.notify_store(buffer_tag, generation)
        return io.NodeOutput(samples, token)
