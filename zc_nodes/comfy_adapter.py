"""Every call into ComfyUI's internals lives here, so the continuity logic
(zc_continuity) stays pure and the rest of the pack survives ComfyUI changes.
Capabilities are detected by feature, not by version string."""

from __future__ import annotations

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


def empty_fill(latent_format, channels: int) -> torch.Tensor:
    """The raw-space value of an empty frame per channel: process_out(0).

    ComfyUI normalises a latent that is not all zeros with process_in, so empty
    frames next to real ones must hold process_out(0), as core nodes do."""
    if latent_format is None:
        return torch.zeros(channels)
    zeros = torch.zeros(1, channels, 1, 1, 1)
    try:
        out = latent_format.process_out(zeros)
    except Exception:
        out = latent_format.process_out(zeros[:, :, 0])
    return out.reshape(channels, -1)[:, 0].to(torch.float32).clone()


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


def conditioning_with(conditioning, values: dict):
    """A copy of conditioning with keys set on every entry (node_helpers semantics)."""
    import node_helpers
    return node_helpers.conditioning_set_values(conditioning, values)


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
