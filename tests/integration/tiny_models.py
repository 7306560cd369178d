"""Tiny random-weight models that real ComfyUI loaders accept, built by the tests.

Every model here is built by instantiating ComfyUI's own module class (so the key
names and shapes are exactly what its loaders expect), replacing every tensor with
seeded ``randn * scale`` (deterministic from the seed, independent of torch's global
RNG) and saving it as safetensors into a folder that is then registered with
``folder_paths``. No weights are downloaded and nothing is copied from ComfyUI.

Import this module only after ComfyUI is on ``sys.path`` with ``args.cpu`` set (the
``comfy`` fixture in conftest.py does that); comfy modules are imported lazily.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import torch

# The Wan 2.1 text projection is fixed at 4096 inputs (UMT5-XXL width): conditioning
# built for these models must be [B, tokens, WAN_TEXT_DIM].
WAN_TEXT_DIM = 4096
WAN21_LATENT_CHANNELS = 16
WAN21_I2V_IN_DIM = 36  # 16 noise + 4 mask + 16 image; the only in_dim detected as WAN21_I2V
FULL_WAN21_VAE_DIM = 96  # width of the released Wan 2.1 VAE
TINY_WAN21_VAE_DIM = 16  # same architecture, 1/6 the width (~3.6 M params)


@dataclass
class BuiltModel:
    """A model file written by this module, with what it took to make it."""

    path: Path
    name: str  # the file name ComfyUI's loader combo lists
    params: int
    bytes: int
    seconds: float
    config: dict = field(default_factory=dict)


def seeded_fill_(module: torch.nn.Module, seed: int, scale: float = 0.02,
                 ones_for=()) -> dict[str, torch.Tensor]:
    """Overwrite every tensor of ``module``'s state dict with seeded ``randn * scale``.

    Tensors are visited in sorted-key order from one generator, so the result depends
    only on (seed, architecture). Keys ending in one of ``ones_for`` get
    ``1 + randn * scale`` instead (norm gains, so activations keep their size).
    Returns the filled state dict (contiguous, float32).
    """
    generator = torch.Generator().manual_seed(seed)
    state = module.state_dict()
    filled = {}
    for key in sorted(state):
        shape = state[key].shape
        tensor = torch.randn(shape, generator=generator, dtype=torch.float32) * scale
        if key.endswith(tuple(ones_for)):
            tensor += 1.0
        filled[key] = tensor.contiguous()
    return filled


def _save(state: dict[str, torch.Tensor], path: Path, dtype: torch.dtype, metadata=None) -> int:
    from safetensors.torch import save_file

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    save_file({k: v.to(dtype).contiguous() for k, v in state.items()}, str(tmp), metadata=metadata)
    tmp.replace(path)  # the loader combo never lists a half-written file
    return path.stat().st_size


def wan21_dit_state_dict(variant: str = "t2v", *, dim: int = 128, ffn_dim: int = 256,
                         num_layers: int = 1, out_dim: int = 16, seed: int = 0,
                         scale: float = 0.02) -> dict[str, torch.Tensor]:
    """State dict of a tiny Wan 2.1 DiT with ComfyUI's own key layout.

    variant "t2v": in_dim 16, detected by comfy/model_detection.py as model_type "t2v"
    → supported_models.WAN21_T2V → model_base.WAN21.
    variant "i2v": in_dim 36 with ``img_emb`` (the CLIP-vision projection), detected as
    "i2v" → WAN21_I2V → model_base.WAN21(image_to_video=True), which concatenates
    4 mask + 16 image-latent channels to the noise (``WAN21.concat_cond``).
    ``dim`` must be a multiple of 128: the detector sets num_heads = dim // 128.
    """
    import comfy.ldm.wan.model
    import comfy.ops

    if variant not in ("t2v", "i2v"):
        raise ValueError(f"variant {variant!r}: expected 't2v' or 'i2v'")
    if dim % 128:
        raise ValueError(f"dim {dim}: ComfyUI detects num_heads = dim // 128, so use a multiple of 128")
    in_dim = WAN21_LATENT_CHANNELS if variant == "t2v" else WAN21_I2V_IN_DIM
    # disable_weight_init allocates without initialising: seeded_fill_ sets every tensor.
    model = comfy.ldm.wan.model.WanModel(
        model_type=variant, dim=dim, ffn_dim=ffn_dim, num_layers=num_layers, num_heads=dim // 128,
        in_dim=in_dim, out_dim=out_dim, text_dim=WAN_TEXT_DIM, operations=comfy.ops.disable_weight_init)
    return seeded_fill_(model, seed, scale)


def build_tiny_wan21_dit(folder: Path, variant: str = "t2v", *, seed: int = 0,
                         dtype: torch.dtype = torch.float32, **config) -> BuiltModel:
    """Write ``zc_test_tiny_wan21_<variant>_s<seed>.safetensors`` into ``folder`` (UNETLoader)."""
    start = time.perf_counter()
    state = wan21_dit_state_dict(variant, seed=seed, **config)
    name = f"zc_test_tiny_wan21_{variant}_s{seed}.safetensors"
    size = _save(state, Path(folder) / name, dtype)
    return BuiltModel(Path(folder) / name, name, sum(t.numel() for t in state.values()), size,
                      time.perf_counter() - start, {"variant": variant, "seed": seed, **config})


def wan21_vae_state_dict(*, dim: int = FULL_WAN21_VAE_DIM, seed: int = 0,
                         scale: float = 0.02) -> dict[str, torch.Tensor]:
    """State dict of a random-weight Wan 2.1 VAE (ComfyUI's comfy.ldm.wan.vae.WanVAE).

    ComfyUI fixes z_dim 16, dim_mult [1,2,4,4], 2 res blocks and the temporal
    downsampling, but reads the base width from ``decoder.head.0.gamma`` (comfy/sd.py,
    "Wan 2.1 VAE" branch), so ``dim`` may be smaller than the released 96: the network is
    the real causal 3D architecture (8x spatial, 4x temporal, frame 0 alone), just
    narrower. RMS-norm gains are set near 1 so activations stay O(1) through the net.
    """
    import comfy.ldm.wan.vae

    vae = comfy.ldm.wan.vae.WanVAE(dim=dim, z_dim=WAN21_LATENT_CHANNELS, dim_mult=[1, 2, 4, 4],
                                   num_res_blocks=2, attn_scales=[],
                                   temperal_downsample=[False, True, True], dropout=0.0)
    return seeded_fill_(vae, seed, scale, ones_for=(".gamma",))


def build_wan21_vae(folder: Path, *, dim: int = FULL_WAN21_VAE_DIM, seed: int = 0,
                    dtype: torch.dtype = torch.bfloat16) -> BuiltModel:
    """Write ``zc_test_random_wan21_vae_d<dim>_s<seed>.safetensors`` into ``folder`` (VAELoader).

    bf16 halves the file; ComfyUI runs the Wan 2.1 VAE in float32 only
    (working_dtypes in comfy/sd.py), so it is upcast on load.
    """
    start = time.perf_counter()
    state = wan21_vae_state_dict(dim=dim, seed=seed)
    name = f"zc_test_random_wan21_vae_d{dim}_s{seed}.safetensors"
    size = _save(state, Path(folder) / name, dtype)
    return BuiltModel(Path(folder) / name, name, sum(t.numel() for t in state.values()), size,
                      time.perf_counter() - start, {"dim": dim, "seed": seed, "dtype": str(dtype)})


def register_model_folder(kind: str, folder: Path) -> None:
    """Make ComfyUI's loaders list the files in ``folder`` under ``kind``
    ("diffusion_models", "vae", ...). folder_paths re-scans a folder list when a folder is
    added or a folder's mtime changes, so files written later are picked up too."""
    import folder_paths

    Path(folder).mkdir(parents=True, exist_ok=True)
    folder_paths.add_model_folder_path(kind, str(folder), is_default=True)
