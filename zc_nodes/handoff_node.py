"""ZeroCopyLatentHandoff: build the next shot's conditioning and latent from
the stored tail, in latent space, with no VAE decode/encode."""

from __future__ import annotations

import math

import torch
from comfy_api.latest import io

from . import comfy_adapter, family_resolution, log, runtime
from .sockets import ContinuityToken
from .store_node import DEFAULT_TAG, tag_problem
from ..zc_continuity import assemble, blend, resample, shapes, tail
from ..zc_continuity.certificate import Certificate
from ..zc_continuity.errors import ContinuityError
from ..zc_engine import NotFound, digest_tensor

MODES = ["zero_copy_latent_only", "blend_with_fallback"]
ADAPTERS = ["auto", "temporal_inpaint", "wan_i2v"]


def pick_adapter(requested: str, spec, model, stored_meta: dict | None) -> str:
    if requested != "auto":
        if requested == "wan_i2v" and spec.name != "wan21":
            raise ContinuityError(f"adapter 'wan_i2v' needs a Wan 2.1 / 2.2 A14B model, but the family "
                                  f"is {spec.display_name}; use 'temporal_inpaint' or 'auto'")
        if requested == "wan_i2v" and model is not None and not comfy_adapter.is_wan_i2v(model):
            raise ContinuityError("adapter 'wan_i2v' needs an image-to-video Wan model (36 input "
                                  "channels); the connected model is text-to-video and would ignore "
                                  "the concat conditioning. Use 'temporal_inpaint' or 'auto'")
        return requested
    if spec.name == "wan21":
        i2v = comfy_adapter.is_wan_i2v(model) if model is not None else \
            (stored_meta or {}).get("model_variant") == "i2v"
        if i2v:
            return "wan_i2v"
    return "temporal_inpaint"


