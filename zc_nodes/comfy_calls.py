"""Every call into ComfyUI's internals lives here, so the continuity logic
(zc_continuity) stays pure and the rest of the pack survives ComfyUI changes.
Capabilities are detected by feature, not by version string."""

from __future__ import annotations

import weakref

import torch


def intermediate_device() -> torch.device:
    import comfy.model_management
    return comfy.model_management.intermediate_device()


def latent_format_of_model(model):
    """The model's latent format object (None when the patcher does not expose one)."""
    try:
        return model.get_model_object("latent_format")
    except Exception:
        return None


def latent_format_by_name(name: str):
    """Instantiate ComfyUI's latent format class by name (as recorded by the Store)."""
    import comfy.latent_formats
    cls = getattr(comfy.latent_formats, name, None)
    return cls() if isinstance(cls, type) else None


_EMPTY_LATENT_KEYS: dict[str, dict] = {}


def empty_latent_keys(node: str) -> dict:
    """The keys besides ``samples`` that this ComfyUI's empty-latent node ``node`` puts in its
    LATENT (e.g. EmptySD3LatentImage's ``downscale_ratio_spacial``, which later ComfyUI reads to
    fit an empty latent to the model), asked of the node itself once; {} without the node."""
    if node not in _EMPTY_LATENT_KEYS:
        keys: dict = {}
        try:
            import nodes
            cls = nodes.NODE_CLASS_MAPPINGS.get(node)
            if cls is not None:
                if hasattr(cls, "FUNCTION"):
                    out = getattr(cls(), cls.FUNCTION)(width=16, height=16, batch_size=1)
                else:
                    out = cls.execute(width=16, height=16, batch_size=1)
                    out = out.args if hasattr(out, "args") else out
                keys = {k: v for k, v in out[0].items() if k != "samples" and not isinstance(v, torch.Tensor)}
        except Exception:  # noqa: BLE001 - without the node's answer the latent holds samples only
            keys = {}
        _EMPTY_LATENT_KEYS[node] = keys
    return dict(_EMPTY_LATENT_KEYS[node])


# process_out(0) per latent format object (a model keeps one for its life) and channel count
_EMPTY_FILLS: "weakref.WeakKeyDictionary[object, dict[int, torch.Tensor]]" = weakref.WeakKeyDictionary()


def empty_fill(latent_format, channels: int) -> torch.Tensor:
    """The raw-space value of an empty frame per channel: process_out(0).

    ComfyUI normalises a latent that is not all zeros with process_in, so empty
    frames next to real ones must hold process_out(0), as core nodes do. It is computed once
    per format object and a copy handed out."""
    if latent_format is None:
        return torch.zeros(channels)
    try:
        per_format = _EMPTY_FILLS.setdefault(latent_format, {})
    except TypeError:  # not weakly referenceable: computed every time
        per_format = {}
    known = per_format.get(channels)
    if known is None:
        zeros = torch.zeros(1, channels, 1, 1, 1)
        try:
            out = latent_format.process_out(zeros)
        except Exception:
            out = latent_format.process_out(zeros[:, :, 0])
        known = out.reshape(channels, -1)[:, 0].to(device="cpu", dtype=torch.float32).clone()
        per_format[channels] = known
    return known.clone()


def is_wan_i2v(model) -> bool:
    """Wan 2.1 image-to-video models take the image through concat conditioning."""
    base = getattr(model, "model", None)
    if getattr(base, "image_to_video", False):
        return True
    try:
        in_dim = base.diffusion_model.patch_embedding.weight.shape[1]
        out_dim = base.diffusion_model.head.head.weight.shape[0] // 4
        return in_dim > out_dim
    except Exception:
        return False


