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


def hunyuan_video_vae_state_dict(*, seed: int = 0, scale: float = 0.02) -> dict[str, torch.Tensor]:
    """State dict of a random-weight HunyuanVideo 1.0 VAE, as ComfyUI builds it: a 3-D
    ``AutoencoderKL`` (comfy/sd.py, the "decoder.conv_in.conv.weight" branch) with 16 latent
    channels, 8x spatial and 4x temporal compression. ComfyUI fixes its width (ch 128,
    ch_mult [1,2,4,4]), so this is the released size (246 M parameters)."""
    import comfy.ldm.models.autoencoder

    ddconfig = {"double_z": True, "z_channels": 16, "resolution": 256, "in_channels": 3, "out_ch": 3,
                "ch": 128, "ch_mult": [1, 2, 4, 4], "num_res_blocks": 2, "attn_resolutions": [],
                "dropout": 0.0, "conv3d": True, "time_compress": 4}
    vae = comfy.ldm.models.autoencoder.AutoencoderKL(ddconfig=ddconfig, embed_dim=16)
    return seeded_fill_(vae, seed, scale, ones_for=("norm.weight",))


def build_hunyuan_video_vae(folder: Path, *, seed: int = 0, dtype: torch.dtype = torch.bfloat16) -> BuiltModel:
    """Write ``zc_test_random_hunyuan_video_vae_s<seed>.safetensors`` into ``folder`` (VAELoader)."""
    start = time.perf_counter()
    state = hunyuan_video_vae_state_dict(seed=seed)
    name = f"zc_test_random_hunyuan_video_vae_s{seed}.safetensors"
    size = _save(state, Path(folder) / name, dtype)
    return BuiltModel(Path(folder) / name, name, sum(t.numel() for t in state.values()), size,
                      time.perf_counter() - start, {"seed": seed, "dtype": str(dtype)})


def register_model_folder(kind: str, folder: Path) -> None:
    """Make ComfyUI's loaders list the files in ``folder`` under ``kind``
    ("diffusion_models", "vae", ...). folder_paths re-scans a folder list when a folder is
    added or a folder's mtime changes, so files written later are picked up too."""
    import folder_paths

    Path(folder).mkdir(parents=True, exist_ok=True)
    folder_paths.add_model_folder_path(kind, str(folder), is_default=True)


# --- other families --------------------------------------------------------------------------
# Each builder instantiates ComfyUI's own DiT class at a tiny width, fills it with seeded
# noise, and saves it so that UNETLoader's detection (comfy/model_detection.py) maps it to
# the family's supported model. Widths follow what detection hard-codes: HunyuanVideo and
# FLUX read num_heads = hidden // 128 and a fixed mlp_ratio 4 (hidden 128 = 1 head);
# LTX reads its config from the file's metadata; MiniMax H3 reads every size from shapes.

TINY_TEXT_DIM = 32  # context width of the tiny non-Wan DiTs (their text projections are learned)
HUNYUAN_POOLED_DIM = 768  # HunyuanVideo 1.0's vector_in (CLIP-L pooled): detected only at 768


def _build(folder: Path, name: str, state: dict, seed: int, config: dict, metadata=None) -> BuiltModel:
    start = time.perf_counter()
    size = _save(state, Path(folder) / name, torch.float32, metadata=metadata)
    return BuiltModel(Path(folder) / name, name, sum(t.numel() for t in state.values()), size,
                      time.perf_counter() - start, {"seed": seed, **config})


def build_tiny_wan22_5b_dit(folder: Path, *, seed: int = 10) -> BuiltModel:
    """Wan 2.2 TI2V 5B-like: WanModel t2v with in_dim = out_dim = 48 → WAN22_T2V → model_base.WAN22
    (latent format Wan22, per-frame timesteps from the noise mask)."""
    import comfy.ldm.wan.model
    import comfy.ops

    config = dict(model_type="t2v", dim=128, ffn_dim=256, num_layers=1, num_heads=1, in_dim=48,
                  out_dim=48, text_dim=WAN_TEXT_DIM)
    model = comfy.ldm.wan.model.WanModel(**config, operations=comfy.ops.disable_weight_init)
    return _build(folder, f"zc_test_tiny_wan22_5b_s{seed}.safetensors", seeded_fill_(model, seed),
                  seed, config)


