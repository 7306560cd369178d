"""Model families: the latent-space facts the handoff needs, one frozen record per family.

A stored tail can only continue a shot of the same latent space, and every size
the Handoff computes (latent frames, latent height/width, channel count) follows
from the family. ComfyUI does not name families; it names *latent format
classes* (``type(model.get_model_object("latent_format")).__name__``), so each
spec lists the class names that map to it. The map is by exact class name,
never by ``isinstance``: ``Wan22`` subclasses ``Wan21`` in ComfyUI but is a
different latent space (48 channels, 16x).

This module is the catalog: every family the pack knows is one ``FamilySpec``
row below, with its latent layout, its streams, its legal insertion points (the
Handoff's adapters, by name) and what ``adapter=auto`` picks, including the model
variants that pick another insertion point and the probe that tells them apart.
The node layer derives from it which families each adapter serves and the
``adapter`` options. Adding a family is its row here plus, if none of the
existing insertion points fits, its adapter file in ``zc_nodes/adapters/``
(docs/families.md, "Adding a family").
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass, field
from fractions import Fraction

from .errors import ContinuityError

ADAPTER_TEMPORAL_INPAINT = "temporal_inpaint"
"""Tail latents written into ``samples[:, :, :k]`` with ``noise_mask`` 0 there (assemble.temporal_inpaint)."""

ADAPTER_WAN_I2V = "wan_i2v"
"""Tail latents as ``concat_latent_image`` + ``concat_mask`` conditioning (assemble.wan_i2v_concat)."""

ADAPTER_HUNYUAN_I2V = "hunyuan_i2v"
"""HunyuanVideo 1.0 I2V: v2 replace (samples + noise_mask + guiding_frame_index) or v1 concat (hunyuan.py)."""

ADAPTER_HUNYUAN15_I2V = "hunyuan15_i2v"
"""HunyuanVideo 1.5 I2V: ``concat_latent_image`` (zero padding) + ``concat_mask`` (hunyuan.py)."""

ADAPTER_LTX_GUIDE = "ltx_latent_guide"
"""LTX-Video / LTX-2: tail latents appended as keyframe guides with ``keyframe_idxs`` (ltx.py)."""

ADAPTER_MINIMAX_KEYFRAME = "minimax_h3_keyframe"
"""MiniMax H3: a ``minimax_keyframes`` entry plus both streams' tails held by a nested mask (minimax.py)."""

ADAPTER_FLUX_IMG2IMG = "flux_img2img"
"""FLUX.1 Dev / Schnell: the stored image latent as the new latent, img2img (img2img.py)."""

ADAPTER_FLUX_KONTEXT = "flux_kontext_reference"
"""FLUX.1 Kontext: the stored image latent as a ``reference_latents`` entry (kontext.py)."""

ADAPTER_PIXEL_BRIDGE = "pixel_bridge"
"""Opt-in: decode one pixel frame of the stored shot and encode it for the new one (lossy, counted).
Not an insertion point: no family lists it; the target family's own adapter builds with the frame."""

VARIANT_WAN_I2V = "i2v"
"""A Wan model with image input channels (2.1 I2V, 2.2 A14B I2V), as the Store records it."""

VARIANT_HUNYUAN_V1_CONCAT = "i2v_concat"
"""A HunyuanVideo 1.0 v1 image-to-video checkpoint (33 input channels, concat keys)."""

VARIANT_HUNYUAN15_T2V = "t2v"
"""A HunyuanVideo 1.5 model without image input channels."""


@dataclass(frozen=True)
class AutoChoice:
    """What ``adapter=auto`` picks (an adapter name) and why, in the certificate's words."""

    adapter: str
    why: str


ANY_VIDEO_AUTO = AutoChoice(ADAPTER_TEMPORAL_INPAINT, "video latent inpainting (any video family)")
"""The choice of a family that names no other: inpainting, which every video family takes."""


@dataclass(frozen=True)
class ModelVariant:
    """A kind of model inside a family whose tail goes to another insertion point.

    ``name`` is what the Store records as the shot's ``model_variant``, so a later Handoff
    without the model still knows it. ``probe`` names the check that tells the variant from a
    connected model; the node layer holds the checks (``zc_nodes.comfy_calls.MODEL_PROBES``),
    since they read ComfyUI's model objects. ``auto`` is what ``adapter=auto`` picks for it.
    """

    name: str
    probe: str
    auto: AutoChoice