def latent_format_facts(latent_format) -> tuple[str | None, tuple[int, int, int] | None]:
    """A latent format's class name, and for a 3-D format its (channels, spatial ratio, temporal
    ratio) where it exposes them (so a format this pack has no family for can still be handed off)."""
    if latent_format is None:
        return None, None
    values = tuple(getattr(latent_format, name, None) for name in
                   ("latent_channels", "spacial_downscale_ratio", "temporal_downscale_ratio"))
    geometry = values if getattr(latent_format, "latent_dimensions", 2) == 3 and all(
        isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in values) else None
    return type(latent_format).__name__, geometry


# model_facts per model patcher, with the base model it was read from (facts come from the base
# model's class, latent format and weight shapes, which do not change while it lives)
_FACTS: "weakref.WeakKeyDictionary[object, tuple]" = weakref.WeakKeyDictionary()


def model_facts(model):
    """What the Store records about a connected diffusion model (``zc_continuity.shot.ModelFacts``):
    its latent format, identity and variant; None without a model. Read once per patcher and
    base model."""
    if model is None:
        return None
    base = getattr(model, "model", None)
    try:
        known = _FACTS.get(model)
    except TypeError:  # not weakly referenceable
        return _read_model_facts(model)
    if known is not None and known[0] is base:
        return known[1]
    facts = _read_model_facts(model)
    _FACTS[model] = (base, facts)
    return facts


def _read_model_facts(model):
    from ..zc_continuity.shot import ModelFacts

    name, geometry = latent_format_facts(latent_format_of_model(model))
    facts = ModelFacts(latent_format=name, identity=model_identity(model), generic_geometry=geometry)
    spec = facts.family()
    variant = model_variant(spec, model) if spec is not None else None
    return ModelFacts(name, facts.identity, variant, geometry) if variant else facts


def model_identity(model) -> str:
    """A short description of a model for certificates and errors."""
    base = getattr(model, "model", None)
    return type(base).__name__ if base is not None else type(model).__name__


def encode_prompt(clip, text: str):
    """CONDITIONING for text, the way CLIPTextEncode builds it."""
    if clip is None:
        raise ValueError("a CLIP/text encoder input is required to encode the prompt; connect the "
                         "model's text encoder to 'clip'")
    tokens = clip.tokenize(text)
    return clip.encode_from_tokens_scheduled(tokens)


def conditioning_with(conditioning, values: dict, append: bool = False):
    """A copy of conditioning with keys set on every entry (node_helpers semantics);
    with append, list values are appended to an existing list (ReferenceLatent)."""
    import node_helpers
    return node_helpers.conditioning_set_values(conditioning, values, append=append)


def resize_image(image: torch.Tensor, width: int, height: int) -> torch.Tensor:
    """An IMAGE batch [N,H,W,C] resized to the canvas like core I2V nodes do."""
    import comfy.utils
    return comfy.utils.common_upscale(image.movedim(-1, 1), width, height, "bilinear",
                                      "center").movedim(1, -1)


def encode_first_frame(vae, image: torch.Tensor, width: int, height: int) -> torch.Tensor:
    """Encode one pixel frame (the first of image) as a one-frame latent."""
    frame = resize_image(image[:1], width, height)
    return vae.encode(frame[:, :, :, :3])


def is_nested(samples) -> bool:
    return bool(getattr(samples, "is_nested", False))


def unbind_streams(samples) -> list[torch.Tensor]:
    """The streams of a LATENT's samples, video first: [samples] for a plain tensor.

    The one place a LATENT's samples are opened: every ``.dim()``/``.shape`` in the pack runs on
    the streams this returns, never on the samples object (an audio-video NestedTensor has
    neither ``dim`` nor a torch ``shape``)."""
    if is_nested(samples):
        unbind = getattr(samples, "unbind", None)
        if not callable(unbind):
            raise TypeError(f"the latent's samples are a nested {type(samples).__name__} without unbind(); "
                            f"{_nested_off() or 'this audio-video latent cannot be opened here'}")
        streams = list(unbind())
        if not streams or not all(isinstance(t, torch.Tensor) and not getattr(t, "is_nested", False)
                                  for t in streams):
            raise TypeError(f"the latent's nested samples unbind to {[type(t).__name__ for t in streams]}, "
                            "not plain tensors (video first, then audio)")
        return streams
    return [samples]