def build_tiny_wan22_a14b_i2v_dit(folder: Path, *, seed: int = 11) -> BuiltModel:
    """Wan 2.2 A14B I2V-like: in_dim 36 and no CLIP-vision projection, so detected as model_type
    t2v → WAN21_T2V → model_base.WAN21 (image_to_video False) whose concat_cond still adds
    4 mask + 16 image channels because the patch embedding takes 36."""
    import comfy.ldm.wan.model
    import comfy.ops

    config = dict(model_type="t2v", dim=128, ffn_dim=256, num_layers=1, num_heads=1,
                  in_dim=WAN21_I2V_IN_DIM, out_dim=16, text_dim=WAN_TEXT_DIM)
    model = comfy.ldm.wan.model.WanModel(**config, operations=comfy.ops.disable_weight_init)
    return _build(folder, f"zc_test_tiny_wan22_a14b_i2v_s{seed}.safetensors",
                  seeded_fill_(model, seed), seed, config)


def _known_params(params_class, config: dict) -> dict:
    """Only the settings this ComfyUI's Params dataclass has (older versions lack later ones)."""
    import dataclasses

    names = {f.name for f in dataclasses.fields(params_class)}
    return {k: v for k, v in config.items() if k in names}


def _hunyuan(in_channels, out_channels, patch, vec_in_dim, version15: bool):
    import comfy.ldm.hunyuan_video.model
    import comfy.ops

    config = dict(in_channels=in_channels, out_channels=out_channels, vec_in_dim=vec_in_dim,
                  context_in_dim=TINY_TEXT_DIM, hidden_size=128, mlp_ratio=4.0, num_heads=1, depth=1,
                  depth_single_blocks=1, axes_dim=[16, 56, 56], theta=256, patch_size=patch,
                  qkv_bias=True, guidance_embed=False, byt5=False, meanflow=False,
                  use_cond_type_embedding=version15, vision_in_dim=1152 if version15 else None,
                  meanflow_sum=version15)
    config = _known_params(comfy.ldm.hunyuan_video.model.HunyuanVideoParams, config)
    model = comfy.ldm.hunyuan_video.model.HunyuanVideo(**config, operations=comfy.ops.disable_weight_init)
    return model, config


def build_tiny_hunyuan_video_dit(folder: Path, *, seed: int = 12) -> BuiltModel:
    """HunyuanVideo 1.0-like (16 in/out channels, patch 1x2x2, CLIP-L vector_in) → HunyuanVideo.
    This is the shape of the T2V and of the v2 (replace) I2V checkpoints; conditioning needs
    ``pooled_output`` [1, 768] and text states [1, L, 32]."""
    model, config = _hunyuan(16, 16, [1, 2, 2], HUNYUAN_POOLED_DIM, False)
    return _build(folder, f"zc_test_tiny_hunyuan_video_s{seed}.safetensors",
                  seeded_fill_(model, seed, ones_for=("norm.weight",)), seed, config)


def build_tiny_hunyuan_video15_dit(folder: Path, *, seed: int = 13) -> BuiltModel:
    """HunyuanVideo 1.5-like: 65 input channels (32 noise + 32 image + 1 mask), patch 1x1x1,
    a vision_in of width 1152 (how detection tells 1.5) → HunyuanVideo15 (latent format
    HunyuanVideo15). Conditioning needs ``pooled_output`` present (None is fine)."""
    model, config = _hunyuan(65, 32, [1, 1, 1], None, True)
    return _build(folder, f"zc_test_tiny_hunyuan_video15_s{seed}.safetensors",
                  seeded_fill_(model, seed, ones_for=("norm.weight",)), seed, config)


def build_tiny_ltxv_dit(folder: Path, *, seed: int = 14) -> BuiltModel:
    """LTX-Video-like: 1 layer, 32 heads of width 4 (detection fixes 32 heads), text width 32;
    the config travels in the file's metadata as ComfyUI's loader reads it → model_base.LTXV.
    Conditioning needs ``attention_mask``."""
    import json

    import comfy.ldm.lightricks.model
    import comfy.ops

    config = dict(in_channels=128, cross_attention_dim=128, attention_head_dim=4,
                  num_attention_heads=32, caption_channels=TINY_TEXT_DIM, num_layers=1)
    model = comfy.ldm.lightricks.model.LTXVModel(**config, operations=comfy.ops.disable_weight_init)
    return _build(folder, f"zc_test_tiny_ltxv_s{seed}.safetensors", seeded_fill_(model, seed), seed,
                  config, metadata={"config": json.dumps({"transformer": config})})


