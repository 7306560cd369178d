"""ZeroCopyLatentHandoff: build the next shot's conditioning and latent from
the stored tail, in latent space, with no VAE decode/encode.

The flow is the same for every family: resolve the family (model, Store
metadata, or the latent's own shape), choose the adapter (``adapters``),
prepare the tail (``handoff_tail``: chunk alignment, resample, blend, colour
anchor, audio alignment, digests), let the adapter place it at the family's
insertion point, and write the certificate. The opt-in pixel bridge and the
first shot of a film make a fresh one-frame latent instead of a tail.
"""

from __future__ import annotations

import contextlib

import math

import torch
from .api_version import FOLDED, io

from . import (adapters, comfy_calls, cpu_threads, family_resolution, handoff_tail, pixel_bridge,
               prepared_latents, prompt_cache, runtime, ui_events)
from .. import zc_log as log
from .sockets import ContinuityToken
from .tag_inputs import DEFAULT_TAG, store_state, tag_problem, validate_tag
from . import farm_link, film_view
from ..zc_continuity import bundle_layout, families, lineage, shapes, shot as shot_description, streams
from ..zc_continuity.certificate import Certificate
from ..zc_continuity.errors import ContinuityError
from ..zc_continuity import fresh_latents
from ..zc_engine import NotFound, digest_tensor, prefer_huge_pages

MODES = ["zero_copy_latent_only", "blend_with_fallback"]
fresh_latents.set_first_touch_hint(prefer_huge_pages)  # the next shot's latent is filled fresh every hop
ADAPTERS = adapters.COMBO


def prepared_pool():
    """The process's pool of latents filled ahead, registered as fresh_latents' source on first use."""
    global _PREPARED
    if _PREPARED is None:
        _PREPARED = prepared_latents.pool(empty=fresh_latents.empty)
        fresh_latents.set_prepared_source(_PREPARED)
    return _PREPARED


_PREPARED = None


def hop_seam_of(shot) -> dict | None:
    """The seam of the hop that made a stored shot: the engine's record (measured after its put),
    else the one its lineage carries (shots stored before the engine measured it)."""
    return runtime.store().hop_seam(shot.tag, shot.generation) or lineage.seam_of_meta(shot.meta)