def _nested_off() -> str:
    from . import self_check
    return self_check.refusal("nested_tensor")


def nested(streams):
    """Streams joined the way ComfyUI's AV nodes join them (a NestedTensor), or the one tensor."""
    streams = list(streams)
    if len(streams) == 1:
        return streams[0]
    off = _nested_off()
    if off:  # the startup self-check: ComfyUI's NestedTensor does not meet the contract here
        raise ValueError(off)
    import comfy.nested_tensor
    return comfy.nested_tensor.NestedTensor(streams)


def hunyuan_concat_i2v(model) -> bool:
    """HunyuanVideo 1.0 v1 I2V checkpoints (33 input channels) take the image through concat keys."""
    base = getattr(model, "model", None)
    return "concat_image" in tuple(getattr(base, "concat_keys", ()) or ())


def hunyuan15_text_to_video(model) -> bool:
    """HunyuanVideo 1.5 models whose input takes the noise alone, no image latent and mask next to
    it (False where the weights do not say: such a model is taken to have them)."""
    base = getattr(model, "model", None)
    try:
        in_ch = base.diffusion_model.img_in.proj.weight.shape[1]
        return in_ch <= base.latent_format.latent_channels + 1
    except Exception:
        return False


MODEL_PROBES = {
    "wan_i2v": is_wan_i2v,
    "hunyuan_v1_concat": hunyuan_concat_i2v,
    "hunyuan15_t2v": hunyuan15_text_to_video,
}
"""The checks the family catalog's model variants name (``ModelVariant.probe``), by that name:
each says whether a connected model is of the variant."""


def model_variant(spec, model) -> str | None:
    """What the Store records about a model beyond its family, for a later Handoff without it:
    the first of the family's variants whose probe the model passes."""
    if model is None:
        return None
    for variant in spec.variants:
        if MODEL_PROBES[variant.probe](model):
            return variant.name
    return None


def ltx_append_guide(positive, negative, samples, noise_mask, guide, frame_idx, strength,
                     scale_factors):
    """Append guide latents the way core's LTXVAddGuide does (keyframe_idxs on both
    conditionings, latents and mask extended along T), using core's own code."""
    try:
        from comfy_extras.nodes_lt import LTXVAddGuide
        append = LTXVAddGuide.append_keyframe
    except (ImportError, AttributeError) as exc:
        raise ValueError("adapter 'ltx_latent_guide' needs ComfyUI's LTXVAddGuide.append_keyframe "
                         "(comfy_extras/nodes_lt.py), which this ComfyUI lacks; use adapter "
                         "'temporal_inpaint'") from exc
    positive, negative, samples, noise_mask = append(
        positive, negative, frame_idx, samples, noise_mask, guide, strength, tuple(scale_factors))
    try:  # per-guide attention bookkeeping that LTXVAddGuide adds and LTXVCropGuides clears
        from comfy_extras.nodes_lt import _append_guide_attention_entry
        positive, negative = _append_guide_attention_entry(
            positive, negative, guide.shape[2] * guide.shape[3] * guide.shape[4],
            list(guide.shape[2:]), strength=strength)
    except ImportError:
        pass
    return positive, negative, samples, noise_mask


def minimax_clip_keyframes_supported() -> bool:
    """Whether this ComfyUI's MiniMax H3 accepts multi-frame keyframes with audio.

    ComfyUI v0.33.0 packs one latent frame per keyframe; later upstream adds
    MiniMaxH3AddGuide (clip guides with audio), whose presence is the feature."""
    try:
        import nodes
        return "MiniMaxH3AddGuide" in nodes.NODE_CLASS_MAPPINGS
    except Exception:
        return False


