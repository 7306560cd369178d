"""TEST-ONLY fake nodes for driving real ComfyUI graphs in-process on CPU.

Nothing here ships with the pack. These nodes stand in for what cannot be built
tiny (the UMT5-XXL text encoder) or for what a graph must prove it never touches (a
VAE in zero_copy_latent_only mode), and they let a test read what a sampler produced.

Written against ComfyUI's V3 node API (comfy_api.latest io.ComfyNode / io.Schema,
ComfyExtension + comfy_entrypoint) and loaded with ``nodes.load_custom_node(<this dir>)``:
the module must NOT define NODE_CLASS_MAPPINGS, or ComfyUI takes the V1 branch and never
calls comfy_entrypoint. V3 classes are cloned per execution, so all state lives in the
module-level ``CAPTURED`` / ``CAPTURE_LOG`` below. Every node id starts with ``ZCTest``, but
ZCResidencyTestRaiseOOM (it raises a CUDA out-of-memory error).
"""

from __future__ import annotations

import hashlib

import time

import torch
from comfy_api.latest import ComfyExtension, io

CATEGORY = "_for_testing/zerocopy (fakes)"
WAN_TEXT_DIM = 4096  # UMT5-XXL width, what Wan's text_embedding expects
VAE_MUST_NOT_BE_CALLED = "VAE must not be called in zero_copy_latent_only"

# label -> the last LATENT a ZCTestCaptureLatent node with that label received (cloned).
CAPTURED: dict[str, dict] = {}
# every capture in execution order, as (label, latent) — shows how often a node really ran.
CAPTURE_LOG: list[tuple[str, dict]] = []


def reset_captures() -> None:
    CAPTURED.clear()
    CAPTURE_LOG.clear()


def _clone_value(value):
    """Deep copy of a LATENT value: tensors cloned, NestedTensor per stream, containers recursed."""
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if getattr(value, "is_nested", False) and hasattr(value, "tensors"):
        return type(value)([t.detach().clone() for t in value.tensors])
    if isinstance(value, dict):
        return {k: _clone_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_clone_value(v) for v in value)
    return value


def _seeded_randn(seed: int, *shape: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=generator, dtype=torch.float32)


def _text_seed(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "little") & (2**63 - 1)


def _node(node_id: str, display_name: str, description: str, execute, inputs=(), outputs=(),
          fingerprint=None, **schema) -> type[io.ComfyNode]:
    """A V3 stand-in node: its schema (in CATEGORY) and ``execute(**inputs) -> io.NodeOutput``;
    ``fingerprint(**inputs)`` becomes its fingerprint_inputs; ``schema`` adds Schema fields."""

    def define_schema(cls):
        return io.Schema(node_id=node_id, display_name=display_name, category=CATEGORY,
                         description=description, inputs=list(inputs), outputs=list(outputs), **schema)

    methods = {"define_schema": classmethod(define_schema),
               "execute": classmethod(lambda cls, **values: execute(**values))}
    if fingerprint is not None:
        methods["fingerprint_inputs"] = classmethod(lambda cls, **values: fingerprint(**values))
    return type(node_id, (io.ComfyNode,), methods)


def _fake_object_node(node_id: str, display_name: str, description: str, make,
                      inputs=(), outputs=(io.Vae.Output(),)) -> type[io.ComfyNode]:
    """A node whose one job is to hand out the fake(s) ``make(**inputs)`` builds (a CLIP, a VAE):
    one value, or a tuple of them for several outputs."""

    def execute(**values) -> io.NodeOutput:
        made = make(**values)
        return io.NodeOutput(*made) if isinstance(made, tuple) else io.NodeOutput(made)

    return _node(node_id, display_name, description, execute, inputs, outputs)


