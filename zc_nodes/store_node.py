"""ZeroCopyLatentStore: capture a sampler's output latent into the resident store."""

from __future__ import annotations

import math
import time

from comfy_api.latest import io

from . import comfy_adapter, family_resolution, log, runtime
from .sockets import ContinuityToken
from ..zc_continuity import families
from ..zc_engine import InvalidInput
from ..zc_engine._library import check, encode, lib

DEFAULT_TAG = "default_continuity"


def tag_problem(tag: str) -> str | None:
    """The engine's message for a bad tag, or None."""
    try:
        check(lib.zc_tag_check(encode(tag, "buffer_tag")))
    except (InvalidInput, TypeError) as exc:
        return f"buffer_tag: {exc}"
    return None


def describe_family(model, samples) -> dict[str, str]:
    """Metadata about where the latent came from: family, latent format, ratios."""
    meta: dict[str, str] = {}
    spec = None
    if model is not None:
        latent_format = comfy_adapter.latent_format_of_model(model)
        if latent_format is not None:
            meta["latent_format"] = type(latent_format).__name__
        meta["model"] = comfy_adapter.model_identity(model)
        spec = family_resolution.spec_for_latent_format(latent_format)
        if spec is not None and spec.name == "wan21" and comfy_adapter.is_wan_i2v(model):
            meta["model_variant"] = "i2v"
    if spec is None:
        spec = families.infer_family_from_latent(tuple(samples.shape))
    meta.update(family_resolution.metadata_for(spec))
    if spec is not None and samples.dim() == 5 and spec.is_resolved:
        meta["pixel_frames"] = str(families.pixel_frames(samples.shape[2], spec))
    return meta


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
                "ZeroCopyLatentHandoff. noise_mask is never kept."),
            inputs=[
                io.Latent.Input("samples", tooltip="The latent to capture, usually a KSampler output."),
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
        tensor = samples["samples"]
        if comfy_adapter.is_nested(tensor):
            raise ValueError("ZeroCopyLatentStore: this latent has several streams (audio-video, "
                             "e.g. LTX-2 or MiniMax H3); this version stores image and video latents "
                             "only. Separate the video stream first (LTXVSeparateAVLatent).")
        if tensor.dim() not in (4, 5):
            raise ValueError(f"ZeroCopyLatentStore: samples of shape {list(tensor.shape)} are neither "
                             "an image latent [B,C,H,W] nor a video latent [B,C,T,H,W]")
        meta = describe_family(model, tensor)
        meta.update({"dtype": str(tensor.dtype).replace("torch.", ""),
                     "shape": "x".join(str(d) for d in tensor.shape),
                     "created_unix": f"{time.time():.3f}", "source": "ZeroCopyLatentStore"})
        dropped = sorted(k for k in samples if k != "samples")
        if dropped:
            meta["keys_not_kept"] = ",".join(dropped)
        store = runtime.store()
        generation = store.put(buffer_tag, {"latent_tensor": tensor}, meta, spill=True)
        shot = store.get(buffer_tag, generation)
        digest = shot.info["latent_tensor"].digest
        log.info("stored tag %r generation %d: %s %s, %s%s", buffer_tag, generation, meta["family"],
                 list(tensor.shape), digest, f" (not kept: {meta['keys_not_kept']})" if dropped else "")
        token = {"tag": buffer_tag, "generation": generation, "digest": digest}
        return io.NodeOutput(samples, token)