def build_tiny_ltxav_dit(folder: Path, *, seed: int = 15) -> BuiltModel:
    """LTX-2 (audio-video)-like → model_base.LTXAV (latent format LTXAV): video 128 channels,
    audio 128 = 8 channels x 16 frequency bins, tiny text connectors. Conditioning: text states
    of width 2 x 32 (the connectors' output layout, so they are bypassed) and
    ``attention_mask``."""
    import json

    import comfy.ldm.lightricks.av_model
    import comfy.ops

    config = dict(in_channels=128, audio_in_channels=128, cross_attention_dim=128,
                  audio_cross_attention_dim=64, attention_head_dim=4, audio_attention_head_dim=2,
                  num_attention_heads=32, audio_num_attention_heads=32,
                  caption_channels=TINY_TEXT_DIM, num_layers=1, connector_attention_head_dim=4,
                  connector_num_attention_heads=8, connector_num_layers=1)
    model = comfy.ldm.lightricks.av_model.LTXAVModel(**config, operations=comfy.ops.disable_weight_init)
    return _build(folder, f"zc_test_tiny_ltxav_s{seed}.safetensors", seeded_fill_(model, seed), seed,
                  config, metadata={"config": json.dumps({"transformer": config})})


def build_tiny_minimax_h3_dit(folder: Path, *, seed: int = 16) -> BuiltModel:
    """MiniMax H3-like: hidden 128, 1 block, 1 head of 128, text width 32 → model_base.MiniMaxH3
    (FLOW_AV sampling, latent format MiniMaxH3AV, video 24 + audio 32 channels). RoPE inverse
    frequencies are set to the usual 10000^(-i/16) rather than noise."""
    import comfy.ldm.minimax.model
    import comfy.ops

    config = dict(hidden_size=128, num_layers=1, token_refiner_num_layers=1, num_attention_heads=1,
                  attention_head_dim=128, ffn_hidden_size=256, text_dim=TINY_TEXT_DIM,
                  timestep_input_dim=256, time_embed_hidden_size=128, time_embed_dim=64,
                  rope_inv_freq_len=16)
    model = comfy.ldm.minimax.model.MiniMaxH3Model(**config, operations=comfy.ops.disable_weight_init)
    state = seeded_fill_(model, seed)
    state["rope.inv_freq"] = 1.0 / (10000 ** (torch.arange(16, dtype=torch.float32) / 16))
    return _build(folder, f"zc_test_tiny_minimax_h3_s{seed}.safetensors", state, seed, config)


def build_tiny_flux_dit(folder: Path, *, seed: int = 17) -> BuiltModel:
    """FLUX.1-like (Kontext uses the same architecture): hidden 128 (1 head), 1 double + 1 single
    block, guidance embedding, text width 32, pooled width 32 → model_base.Flux (latent
    format Flux); reads ``reference_latents``."""
    import comfy.ldm.flux.model
    import comfy.ops

    config = dict(in_channels=16, out_channels=16, vec_in_dim=TINY_TEXT_DIM,
                  context_in_dim=TINY_TEXT_DIM, hidden_size=128, mlp_ratio=4.0, num_heads=1,
                  depth=1, depth_single_blocks=1, axes_dim=[16, 56, 56], theta=10000, patch_size=2,
                  qkv_bias=True, guidance_embed=True, txt_ids_dims=[])
    config = _known_params(comfy.ldm.flux.model.FluxParams, config)
    model = comfy.ldm.flux.model.Flux(**config, operations=comfy.ops.disable_weight_init)
    return _build(folder, f"zc_test_tiny_flux_s{seed}.safetensors", seeded_fill_(model, seed), seed,
                  config)


def build_tiny_hunyuan_video_i2v_concat_dit(folder: Path, *, seed: int = 18) -> BuiltModel:
    """HunyuanVideo 1.0 v1 (concat) I2V-like: 33 input channels (16 noise + 16 image + 1 mask)
    → HunyuanVideoI2V, whose concat keys ("concat_image", "mask_inverted") take the image."""
    model, config = _hunyuan(33, 16, [1, 2, 2], HUNYUAN_POOLED_DIM, False)
    return _build(folder, f"zc_test_tiny_hunyuan_video_i2v_concat_s{seed}.safetensors",
                  seeded_fill_(model, seed, ones_for=("norm.weight",)), seed, config)