def minimax_kept_rows_hold() -> str:
    """How this ComfyUI's MiniMax H3 treats latent rows a noise mask keeps, for certificates.

    ComfyUI v0.33.0 has no per-row timesteps for H3: kept rows are re-noised each step by the
    sampler's inpainting and restored at the end. Later upstream (the feature:
    ``MiniMaxH3._denoise_mask_conds``) runs kept rows at the conditioning timestep and injects them
    at conditioning strength, so they stay nearly clean throughout."""
    try:
        import comfy.model_base
        per_row = hasattr(getattr(comfy.model_base, "MiniMaxH3", None), "_denoise_mask_conds")
    except Exception:  # noqa: BLE001 - unknown: say the conservative thing
        per_row = False
    if per_row:
        return ("this ComfyUI's H3 runs the kept video and audio rows at the conditioning timestep "
                "(per-row timesteps from the noise mask), so they stay nearly clean")
    return ("this ComfyUI's H3 has no per-row timesteps: kept video and audio are re-noised each "
            "step and restored at the end")


def vae_decode(vae, samples: torch.Tensor) -> torch.Tensor:
    """Pixels [N, H, W, C] of a latent, as VAEDecode returns them (video frames flattened)."""
    images = vae.decode(samples)
    if images.ndim == 5:  # [B, T, H, W, C] from video VAEs
        images = images.reshape(-1, *images.shape[-3:])
    return images


def audio_vae_decode(audio_vae, latent: torch.Tensor) -> tuple[torch.Tensor, int]:
    """(waveform [B, channels, samples], sample rate) of an audio latent, as core decodes it: LTX-2's
    audio VAE as LTXVAudioVAEDecode does, a VAE with an audio decoder of its own (MiniMax H3's) as
    VAE Decode Audio does (comfy_extras.nodes_audio.vae_decode_audio)."""
    rate = getattr(getattr(audio_vae, "first_stage_model", None), "output_sample_rate", None)
    if rate is not None and hasattr(audio_vae, "decode"):
        return audio_vae.decode(latent).movedim(-1, 1).to(latent.device), int(rate)
    if getattr(audio_vae, "audio_sample_rate", None) is not None and hasattr(audio_vae, "decode"):
        try:
            from comfy_extras.nodes_audio import vae_decode_audio
        except ImportError:
            raise TypeError("this ComfyUI has no VAE Decode Audio function (comfy_extras.nodes_audio."
                            "vae_decode_audio) to decode this audio VAE's latents; update ComfyUI") from None
        audio = vae_decode_audio(audio_vae, {"samples": latent})
        return audio["waveform"].to(latent.device), int(audio["sample_rate"])
    raise TypeError(f"{type(audio_vae).__name__} is not an audio VAE ComfyUI can decode (no decode / output_sample_rate "
                    "/ audio_sample_rate); connect the film's audio VAE (LTX-2's, or MiniMax H3's)")


class _NoProgress:
    def update(self, value: int) -> None:
        pass


def progress_bar(total: int):
    """ComfyUI's progress bar for the running node (the UI shows it), or one that does nothing
    outside a prompt."""
    try:
        import comfy.utils
        return comfy.utils.ProgressBar(total)
    except Exception:
        return _NoProgress()


def _qualified_classes(*objects) -> tuple[str, ...]:
    """``module.Class`` of every class in the MRO of each object (None skipped), in order."""
    names: list[str] = []
    for obj in objects:
        if obj is None:
            continue
        for cls in type(obj).__mro__:
            name = f"{cls.__module__}.{cls.__qualname__}"
            if name not in names and cls is not object:
                names.append(name)
    return tuple(names)


