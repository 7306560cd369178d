"""Sizes of the next shot's latent, computed from the user's pixel settings and the family.

Everything here is integer arithmetic and validation, so that a wrong width,
height or length fails before any tensor is built, with the nearest values that
would work. A latent built at a slightly wrong size is worse than an error:
ComfyUI interpolates masks and concat images to the noise size, which blurs
the 0/1 boundary between kept and generated frames.
"""

from __future__ import annotations

from ._checks import require_int, shape_text
from .errors import ContinuityError
from .families import FamilySpec


def _require_video(spec: FamilySpec, what: str) -> FamilySpec:
    spec.require_resolved()
    if not spec.is_video:
        raise ContinuityError(f"{spec.display_name} is an image family, so it has no {what}; "
                              "use a video family for frame-based continuity")
    return spec


def validate_length(length: int, spec: FamilySpec) -> int:
    """Return ``length`` if the family's VAE can encode that many pixel frames, else raise.

    The message gives the nearest valid lengths below and above, e.g.
    "length 80 is not valid for Wan 2.1 / 2.2 A14B: pixel lengths are 4k+1; use 77 or 81".
    """
    rule = _require_video(spec, "frame length").length_rule
    length = require_int("length", length)
    if rule.is_valid_pixel_length(length):
        return length
    below, above = rule.nearest_valid_pixel_lengths(length)
    choices = f"{below} or {above}" if below is not None else f"{above}"
    raise ContinuityError(f"length {length} is not valid for {spec.display_name}: "
                          f"{rule.describe()}; use {choices}")


def latent_frames(length: int, spec: FamilySpec) -> int:
    """Latent frames T of a clip of ``length`` pixel frames (Wan: (F-1)//4+1); validates first."""
    length = validate_length(length, spec)
    return spec.length_rule.latents_for_pixels(length)


def overlap_pixel_frames(tail_frames: int, spec: FamilySpec) -> int:
    """Pixel frames at the start of the new shot that repeat the end of the old one.

    The ``tail_frames`` latents placed at slots 0..k-1 decode, in the new shot,
    to as many pixel frames as the first k latents of any clip: slot 0 to one
    frame (causal first frame), each later slot to ``temporal_ratio`` frames.
    For Wan that is (k-1)*4+1. Trim that many frames from the start of the new
    clip when joining it after the old one. Image families overlap by 0.
    """
    spec.require_resolved()
    tail_frames = require_int("tail_frames", tail_frames, minimum=1)
    if not spec.is_video:
        return 0
    return spec.length_rule.pixels_for_latents(tail_frames)


def tail_pixel_span(stored_latents: int, tail_frames: int, spec: FamilySpec) -> int:
    """Pixel frames the last ``tail_frames`` latents of a ``stored_latents``-latent clip decode to.

    In the stored shot every latent but the first is a continuation latent, so
    the last k of T (k < T) span ``temporal_ratio * k`` frames for causal
    families (Wan: 4k), while at the start of the new shot the same k latents
    stand for ``overlap_pixel_frames(k)`` frames ((k-1)*4+1): the causal
    first-frame mismatch, in frames. Chunked families (MiniMax H3) have no
    mismatch for chunk-aligned tails: 5j+2 latents span 17j+5 frames in both.
    """
    _require_video(spec, "pixel frames")
    stored_latents = require_int("stored latent frames", stored_latents, minimum=1)
    tail_frames = require_int("tail_frames", tail_frames, minimum=1)
    if tail_frames > stored_latents:
        raise ContinuityError(f"tail_frames {tail_frames} is more than the {stored_latents} latent "
                              f"frames stored; set tail_frames between 1 and {stored_latents}")
    rule = spec.length_rule
    return rule.pixels_for_latents(stored_latents) - rule.pixels_for_latents(stored_latents - tail_frames)


def _nearest_multiples(value: int, multiple: int) -> str:
    below = (value // multiple) * multiple
    return f"{below} or {below + multiple}" if below >= multiple else f"{multiple}"


def validate_canvas(width: int, height: int, spec: FamilySpec) -> tuple[int, int]:
    """Return (width, height) if both are multiples of the family's canvas step, else raise.

    Both bad values are reported in one message, each with the nearest valid
    multiples, e.g. "width 500 is not valid for Wan 2.1 / 2.2 A14B: width and
    height must be multiples of 16 (8 pixels per latent, and the DiT patchifies
    latents 2x2); use width 496 or 512".
    """
    spec.require_resolved()
    width = require_int("width", width)
    height = require_int("height", height)
    step = spec.canvas_multiple
    bad = [(label, value) for label, value in (("width", width), ("height", height))
           if value < step or value % step]
    if not bad:
        return width, height
    subject = " and ".join(f"{label} {value}" for label, value in bad)
    verb = "are" if len(bad) == 2 else "is"
    fixes = " and ".join(f"{label} {_nearest_multiples(value, step)}" for label, value in bad)
    raise ContinuityError(f"{subject} {verb} not valid for {spec.display_name}: width and height "
                          f"must be multiples of {step} ({spec.canvas_reason}); use {fixes}")


def latent_size(width: int, height: int, spec: FamilySpec) -> tuple[int, int]:
    """Latent (height, width) of a validated pixel canvas."""
    width, height = validate_canvas(width, height, spec)
    return height // spec.spatial_ratio, width // spec.spatial_ratio


def target_shape(batch: int, width: int, height: int, length: int,
                 spec: FamilySpec) -> tuple[int, ...]:
    """Shape of the next shot's latent: (B, C, T, H, W) for video, (B, C, H, W) for images.

    ``length`` is ignored for image families (a still has no frame axis), so a
    Handoff left at its video default still works with an image model.
    """
    spec.require_resolved()
    batch = require_int("batch size", batch, minimum=1)
    h, w = latent_size(width, height, spec)
    if not spec.is_video:
        return (batch, spec.channels, h, w)
    return (batch, spec.channels, latent_frames(length, spec), h, w)


def validate_latent_for_family(shape, spec: FamilySpec) -> None:
    """Raise if a latent of ``shape`` cannot belong to ``spec`` (rank or channel count)."""
    spec.require_resolved()
    want_rank = spec.latent_dims + 2
    layout = "[B, C, T, H, W]" if spec.is_video else "[B, C, H, W]"
    if len(shape) != want_rank:
        raise ContinuityError(f"latent of shape {shape_text(shape)} has {len(shape)} dimensions, but "
                              f"{spec.display_name} latents are {layout}; store a tail made by a "
                              f"{spec.display_name} model or pick the model's family")
    if shape[1] != spec.channels:
        raise ContinuityError(f"latent of shape {shape_text(shape)} has {shape[1]} channels, but "
                              f"{spec.display_name} latents have {spec.channels}; the tail comes "
                              "from another model family's latent space and cannot continue this "
                              "shot (use the matching model, or the fallback image)")