class ZeroCopyLatentHandoff(io.ComfyNode):
    @classmethod
    def define_schema(cls):
        return io.Schema(
            node_id="ZeroCopyLatentHandoff",
            display_name="ZeroCopy Latent Handoff",
            category="CineFlux/Continuity",
            description=(
                "Builds the next shot's conditioning and latent from the end of the previous shot, "
                "read from the resident store, in latent space: no VAE decode/encode, bit-identical "
                "unless the canvas changes or you blend. With no stored latent for the tag (the "
                "first shot) it starts from fallback_first_frame. The info output is the "
                "certificate: digests and whether the tail used is bit-identical."),
            inputs=[
                io.Clip.Input("clip", tooltip="Text encoder used to encode the prompt."),
                io.Vae.Input("vae", tooltip="The model's VAE. Only used to encode fallback_first_frame "
                                            "(first shot, or blend_with_fallback); never for the tail."),
                io.String.Input("prompt", multiline=True, default="",
                                tooltip="Prompt of the new shot."),
                io.Int.Input("width", default=832, min=16, max=16384, step=16,
                             tooltip="Width of the new shot in pixels (Wan: a multiple of 16)."),
                io.Int.Input("height", default=480, min=16, max=16384, step=16,
                             tooltip="Height of the new shot in pixels (Wan: a multiple of 16)."),
                io.Int.Input("length", default=81, min=1, max=16384, step=4,
                             tooltip="Pixel frames of the new shot (Wan: 4k+1, e.g. 81)."),
                io.Image.Input("fallback_first_frame", optional=True,
                               tooltip="Image for the very first shot (no stored latent yet) and for "
                                       "blend_with_fallback."),
                io.String.Input("buffer_tag", default=DEFAULT_TAG,
                                tooltip="The tag the Store of the previous shot wrote."),
                io.Combo.Input("continuity_mode", options=MODES, default=MODES[0],
                               tooltip="zero_copy_latent_only: use the stored tail as is (never calls the "
                                       "VAE). blend_with_fallback: encode fallback_first_frame and blend it "
                                       "into the first tail frame at blend_ratio."),
                io.Float.Input("blend_ratio", default=0.0, min=0.0, max=1.0, step=0.01,
                               tooltip="blend_with_fallback only: share of the fallback frame "
                                       "(0 = stored tail unchanged, 1 = fallback only)."),
                io.String.Input("negative_prompt", multiline=True, default="", optional=True,
                                tooltip="Negative prompt, encoded with clip when 'negative' is not connected."),
                io.Conditioning.Input("negative", optional=True,
                                      tooltip="Negative conditioning; overrides negative_prompt."),
                io.Model.Input("model", optional=True,
                               tooltip="The diffusion model of the new shot: picks the family and, with "
                                       "adapter auto, I2V concat for Wan I2V models. Without it the family "
                                       "the Store recorded is used."),
                io.Int.Input("tail_frames", default=1, min=1, max=64, optional=True,
                             tooltip="Latent frames taken from the end of the stored shot (Wan: each "
                                     "after the first stands for 4 pixel frames)."),
                io.Combo.Input("adapter", options=ADAPTERS, default="auto", optional=True,
                               tooltip="Where the tail goes. temporal_inpaint: into the first latent frames "
                                       "with a noise_mask that keeps them (any video model). wan_i2v: "
                                       "concat_latent_image/concat_mask conditioning (Wan 2.1 I2V). auto: "
                                       "wan_i2v for Wan I2V models, else temporal_inpaint."),
                io.Int.Input("generation", default=0, min=0, max=2**62, optional=True,
                             tooltip="Which stored generation of the tag to use; 0 = the newest."),
                ContinuityToken.Input("continuity", optional=True,
                                      tooltip="Link from ZeroCopyLatentStore in the same graph: runs this "
                                              "node after it and uses exactly its shot."),
            ],
            outputs=[
                io.Conditioning.Output(display_name="conditioning"),
                io.Latent.Output(display_name="latent"),
                io.Conditioning.Output(display_name="negative"),
                io.String.Output(display_name="info", tooltip="The continuity certificate."),
            ],
        )

    @classmethod
    def validate_inputs(cls, buffer_tag=DEFAULT_TAG):
        # Only buffer_tag in the signature: ComfyUI attributes the message to these inputs.
        return tag_problem(buffer_tag) or True

    @classmethod
    def fingerprint_inputs(cls, buffer_tag=DEFAULT_TAG, generation=0, **kwargs):
        # Runs before any node of the prompt: reflect what the store holds now,
        # so a new Store result re-runs this node on the next queue run.
        try:
            entry = next((t for t in runtime.store().describe()["tags"] if t["tag"] == buffer_tag), None)
        except Exception:
            return math.nan
        if entry is None:
            return "empty"
        newest = entry["last_generation"]
        slot = next((s for s in entry["slots"] if s["generation"] == (generation or newest)), None)
        digest = slot["tensors"][0]["digest"] if slot else "on-disk"
        return f"{newest}:{generation}:{digest}"

    @classmethod
    def execute(cls, clip, vae, prompt, width, height, length, buffer_tag=DEFAULT_TAG,
                continuity_mode=MODES[0], blend_ratio=0.0, fallback_first_frame=None,
                negative_prompt="", negative=None, model=None, tail_frames=1, adapter="auto",
                generation=0, continuity=None) -> io.NodeOutput:
        problem = tag_problem(buffer_tag)
        if problem:
            raise ValueError(problem)
        if continuity is not None:
            buffer_tag, generation = continuity["tag"], continuity["generation"]
        positive = comfy_adapter.encode_prompt(clip, prompt)
        if negative is None:
            negative = comfy_adapter.encode_prompt(clip, negative_prompt or "")
        store = runtime.store()
        try:
            shot = store.get(buffer_tag, generation)
        except NotFound as exc:
            if fallback_first_frame is None:
                raise ContinuityError(
                    f"{exc}. For the first shot of a film connect 'fallback_first_frame'; otherwise "
                    f"run a ZeroCopyLatentStore with tag {buffer_tag!r} first") from None
            return cls.first_shot(positive, negative, vae, width, height, length, model,
                                  fallback_first_frame, buffer_tag, adapter)
        store.verify(shot.tag, shot.generation)  # the stored bytes are still what was digested
        return cls.continue_shot(shot, positive, negative, vae, width, height, length, model,
                                 continuity_mode, blend_ratio, fallback_first_frame, tail_frames,
                                 adapter)

    @classmethod
    def first_shot(cls, positive, negative, vae, width, height, length, model, image, tag, adapter):
        """No stored latent yet: start from the fallback image, VAE-encoded once."""
        spec = family_resolution.resolve(model, {"family": "wan21"} if model is None else None)
        first = comfy_adapter.encode_first_frame(vae, image, width, height).to(torch.float32)
        which = pick_adapter(adapter, spec, model, None)
        latent_format = comfy_adapter.latent_format_of_model(model) if model is not None else \
            comfy_adapter.latent_format_by_name("Wan21")
        positive, latent, negative, notes = cls.assemble(
            spec, which, first[:, :, :1], positive, negative, width, height, length, latent_format,
            first_frame_is_causal=True)
        info = "\n".join([f"ZeroCopy handoff: tag {tag!r} holds no latent yet: this first shot "
                          f"starts from fallback_first_frame (VAE-encoded once), adapter {which}",
                          f"store this shot's output under {tag!r} to continue from it"] +
                         [f"note: {n}" for n in notes])
        log.info(info.replace("\n", " | "))
        return io.NodeOutput(positive, latent, negative, info)

    @classmethod
    def continue_shot(cls, shot, positive, negative, vae, width, height, length, model, mode,
                      ratio, image, tail_frames, adapter):
        stored = shot.tensors["latent_tensor"]
        spec = family_resolution.resolve(model, shot.meta, stored.shape)
        if stored.dim() != 5 or not spec.is_video:
            raise ContinuityError(
                f"tag {shot.tag!r} holds a latent of shape {list(stored.shape)} ({spec.display_name}); "
                "the continuity handoff needs a video latent [B,C,T,H,W] of a video family")
        if stored.shape[1] != spec.channels:
            raise ContinuityError(
                f"channel mismatch: tag {shot.tag!r} holds {stored.shape[1]}-channel latents but "
                f"{spec.display_name} uses {spec.channels}; store and hand off with the same model family")
        target = shapes.target_shape(stored.shape[0], width, height, length, spec)
        which = pick_adapter(adapter, spec, model, shot.meta)

        piece = tail.take_tail(stored, tail_frames)
        stored_digest = digest_tensor(piece)
        used = resample.resample_frames(piece, target[-2], target[-1])
        resampled = used is not piece
        blended = False
        if mode == "blend_with_fallback":
            if image is None:
                raise ContinuityError("continuity_mode blend_with_fallback needs 'fallback_first_frame' "
                                      "connected; connect an image or use zero_copy_latent_only")
            if ratio > 0:
                first = comfy_adapter.encode_first_frame(vae, image, width, height).to(used)
                used = used.clone()
                used[:, :, :1] = blend.blend(used[:, :, :1], first[:, :, :1], ratio)
                blended = True
        used_digest = digest_tensor(used)
        latent_format = comfy_adapter.latent_format_of_model(model) if model is not None else \
            comfy_adapter.latent_format_by_name(shot.meta.get("latent_format", ""))
        positive, latent, negative, notes = cls.assemble(
            spec, which, used, positive, negative, width, height, length, latent_format)
        certificate = Certificate(
            tag=shot.tag, generation=shot.generation, stored_digest=stored_digest,
            used_digest=used_digest, adapter=which, family=spec.name, tail_frames=used.shape[2],
            resampled=resampled, blended=blended, blend_ratio=ratio if blended else 0.0,
            overlap_pixel_frames=shapes.overlap_pixel_frames(used.shape[2], spec),
            notes=[f"stored latent {shot.info['latent_tensor'].digest} verified against its digest "
                   "before use"] + notes)
        info = certificate.to_text()
        log.info(info.replace("\n", " | "))
        return io.NodeOutput(positive, latent, negative, info)

    @staticmethod
    def assemble(spec, which, piece, positive, negative, width, height, length, latent_format,
                 first_frame_is_causal=False):
        """Place piece (latent frames at the target canvas) at the adapter's insertion point."""
        target = shapes.target_shape(piece.shape[0], width, height, length, spec)
        piece = resample.resample_frames(piece, target[-2], target[-1])
        fill = comfy_adapter.empty_fill(latent_format, spec.channels)
        notes = []
        if which == "wan_i2v":
            result = assemble.wan_i2v_concat(target, piece, fill)
            values = result.conditioning_values()
            positive = comfy_adapter.conditioning_with(positive, values)
            negative = comfy_adapter.conditioning_with(negative, values)
            latent = result.latent_dict()
            notes.append("padding frames hold the latent format's empty value (process_out(0)), "
                         "not a VAE encoding of gray frames, which would need the VAE")
        else:
            latent = assemble.temporal_inpaint(target, piece, fill).latent_dict()
            if not first_frame_is_causal:
                notes.append("temporal_inpaint keeps the tail frames through noise_mask; Wan 2.1 "
                              "re-noises kept frames at each step, so the hold on them is soft")
        return positive, latent, negative, notes