def finish(result, certificate: Certificate | None, info: str | None = None, *, first_shot=False):
    """The Handoff's ending, the same for every path: the certificate as text, in the log and to
    the web UI, then the node's outputs."""
    info = certificate.to_text() if info is None else info
    log.info(info.replace("\n", " | "))
    video = comfy_calls.unbind_streams(result.latent["samples"])[0]
    ui_events.notify_handoff(certificate, latent_shape=tuple(video.shape), first_shot=first_shot)
    return io.NodeOutput(result.positive, result.latent, result.negative, info)


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
                "unless the canvas changes, you blend or you use the colour anchor. Families: "
                f"{', '.join(spec.display_name for spec in families.concrete_families())}; "
                "each at its own legal insertion point (adapter), building what the "
                "family's own core node builds with the tail in place of an encoded start image. "
                "Wan I2V pads like WanImageToVideo, with the VAE encoding of mid-gray frames: "
                "encoded once per VAE and canvas, then cached in memory and in the spill folder "
                "(gray_padding/), so later hops and restarts make no VAE call. With no stored "
                "latent for the tag (the first shot) it starts from fallback_first_frame. The info "
                "output is the certificate: digests and whether the tail used is bit-identical."),
            # The ten original inputs first (clip ... blend_ratio); then negative, model and continuity,
            # sockets every example links; the expert rest is folded (FOLDED: advanced=True where this
            # ComfyUI supports it). Names and order never change: saved workflows keep their values.
            inputs=[
                io.Clip.Input("clip",
                              tooltip="Text encoder used to encode the prompt (each prompt is encoded "
                                      "once per text encoder and reused). Without a model connected it "
                                      "also tells the model family."),
                io.Vae.Input("vae", tooltip="The model's VAE. Used to encode fallback_first_frame "
                                            "(first shot, or blend_with_fallback) and, for Wan I2V, the "
                                            "gray padding frames once per canvas (cached, also on disk); "
                                            "never for the tail. Without a model connected it tells the "
                                            "model family."),
                io.String.Input("prompt", multiline=True, default="",
                                tooltip="Prompt of the new shot."),
                io.Int.Input("width", default=832, min=16, max=16384, step=16,
                             tooltip=f"Width of the new shot in pixels: {families.canvas_steps_text()}."),
                io.Int.Input("height", default=480, min=16, max=16384, step=16,
                             tooltip="Height of the new shot in pixels (same multiples as width)."),
                io.Int.Input("length", default=81, min=1, max=16384, step=1,
                             tooltip=f"Pixel frames of the new shot: {families.length_rules_text()}. "
                                     "A wrong value gets the nearest valid ones."),
                io.Image.Input("fallback_first_frame", optional=True,
                               tooltip="Image for the very first shot (no stored latent yet) and for "
                                       "blend_with_fallback."),
                io.String.Input("buffer_tag", default=DEFAULT_TAG,
                                tooltip="The tag the Store of the previous shot wrote (typed, or linked "
                                        "from the String node that names the film)."),
                io.Combo.Input("continuity_mode", options=MODES, default=MODES[0],
                               tooltip="zero_copy_latent_only: use the stored tail as is (the VAE never "
                                       "touches it; Wan I2V's gray padding is encoded once and cached). "
                                       "blend_with_fallback: encode fallback_first_frame and blend it "
                                       "into the first tail frame at blend_ratio."),
                io.Float.Input("blend_ratio", default=0.0, min=0.0, max=1.0, step=0.01,
                               tooltip="blend_with_fallback only: share of the fallback frame "
                                       "(0 = stored tail unchanged, 1 = fallback only)."),
                io.String.Input("negative_prompt", multiline=True, default="", optional=True, **FOLDED,
                                tooltip="Negative prompt, encoded with clip when 'negative' is not connected."),
                io.Conditioning.Input("negative", optional=True,
                                      tooltip="Negative conditioning; overrides negative_prompt."),
                io.Model.Input("model", optional=True,
                               tooltip="The diffusion model of the new shot: picks the family and the "
                                       "adapter (adapter auto). Without it the family the Store recorded "
                                       "is used, else what the latent's shape, the VAE and the text "
                                       "encoder tell together."),
                io.Int.Input("tail_frames", default=1, min=1, max=64, optional=True, **FOLDED,
                             tooltip="Latent frames taken from the end of the stored shot (Wan: each "
                                     "after the first stands for 4 pixel frames). "
                                     f"{families.chunked_tails_text()}."),
                io.Combo.Input("adapter", options=ADAPTERS, default="auto", optional=True, **FOLDED,
                               tooltip="Where the tail goes. auto: the family's own insertion point. "
                                       "temporal_inpaint: first latent frames + noise_mask (any video "
                                       "family, both streams of AV latents). wan_i2v: Wan I2V concat keys. "
                                       "hunyuan_i2v / hunyuan15_i2v: HunyuanVideo I2V. ltx_latent_guide: "
                                       "LTX keyframe guides. minimax_h3_keyframe: H3 keyframe + held "
                                       "streams. flux_kontext_reference: Kontext reference_latents. "
                                       "pixel_bridge: opt-in decode + encode of one frame (lossy)."),
                io.Int.Input("generation", default=0, min=0, max=2**62, optional=True, **FOLDED,
                             tooltip="Which stored generation of the tag to use; 0 = the newest that "
                                     "verifies (a corrupt newest spill file is skipped and said so)."),
                ContinuityToken.Input("continuity", optional=True,
                                      tooltip="Link from ZeroCopyLatentStore in the same graph: runs this "
                                              "node after it and uses exactly its shot."),
                io.Boolean.Input("color_anchor", default=False, optional=True, **FOLDED,
                                 tooltip="Match the handed-off tail's per-channel statistics to the "
                                         "first shot stored under the tag: a guard against colour drift "
                                         "over many hops. Changes the tail (not bit-identical)."),
                io.Vae.Input("bridge_vae", optional=True, **FOLDED,
                             tooltip="pixel_bridge only: the VAE of the stored shot's family, to decode "
                                     "it (defaults to vae)."),
                io.Conditioning.Input("positive", optional=True, **FOLDED,
                                      tooltip="Positive conditioning (e.g. from CLIPTextEncode, which "
                                              "ComfyUI caches); overrides clip and prompt, as "
                                              "'negative' overrides negative_prompt."),
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
        return validate_tag(buffer_tag)

    @classmethod
    def fingerprint_inputs(cls, buffer_tag=DEFAULT_TAG, generation=0, **kwargs):
        # Runs before any node of the prompt: reflect what the store holds now, so a new Store
        # result re-runs this node on the next queue run. ComfyUI passes constants only: a linked
        # tag is None here, so the newest generation of every tag stands in for it.
        try:
            if buffer_tag is None:
                return store_state()
            entry = runtime.store().describe_tag(buffer_tag)  # restores nothing from disk
            farm = farm_link.newer_published(buffer_tag, entry["last_generation"] if entry else 0)
        except Exception:
            return math.nan
        if farm is not None:  # another worker stored a newer shot: this node runs (and fetches it)
            return f"{farm[0]}:{generation}:{farm[1]}"
        if entry is None:
            return "empty"
        newest = entry["last_generation"]
        slot = next((s for s in entry["slots"] if s["generation"] == (generation or newest)), None)
        digest = slot["tensors"][0]["digest"] if slot else "on-disk"
        return f"{newest}:{generation}:{digest}:{film_view.choices_state(buffer_tag)}"

    @classmethod
    def execute(cls, clip=None, vae=None, prompt="", width=832, height=480, length=81,
                buffer_tag=DEFAULT_TAG,
                continuity_mode=MODES[0], blend_ratio=0.0, fallback_first_frame=None,
                negative_prompt="", negative=None, positive=None, model=None, tail_frames=1,
                adapter="auto", generation=0, continuity=None, color_anchor=False,
                bridge_vae=None) -> io.NodeOutput:
        problem = tag_problem(buffer_tag)
        if problem:
            raise ValueError(problem)
        if continuity is not None:
            buffer_tag, generation = continuity["tag"], continuity["generation"]
        prompt_summary = "(positive conditioning connected)" if positive is not None else prompt
        positive, negative = cls.conditioning(clip, prompt, positive, negative_prompt, negative)
        store = runtime.store()
        fallback_notes: list[str] = []
        try:  # verified: the stored bytes are still the ones that were digested
            shot, fallback_notes = film_view.continue_from(store, buffer_tag, generation)
        except NotFound as exc:
            if fallback_first_frame is None:
                raise ContinuityError(
                    f"{exc}. For the first shot of a film connect 'fallback_first_frame'; otherwise "
                    f"run a ZeroCopyLatentStore with tag {buffer_tag!r} first") from None
            with prepared_pool().deferred():
                return cls.first_shot(positive, negative, vae, clip, width, height, length, model,
                                      fallback_first_frame, buffer_tag, adapter, prompt_summary)
        settings = handoff_tail.TailSettings(
            width=width, height=height, length=length, tail_frames=tail_frames, mode=continuity_mode,
            ratio=blend_ratio, image=fallback_first_frame, vae=vae, color_anchor=bool(color_anchor),
            prompt=prompt_summary)
        # the next latent of this canvas is made ready between shots, once this Handoff is done
        with prepared_pool().deferred():
            if adapter == adapters.PIXEL_BRIDGE:
                return cls.bridge_shot(shot, positive, negative, vae, bridge_vae or vae, clip, model,
                                       settings, fallback_notes)
            # copies, fills, digests: small ops, no VAE; no cold thread-pool wake-up for them
            with (cpu_threads.single_threaded() if continuity_mode == MODES[0]
                  else contextlib.nullcontext()):
                return cls.continue_shot(shot, positive, negative, vae, clip, model, adapter,
                                         settings, fallback_notes)

    @staticmethod
    def conditioning(clip, prompt, positive, negative_prompt, negative):
        """Positive and negative conditioning: connected ones win, else the prompts encoded (cached)."""
        if positive is None:
            positive = prompt_cache.encode(clip, prompt or "")
        if negative is None:
            negative = prompt_cache.encode(clip, negative_prompt or "")
        return positive, negative

    @classmethod
    def first_shot(cls, positive, negative, vae, clip, width, height, length, model, image, tag, adapter,
                   prompt=""):
        """No stored latent yet: start from the fallback image, VAE-encoded once. The family comes
        from the model, else from the VAE and the text encoder; never assumed."""
        family = family_resolution.resolve(model, None, vae=vae, clip=clip)
        spec = family.spec
        if adapter == adapters.PIXEL_BRIDGE:
            adapter = adapters.AUTO  # nothing stored to bridge from: the fallback frame is the start
        chosen, why = adapters.choose(adapter, spec, model, None)
        piece = comfy_calls.encode_first_frame(vae, image, width, height).to(torch.float32)
        piece = piece[:, :, :1] if spec.is_video else (piece[:, :, 0] if piece.dim() == 5 else piece)
        latent_format = cls.latent_format(model, spec, None)
        request = adapters.BuildRequest(
            spec=spec, positive=positive, negative=negative, width=width, height=height,
            length=length, batch=piece.shape[0], video=piece, latent_format=latent_format,
            model=model, fresh_first_frame=True, vae=vae, spill_dir=runtime.store().spill_dir,
            start_pixels=comfy_calls.resize_image(image[:1], width, height))
        if spec.is_audio_video:
            request.audio_shape, request.audio_rate = cls.fresh_audio(spec, piece.shape[0], length)
        result = chosen.build(request)
        start = cls.store_start_image(tag, piece, spec, model)
        start_digest = digest_tensor(piece)
        result.latent[lineage.MARKER] = lineage.marker(
            parent_tag=tag, parent_generation=start,
            tail_frames=piece.shape[2] if piece.dim() == 5 else piece.shape[0],  # the whole start image
            tail_digest=start_digest, used_digest=start_digest, adapter=chosen.name, trim=0, prompt=prompt)
        info = "\n".join([f"ZeroCopy handoff: tag {tag!r} holds no latent yet: this first shot "
                          f"starts from fallback_first_frame (VAE-encoded once), adapter {chosen.name}",
                          f"family {spec.name}: from {family.source}",
                          f"the encoded start image is kept as the film's first entry: tag {tag!r} "
                          f"generation {start} (its anchor: ZeroCopyLatentLoad shot 'first')",
                          f"store this shot's output under {tag!r} to continue from it"] +
                         Certificate.core_summary(result.core_node or chosen.core_node, result.differences,
                                                  "the fallback frame encoded alone") +
                         [f"note: {n}" for n in result.notes])
        return finish(result, None, info, first_shot=True)

    @staticmethod
    def store_start_image(tag: str, piece, spec, model) -> int:
        """Keep the encoded start image under the tag, as the root of the film (its anchor)."""
        facts = comfy_calls.model_facts(model)
        described = shot_description.describe_shot([piece], model=facts,
                                                   source="ZeroCopyLatentHandoff (start image)")
        meta = dict(described.meta, kind=film_view.START_IMAGE)
        if described.spec is None:  # the family came from the VAE or the text encoder
            meta.update(shot_description.metadata_for(spec))
        return farm_link.put(runtime.store(), tag, described.tensors, meta)

    @staticmethod
    def fresh_audio(spec, batch: int, length: int):
        """The empty audio stream of a new AV shot when no stored audio gives its rate."""
        layout = spec.audio
        if layout.latents_per_pixel_frame is None or layout.channels is None:
            raise ContinuityError(
                f"{spec.display_name}: the audio stream's size depends on the audio VAE and frame "
                "rate, which only a stored shot gives; start the film with ComfyUI's own nodes "
                "(LTXVEmptyLatentAudio + LTXVConcatAVLatent) and store that shot")
        return streams.fresh_audio_shape(spec, batch, length), layout.latents_per_pixel_frame

    @staticmethod
    def latent_format(model, spec, meta):
        if model is not None:
            return comfy_calls.latent_format_of_model(model)
        name = (meta or {}).get("latent_format") or (spec.latent_format_names[:1] or ("",))[0]
        return comfy_calls.latent_format_by_name(name)

    @classmethod
    def continue_shot(cls, shot, positive, negative, vae, clip, model, adapter, settings, fallback_notes):
        streams_ = bundle_layout.streams_of(shot)
        family = family_resolution.resolve(model, shot.meta, stream_shapes=[s.shape for s in streams_],
                                           vae=vae, clip=clip)
        spec = family.spec
        chosen, why = adapters.choose(adapter, spec, model, shot.meta)
        settings.image_on_canvas = chosen.image_on_canvas
        prepared = handoff_tail.prepare(shot, streams_, spec, settings)
        request = adapters.BuildRequest(
            spec=spec, positive=positive, negative=negative, width=settings.width,
            height=settings.height, length=settings.length, batch=streams_[0].shape[0],
            video=prepared.video, latent_format=cls.latent_format(model, spec, shot.meta), model=model,
            audio=prepared.audio, audio_shape=prepared.audio_shape, audio_rate=prepared.audio_rate,
            meta=dict(shot.meta), vae=vae, spill_dir=runtime.store().spill_dir)
        result = chosen.build(request)
        certificate = Certificate(
            tag=shot.tag, generation=shot.generation, stored_digest=prepared.stored_digest,
            used_digest=prepared.used_digest, adapter=chosen.name, family=spec.name,
            tail_frames=prepared.tail_frames, resampled=prepared.resampled,
            blended=prepared.blended, blend_ratio=settings.ratio if prepared.blended else 0.0,
            overlap_pixel_frames=(shapes.overlap_pixel_frames(prepared.tail_frames, spec)
                                  if spec.is_video else 0),
            adjusted=prepared.adjusted, adjustment=prepared.adjustment,
            streams={"audio": prepared.audio_digests} if prepared.audio_digests else {},
            core_node=result.core_node or chosen.core_node, core_differences=result.differences,
            seam=hop_seam_of(shot),
            notes=fallback_notes
            + [f"stored latent {shot.info[bundle_layout.VIDEO_KEY].digest} verified against its "
               f"digest before use", f"family {spec.name}: from {family.source}",
               f"adapter {chosen.name} ({why}): {chosen.summary}"]
            + prepared.notes + result.notes + [f"caveat: {c}" for c in spec.caveats])
        result.latent[lineage.MARKER] = lineage.marker(
            parent_tag=shot.tag, parent_generation=shot.generation, tail_frames=prepared.tail_frames,
            tail_digest=prepared.stored_digest, used_digest=prepared.used_digest, adapter=chosen.name,
            trim=certificate.overlap_pixel_frames, prompt=settings.prompt,
            audio_digests=prepared.audio_digests, audio_span=prepared.audio_span)
        return finish(result, certificate)

    @classmethod
    def bridge_shot(cls, shot, positive, negative, vae, bridge_vae, clip, model, settings, fallback_notes):
        """Opt-in pixel bridge: decode the stored shot, encode its last frame, build with the target's adapter."""
        streams_ = bundle_layout.streams_of(shot)
        stored = streams_[0]
        family = family_resolution.resolve(model, shot.meta, stream_shapes=[s.shape for s in streams_],
                                           vae=vae, clip=clip, allow_mismatch=True)
        spec = family.spec
        piece, decodes, encodes, notes = pixel_bridge.bridge(
            stored, bridge_vae, vae, settings.width, settings.height, image_target=not spec.is_video)
        if piece.shape[1] != spec.channels:
            raise ContinuityError(
                f"pixel_bridge: vae encodes {piece.shape[1]}-channel latents but {spec.display_name} "
                f"uses {spec.channels}; connect the new shot's VAE to 'vae'")
        stored_family = family_resolution.stored_family(shot.meta, [s.shape for s in streams_])
        same_family = stored_family is not None and stored_family.name == spec.name
        chosen, why = adapters.choose(adapters.AUTO, spec, model, shot.meta if same_family else None)
        request = adapters.BuildRequest(
            spec=spec, positive=positive, negative=negative, width=settings.width,
            height=settings.height, length=settings.length, batch=piece.shape[0], video=piece,
            latent_format=cls.latent_format(model, spec, shot.meta if same_family else None),
            model=model, fresh_first_frame=True, vae=vae, spill_dir=runtime.store().spill_dir)
        if spec.is_audio_video:
            if same_family and len(streams_) > 1:  # size the new audio like the stored shot's
                axis = spec.audio.time_axis
                rate = streams.audio_rate(spec, families.pixel_frames(stored.shape[2], spec),
                                          streams_[1].shape[axis])
                request.audio_rate = rate
                request.audio_shape = streams.audio_target_shape(
                    streams_[1].shape, piece.shape[0], streams.audio_length(settings.length, rate), spec)
            else:
                request.audio_shape, request.audio_rate = cls.fresh_audio(spec, piece.shape[0],
                                                                          settings.length)
            notes.append("pixel_bridge: audio does not cross the bridge; the new audio is generated")
        if settings.color_anchor:
            notes.append("color_anchor: not applied across the pixel bridge (the anchor belongs to "
                         "the stored latent space)")
        result = chosen.build(request)
        certificate = Certificate(
            tag=shot.tag, generation=shot.generation,
            stored_digest=shot.info[bundle_layout.VIDEO_KEY].digest,
            used_digest=digest_tensor(piece), adapter=f"pixel_bridge -> {chosen.name}",
            family=spec.name, tail_frames=1, bridge_decodes=decodes, bridge_encodes=encodes,
            overlap_pixel_frames=1 if spec.is_video else 0,
            core_node=result.core_node or chosen.core_node, core_differences=result.differences,
            seam=hop_seam_of(shot),
            notes=fallback_notes + notes + [f"family {spec.name}: from {family.source}",
                                            f"then adapter {chosen.name} ({why}) with the fresh "
                                            "one-frame latent"] + result.notes)
        last = stored[:, :, -1:] if stored.dim() == 5 else stored[-1:]
        result.latent[lineage.MARKER] = lineage.marker(
            parent_tag=shot.tag, parent_generation=shot.generation, tail_frames=1,
            tail_digest=handoff_tail.piece_digest(shot, stored, last), used_digest=certificate.used_digest,
            adapter=certificate.adapter, trim=certificate.overlap_pixel_frames, prompt=settings.prompt)
        return finish(result, certificate)