class FakeUMT5Clip:
    """Stands in for ComfyUI's CLIP object wrapping UMT5-XXL (which cannot be built tiny).

    ``tokenize`` keeps the text; ``encode_from_tokens_scheduled`` returns CONDITIONING
    ``[[cond [1, tokens, 4096], {"pooled_output": None}]]`` where ``cond`` is seeded from a
    SHA-256 of the text: the same text always gives the same tensor, different texts differ.
    """

    is_zc_test_fake = True

    def __init__(self, tokens: int = 8):
        self.tokens = tokens
        self.calls: list[str] = []  # texts encoded, in order (per instance)

    def clone(self):
        return FakeUMT5Clip(self.tokens)

    def tokenize(self, text, return_word_ids=False, **kwargs):
        return {"zc_test_text": str(text), "zc_test_tokens": self.tokens}

    def encode_from_tokens(self, tokens, return_pooled=False, return_dict=False):
        text = tokens["zc_test_text"]
        self.calls.append(text)
        cond = _seeded_randn(_text_seed(text), 1, tokens["zc_test_tokens"], WAN_TEXT_DIM)
        if return_dict:
            return {"cond": cond, "pooled_output": None}
        return (cond, None) if return_pooled else cond

    def encode_from_tokens_scheduled(self, tokens, unprojected=False, add_dict=None, show_pbar=True,
                                     **kwargs):
        out = self.encode_from_tokens(tokens, return_dict=True)
        cond = out.pop("cond")
        out.update(add_dict or {})
        return [[cond, out]]

    def encode(self, text):
        return self.encode_from_tokens(self.tokenize(text))


