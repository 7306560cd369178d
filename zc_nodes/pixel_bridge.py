"""The opt-in pixel bridge: one VAE decode of the stored shot, one encode of its last frame.

For a handoff the pack cannot make in latent space (another family's latent
space, such as a Wan video continued as a FLUX Kontext still, or a user who
wants a clean one-frame start), and only when the user picks adapter
``pixel_bridge``: never a silent fallback. The stored shot's video stream is
decoded with ``bridge_vae`` (its own family's VAE; ``vae`` when not given),
in full for a video, because a causal decoder renders the last frame
correctly only after every earlier latent, and the last batch item's last
pixel frame is encoded with ``vae`` at the new canvas, as core's image-to-
video nodes encode a start image. The result is a legal first-frame latent
(one pixel frame), handed to the target family's own adapter. Lossy (one VAE
round trip, the thing this pack otherwise avoids), counted in the
certificate; audio does not cross the bridge.
"""

from __future__ import annotations

import torch

from . import comfy_calls
from ..zc_continuity.errors import ContinuityError


def bridge(stored_video: torch.Tensor, bridge_vae, vae, width: int, height: int,
           image_target: bool) -> tuple[torch.Tensor, int, int, list[str]]:
    """(first-frame latent for the new shot, decodes, encodes, notes)."""
    if vae is None or bridge_vae is None:
        raise ContinuityError("adapter 'pixel_bridge' needs a VAE: connect 'vae' (the new shot's) and, "
                              "if the stored shot is another family, 'bridge_vae' (the stored shot's)")
    last_item = stored_video[-1:]
    try:
        pixels = comfy_calls.vae_decode(bridge_vae, last_item)
    except Exception as exc:
        raise ContinuityError(
            f"pixel_bridge could not decode the stored latent {list(last_item.shape)} with bridge_vae "
            f"({type(exc).__name__}: {exc}); connect the stored shot's own VAE to 'bridge_vae'") from exc
    frame = pixels[-1:]
    piece = comfy_calls.encode_first_frame(vae, frame, width, height).to(torch.float32)
    if image_target and piece.dim() == 5:
        piece = piece[:, :, 0]
    if not image_target and piece.dim() == 4:
        piece = piece.unsqueeze(2)
    notes = [f"pixel_bridge: decoded the stored {list(last_item.shape)} to {pixels.shape[0]} pixel "
             f"frame(s), encoded the last one at {width}x{height}: a one-frame start latent "
             f"{list(piece.shape)} (opt-in, lossy; the stored latent itself is not used)"]
    return piece, 1, 1, notes