@dataclass(frozen=True)
class InpaintNotes:
    """What the ``temporal_inpaint`` adapter tells about a family in its certificate.

    ``hold`` is how the family's model holds the kept frames (its note; empty: none), unless
    ``hold_check`` names the node layer's check that words it, where it depends on the ComfyUI
    version (the adapter's ``HOLD_CHECKS`` holds the checks, since they read ComfyUI). ``core_node``
    names the core node temporal inpainting reproduces for the family (empty: none does), and
    ``core_differences`` what differs from it besides the causal first frame, one line each.
    """

    hold: str = ""
    hold_check: str = ""
    core_node: str = ""
    core_differences: tuple[str, ...] = ()


@dataclass(frozen=True)
class AudioStreamSpec:
    """The second stream of an audio-video latent (ComfyUI NestedTensor stream 1).

    ``rank`` is the tensor's number of dimensions, ``time_axis`` the axis that
    grows with duration, and ``fixed_dims`` maps axes to the sizes every latent
    of the family has (MiniMax H3: 32 channels, 2 for stereo). Audio and video
    are aligned in time through ``latents_per_pixel_frame``: audio latents per
    video pixel frame, exact where the family fixes the frame rate (H3: 40
    audio latents per second at 24 fps = 5/3), or None where it depends on the
    user's frame rate (LTX-2), in which case the stored shot's own ratio
    (audio length / pixel frames) is used.
    """

    layout: str
    rank: int
    time_axis: int
    fixed_dims: tuple[tuple[int, int], ...] = ()
    latents_per_pixel_frame: Fraction | None = None

    def __post_init__(self) -> None:
        if self.rank < 3 or not 2 <= self.time_axis < self.rank:
            raise ValueError("AudioStreamSpec needs rank >= 3 and a time axis after [B, C]")

    @property
    def channels(self) -> int | None:
        return dict(self.fixed_dims).get(1)


@dataclass(frozen=True)
class LengthRule:
    """How many pixel frames each latent frame of a causal video VAE covers.

    Causal video VAEs encode the first latent from a single pixel frame and each
    later latent from ``temporal_ratio`` frames; some (MiniMax H3) restart that
    pattern every few latents. The rule is written as the pixel span of each
    latent: ``head_spans`` for the first latents, then ``cycle_spans`` repeated.
    Valid latent counts are ``first_latents + latent_step * k``; the pixel
    lengths that produce them are then ``pixel_offset + pixel_step * k``.

    Wan 2.1: head (1,), cycle (4,)  -> F = 4k+1, T = (F-1)//4+1.
    MiniMax H3: head (), cycle (1, 4, 4, 4, 4), step 5, first 2 -> F = 17k+5, T = 5k+2.
    """

    head_spans: tuple[int, ...]
    cycle_spans: tuple[int, ...]
    latent_step: int = 1
    first_latents: int = 1

    def __post_init__(self) -> None:
        # These are programming errors in a spec, not user errors: plain ValueError.
        if not self.cycle_spans or any(s < 1 for s in self.head_spans + self.cycle_spans):
            raise ValueError("LengthRule spans must be positive and the cycle non-empty")
        if self.first_latents < max(1, len(self.head_spans)):
            raise ValueError("LengthRule.first_latents must cover the head spans")
        if self.latent_step < 1 or self.latent_step % len(self.cycle_spans):
            raise ValueError("LengthRule.latent_step must be a multiple of the cycle length, "
                             "or valid pixel lengths would not be evenly spaced")

    def span(self, index: int) -> int:
        """Pixel frames that latent frame ``index`` decodes to."""
        if index < len(self.head_spans):
            return self.head_spans[index]
        return self.cycle_spans[(index - len(self.head_spans)) % len(self.cycle_spans)]

    def pixels_for_latents(self, count: int) -> int:
        """Pixel frames decoded from the first ``count`` latent frames of a clip."""
        return sum(self.span(i) for i in range(count))

    @functools.cached_property  # the rule is frozen: computed once (every Handoff asks)
    def pixel_offset(self) -> int:
        """The shortest valid pixel length."""
        return self.pixels_for_latents(self.first_latents)

    @functools.cached_property
    def pixel_step(self) -> int:
        """The distance between consecutive valid pixel lengths."""
        return self.pixels_for_latents(self.first_latents + self.latent_step) - self.pixel_offset

    def is_valid_pixel_length(self, length: int) -> bool:
        return length >= self.pixel_offset and (length - self.pixel_offset) % self.pixel_step == 0

    def latents_for_pixels(self, length: int) -> int:
        """Latent frames of a clip of ``length`` pixel frames (``length`` must be valid)."""
        k = (length - self.pixel_offset) // self.pixel_step
        return self.first_latents + self.latent_step * k

    def nearest_valid_pixel_lengths(self, length: int) -> tuple[int | None, int]:
        """The closest valid pixel lengths strictly below and above ``length`` (below may be None)."""
        if length < self.pixel_offset:
            return None, self.pixel_offset
        k = (length - self.pixel_offset) // self.pixel_step
        below = self.pixel_offset + self.pixel_step * k
        if below == length:
            below = below - self.pixel_step if k > 0 else None
        return below, self.pixel_offset + self.pixel_step * (k + 1)

    @property
    def formula(self) -> str:
        """The valid pixel lengths in short, as the Handoff's tooltip lists them: '4k+1'."""
        return f"{self.pixel_step}k+{self.pixel_offset}"

    def describe(self) -> str:
        """The rule as users read it: 'pixel lengths are 4k+1'."""
        if self.pixel_offset == 0:
            return f"pixel lengths are multiples of {self.pixel_step}"
        if self.pixel_step == 1:
            return f"pixel lengths are at least {self.pixel_offset}"
        return f"pixel lengths are {self.formula}"


