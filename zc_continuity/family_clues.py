"""Which family a latent belongs to, from every clue the Handoff holds.

A Handoff wired as the README shows it has no ``model`` input: it holds a
VAE and a text encoder (CLIP). Both name a latent space as well as a model
does: a Wan 2.1 VAE (``WanVAE``, 16 channels, 4x8x8) and a HunyuanVideo VAE (a
3-D ``AutoencoderKL`` of the same size) differ in class, and so do their text
encoders. The node layer describes each connected part as ``PartEvidence``
(class names and latent geometry, read by feature from ComfyUI's objects);
this module intersects what each clue allows, in the order the Handoff trusts
them: the stored latent's own shape, then the VAE, then the text encoder.

The answer is one family, or a ContinuityError that says what was tried and
what each clue allowed, so the user knows which input to connect.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .errors import ContinuityError
from .families import FamilySpec, audio_stream_matches, infer_family_from_streams, known_families


@dataclass(frozen=True)
class PartEvidence:
    """What one connected part (a VAE or a text encoder) says about the latent space.

    ``classes`` are the qualified names (``module.Class``) of every class in
    the MRO of the part's pieces (a VAE's first-stage model and encoder; a
    CLIP's encoder and tokenizer). ``channels``, ``latent_dims`` and the
    ratios are the VAE's latent geometry where it exposes them (None when
    unknown); ``latent_format`` is the latent format class a part declares
    itself (ComfyUI's TAEHV previews do).
    """

    kind: str
    label: str
    classes: tuple[str, ...] = ()
    channels: int | None = None
    latent_dims: int | None = None
    temporal_ratio: int | None = None
    spatial_ratio: int | None = None
    latent_format: str | None = None

    def describe(self) -> str:
        geometry = []
        if self.channels is not None:
            geometry.append(f"{self.channels} channels")
        if self.spatial_ratio is not None:
            ratio = f"{self.spatial_ratio}x{self.spatial_ratio}"
            geometry.append(f"{self.temporal_ratio}x{ratio}" if self.temporal_ratio else f"{ratio}")
        return f"{self.label}" + (f" ({', '.join(geometry)})" if geometry else "")


def _geometry_fits(spec: FamilySpec, part: PartEvidence) -> bool:
    if part.channels is not None and spec.channels != part.channels:
        return False
    if part.latent_dims is not None and spec.latent_dims != part.latent_dims:
        return False
    if part.spatial_ratio is not None and spec.spatial_ratio != part.spatial_ratio:
        return False
    if (part.temporal_ratio is not None and spec.is_video
            and (spec.temporal_ratio or 1) != part.temporal_ratio):
        return False
    return True


def families_for_vae(part: PartEvidence) -> list[FamilySpec]:
    """The registered families a VAE encodes for: by the latent format it declares, else by its
    classes and geometry. Empty when the VAE names no family this pack knows."""
    concrete = [s for s in known_families() if s.is_resolved]
    if part.latent_format:
        declared = [s for s in concrete if part.latent_format in s.latent_format_names]
        if declared:
            return [s for s in declared if part.channels is None or s.channels == part.channels]
    classes = set(part.classes)
    return [s for s in concrete if classes & set(s.vae_classes) and _geometry_fits(s, part)]


def families_for_text_encoder(part: PartEvidence) -> list[FamilySpec]:
    """The registered families whose models are prompted with this text encoder (or tokenizer)."""
    classes = set(part.classes)
    return [s for s in known_families() if classes & set(s.text_encoder_classes)]


def families_for_streams(shapes) -> list[FamilySpec]:
    """Every registered family a latent with these stream shapes (video first) could belong to."""
    shapes = [tuple(s) for s in shapes]
    if not shapes:
        return []
    video = shapes[0]
    dims = len(video) - 2
    found = []
    for spec in known_families():
        if not spec.is_resolved or spec.latent_dims != dims or spec.channels != video[1]:
            continue
        if len(shapes) == 2 and (spec.audio is None or not audio_stream_matches(shapes[1], spec.audio)):
            continue
        if len(shapes) > 2:
            continue
        found.append(spec)
    return found


@dataclass
class Inference:
    """The family found (or None) and, for certificates and errors, what each clue said."""

    spec: FamilySpec | None
    source: str = ""
    tried: list[str] = field(default_factory=list)


def _names(specs) -> str:
    return ", ".join(s.display_name for s in specs) if specs else "no family this pack knows"


def infer_family(stream_shapes=None, vae: PartEvidence | None = None,
                 text_encoder: PartEvidence | None = None) -> Inference:
    """The one family that the stored latent's shapes, the VAE and the text encoder all allow.

    Clues are applied in that order, each narrowing the candidates; a clue that
    names no known family is noted and skipped, one that contradicts the clues
    before it raises (a VAE of another latent space is a wiring mistake the user
    must hear about). Returns ``Inference(spec=None)`` when the candidates stay
    ambiguous.
    """
    tried: list[str] = []
    candidates: list[FamilySpec] | None = None
    decided_by = ""
    if stream_shapes:
        candidates = families_for_streams(stream_shapes)
        shape_text = " + ".join(str(list(s)) for s in stream_shapes)
        tried.append(f"the stored latent's shape {shape_text} ({_names(candidates)})")
        # a shape decides alone only where no other model (in or out of this pack) shares it
        if infer_family_from_streams(stream_shapes) is not None:
            decided_by = f"the stored latent's shape {shape_text}"
    for part, lookup in ((vae, families_for_vae), (text_encoder, families_for_text_encoder)):
        if part is None:
            continue
        allowed = lookup(part)
        tried.append(f"the {part.kind} {part.describe()} ({_names(allowed)})")
        if not allowed:
            continue
        narrowed = allowed if candidates is None else [s for s in candidates if s in allowed]
        if not narrowed and candidates:
            raise ContinuityError(
                f"the connected {part.kind} {part.describe()} belongs to {_names(allowed)}, but "
                f"{tried[0] if stream_shapes else 'the clues before it'} allow only "
                f"{_names(candidates)}; connect the {part.kind} of the stored shot's model family "
                "(or connect the diffusion model to 'model')")
        if len(narrowed) == 1 and not decided_by:
            decided_by = f"the {part.kind} {part.describe()}"
        candidates = narrowed
    if candidates is not None and len(candidates) == 1 and decided_by:
        return Inference(candidates[0], decided_by, tried)
    return Inference(None, "", tried)