class RaisingVAE:
    """A VAE that fails loudly if used, carrying the Wan 2.1 VAE's shape attributes.

    Nodes may read its geometry (latent_channels, compression ratios, index formulas)
    but any encode/decode raises AssertionError: proof that a path stayed in latent space.
    """

    is_zc_test_fake = True
    latent_channels = 16
    latent_dim = 3
    output_channels = 3
    downscale_index_formula = (4, 8, 8)
    upscale_index_formula = (4, 8, 8)
    downscale_ratio = (lambda frames: max(0, (frames + 3) // 4), 8, 8)
    upscale_ratio = (lambda frames: max(0, frames * 4 - 3), 8, 8)
    vae_dtype = torch.float32

    def __init__(self):
        self.calls: list[str] = []

    def _refuse(self, what: str):
        self.calls.append(what)
        raise AssertionError(VAE_MUST_NOT_BE_CALLED + f" ({what} was called)")

    def encode(self, *args, **kwargs):
        self._refuse("encode")

    def decode(self, *args, **kwargs):
        self._refuse("decode")

    def encode_tiled(self, *args, **kwargs):
        self._refuse("encode_tiled")

    def decode_tiled(self, *args, **kwargs):
        self._refuse("decode_tiled")

    def spacial_compression_encode(self):
        return 8

    def spacial_compression_decode(self):
        return 8

    def temporal_compression_decode(self):
        return 4

    def temporal_compression_encode(self):
        return 4

    def throw_exception_if_invalid(self):
        pass

    def is_dynamic(self):
        return False


def _conditioning(seed, tokens) -> io.NodeOutput:
    return io.NodeOutput([[_seeded_randn(seed, 1, tokens, WAN_TEXT_DIM), {}]])


ZCTestConditioning = _node(
    "ZCTestConditioning", "ZC TEST fake conditioning (seeded randn)",
    "TEST ONLY. CONDITIONING [[randn(1, tokens, 4096), {}]] seeded by `seed`.", _conditioning,
    [io.Int.Input("seed", default=0, min=0, max=2**63 - 1),
     io.Int.Input("tokens", default=8, min=1, max=512)],
    [io.Conditioning.Output()])


ZCTestClip = _fake_object_node(
    "ZCTestClip", "ZC TEST fake UMT5 CLIP (text hash)",
    "TEST ONLY. A CLIP stand-in whose encodings are seeded from a hash of the text.",
    FakeUMT5Clip, [io.Int.Input("tokens", default=8, min=1, max=512)], [io.Clip.Output()])


ZCTestRaisingVAE = _fake_object_node(
    "ZCTestRaisingVAE", "ZC TEST fake VAE (raises if used)",
    "TEST ONLY. A Wan 2.1-shaped VAE whose encode/decode raise AssertionError.", RaisingVAE)


def _noise_image(seed, width, height, frames) -> io.NodeOutput:
    generator = torch.Generator().manual_seed(seed)
    return io.NodeOutput(torch.rand(frames, height, width, 3, generator=generator))


ZCTestNoiseImage = _node(
    "ZCTestNoiseImage", "ZC TEST seeded noise IMAGE",
    "TEST ONLY. IMAGE [frames, height, width, 3] of seeded uniform noise in [0, 1].", _noise_image,
    [io.Int.Input("seed", default=0, min=0, max=2**63 - 1),
     io.Int.Input("width", default=64, min=8, max=4096, step=8),
     io.Int.Input("height", default=64, min=8, max=4096, step=8),
     io.Int.Input("frames", default=1, min=1, max=1024)],
    [io.Image.Output()])


def _frame_mask(frames, height, width, keep_first) -> io.NodeOutput:
    mask = torch.ones(frames, height, width)
    mask[:keep_first] = 0.0
    return io.NodeOutput(mask)


ZCTestFrameMask = _node(
    "ZCTestFrameMask", "ZC TEST per-frame MASK (0 = keep)",
    "TEST ONLY. MASK [frames, height, width]: 0 on the first `keep_first` frames, "
    "1 after. Build it at the exact latent size: SetLatentNoiseMask reads "
    "[T, H, W] as frames.", _frame_mask,
    [io.Int.Input("frames", default=3, min=1, max=1024),
     io.Int.Input("height", default=8, min=1, max=4096),
     io.Int.Input("width", default=8, min=1, max=4096),
     io.Int.Input("keep_first", default=1, min=0, max=1024)],
    [io.Mask.Output()])


def _capture(label, value):
    captured = _clone_value(value)
    CAPTURED[label] = captured
    CAPTURE_LOG.append((label, captured))


def _capture_latent(samples, label, always_run=False) -> io.NodeOutput:
    _capture(label, samples)
    shape = list(getattr(samples.get("samples"), "shape", []))
    return io.NodeOutput(ui={"zc_test_capture": [{"label": label, "shape": shape}]})


def _capture_latent_fingerprint(samples=None, label="out", always_run=False):
    return float("nan") if always_run else label


ZCTestCaptureLatent = _node(
    "ZCTestCaptureLatent", "ZC TEST capture LATENT",
    "TEST ONLY. Records a clone of the LATENT it receives under `label`.", _capture_latent,
    [io.Latent.Input("samples"),
     io.String.Input("label", default="out"),
     io.Boolean.Input("always_run", default=False, optional=True,
                      tooltip="re-run even when ComfyUI's cache would skip it")],
    fingerprint=_capture_latent_fingerprint, is_output_node=True)


class FakeTextEncoderDims(FakeUMT5Clip):
    """A FakeUMT5Clip with the conditioning layout another family's DiT expects.

    ``dim``: width of the text states (the tiny DiTs' context width). ``pooled_dim`` > 0 adds
    ``pooled_output`` [1, pooled_dim] (HunyuanVideo and FLUX read it); 0 sets it to None.
    ``attention_mask`` adds ``attention_mask`` [1, tokens] of ones (LTX's forward takes it).
    Seeded from a hash of the text, like FakeUMT5Clip."""

    def __init__(self, tokens: int = 8, dim: int = WAN_TEXT_DIM, pooled_dim: int = 0,
                 attention_mask: bool = False):
        super().__init__(tokens)
        self.dim, self.pooled_dim, self.attention_mask = dim, pooled_dim, attention_mask

    def clone(self):
        return FakeTextEncoderDims(self.tokens, self.dim, self.pooled_dim, self.attention_mask)

    def encode_from_tokens(self, tokens, return_pooled=False, return_dict=False):
        text = tokens["zc_test_text"]
        self.calls.append(text)
        seed = _text_seed(text)
        cond = _seeded_randn(seed, 1, tokens["zc_test_tokens"], self.dim)
        pooled = _seeded_randn(seed + 1, 1, self.pooled_dim) if self.pooled_dim else None
        if return_dict:
            out = {"cond": cond, "pooled_output": pooled}
            if self.attention_mask:
                out["attention_mask"] = torch.ones(1, tokens["zc_test_tokens"])
            return out
        return (cond, pooled) if return_pooled else cond


def conditioning_dims(seed: int, tokens: int, dim: int, pooled_dim: int, attention_mask: bool):
    extra = {"pooled_output": _seeded_randn(seed + 1, 1, pooled_dim) if pooled_dim else None}
    if attention_mask:
        extra["attention_mask"] = torch.ones(1, tokens)
    return [[_seeded_randn(seed, 1, tokens, dim), extra]]


ZCTestClipDims = _fake_object_node(
    "ZCTestClipDims", "ZC TEST fake text encoder (any width)",
    "TEST ONLY. A CLIP stand-in with the text-state width, pooled output and "
    "attention mask a tiny DiT of another family expects.",
    FakeTextEncoderDims,
    [io.Int.Input("tokens", default=8, min=1, max=512),
     io.Int.Input("dim", default=WAN_TEXT_DIM, min=1, max=16384),
     io.Int.Input("pooled_dim", default=0, min=0, max=16384),
     io.Boolean.Input("attention_mask", default=False)],
    [io.Clip.Output()])


ZCTestConditioningDims = _node(
    "ZCTestConditioningDims", "ZC TEST fake conditioning (any width)",
    "TEST ONLY. CONDITIONING [[randn(1, tokens, dim), {pooled_output, "
    "attention_mask?}]] seeded by `seed`.",
    lambda **values: io.NodeOutput(conditioning_dims(**values)),
    [io.Int.Input("seed", default=0, min=0, max=2**63 - 1),
     io.Int.Input("tokens", default=8, min=1, max=512),
     io.Int.Input("dim", default=WAN_TEXT_DIM, min=1, max=16384),
     io.Int.Input("pooled_dim", default=0, min=0, max=16384),
     io.Boolean.Input("attention_mask", default=False)],
    [io.Conditioning.Output()])


class FakeLTXAudioVAE:
    """The geometry of an LTX-2 audio VAE (what LTXVEmptyLatentAudio reads), and nothing else.

    latent_channels 8 and 16 frequency bins (mel_bins 64 / 4), 25 latents per second
    (16 kHz, hop 160, 4x down): the values ComfyUI's LTX-2 audio VAE computes from its
    config. encode/decode raise, like RaisingVAE."""

    is_zc_test_fake = True
    latent_channels = 8

    class _Stage:
        latent_frequency_bins = 16
        latents_per_second = 25.0

        def num_of_latents_from_frames(self, frames_number, frame_rate):
            return round((float(frames_number) / frame_rate) * self.latents_per_second)

    def __init__(self):
        self.first_stage_model = self._Stage()

    def encode(self, *args, **kwargs):
        raise AssertionError(VAE_MUST_NOT_BE_CALLED + " (audio encode was called)")

    def decode(self, *args, **kwargs):
        raise AssertionError(VAE_MUST_NOT_BE_CALLED + " (audio decode was called)")


ZCTestLTXAudioVAE = _fake_object_node(
    "ZCTestLTXAudioVAE", "ZC TEST fake LTX-2 audio VAE (geometry only)",
    "TEST ONLY. An audio VAE stand-in for LTXVEmptyLatentAudio: 8 channels, "
    "16 frequency bins, 25 latents per second; encode/decode raise.", FakeLTXAudioVAE)


def _capture_any(value, label) -> io.NodeOutput:
    _capture(label, value)
    return io.NodeOutput()


ZCTestCaptureAny = _node(
    "ZCTestCaptureAny", "ZC TEST capture any value",
    "TEST ONLY. Records a clone of whatever it receives (CONDITIONING, ...) "
    "under `label` in CAPTURED.", _capture_any,
    [io.AnyType.Input("value"), io.String.Input("label", default="any")],
    fingerprint=lambda value=None, label="any": float("nan"), is_output_node=True)


class ShapeOnlyVAE(RaisingVAE):
    """A VAE whose encode returns seeded noise of the right latent shape, and whose decode raises.

    For paths that must encode one frame (a first shot from fallback_first_frame) in families
    with no tiny VAE here (MiniMax H3, FLUX): ``encode(pixels [N, H, W, 3])`` returns
    [1, channels, 1, H/ratio, W/ratio] for a video VAE, [N, channels, H/ratio, W/ratio] for an
    image VAE, seeded from the pixels' sum. Every call is recorded in ``calls``."""

    def __init__(self, channels: int, ratio: int, video: bool):
        super().__init__()
        self.latent_channels, self.ratio, self.video = channels, ratio, video

    def encode(self, pixels, *args, **kwargs):
        self.calls.append("encode")
        n, h, w = pixels.shape[0], pixels.shape[1] // self.ratio, pixels.shape[2] // self.ratio
        seed = int(pixels.double().sum().item() * 1000) & (2**62 - 1)
        shape = (1, self.latent_channels, 1, h, w) if self.video else (n, self.latent_channels, h, w)
        return _seeded_randn(seed, *shape)

    def spacial_compression_encode(self):
        return self.ratio


ZCTestShapeOnlyVAE = _fake_object_node(
    "ZCTestShapeOnlyVAE", "ZC TEST fake VAE (encode = seeded noise of the latent shape)",
    "TEST ONLY. encode returns seeded noise shaped like the family's latent; decode raises.",
    ShapeOnlyVAE,
    [io.Int.Input("channels", default=16, min=1, max=1024),
     io.Int.Input("ratio", default=8, min=1, max=64),
     io.Boolean.Input("video", default=True)])


def _seeded_latent(seed, channels, frames, height, width, scale, shift) -> io.NodeOutput:
    x = _seeded_randn(seed, 1, channels, frames, height, width)
    c = torch.arange(1, channels + 1, dtype=torch.float32).view(1, channels, 1, 1, 1)
    return io.NodeOutput({"samples": x * scale ** c + shift * c})


ZCTestSeededLatent = _node(
    "ZCTestSeededLatent", "ZC TEST seeded video LATENT (per-channel scale and shift)",
    "TEST ONLY. LATENT [1, channels, frames, height, width]: seeded randn, "
    "channel c multiplied by scale**(c+1) and shifted by shift*(c+1) "
    "(a controlled per-channel drift).", _seeded_latent,
    [io.Int.Input("seed", default=0, min=0, max=2**63 - 1),
     io.Int.Input("channels", default=16, min=1, max=1024),
     io.Int.Input("frames", default=3, min=1, max=1024),
     io.Int.Input("height", default=8, min=1, max=4096),
     io.Int.Input("width", default=8, min=1, max=4096),
     io.Float.Input("scale", default=1.0, min=0.0, max=100.0, step=0.001),
     io.Float.Input("shift", default=0.0, min=-100.0, max=100.0, step=0.001)],
    [io.Latent.Output()])


class FakeDecodingVideoVAE:
    """A stand-in VAE whose decode is a fixed function of the latent (no weights): LTX's geometry
    (8x spatial, 8x temporal after the first frame), each pixel frame the mean of its latent
    frame's channels, so a test can tell every decoded frame's source latent frame."""

    is_zc_test_fake = True

    def decode(self, samples):
        b, c, t, h, w = samples.shape
        per_frame = samples.float().mean(dim=1)  # [B, T, H, W]
        index = torch.tensor([0] + [1 + (f - 1) // 8 for f in range(1, 1 + (t - 1) * 8)])
        frames = per_frame[:, index]  # [B, 1 + 8 (T - 1), H, W]
        frames = frames.repeat_interleave(8, dim=2).repeat_interleave(8, dim=3)
        return frames.unsqueeze(-1).expand(-1, -1, -1, -1, 3).contiguous()  # [B, F, H, W, 3]


class FakeDecodingAudioVAE:
    """A stand-in LTX-2 audio VAE whose decode is a fixed function of the latent: 640 samples
    (16 kHz at 25 latents per second) per latent step, both channels the step's mean."""

    is_zc_test_fake = True

    class _Stage:
        output_sample_rate = 16000

    def __init__(self):
        self.first_stage_model = self._Stage()

    def decode(self, latent):
        steps = latent.float().mean(dim=(1, 3))  # [B, T]
        wave = steps.repeat_interleave(640, dim=1)  # [B, samples]
        return wave.unsqueeze(-1).expand(-1, -1, 2).contiguous()  # [B, samples, channels]


class FakeDecodingH3AudioVAE:
    """A stand-in MiniMax H3 audio VAE whose decode is a fixed function of the latent [B, 32, 2, T]:
    800 samples (32 kHz at 40 latents per second) per latent step, each stereo channel the step's
    mean over the 32 channels of that side. Decoded as core's VAE Decode Audio decodes a VAE with an
    audio decoder of its own (it reads ``audio_sample_rate``)."""

    is_zc_test_fake = True
    audio_sample_rate = 32000

    def decode(self, latent):
        steps = latent.float().mean(dim=1)  # [B, 2, T]
        wave = steps.repeat_interleave(800, dim=2)  # [B, 2, samples]
        return wave.movedim(1, -1).contiguous()  # [B, samples, channels]


ZCTestDecodingH3AudioVAE = _fake_object_node(
    "ZCTestDecodingH3AudioVAE", "ZC TEST fake decoding MiniMax H3 audio VAE",
    "TEST ONLY. A fake H3 audio VAE whose decode is a fixed function of the latent "
    "(800 samples per latent step at 32 kHz).",
    FakeDecodingH3AudioVAE, outputs=[io.Vae.Output(display_name="audio_vae")])


ZCTestDecodingVAEs = _fake_object_node(
    "ZCTestDecodingVAEs", "ZC TEST fake decoding video + audio VAEs",
    "TEST ONLY. Fake VAEs whose decode is a fixed function of the latent (LTX "
    "geometry; 640 audio samples per latent step at 16 kHz).",
    lambda: (FakeDecodingVideoVAE(), FakeDecodingAudioVAE()),
    outputs=[io.Vae.Output(display_name="video_vae"), io.Vae.Output(display_name="audio_vae")])


def _hold(samples, seconds) -> io.NodeOutput:
    """TEST ONLY: keeps a prompt running after its Store (the stop-signal tests)."""
    time.sleep(seconds)
    return io.NodeOutput()


ZCTestHold = _node(
    "ZCTestHold", "ZC TEST hold the prompt (sleep)",
    "TEST ONLY. Sleeps the given seconds after its input arrived, then ends.", _hold,
    [io.Latent.Input("samples"), io.Float.Input("seconds", default=5.0, min=0.0, max=600.0)],
    is_output_node=True)


NODES = [ZCTestHold, ZCTestConditioning, ZCTestClip, ZCTestRaisingVAE, ZCTestNoiseImage, ZCTestFrameMask,
         ZCTestCaptureLatent, ZCTestSeededLatent, ZCTestShapeOnlyVAE, ZCTestClipDims, ZCTestConditioningDims, ZCTestLTXAudioVAE,
         ZCTestCaptureAny, ZCTestDecodingVAEs, ZCTestDecodingH3AudioVAE]


def _continue_latent(samples, seed, step) -> io.NodeOutput:
    """A stand-in for a sampler that continues its first latent frame: what a real one does with
    the frame a Handoff placed, without a model."""
    x = samples["samples"].clone()
    scale = step * float(x[:, :, 0].std())
    noise = _seeded_randn(seed, *x[:, :, 1:].shape) * scale
    x[:, :, 1:] = x[:, :, :1] + noise.cumsum(dim=2)
    return io.NodeOutput({**samples, "samples": x})


ZCTestContinueLatent = _node(
    "ZCTestContinueLatent", "ZC TEST continue a video LATENT from its first frame",
    "TEST ONLY. The LATENT with frames 1.. replaced by a seeded random walk from "
    "frame 0 (each step `step` times frame 0's standard deviation); its other "
    "keys (a Handoff's lineage marker, noise_mask) pass through.", _continue_latent,
    [io.Latent.Input("samples"),
     io.Int.Input("seed", default=0, min=0, max=2**63 - 1),
     io.Float.Input("step", default=0.1, min=0.0, max=10.0, step=0.001)],
    [io.Latent.Output()])


NODES.append(ZCTestContinueLatent)


# ComfyUI's real out-of-memory recovery (execution.py: is_oom -> unload_all_models), driven on a
# CPU-only machine (the residency-lock tests, tests/integration/test_vram_pin.py).
FAKE_OOM_MESSAGE = "ZCResidencyTestRaiseOOM: simulated CUDA out of memory (test-only node)"


def _raise_oom(samples, attempt=0) -> io.NodeOutput:
    raise torch.cuda.OutOfMemoryError(FAKE_OOM_MESSAGE)


NODES.append(_node(
    "ZCResidencyTestRaiseOOM", "ZC TEST raise CUDA OOM",
    "TEST ONLY. Raises torch.cuda.OutOfMemoryError after its input is ready.", _raise_oom,
    [io.Latent.Input("samples", tooltip="anything to order it after the sampler"),
     io.Int.Input("attempt", default=0, min=0, max=1 << 30,
                  tooltip="change it to make the node run again")],
    is_output_node=True))


class ZCTestNodesExtension(ComfyExtension):
    async def get_node_list(self) -> list[type[io.ComfyNode]]:
        return list(NODES)


async def comfy_entrypoint() -> ZCTestNodesExtension:
    return ZCTestNodesExtension()