def causal_length_rule(temporal_ratio: int) -> LengthRule:
    """The common causal rule: first latent from 1 frame, each later one from ``temporal_ratio``."""
    return LengthRule(head_spans=(1,), cycle_spans=(temporal_ratio,))


@dataclass(frozen=True)
class FamilySpec:
    """What the handoff must know about one model family's latent space.

    ``channels``/``spatial_ratio``/``temporal_ratio`` are None only for the
    ``generic_video`` placeholder, which is completed from the stored latent's
    metadata with ``resolved(...)`` before use. ``canvas_multiple`` is the step
    pixel width/height must keep (VAE ratio times the DiT's patch size), and
    ``canvas_reason`` says why, for error messages. ``shares_latent_shape_with``
    names other models whose latents have the same rank and channel count, so a
    shape alone cannot identify this family. ``channels`` is the video stream's
    for audio-video families, whose ``audio`` describes the second stream.
    ``max_batch`` is set where the DiT refuses larger batches (MiniMax H3: 1),
    and ``caveats`` are the family's known limits, repeated in certificates.
    ``adapters`` are the family's legal insertion points, the names of the Handoff's adapters
    (``ADAPTER_*``) that may build for it; ``auto`` and ``variants`` say which one
    ``adapter=auto`` picks.
    """

    name: str
    display_name: str
    channels: int | None
    spatial_ratio: int | None
    temporal_ratio: int | None
    latent_dims: int
    length_rule: LengthRule | None
    canvas_multiple: int | None
    canvas_reason: str
    latent_format_names: tuple[str, ...] = ()
    adapters: tuple[str, ...] = ()
    shares_latent_shape_with: tuple[str, ...] = ()
    audio: AudioStreamSpec | None = None
    max_batch: int | None = None
    caveats: tuple[str, ...] = field(default=())
    vae_classes: tuple[str, ...] = ()
    """Qualified class names (``module.Class``) of the VAE parts that make this latent space in
    ComfyUI (the VAE's first-stage model or its encoder), so a connected VAE names the family."""
    text_encoder_classes: tuple[str, ...] = ()
    """Qualified class names of the text encoder or tokenizer this family's models are prompted
    with (a CLIP's ``cond_stage_model`` and ``tokenizer``, any class in their MRO)."""
    auto: AutoChoice = ANY_VIDEO_AUTO
    """What ``adapter=auto`` picks for a model of no listed variant (or no model and no variant
    recorded); it is one of ``adapters``."""
    variants: tuple[ModelVariant, ...] = ()
    """Model variants that ``adapter=auto`` sends elsewhere, tried in order on a connected model."""
    inpaint: InpaintNotes = InpaintNotes()
    """What ``temporal_inpaint`` notes for the family (video families)."""
    length_example: int | None = None
    """A valid pixel length the family's models commonly run at, which the Handoff's ``length``
    tooltip gives as the example of the family's length rule (None: none of its own)."""

    def auto_choice(self, variant: str | None) -> AutoChoice:
        """What ``adapter=auto`` picks for a model of ``variant`` (None: no variant known)."""
        for known in self.variants:
            if known.name == variant:
                return known.auto
        return self.auto

    @property
    def short_name(self) -> str:
        """The display name without its remark in parentheses ('MiniMax H3 (audio-video)' ->
        'MiniMax H3'), for lists of families."""
        return self.display_name.split(" (")[0]

    @property
    def is_audio_video(self) -> bool:
        return self.audio is not None

    @property
    def is_video(self) -> bool:
        return self.latent_dims == 3

    @property
    def is_resolved(self) -> bool:
        """True when every size can be computed (not an unfilled generic placeholder)."""
        return None not in (self.channels, self.spatial_ratio, self.canvas_multiple) and (
            not self.is_video or self.length_rule is not None)

    def require_resolved(self) -> FamilySpec:
        if not self.is_resolved:
            raise ContinuityError(
                f"family {self.name!r} has no channel count or compression ratios yet; they come "
                "from the stored latent's metadata (store the tail with a known family or pass "
                "channels, spatial_ratio and temporal_ratio)")
        return self

    def resolved(self, channels: int, spatial_ratio: int, temporal_ratio: int) -> FamilySpec:
        """A copy of a generic spec with the stored latent's channels and ratios filled in."""
        for label, value in (("channels", channels), ("spatial_ratio", spatial_ratio),
                             ("temporal_ratio", temporal_ratio)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ContinuityError(f"{label} {value!r} in the stored metadata is not a positive "
                                      f"whole number; re-store the tail so its metadata is complete")
        return dataclasses.replace(
            self, channels=channels, spatial_ratio=spatial_ratio, temporal_ratio=temporal_ratio,
            length_rule=causal_length_rule(temporal_ratio) if self.is_video else None,
            canvas_multiple=spatial_ratio)


def pixel_frames(latent_count: int, spec: FamilySpec) -> int:
    """Pixel frames a clip of ``latent_count`` latent frames decodes to (Wan: 4T-3)."""
    spec.require_resolved()
    if not spec.is_video:
        raise ContinuityError(f"{spec.display_name} is an image family, so it has no pixel frames; "
                              "use a video family for frame-based continuity")
    if isinstance(latent_count, bool) or not isinstance(latent_count, int) or latent_count < 1:
        raise ContinuityError(f"latent frame count {latent_count!r} is not a whole number of 1 or "
                              "more; pass the T of a [B, C, T, H, W] latent")
    return spec.length_rule.pixels_for_latents(latent_count)


_REGISTRY: dict[str, FamilySpec] = {}


def register(spec: FamilySpec) -> FamilySpec:
    """Add a family; names and latent-format class names must stay unique."""
    if spec.name in _REGISTRY:
        raise ValueError(f"family {spec.name!r} is already registered")
    for other in _REGISTRY.values():
        clash = set(other.latent_format_names) & set(spec.latent_format_names)
        if clash:
            raise ValueError(f"latent format {sorted(clash)} already maps to {other.name!r}")
    _REGISTRY[spec.name] = spec
    return spec


def known_families() -> tuple[FamilySpec, ...]:
    return tuple(_REGISTRY.values())


def concrete_families() -> tuple[FamilySpec, ...]:
    """Every family but the generic placeholder, whose sizes come from a stored latent."""
    return tuple(spec for spec in _REGISTRY.values() if spec.is_resolved)


# The catalog summed up in the words of the Handoff's tooltips: which families take which canvas
# step, which length rule, which tail chunks. Families are grouped in catalog order.

def _listed(parts: list[str]) -> str:
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " or " + parts[-1]


def canvas_steps_text() -> str:
    """'a multiple of 16 (Wan 2.1 / 2.2 A14B, ...) or 32 (...)': the canvas step of each family."""
    steps: dict[int, list[str]] = {}
    for spec in concrete_families():
        steps.setdefault(spec.canvas_multiple, []).append(spec.short_name)
    groups = [f"{step} ({', '.join(names)})" for step, names in sorted(steps.items())]
    return "a multiple of " + _listed(groups)


def length_rules_text() -> str:
    """'4k+1 (Wan 2.1 / 2.2 A14B, ..., e.g. 81), ...; ignored for FLUX.1': each video family's
    valid pixel lengths, with the examples the rows give, then the image families."""
    rules: dict[str, list[FamilySpec]] = {}
    for spec in concrete_families():
        if spec.is_video:
            rules.setdefault(spec.length_rule.formula, []).append(spec)
    parts = []
    for formula, specs in rules.items():
        words = [s.short_name for s in specs]
        examples = list(dict.fromkeys(str(s.length_example) for s in specs if s.length_example is not None))
        if examples:
            words.append(f"e.g. {', '.join(examples)}")
        parts.append(f"{formula} ({', '.join(words)})")
    images = [spec.short_name for spec in concrete_families() if not spec.is_video]
    return ", ".join(parts) + (f"; ignored for {', '.join(images)}" if images else "")


def chunked_tails_text() -> str:
    """'MiniMax H3 rounds up to whole VAE chunks (2, 7, 12, ... latents)': the families whose tails
    are whole VAE chunks (``aligned_tail_frames``), or '' where none is."""
    texts = []
    for spec in concrete_families():
        rule = spec.length_rule
        if spec.is_video and (rule.latent_step > 1 or rule.first_latents > 1):
            counts = ", ".join(str(rule.first_latents + rule.latent_step * k) for k in range(3))
            texts.append(f"{spec.short_name} rounds up to whole VAE chunks ({counts}, ... latents)")
    return "; ".join(texts)


def insertion_points() -> tuple[str, ...]:
    """Every adapter name a family lists, in the order the catalog first names them (the order
    of the Handoff's ``adapter`` options: a new family's new adapter comes last)."""
    names: dict[str, None] = {}
    for spec in _REGISTRY.values():
        names.update(dict.fromkeys(spec.adapters))
    return tuple(names)


def families_served_by(adapter: str) -> tuple[str, ...]:
    """The names of the families that list ``adapter`` as an insertion point."""
    return tuple(spec.name for spec in _REGISTRY.values() if adapter in spec.adapters)


def family_by_name(name: str) -> FamilySpec:
    """The registered spec called ``name``; raises with the list of known names."""
    spec = _REGISTRY.get(name)
    if spec is None:
        raise ContinuityError(f"model family {name!r} is unknown; expected one of "
                              f"{', '.join(sorted(_REGISTRY))}")
    return spec


def family_from_latent_format(class_name: str) -> FamilySpec | None:
    """The family whose ComfyUI latent format class is exactly ``class_name``, or None."""
    for spec in _REGISTRY.values():
        if class_name in spec.latent_format_names:
            return spec
    return None


def infer_family_from_latent(shape) -> FamilySpec | None:
    """The family a latent shape identifies without doubt, or None.

    Only a concrete family whose rank and channel count no other model shares
    is returned. A 5D 16-channel latent could be Wan 2.1, HunyuanVideo 1.0 or
    Cosmos, so it gives None: the caller must ask for the model (its latent
    format) or use the family recorded when the tail was stored.
    """
    dims = len(shape) - 2
    if dims not in (2, 3):
        return None
    matches = [s for s in _REGISTRY.values()
               if s.channels is not None and s.latent_dims == dims and s.channels == shape[1]]
    if len(matches) != 1 or matches[0].shares_latent_shape_with:
        return None
    return matches[0]


def audio_stream_matches(shape, audio: AudioStreamSpec) -> bool:
    """True when a tensor of ``shape`` has the rank and fixed sizes of ``audio``."""
    return len(shape) == audio.rank and all(shape[axis] == size for axis, size in audio.fixed_dims)


def infer_family_from_streams(shapes) -> FamilySpec | None:
    """The family the shapes of a latent's streams identify without doubt, or None.

    One stream: as ``infer_family_from_latent``, plus the video stream of an
    audio-video family when its channel count is unique. Two streams (video,
    audio): the audio-video family whose video channels and audio layout both
    match, if exactly one does. More streams are not a known family.
    """
    shapes = [tuple(s) for s in shapes]
    if len(shapes) == 1:
        return infer_family_from_latent(shapes[0])
    if len(shapes) != 2 or len(shapes[0]) != 5:
        return None
    video, audio = shapes
    matches = [s for s in _REGISTRY.values()
               if s.audio is not None and s.channels == video[1] and audio_stream_matches(audio, s.audio)]
    return matches[0] if len(matches) == 1 else None


def aligned_tail_frames(requested: int, spec: FamilySpec) -> int:
    """The smallest tail length >= ``requested`` that the family's VAE chunking allows.

    Causal families (one latent per ``temporal_ratio`` frames after the first)
    accept any tail. A family whose VAE works in chunks (MiniMax H3: 17-frame
    chunks of latents spanning 1,4,4,4,4 frames) only has tails that end on the
    clip's end and start on a chunk start: the valid clip lengths of its length
    rule (H3: 5j+2 latents). Image families take whole images: any count.
    """
    if isinstance(requested, bool) or not isinstance(requested, int) or requested < 1:
        raise ContinuityError(f"tail_frames {requested!r} is not a whole number of 1 or more; "
                              "set tail_frames to 1 or more")
    rule = spec.length_rule
    if not spec.is_video or rule is None or (rule.latent_step == 1 and rule.first_latents <= 1):
        return requested
    if requested <= rule.first_latents:
        return rule.first_latents
    steps = -(-(requested - rule.first_latents) // rule.latent_step)
    return rule.first_latents + steps * rule.latent_step


# The catalog: one row per family, registered in this order (the order of the Handoff's adapter
# options follows it). Each row holds the facts ComfyUI v0.33.0 encodes in comfy/latent_formats.py
# and the family's empty-latent node (channels, compression, valid lengths and canvas steps), the
# classes of its VAE and text encoder, its insertion points and auto choice, and its caveats,
# stated once here and repeated in certificates.

def latent_space(channels: int, spatial_ratio: int, temporal_ratio: int, patch: int, *,
                 length_rule: LengthRule | None = None) -> dict:
    """The latent-space fields of a family's row (``FamilySpec`` keywords), stated once.

    ``patch`` is the DiT's patch size in latents: the canvas step is ``spatial_ratio * patch``
    pixels, and ``canvas_reason`` says so. A ``temporal_ratio`` above 1 makes a video family with
    the common causal rule unless ``length_rule`` gives another; 1 makes an image family.
    """
    video = temporal_ratio > 1
    if patch == 1:
        reason = f"{spatial_ratio} pixels per latent (the DiT's patch is 1x1)"
    else:
        reason = f"{spatial_ratio} pixels per latent, and the DiT patchifies latents {patch}x{patch}"
    if video and length_rule is None:
        length_rule = causal_length_rule(temporal_ratio)
    return {"channels": channels, "spatial_ratio": spatial_ratio, "temporal_ratio": temporal_ratio,
            "latent_dims": 3 if video else 2, "length_rule": length_rule,
            "canvas_multiple": spatial_ratio * patch, "canvas_reason": reason}


WAN_TEXT_ENCODER = ("comfy.text_encoders.wan.WanT5Model", "comfy.text_encoders.wan.WanT5Tokenizer")

CAUSAL_SLOT0 = ("causal first frame: slot 0 of a clip is encoded from one pixel frame, a tail "
                "latent from several; placed at slot 0 it decodes only approximately")

LTX_SHARED = {
    **latent_space(128, 32, 8, patch=1),
    "vae_classes": ("comfy.ldm.lightricks.vae.causal_video_autoencoder.VideoVAE",),  # 0.9 and LTX-2
    "adapters": (ADAPTER_LTX_GUIDE, ADAPTER_TEMPORAL_INPAINT),
    "auto": AutoChoice(ADAPTER_LTX_GUIDE, "LTX latent guides"),
    "length_example": 97,
}
"""What LTX-Video 0.9 and LTX-2's video stream share: the latent space, the VAE, the insertion
points, the example length."""

LTX_GUIDES_STAY = ("the sampled latent still holds the appended guide latents; the Store removes them, "
                   "but {first}crop them (LTXVCropGuides) before decoding")
"""The LTX caveat about appended guides; LTX-2 first separates the streams."""

WAN21 = register(FamilySpec(
    name="wan21",
    display_name="Wan 2.1 / 2.2 A14B",
    **latent_space(16, 8, 4, patch=2),
    latent_format_names=("Wan21",),
    adapters=(ADAPTER_TEMPORAL_INPAINT, ADAPTER_WAN_I2V),
    auto=AutoChoice(ADAPTER_TEMPORAL_INPAINT, "Wan text-to-video model"),
    variants=(ModelVariant(VARIANT_WAN_I2V, probe="wan_i2v",
                           auto=AutoChoice(ADAPTER_WAN_I2V, "Wan image-to-video model (36 input channels)")),),
    shares_latent_shape_with=("HunyuanVideo 1.0", "Cosmos 1.0 CV8x8x8", "SeedVR2", "CogVideoX"),
    vae_classes=("comfy.ldm.wan.vae.WanVAE",),
    text_encoder_classes=WAN_TEXT_ENCODER,
    inpaint=InpaintNotes(hold="Wan 2.1 / A14B re-noises kept frames at each step, so the hold on them is soft"),
    length_example=81,
))

GENERIC_VIDEO = register(FamilySpec(
    name="generic_video",
    display_name="generic video latent",
    channels=None,
    spatial_ratio=None,
    temporal_ratio=None,
    latent_dims=3,
    length_rule=None,
    canvas_multiple=None,
    canvas_reason="one latent per spatial_ratio pixels",
    adapters=(ADAPTER_TEMPORAL_INPAINT,),
))


WAN22_5B = register(FamilySpec(
    name="wan22_5b",
    display_name="Wan 2.2 TI2V 5B",
    **latent_space(48, 16, 4, patch=2),
    latent_format_names=("Wan22",),
    adapters=(ADAPTER_TEMPORAL_INPAINT,),
    vae_classes=("comfy.ldm.wan.vae2_2.WanVAE",),
    text_encoder_classes=WAN_TEXT_ENCODER,
    caveats=(CAUSAL_SLOT0,),
    inpaint=InpaintNotes(hold="Wan 2.2 5B gives kept frames timestep 0 per frame (WAN22.process_timestep), "
                              "so they stay clean while the rest is generated",
                         core_node="Wan22ImageToVideoLatent"),
))

HUNYUAN_VIDEO = register(FamilySpec(
    name="hunyuan_video",
    display_name="HunyuanVideo 1.0",
    **latent_space(16, 8, 4, patch=2),
    latent_format_names=("HunyuanVideo",),
    # ComfyUI builds HunyuanVideo 1.0's VAE as a 3-D AutoencoderKL (16 channels, 4x8x8)
    vae_classes=("comfy.ldm.models.autoencoder.AutoencoderKL",),
    text_encoder_classes=("comfy.text_encoders.hunyuan_video.HunyuanVideoClipModel",
                          "comfy.text_encoders.hunyuan_video.HunyuanVideoTokenizer"),
    adapters=(ADAPTER_HUNYUAN_I2V, ADAPTER_TEMPORAL_INPAINT),
    auto=AutoChoice(ADAPTER_TEMPORAL_INPAINT, "HunyuanVideo 1.0 model that takes no concat image; choose "
                    "adapter hunyuan_i2v for the v2 (replace) I2V checkpoint"),
    variants=(ModelVariant(VARIANT_HUNYUAN_V1_CONCAT, probe="hunyuan_v1_concat",
                           auto=AutoChoice(ADAPTER_HUNYUAN_I2V,
                                           "HunyuanVideo 1.0 v1 (concat) image-to-video checkpoint")),),
    shares_latent_shape_with=("Wan 2.1 / 2.2 A14B", "Cosmos 1.0 CV8x8x8", "SeedVR2", "CogVideoX"),
    caveats=(CAUSAL_SLOT0,
             "a 16-channel video latent looks exactly like Wan 2.1's: store it with the model "
             "connected (or connect the model to the Handoff) so the family is known"),
    inpaint=InpaintNotes(hold="HunyuanVideo keeps the kept frames clean, at the global timestep"),
))

HUNYUAN_VIDEO_15 = register(FamilySpec(
    name="hunyuan_video15",
    display_name="HunyuanVideo 1.5",
    **latent_space(32, 16, 4, patch=1),
    latent_format_names=("HunyuanVideo15",),
    vae_classes=("comfy.ldm.hunyuan_video.vae_refiner.Encoder",),
    # 1.5 shares its Qwen2.5-VL encoder with HunyuanImage; the tokenizer is its own
    text_encoder_classes=("comfy.text_encoders.hunyuan_video.HunyuanVideo15Tokenizer",),
    adapters=(ADAPTER_HUNYUAN15_I2V, ADAPTER_TEMPORAL_INPAINT),
    auto=AutoChoice(ADAPTER_HUNYUAN15_I2V, "HunyuanVideo 1.5 (image channels next to the noise)"),
    variants=(ModelVariant(VARIANT_HUNYUAN15_T2V, probe="hunyuan15_t2v",
                           auto=AutoChoice(ADAPTER_TEMPORAL_INPAINT,
                                           "HunyuanVideo 1.5 model without image input channels")),),
    caveats=(CAUSAL_SLOT0,),
    inpaint=InpaintNotes(hold="HunyuanVideo 1.5 keeps the kept frames clean, at the global timestep"),
))

LTXV = register(FamilySpec(
    name="ltxv",
    display_name="LTX-Video 0.9",
    **LTX_SHARED,
    latent_format_names=("LTXV",),
    text_encoder_classes=("comfy.text_encoders.lt.LTXVT5Tokenizer",),
    shares_latent_shape_with=("LTX-2 video stream",),
    caveats=(CAUSAL_SLOT0, LTX_GUIDES_STAY.format(first="")),
    inpaint=InpaintNotes(hold="LTX gives kept frames per-token timestep 0, so they stay clean",
                         core_node="LTXVImgToVideo (strength 1)",
                         core_differences=("noise_mask is held per latent pixel [B, 1, T, H, W] where "
                                           "LTXVImgToVideo's is per frame [B, 1, T, 1, 1] (same values; "
                                           "the sampler resizes core's to the latent)",)),
))

LTX2 = register(FamilySpec(
    name="ltx2",
    display_name="LTX-2 (audio-video)",
    **LTX_SHARED,
    latent_format_names=("LTXAV",),
    text_encoder_classes=("comfy.text_encoders.lt.LTXAVTEModel", "comfy.text_encoders.lt.LTXAVGemmaTokenizer"),
    shares_latent_shape_with=("LTX-Video 0.9",),
    audio=AudioStreamSpec(layout="[B, C, T, F]", rank=4, time_axis=2),
    caveats=(CAUSAL_SLOT0,
             "audio latents per pixel frame follow the stored shot (same frame rate assumed)",
             LTX_GUIDES_STAY.format(first="separate the streams and ")),
    inpaint=InpaintNotes(hold="LTX-2 gives kept video and audio tokens timestep 0, so they stay clean"),
))

MINIMAX_H3 = register(FamilySpec(
    name="minimax_h3",
    display_name="MiniMax H3 (audio-video)",
    # latent k spans FRAME_PER_TOKEN[k % 5] = (1, 4, 4, 4, 4) pixel frames: F = 17k+5, T = 5k+2
    **latent_space(24, 16, 4, patch=2,
                   length_rule=LengthRule(head_spans=(), cycle_spans=(1, 4, 4, 4, 4), latent_step=5,
                                          first_latents=2)),
    latent_format_names=("MiniMaxH3AV", "MiniMaxH3Video"),
    vae_classes=("comfy.ldm.minimax.vae.MiniMaxH3VideoVAE",),
    text_encoder_classes=("comfy.text_encoders.minimax.MiniMaxH3TEModel",
                          "comfy.text_encoders.minimax.MiniMaxH3Tokenizer"),
    adapters=(ADAPTER_MINIMAX_KEYFRAME, ADAPTER_TEMPORAL_INPAINT),
    auto=AutoChoice(ADAPTER_MINIMAX_KEYFRAME, "MiniMax H3 keyframes"),
    audio=AudioStreamSpec(layout="[B, 32, 2, T]", rank=4, time_axis=3, fixed_dims=((1, 32), (2, 2)),
                          latents_per_pixel_frame=Fraction(40, 24)),
    max_batch=1,
    caveats=("tails are whole 17-frame VAE chunks (5j+2 latents); whether the H3 VAE carries a "
             "cache across chunks is unverified, so a tail equals a stand-alone encode of its "
             "frames only if it does not",
             "how firmly the kept frames hold depends on the ComfyUI version (the adapter's note "
             "says which)"),
    inpaint=InpaintNotes(hold_check="minimax_kept_rows_hold"),
    length_example=124,
))

FLUX = register(FamilySpec(
    name="flux",
    display_name="FLUX.1",
    **latent_space(16, 8, 1, patch=2),
    latent_format_names=("Flux",),
    # the FLUX VAE is a 2-D AutoencodingEngine (16 channels, 8x); SD3's VAE has the same shape
    vae_classes=("comfy.ldm.models.autoencoder.AutoencodingEngine",),
    text_encoder_classes=("comfy.text_encoders.flux.FluxClipModel", "comfy.text_encoders.flux.FluxTokenizer"),
    adapters=(ADAPTER_FLUX_IMG2IMG, ADAPTER_FLUX_KONTEXT),
    auto=AutoChoice(ADAPTER_FLUX_IMG2IMG, "FLUX.1 Dev/Schnell img2img (Kontext loads as the same "
                    "architecture; choose flux_kontext_reference for a Kontext model)"),
    shares_latent_shape_with=("SD3", "Stable Cascade prior"),
    caveats=("image family: the handoff uses the last stored image, whole; only FLUX-VAE latents "
             "(FLUX.1 Dev, Schnell, Kontext, and models sharing the FLUX VAE) continue in latent space",
             "Kontext loads as the same architecture as Dev in ComfyUI, so adapter auto picks img2img; "
             "choose flux_kontext_reference for a Kontext model"),
))
