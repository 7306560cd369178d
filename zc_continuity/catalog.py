"""The model families this pack hands off, beyond Wan 2.1 and the generic placeholder.

One ``FamilySpec`` per latent space, with the facts ComfyUI v0.33.0 encodes in
``comfy/latent_formats.py`` and the family's empty-latent node (channels,
compression, valid lengths and canvas steps), the insertion points the pack
has for it, and its caveats, stated once here and repeated in certificates.
Registering happens on import; ``zc_continuity`` imports this module, so every
user of the package sees the full registry.
"""

from __future__ import annotations

from fractions import Fraction

from .families import (ADAPTER_FLUX_IMG2IMG, ADAPTER_FLUX_KONTEXT, ADAPTER_HUNYUAN15_I2V,
                       ADAPTER_HUNYUAN_I2V,
                       ADAPTER_LTX_GUIDE, ADAPTER_MINIMAX_KEYFRAME, ADAPTER_TEMPORAL_INPAINT,
                       AudioStreamSpec, FamilySpec, LengthRule, causal_length_rule, register)

WAN_TEXT_ENCODER = ("comfy.text_encoders.wan.WanT5Model", "comfy.text_encoders.wan.WanT5Tokenizer")
LTX_VAE = "comfy.ldm.lightricks.vae.causal_video_autoencoder.VideoVAE"  # LTX-Video 0.9 and LTX-2

CAUSAL_SLOT0 = ("causal first frame: slot 0 of a clip is encoded from one pixel frame, a tail "
                "latent from several; placed at slot 0 it decodes only approximately")

WAN22_5B = register(FamilySpec(
    name="wan22_5b",
    display_name="Wan 2.2 TI2V 5B",
    channels=48,
    spatial_ratio=16,
    temporal_ratio=4,
    latent_dims=3,
    length_rule=causal_length_rule(4),
    canvas_multiple=32,
    canvas_reason="16 pixels per latent, and the DiT patchifies latents 2x2",
    latent_format_names=("Wan22",),
    adapters=(ADAPTER_TEMPORAL_INPAINT,),
    vae_classes=("comfy.ldm.wan.vae2_2.WanVAE",),
    text_encoder_classes=WAN_TEXT_ENCODER,
    caveats=(CAUSAL_SLOT0,),
))

HUNYUAN_VIDEO = register(FamilySpec(
    name="hunyuan_video",
    display_name="HunyuanVideo 1.0",
    channels=16,
    spatial_ratio=8,
    temporal_ratio=4,
    latent_dims=3,
    length_rule=causal_length_rule(4),
    canvas_multiple=16,
    canvas_reason="8 pixels per latent, and the DiT patchifies latents 2x2",
    latent_format_names=("HunyuanVideo",),
    # ComfyUI builds HunyuanVideo 1.0's VAE as a 3-D AutoencoderKL (16 channels, 4x8x8)
    vae_classes=("comfy.ldm.models.autoencoder.AutoencoderKL",),
    text_encoder_classes=("comfy.text_encoders.hunyuan_video.HunyuanVideoClipModel",
                          "comfy.text_encoders.hunyuan_video.HunyuanVideoTokenizer"),
    adapters=(ADAPTER_HUNYUAN_I2V, ADAPTER_TEMPORAL_INPAINT),
    shares_latent_shape_with=("Wan 2.1 / 2.2 A14B", "Cosmos 1.0 CV8x8x8", "SeedVR2", "CogVideoX"),
    caveats=(CAUSAL_SLOT0,
             "a 16-channel video latent looks exactly like Wan 2.1's: store it with the model "
             "connected (or connect the model to the Handoff) so the family is known"),
))

HUNYUAN_VIDEO_15 = register(FamilySpec(
    name="hunyuan_video15",
    display_name="HunyuanVideo 1.5",
    channels=32,
    spatial_ratio=16,
    temporal_ratio=4,
    latent_dims=3,
    length_rule=causal_length_rule(4),
    canvas_multiple=16,
    canvas_reason="16 pixels per latent (the DiT's patch is 1x1)",
    latent_format_names=("HunyuanVideo15",),
    vae_classes=("comfy.ldm.hunyuan_video.vae_refiner.Encoder",),
    # 1.5 shares its Qwen2.5-VL encoder with HunyuanImage; the tokenizer is its own
    text_encoder_classes=("comfy.text_encoders.hunyuan_video.HunyuanVideo15Tokenizer",),
    adapters=(ADAPTER_HUNYUAN15_I2V, ADAPTER_TEMPORAL_INPAINT),
    caveats=(CAUSAL_SLOT0,),
))

