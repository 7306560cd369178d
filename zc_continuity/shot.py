"""What the Store records about a shot, in one pure step.

The Store node hands this module the latent's streams (video first), the
facts it read off the connected model (``ModelFacts``, or None) and the names
of the LATENT's other keys; it gets back a ``ShotDescription``: the streams to
keep (guide latents an LTX Handoff appended are cropped off), the family, and
every metadata entry of the bundle except the colour anchor (which needs the
store). The node then puts it, so a latent travels down the layers once:
node (ComfyUI types) -> this description -> engine.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import torch

from . import families, lineage, ltx, streams
from .bundle_layout import bundle_tensors
from .errors import ContinuityError


@dataclass(frozen=True)
class ModelFacts:
    """What the node layer read off a connected diffusion model.

    ``latent_format`` is the class name of its latent format (None when the
    model exposes none); ``generic_geometry`` the (channels, spatial ratio,
    temporal ratio) of a 3-D latent format this pack has no family for;
    ``identity`` a short name for certificates; ``variant`` what the Store
    records beyond the family (``i2v`` for a Wan image-to-video model, ...).
    """

    latent_format: str | None
    identity: str
    variant: str | None = None
    generic_geometry: tuple[int, int, int] | None = None

    def family(self):
        """The family of this model's latent format, or None when it cannot be known."""
        if self.latent_format is None:
            return None
        spec = families.family_from_latent_format(self.latent_format)
        if spec is None and self.generic_geometry is not None:
            spec = families.family_by_name("generic_video").resolved(*self.generic_geometry)
        return spec


def metadata_for(spec) -> dict[str, str]:
    """What the Store records about a family, so a Handoff without a model can rebuild it."""
    if spec is None:
        return {"family": "unknown"}
    meta = {"family": spec.name}
    if spec.channels is not None:
        meta["channels"] = str(spec.channels)
        meta["spatial_ratio"] = str(spec.spatial_ratio)
        meta["temporal_ratio"] = str(spec.temporal_ratio or 1)
    return meta


def check_streams(streams_: list[torch.Tensor], spec) -> None:
    """Refuse latents the store could not hand off faithfully, naming what is wrong."""
    video = streams_[0]
    if len(streams_) == 1:
        if video.dim() not in (4, 5):
            raise ContinuityError(f"samples of shape {list(video.shape)} are neither an image latent "
                                  "[B,C,H,W] nor a video latent [B,C,T,H,W]")
        return
    if video.dim() != 5:
        raise ContinuityError(f"the first stream of this audio-video latent has shape "
                              f"{list(video.shape)}, not a video latent [B,C,T,H,W]")
    if spec is not None and spec.is_audio_video:
        if len(streams_) != 2:
            raise ContinuityError(f"a {spec.display_name} latent has 2 streams (video, audio), this "
                                  f"one {len(streams_)}")
        streams.check_audio_stream(streams_[1], spec, video.shape[0])


@dataclass
class ShotDescription:
    """A shot ready to store: named tensors (views of the input, no copy), its family and metadata."""

    tensors: dict[str, torch.Tensor]
    spec: object
    meta: dict[str, str] = field(default_factory=dict)

    @property
    def video(self) -> torch.Tensor:
        return next(iter(self.tensors.values()))


def describe_shot(streams_: list[torch.Tensor], *, model: ModelFacts | None = None,
                  other_keys=(), guide_marker=None, lineage_marker=None, seed=None,
                  source: str = "ZeroCopyLatentStore", now: float | None = None) -> ShotDescription:
    """Describe a sampler's output for the store.

    ``other_keys`` are the LATENT's keys besides ``samples`` (``noise_mask``,
    ...): never kept, listed as ``keys_not_kept``. ``guide_marker`` is the
    ``ltx.GUIDE_MARKER`` entry of the LATENT when an LTX Handoff appended guide
    latents, which are cropped off. ``lineage_marker`` is the LATENT's
    ``lineage.MARKER`` entry (the Handoff that started this shot), recorded with
    the sampler's ``seed`` as the shot's lineage. Without a model the family
    comes from the shapes where they leave no doubt, else is recorded as unknown
    (a Handoff then asks its VAE and text encoder).
    """
    streams_ = list(streams_)
    meta: dict[str, str] = {}
    if guide_marker is not None:
        streams_[0], removed = ltx.crop_appended_guides(streams_[0], guide_marker)
        if removed:
            meta["guide_frames_removed"] = str(removed)
    spec = model.family() if model is not None else None
    if model is not None:
        if model.latent_format is not None:
            meta["latent_format"] = model.latent_format
        meta["model"] = model.identity
        if model.variant:
            meta["model_variant"] = model.variant
    if spec is None:
        spec = families.infer_family_from_streams([tuple(s.shape) for s in streams_])
    check_streams(streams_, spec)
    meta.update(metadata_for(spec))
    video = streams_[0]
    if spec is not None and video.dim() == 5 and spec.is_resolved and spec.is_video:
        meta["pixel_frames"] = str(families.pixel_frames(video.shape[2], spec))
    meta.update({"dtype": str(video.dtype).replace("torch.", ""),
                 "shape": "x".join(str(d) for d in video.shape),
                 "created_unix": f"{time.time() if now is None else now:.3f}", "source": source})
    if lineage_marker is not None:
        meta[lineage.LINEAGE_KEY] = lineage.record(lineage_marker, seed=seed)
    elif seed is not None:
        meta["seed"] = str(int(seed))
    dropped = sorted(k for k in other_keys if k != lineage.MARKER)
    if dropped:
        meta["keys_not_kept"] = ",".join(dropped)
    tensors, stream_meta = bundle_tensors(streams_)
    meta.update(stream_meta)
    return ShotDescription(tensors=tensors, spec=spec, meta=meta)
