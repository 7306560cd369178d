"""Argument checks shared by the continuity modules.

Kept in one place so every module reports a wrong type the same way, and so
that ``True`` (a Python int) is never accepted as a count of frames.
"""

from __future__ import annotations

import torch

from .errors import ContinuityError


def require_int(name: str, value: object, minimum: int | None = None) -> int:
    """Return value as an int, or raise naming the value and the expectation."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ContinuityError(f"{name} {value!r} is not a whole number; pass an int")
    if minimum is not None and value < minimum:
        raise ContinuityError(f"{name} {value} is below {minimum}; use {minimum} or more")
    return value


def require_tensor(name: str, value: object) -> torch.Tensor:
    """Return value if it is a plain (non-nested) torch tensor, else raise."""
    if getattr(value, "is_nested", False):
        raise ContinuityError(
            f"{name} is a nested (audio+video) latent; unbind it and pass the video stream "
            "tensor on its own")
    if not isinstance(value, torch.Tensor):
        raise ContinuityError(f"{name} is a {type(value).__name__}, not a torch tensor; "
                              "pass the LATENT's 'samples' tensor")
    return value


def require_floating(name: str, tensor: torch.Tensor) -> torch.Tensor:
    """Latents are real-valued; integer or bool tensors mean a wrong input was wired."""
    if not tensor.is_floating_point():
        raise ContinuityError(f"{name} has dtype {tensor.dtype}, not a floating-point dtype; "
                              "pass a latent (float32) tensor")
    return tensor


def shape_text(shape) -> str:
    """A shape as users read it in messages: [1, 16, 21, 60, 104]."""
    return "[" + ", ".join(str(int(d)) for d in shape) + "]"