LTXV = register(FamilySpec(
    name="ltxv",
    display_name="LTX-Video 0.9",
    channels=128,
    spatial_ratio=32,
    temporal_ratio=8,
    latent_dims=3,
    length_rule=causal_length_rule(8),
    canvas_multiple=32,
    canvas_reason="32 pixels per latent (the DiT's patch is 1x1)",
    latent_format_names=("LTXV",),
    vae_classes=(LTX_VAE,),
    text_encoder_classes=("comfy.text_encoders.lt.LTXVT5Tokenizer",),
    adapters=(ADAPTER_LTX_GUIDE, ADAPTER_TEMPORAL_INPAINT),
    shares_latent_shape_with=("LTX-2 video stream",),
    caveats=(CAUSAL_SLOT0,
             "the sampled latent still holds the appended guide latents; the Store removes them, "
             "but crop them (LTXVCropGuides) before decoding"),
))

LTX2 = register(FamilySpec(
    name="ltx2",
    display_name="LTX-2 (audio-video)",
    channels=128,
    spatial_ratio=32,
    temporal_ratio=8,
    latent_dims=3,
    length_rule=causal_length_rule(8),
    canvas_multiple=32,
    canvas_reason="32 pixels per latent (the DiT's patch is 1x1)",
    latent_format_names=("LTXAV",),
    vae_classes=(LTX_VAE,),
    text_encoder_classes=("comfy.text_encoders.lt.LTXAVTEModel", "comfy.text_encoders.lt.LTXAVGemmaTokenizer"),
    adapters=(ADAPTER_LTX_GUIDE, ADAPTER_TEMPORAL_INPAINT),
    shares_latent_shape_with=("LTX-Video 0.9",),
    audio=AudioStreamSpec(layout="[B, C, T, F]", rank=4, time_axis=2),
    caveats=(CAUSAL_SLOT0,
             "audio latents per pixel frame follow the stored shot (same frame rate assumed)",
             "the sampled latent still holds the appended guide latents; the Store removes them, "
             "but separate the streams and crop them (LTXVCropGuides) before decoding"),
))

MINIMAX_H3 = register(FamilySpec(
    name="minimax_h3",
    display_name="MiniMax H3 (audio-video)",
    channels=24,
    spatial_ratio=16,
    temporal_ratio=4,
    latent_dims=3,
    # latent k spans FRAME_PER_TOKEN[k % 5] = (1, 4, 4, 4, 4) pixel frames: F = 17k+5, T = 5k+2
    length_rule=LengthRule(head_spans=(), cycle_spans=(1, 4, 4, 4, 4), latent_step=5,
                           first_latents=2),
    canvas_multiple=32,
    canvas_reason="16 pixels per latent, and the DiT patchifies latents 2x2",
    latent_format_names=("MiniMaxH3AV", "MiniMaxH3Video"),
    vae_classes=("comfy.ldm.minimax.vae.MiniMaxH3VideoVAE",),
    text_encoder_classes=("comfy.text_encoders.minimax.MiniMaxH3TEModel",
                          "comfy.text_encoders.minimax.MiniMaxH3Tokenizer"),
    adapters=(ADAPTER_MINIMAX_KEYFRAME, ADAPTER_TEMPORAL_INPAINT),
    audio=AudioStreamSpec(layout="[B, 32, 2, T]", rank=4, time_axis=3, fixed_dims=((1, 32), (2, 2)),
                          latents_per_pixel_frame=Fraction(40, 24)),
    max_batch=1,
    caveats=("tails are whole 17-frame VAE chunks (5j+2 latents); whether the H3 VAE carries a "
             "cache across chunks is unverified, so a tail equals a stand-alone encode of its "
             "frames only if it does not",
             "how firmly the kept frames hold depends on the ComfyUI version (the adapter's note "
             "says which)"),
))

FLUX = register(FamilySpec(
    name="flux",
    display_name="FLUX.1",
    channels=16,
    spatial_ratio=8,
    temporal_ratio=1,
    latent_dims=2,
    length_rule=None,
    canvas_multiple=16,
    canvas_reason="8 pixels per latent, and the DiT patchifies latents 2x2",
    latent_format_names=("Flux",),
    # the FLUX VAE is a 2-D AutoencodingEngine (16 channels, 8x); SD3's VAE has the same shape
    vae_classes=("comfy.ldm.models.autoencoder.AutoencodingEngine",),
    text_encoder_classes=("comfy.text_encoders.flux.FluxClipModel", "comfy.text_encoders.flux.FluxTokenizer"),
    adapters=(ADAPTER_FLUX_IMG2IMG, ADAPTER_FLUX_KONTEXT),
    shares_latent_shape_with=("SD3", "Stable Cascade prior"),
    caveats=("image family: the handoff uses the last stored image, whole; only FLUX-VAE latents "
             "(FLUX.1 Dev, Schnell, Kontext, and models sharing the FLUX VAE) continue in latent space",
             "Kontext loads as the same architecture as Dev in ComfyUI, so adapter auto picks img2img; "
             "choose flux_kontext_reference for a Kontext model"),
))
