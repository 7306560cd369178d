"""What every Handoff adapter receives and returns.

An adapter places prepared tail latents at one family's legal insertion point
and returns the new shot's conditioning and LATENT. Everything before that
(taking the tail, resampling, blending, the colour anchor, digests) is done
once for all adapters by the Handoff; every ComfyUI call goes through
``comfy_calls``, and tensor layouts come from the pure ``zc_continuity``
functions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

import torch

from ...zc_continuity import shapes
from ...zc_continuity.families import FamilySpec, families_served_by


@dataclass
class BuildRequest:
    """The prepared handoff: the new shot's settings and the tail on its canvas.

    ``video`` is [1 or B, C, k, H, W] at the target latent size for video
    families, or the reference image latent [n, C, h, w] for image families.
    ``audio`` is the aligned audio tail of an audio-video shot (None for video
    only). ``fresh_first_frame`` is True when ``video`` is one freshly encoded
    pixel frame (the first shot of a film, or the pixel bridge), a legal
    first-frame latent, rather than continuation latents of a stored shot.
    ``vae`` is the VAE the Handoff received: adapters that pad as core does
    with encoded pixels (Wan I2V's gray frames) encode with it, never the tail.
    ``spill_dir`` is the store's spill folder, where such encodings are cached.
    ``start_pixels`` is the first shot's start image [n, H, W, 3], resized to the canvas, when
    there is one (fallback_first_frame): adapters whose core node encodes more than the start
    image with it (Wan I2V: the gray frames after it) build that encoding exactly as core does.
    """

    spec: FamilySpec
    positive: list
    negative: list
    width: int
    height: int
    length: int
    batch: int
    video: torch.Tensor
    latent_format: object = None
    model: object = None
    audio: torch.Tensor | None = None
    audio_shape: tuple | None = None
    audio_rate: Fraction | None = None
    fresh_first_frame: bool = False
    meta: dict = field(default_factory=dict)
    vae: object = None
    spill_dir: object = None
    start_pixels: torch.Tensor | None = None

    def target(self, length: int | None = None) -> tuple[int, ...]:
        """The new shot's latent shape for this request's family and canvas."""
        return shapes.target_shape(self.batch, self.width, self.height,
                                   self.length if length is None else length, self.spec)

    def audio_note(self) -> str:
        """The certificate note on the audio tail held at the start of an audio-video shot."""
        axis = self.spec.audio.time_axis
        held = 0 if self.audio is None else self.audio.shape[axis]
        return (f"audio: {held} audio latents held at the start of the new shot's "
                f"{self.audio_shape[axis]}")


@dataclass
class BuildResult:
    """What an adapter built. ``differences`` names, one line each, where the conditioning and
    LATENT differ from what ``Adapter.core_node`` builds for the same request (besides the tail
    latents standing in for an encoded start image); the certificate shows them."""

    positive: list
    negative: list
    latent: dict
    notes: list[str] = field(default_factory=list)
    differences: list[str] = field(default_factory=list)
    core_node: str = ""
    """The core node compared with, when it depends on the request (else ``Adapter.core_node``)."""


class Adapter:
    """One insertion point, registered under ``name``: an ``ADAPTER_*`` name of the family catalog
    (``zc_continuity.families``), whose rows say which families it serves."""

    name: str = ""
    summary: str = ""
    core_node: str = ""
    """The core ComfyUI node whose output this adapter reproduces, with the tail in place of an
    encoded start image (docs/families.md, "As core builds it")."""
    image_on_canvas: bool = False
    """Image families: whether the stored image is resampled to the new canvas (img2img) or
    used at its stored size (a Kontext reference)."""

    @property
    def families(self) -> tuple[str, ...]:
        """The names of the families whose catalog row lists this adapter."""
        return families_served_by(self.name)

    def supports(self, spec: FamilySpec) -> bool:
        return self.name in spec.adapters

    def check_model(self, model) -> None:
        """Raise ContinuityError when the connected ``model`` (not None) cannot use what this
        adapter builds, though its family lists the adapter; by default every model can."""

    def build(self, request: BuildRequest) -> BuildResult:  # pragma: no cover - interface
        raise NotImplementedError