def _int_or_none(value) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def vae_evidence(vae):
    """What a ComfyUI VAE object says about its latent space (``zc_continuity.family_clues``); None
    without a VAE. Read by feature: the first-stage model and its encoder
    (their classes), ``latent_channels``, ``latent_dim`` and the compression ratios
    (``downscale_index_formula`` for video VAEs, ``downscale_ratio`` for image VAEs)."""
    from ..zc_continuity.family_clues import PartEvidence

    if vae is None:
        return None
    stage = getattr(vae, "first_stage_model", None)
    if stage is None:  # not ComfyUI's VAE class: its name is all it tells
        return PartEvidence(kind="VAE", label=type(vae).__name__)
    dims = _int_or_none(getattr(vae, "latent_dim", None))
    temporal = spatial = None
    formula = getattr(vae, "downscale_index_formula", None)
    if isinstance(formula, tuple) and len(formula) == 3:
        temporal, spatial = _int_or_none(formula[0]), _int_or_none(formula[-1])
    elif dims == 2:
        spatial = _int_or_none(getattr(vae, "downscale_ratio", None))
    declared = getattr(stage, "latent_format", None)
    return PartEvidence(
        kind="VAE", label=type(stage).__name__,
        classes=_qualified_classes(stage, getattr(stage, "encoder", None)),
        channels=_int_or_none(getattr(vae, "latent_channels", None)), latent_dims=dims,
        temporal_ratio=temporal, spatial_ratio=spatial,
        latent_format=declared.__name__ if isinstance(declared, type) else
        (type(declared).__name__ if declared is not None else None))


def text_encoder_evidence(clip):
    """What a ComfyUI CLIP object says about the model family it prompts: the classes of its
    encoder (``cond_stage_model``) and tokenizer, or None for no CLIP."""
    from ..zc_continuity.family_clues import PartEvidence

    if clip is None:
        return None
    encoder, tokenizer = getattr(clip, "cond_stage_model", None), getattr(clip, "tokenizer", None)
    label = type(encoder).__name__ if encoder is not None else type(clip).__name__
    return PartEvidence(kind="CLIP", label=label, classes=_qualified_classes(encoder, tokenizer))


def vae_decode_tiled(vae, samples: torch.Tensor, tile_size: int, overlap: int, temporal_size: int,
                     temporal_overlap: int) -> torch.Tensor:
    """Pixels [N, H, W, C] of a latent through core's own VAEDecodeTiled (spatial tiles, and
    temporal ones for video VAEs), as the node computes them."""
    import nodes

    (images,) = nodes.VAEDecodeTiled().decode(vae, {"samples": samples}, tile_size, overlap, temporal_size,
                                              temporal_overlap)
    return images


def vae_identity(vae) -> str:
    """What a VAE is, for caching what it decodes: a digest of its class and of every weight's name,
    dtype, shape and bytes. Computed once per VAE object (a second of hashing for a Wan VAE)."""
    known = getattr(vae, "_zerocopy_identity", None)
    if known:
        return known
    import hashlib

    model = getattr(vae, "first_stage_model", vae)
    kind = (_qualified_classes(model) or (type(vae).__name__,))[0]
    digest = hashlib.blake2b(digest_size=16)
    digest.update(kind.encode())
    state = model.state_dict() if hasattr(model, "state_dict") else {}
    for name, tensor in sorted(state.items()):
        flat = tensor.detach().reshape(-1).cpu().contiguous()
        digest.update(f"{name}:{flat.dtype}:{list(tensor.shape)};".encode())
        digest.update(flat.view(torch.uint8).numpy().tobytes() if flat.numel() else b"")
    known = f"{kind}:{digest.hexdigest()}"
    try:
        vae._zerocopy_identity = known
    except AttributeError:
        pass
    return known


def output_directory() -> str:
    import folder_paths

    return folder_paths.get_output_directory()


def video_from_file(path: str):
    """ComfyUI's file-backed VIDEO (comfy_api's VideoFromFile): frames are read only when asked."""
    from .api_version import comfy_api

    return comfy_api().InputImpl.VideoFromFile(path)


def preview_video(filename: str, subfolder: str):
    """The UI output that shows a video from the output folder in the node (as core's SaveVideo)."""
    from .api_version import comfy_api, io

    ui = comfy_api().ui
    return ui.PreviewVideo([ui.SavedResult(filename, subfolder, io.FolderType.output)])
