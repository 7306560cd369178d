"""Every other adapter's conditioning and LATENT against core's own node, for the same request.

The Wan I2V adapter has its own module (test_conditioning_as_core.py: core's WanImageToVideo
encodes padding pixels, so the real Wan 2.1 VAE architecture decides the comparison there).
Here, for each other adapter, the same request is built two ways on real ComfyUI (CPU):

- core's own node, called in-process, given a start image whose VAE encoding is known;
- the Handoff, given a stored tail equal to that encoding (and a VAE that raises if it is
  called: continuing from the store never encodes).

These core nodes place ``vae.encode(start image)`` verbatim and derive everything else (masks,
padding, indices, shapes) from the canvas and the encoding's shape, so the VAE's weights do not
enter the comparison. HunyuanVideo 1.0 uses the real Wan 2.1 VAE architecture with random
weights (the ``wan21_vae`` fixture: the same 16 channels and 4x8x8 compression as the
HunyuanVideo VAE, a causal 3D encoder); for the families with no small VAE here (the Wan 2.2,
HunyuanVideo 1.5, LTX, MiniMax H3 and FLUX VAEs are fixed at their released widths in ComfyUI)
``KnownVAE`` returns seeded latents of the family's exact shape. Every key, mask, padding
value, index, shape and dtype must equal core's bit for bit, the tail slots must equal the
stored tail bit for bit, and the differences an adapter names (the lineage and guide markers
in the LATENT, MiniMax's held tails) are the only exceptions, each checked for what it is.
Each test also changes one value of ours and expects the comparison to fail.

``temporal_inpaint`` mirrors no core node outside Wan 2.2 TI2V 5B (core starts clips from
latents only per family), so its generic path has nothing to compare with; its 5B path is
``Wan22ImageToVideoLatent`` below.
"""

from __future__ import annotations

import copy

import pytest
import torch
from conftest import Graph
from test_families_support import pack, pack_module, require_nodes, same_bits, shared_store, streams  # noqa: F401

W, H = 64, 64


class KnownVAE:
    """A VAE whose encode returns a seeded latent of the family's exact shape (the seed is the
    pixels' sum), and records each encoding in ``encoded``: the start image's encoding is known.
    ``latents(frames)`` is the family's latent frame count for ``frames`` pixel frames (None: an
    image VAE, [N, C, h, w])."""

    def __init__(self, channels, ratio, latents=None, time_ratio=1):
        self.channels, self.ratio, self.latents = channels, ratio, latents
        self.downscale_index_formula = (time_ratio, ratio, ratio)  # what LTXVAddGuide reads
        self.encoded: list[torch.Tensor] = []

    def encode(self, pixels):
        n, h, w = pixels.shape[0], pixels.shape[1] // self.ratio, pixels.shape[2] // self.ratio
        seed = int(pixels.double().sum().item() * 1000) & (2**62 - 1)
        shape = ((1, self.channels, self.latents(n), h, w) if self.latents else (n, self.channels, h, w))
        out = torch.randn(shape, generator=torch.Generator().manual_seed(seed))
        self.encoded.append(out)
        return out


class KnownAudioVAE:
    """An audio VAE whose encode returns a given latent (MiniMaxH3AddGuide's audio guide)."""

    audio_sample_rate = 32000

    def __init__(self, latent):
        self.latent = latent

    def encode(self, waveform):
        return self.latent.clone()


def video_latents(time_ratio):
    return lambda frames: (frames - 1) // time_ratio + 1


def start_image(frames, seed=40):
    return torch.rand(frames, H, W, 3, generator=torch.Generator().manual_seed(seed))


def core(name, **inputs):
    """core's node ``name`` called as ComfyUI's executor calls it (inference mode); its outputs."""
    import nodes

    require_nodes(name)
    cls = nodes.NODE_CLASS_MAPPINGS[name]
    with torch.inference_mode():
        if hasattr(cls, "FUNCTION"):  # a V1 node
            return tuple(getattr(cls(), cls.FUNCTION)(**inputs))
        out = cls.execute(**inputs)
    return tuple(out.args if hasattr(out, "args") else out)


def conditioning(comfyui):
    """The positive and negative the Handoff and core both get (graph nodes and their values)."""
    g = Graph()
    pos = g.add("ZCTestConditioning", seed=1, tokens=8)
    neg = g.add("ZCTestConditioning", seed=2, tokens=8)
    run = comfyui.run(g.prompt, targets=[pos, neg])
    return comfyui.output(run, pos), comfyui.output(run, neg)


def store(pack, tag, tensors: list[torch.Tensor], meta: dict, before: int = 1):
    """A previous shot whose last latents are ``tensors`` (video, then audio): ``before`` seeded
    latents first for a video, the image itself for an image family."""
    video = tensors[0]
    if video.ndim == 5 and before:
        lead = torch.randn(video.shape[:2] + (before,) + video.shape[3:],
                           generator=torch.Generator().manual_seed(3))
        video = torch.cat([lead, video], 2)
    named = {"latent_tensor": video.contiguous()}
    for i, extra in enumerate(tensors[1:], 1):
        named[f"latent_tensor_{i}"] = extra.contiguous()
    shared_store(pack).put(tag, named, {**meta, "streams": str(len(tensors))})


def handoff(comfyui, tag, *, adapter, length, k, prompt="", positive=True, width=W, height=H):
    """The Handoff's (positive, latent, negative, info) for the stored tag, VAE never called."""
    g = Graph()
    inputs = dict(clip=g.out(g.add("ZCTestClip", tokens=8)), vae=g.out(g.add("ZCTestRaisingVAE")),
                  prompt=prompt, width=width, height=height, length=length, buffer_tag=tag,
                  continuity_mode="zero_copy_latent_only", blend_ratio=0.0, tail_frames=k,
                  adapter=adapter)
    if positive:
        inputs["positive"] = g.out(g.add("ZCTestConditioning", seed=1, tokens=8))
        inputs["negative"] = g.out(g.add("ZCTestConditioning", seed=2, tokens=8))
    hand = g.add("ZeroCopyLatentHandoff", **inputs)
    comfyui.reset_cache()
    run = comfyui.run(g.prompt, targets=[hand])
    return [comfyui.output(run, hand, i) for i in range(4)]


def assert_same(ours, theirs, where="value"):
    """``ours`` equals ``theirs`` bit for bit, recursively (dicts with the same keys, lists of the
    same length, tensors of the same shape, dtype and bits, nested tensors stream by stream)."""
    if getattr(theirs, "is_nested", False) or getattr(ours, "is_nested", False):
        mine, core_streams = streams(ours), streams(theirs)
        assert len(mine) == len(core_streams), f"{where}: {len(mine)} streams, core's {len(core_streams)}"
        for i, (a, b) in enumerate(zip(mine, core_streams)):
            assert_same(a, b, f"{where}[stream {i}]")
    elif isinstance(theirs, torch.Tensor):
        assert isinstance(ours, torch.Tensor), f"{where}: {type(ours).__name__}, core's is a tensor"
        assert ours.shape == theirs.shape, f"{where}: shape {tuple(ours.shape)}, core's {tuple(theirs.shape)}"
        assert ours.dtype == theirs.dtype, f"{where}: dtype {ours.dtype}, core's {theirs.dtype}"
        assert same_bits(ours, theirs), f"{where}: values differ from core's"
    elif isinstance(theirs, dict):
        assert isinstance(ours, dict) and set(ours) == set(theirs), \
            f"{where}: keys {sorted(ours) if isinstance(ours, dict) else ours}, core's {sorted(theirs)}"
        for key in theirs:
            assert_same(ours[key], theirs[key], f"{where}[{key!r}]")
    elif isinstance(theirs, (list, tuple)):
        assert isinstance(ours, (list, tuple)) and len(ours) == len(theirs), f"{where}: length differs"
        for i, (a, b) in enumerate(zip(ours, theirs)):
            assert_same(a, b, f"{where}[{i}]")
    else:
        assert ours == theirs, f"{where}: {ours!r}, core's {theirs!r}"


def without(latent: dict, *keys) -> dict:
    return {k: v for k, v in latent.items() if k not in keys}


def lineage_marker(pack):
    return pack_module(pack, "zc_continuity.lineage").MARKER


def wrong(value: torch.Tensor, index) -> torch.Tensor:
    """A copy of ``value`` with one element changed by the smallest step that changes its bits."""
    out = value.clone()
    out[index] = torch.nextafter(out[index], out[index] + 1)
    return out


def must_fail(check, *args):
    with pytest.raises(AssertionError):
        check(*args)


# --- Wan 2.2 TI2V 5B: temporal_inpaint as Wan22ImageToVideoLatent ------------------------------

@pytest.mark.parametrize("k", [1, 2])
def test_wan22_5b_temporal_inpaint_equals_wan22_image_to_video_latent(comfyui, captures, pack, k):
    length = 13  # latent [1, 48, 4, 4, 4]
    vae = KnownVAE(48, 16, video_latents(4))
    (core_latent,) = core("Wan22ImageToVideoLatent", vae=vae, width=W, height=H, length=length,
                          batch_size=1, start_image=start_image((k - 1) * 4 + 1))
    tail = vae.encoded[-1]
    assert tail.shape[2] == k
    store(pack, f"core_wan22_{k}", [tail], {"family": "wan22_5b"})
    _, latent, _, info = handoff(comfyui, f"core_wan22_{k}", adapter="temporal_inpaint", length=length, k=k)
    assert "as core's Wan22ImageToVideoLatent builds it" in info
    ours = without(latent, lineage_marker(pack))
    assert_same(ours, core_latent, "latent")
    assert same_bits(latent["samples"][:, :, :k], tail)
    assert latent["samples"].dtype == torch.float32 and latent["noise_mask"].dtype == torch.float32
    must_fail(assert_same, dict(ours, samples=wrong(ours["samples"], (0, 0, k, 0, 0))), core_latent)
    must_fail(assert_same, dict(ours, noise_mask=wrong(ours["noise_mask"], (0, 0, 0, 0, 0))), core_latent)


# --- HunyuanVideo 1.0 (v1 concat, v2 replace) and 1.5 ------------------------------------------

def wan21_vae_object(comfyui, name):
    g = Graph()
    node = g.add("VAELoader", vae_name=name)
    return comfyui.output(comfyui.run(g.prompt, targets=[node]), node)


@pytest.mark.parametrize("guidance", ["v2 (replace)", "v1 (concat)"])
@pytest.mark.parametrize("k", [1, 2])
def test_hunyuan10_i2v_equals_hunyuan_image_to_video(comfyui, captures, pack, wan21_vae, guidance, k):
    length = 9  # latent [1, 16, 3, 8, 8]
    vae = wan21_vae_object(comfyui, wan21_vae.name)  # the real causal 3D architecture, random weights
    positive, negative = conditioning(comfyui)
    try:
        core_positive, core_latent = core("HunyuanImageToVideo", positive=positive, vae=vae, width=W,
                                          height=H, length=length, batch_size=1, guidance_type=guidance,
                                          start_image=start_image((k - 1) * 4 + 1))
    except TypeError as exc:  # an older HunyuanImageToVideo without guidance_type
        pytest.skip(f"skipped: this ComfyUI's HunyuanImageToVideo has no guidance_type ({exc})")
    concat = guidance == "v1 (concat)"
    tail = (core_positive[0][1]["concat_latent_image"] if concat else core_latent["samples"][:, :, :k])
    tail = tail.contiguous()
    assert tail.shape[2] == k
    tag = f"core_hy10_{k}_{'v1' if concat else 'v2'}"
    meta = {"family": "hunyuan_video", **({"model_variant": "i2v_concat"} if concat else {})}
    store(pack, tag, [tail], meta)
    ours_positive, latent, ours_negative, info = handoff(comfyui, tag, adapter="hunyuan_i2v",
                                                         length=length, k=k)
    assert f"as core's HunyuanImageToVideo (guidance_type {guidance}) builds it" in info
    ours_latent = without(latent, lineage_marker(pack))
    assert_same(ours_positive, core_positive, "positive")
    assert_same(ours_negative, negative, "negative")  # core's node leaves the negative alone
    assert_same(ours_latent, core_latent, "latent")
    if concat:
        assert same_bits(ours_positive[0][1]["concat_latent_image"], tail)
        mask = ours_positive[0][1]["concat_mask"]
        bad = copy.copy(ours_positive[0][1])
        bad["concat_mask"] = wrong(mask, (0, 0, k, 0, 0))
        must_fail(assert_same, [[ours_positive[0][0], bad]], core_positive)
    else:
        assert same_bits(latent["samples"][:, :, :k], tail)
        assert ours_positive[0][1]["guiding_frame_index"] == 0
        bad_mask = wrong(ours_latent["noise_mask"], (0, 0, k - 1, 0, 0))
        must_fail(assert_same, dict(ours_latent, noise_mask=bad_mask), core_latent)
    bad_samples = wrong(ours_latent["samples"], (0, 0, k, 0, 0))
    must_fail(assert_same, dict(ours_latent, samples=bad_samples), core_latent)


@pytest.mark.parametrize("k", [1, 2])
def test_hunyuan15_i2v_equals_hunyuan_video15_image_to_video(comfyui, captures, pack, k):
    length = 9  # latent [1, 32, 3, 4, 4]
    vae = KnownVAE(32, 16, video_latents(4))
    positive, negative = conditioning(comfyui)
    core_positive, core_negative, core_latent = core(
        "HunyuanVideo15ImageToVideo", positive=positive, negative=negative, vae=vae, width=W, height=H,
        length=length, batch_size=1, start_image=start_image((k - 1) * 4 + 1))
    tail = vae.encoded[-1]
    store(pack, f"core_hy15_{k}", [tail], {"family": "hunyuan_video15"})
    ours_positive, latent, ours_negative, info = handoff(comfyui, f"core_hy15_{k}", adapter="hunyuan15_i2v",
                                                         length=length, k=k)
    assert "as core's HunyuanVideo15ImageToVideo builds it" in info
    assert_same(ours_positive, core_positive, "positive")
    assert_same(ours_negative, core_negative, "negative")
    assert_same(without(latent, lineage_marker(pack)), core_latent, "latent")
    image = ours_positive[0][1]["concat_latent_image"]
    assert same_bits(image[:, :, :k], tail)
    bad = dict(ours_positive[0][1], concat_latent_image=wrong(image, (0, 0, k, 0, 0)))  # padding
    must_fail(assert_same, [[ours_positive[0][0], bad]], core_positive)


# --- LTX-Video: ltx_latent_guide as LTXVAddGuide (frame_idx 0, strength 1) ----------------------

@pytest.mark.parametrize("k", [1, 2])
def test_ltx_latent_guide_equals_ltxv_add_guide(comfyui, captures, pack, k):
    length = 17  # latent [1, 128, 3, 2, 2]
    vae = KnownVAE(128, 32, video_latents(8), time_ratio=8)
    positive, negative = conditioning(comfyui)
    (empty,) = core("EmptyLTXVLatentVideo", width=W, height=H, length=length, batch_size=1)
    core_positive, core_negative, core_latent = core(
        "LTXVAddGuide", positive=positive, negative=negative, vae=vae, latent=empty,
        image=start_image((k - 1) * 8 + 1), frame_idx=0, strength=1.0)
    tail = vae.encoded[-1]
    assert tail.shape[2] == k
    store(pack, f"core_ltxv_{k}", [tail], {"family": "ltxv"})
    ours_positive, latent, ours_negative, info = handoff(comfyui, f"core_ltxv_{k}", adapter="ltx_latent_guide",
                                                         length=length, k=k)
    assert "as core's LTXVAddGuide builds it" in info
    guide_marker = pack_module(pack, "zc_continuity.ltx").GUIDE_MARKER
    assert latent[guide_marker] == {"guide_frames": k, "video_frames": 3}  # a named difference
    ours_latent = without(latent, lineage_marker(pack), guide_marker)
    assert_same(ours_positive, core_positive, "positive")
    assert_same(ours_negative, core_negative, "negative")
    assert_same(ours_latent, core_latent, "latent")
    assert same_bits(latent["samples"][:, :, 3:], tail)  # the guides, appended after the clip
    idxs = ours_positive[0][1]["keyframe_idxs"]
    bad = dict(ours_positive[0][1], keyframe_idxs=idxs + 1)
    must_fail(assert_same, [[ours_positive[0][0], bad]], core_positive)
    must_fail(assert_same, dict(ours_latent, noise_mask=wrong(ours_latent["noise_mask"], (0, 0, 3, 0, 0))),
              core_latent)


# --- FLUX: Kontext reference (ReferenceLatent) and img2img (VAEEncode) -------------------------

def flux_start(comfyui, pack, tag, seed):
    vae = KnownVAE(16, 8)
    (encoded,) = core("VAEEncode", pixels=start_image(1, seed), vae=vae)
    store(pack, tag, [encoded["samples"]], {"family": "flux"}, before=0)
    return encoded


def test_flux_kontext_reference_equals_reference_latent(comfyui, captures, pack):
    encoded = flux_start(comfyui, pack, "core_kontext", 41)
    positive, negative = conditioning(comfyui)
    (core_positive,) = core("ReferenceLatent", conditioning=positive, latent=encoded)
    (core_negative,) = core("ReferenceLatent", conditioning=negative, latent=encoded)
    (core_latent,) = core("EmptySD3LatentImage", width=W, height=H, batch_size=1)
    ours_positive, latent, ours_negative, info = handoff(comfyui, "core_kontext", length=1, k=1,
                                                         adapter="flux_kontext_reference")
    assert "as core's ReferenceLatent builds it" in info
    assert_same(ours_positive, core_positive, "positive")
    assert_same(ours_negative, core_negative, "negative")
    assert_same(without(latent, lineage_marker(pack)), core_latent, "latent")
    reference = ours_positive[0][1]["reference_latents"][0]
    assert same_bits(reference, encoded["samples"])
    bad = dict(ours_positive[0][1], reference_latents=[wrong(reference, (0, 0, 0, 0))])
    must_fail(assert_same, [[ours_positive[0][0], bad]], core_positive)


def test_flux_img2img_equals_vae_encode(comfyui, captures, pack):
    encoded = flux_start(comfyui, pack, "core_img2img", 42)
    positive, negative = conditioning(comfyui)
    ours_positive, latent, ours_negative, info = handoff(comfyui, "core_img2img", length=1, k=1,
                                                         adapter="flux_img2img")
    assert "as core's VAEEncode builds it" in info
    ours_latent = without(latent, lineage_marker(pack))
    assert_same(ours_latent, encoded, "latent")  # core's img2img: VAEEncode's LATENT into the KSampler
    assert_same(ours_positive, positive, "positive")  # no conditioning key added, as core adds none
    assert_same(ours_negative, negative, "negative")
    must_fail(assert_same, {"samples": wrong(ours_latent["samples"], (0, 3, 2, 1))}, encoded)


# --- MiniMax H3: the keyframe entry --------------------------------------------------------------

H3_LENGTH = 39  # 17k+5 (the Handoff refuses others): video [1, 24, 12, 4, 4], audio [1, 32, 2, 65]


def h3_latents(frames):
    """The H3 VAE's latent count: 1 for one frame, else 5j+2 for 17j+5 frames."""
    return 1 if frames == 1 else ((frames - 5) // 17) * 5 + 2


def test_minimax_h3_keyframe_equals_core(comfyui, captures, pack):
    """v0.33.0: MiniMaxH3ImageToVideo (first_frame; one latent frame per keyframe). A ComfyUI with
    MiniMaxH3AddGuide: that node at frame 0 with the tail clip and its audio (clip keyframes)."""
    require_nodes("EmptyMiniMaxH3LatentAV")
    import nodes

    clip_guides = "MiniMaxH3AddGuide" in nodes.NODE_CLASS_MAPPINGS
    (empty,) = core("EmptyMiniMaxH3LatentAV", width=W, height=H, length=H3_LENGTH)
    empty_video, empty_audio = streams(empty["samples"])
    vae = KnownVAE(24, 16, h3_latents)
    prompt = "the next shot"
    g = Graph()
    clip_node = g.add("ZCTestClip", tokens=8)
    clip = comfyui.output(comfyui.run(g.prompt, targets=[clip_node]), clip_node)
    if clip_guides:  # the tail clip: 7 latents, 22 pixel frames
        text = clip.encode_from_tokens_scheduled(clip.tokenize(prompt))
        core("MiniMaxH3AddGuide", positive=text, latent=empty, frame_idx=0, vae=vae, image=start_image(22))
        video_tail = vae.encoded[-1]
        core_name = "MiniMaxH3AddGuide"
    else:  # one frame: a 1-latent keyframe, continued by a 2-latent (chunk-start) tail
        core_positive, core_latent = core("MiniMaxH3ImageToVideo", clip=clip, vae=vae, prompt=prompt,
                                          width=W, height=H, length=H3_LENGTH, first_frame=start_image(1))
        assert_same(core_latent, empty, "core's latent")
        video_tail = torch.cat([vae.encoded[-1], torch.randn(vae.encoded[-1].shape,
                                                            generator=torch.Generator().manual_seed(7))], 2)
        core_name = "MiniMaxH3ImageToVideo"
    k = video_tail.shape[2]
    stored_audio = torch.randn(empty_audio.shape, generator=torch.Generator().manual_seed(6))
    store(pack, "core_h3", [video_tail, stored_audio], {"family": "minimax_h3"},
          before=empty_video.shape[2] - k)
    ours_positive, latent, _, info = handoff(comfyui, "core_h3", adapter="minimax_h3_keyframe",
                                             length=H3_LENGTH, k=k, prompt=prompt, positive=False)
    assert f"as core's {core_name}" in info
    entry = ours_positive[0][1]["minimax_keyframes"]
    if clip_guides:  # the aligned audio tail is the stored audio's end, bit for bit
        audio = entry[0]["audio_latent"]
        assert same_bits(audio, stored_audio[..., -audio.shape[-1]:])
        (core_positive,) = core("MiniMaxH3AddGuide", positive=text, latent=empty, frame_idx=0, vae=vae,
                                audio_vae=KnownAudioVAE(audio), image=start_image(22),
                                audio={"waveform": torch.zeros(1, 1, 3200), "sample_rate": 32000})
    (cond, extra), (core_cond, core_extra) = ours_positive[0], core_positive[0]
    assert_same(cond, core_cond, "text conditioning")
    core_entry = core_extra["minimax_keyframes"]
    assert_same(entry, core_entry, "minimax_keyframes")
    assert same_bits(entry[0]["latent"], video_tail if clip_guides else video_tail[:, :, :1])
    for key, value in core_extra.items():  # v0.33.0's node also sets minimax_frame_count
        assert_same(extra[key], value, key)
    extra_keys = set(extra) - set(core_extra)
    assert extra_keys <= {"minimax_frame_count"}, extra_keys
    if extra_keys:  # set where this core no longer sets it: a named difference
        assert extra["minimax_frame_count"] == H3_LENGTH
        assert f"minimax_frame_count {extra['minimax_frame_count']} is set" in info
    # the latent: core's empty AV latent's shapes and dtypes, the tails held (a named difference)
    ours_video, ours_audio = streams(latent["samples"])
    for mine, theirs in ((ours_video, empty_video), (ours_audio, empty_audio)):
        assert mine.shape == theirs.shape and mine.dtype == theirs.dtype
    assert same_bits(ours_video[:, :, :k], video_tail)
    assert "the latent holds the video and audio tails" in info
    bad = [dict(entry[0], latent=wrong(entry[0]["latent"], (0, 0, 0, 0, 0)))]
    must_fail(assert_same, bad, core_entry)


# --- temporal_inpaint on LTX-Video: LTXVImgToVideo's layout (strength 1) -----------------------

def test_ltx_temporal_inpaint_equals_ltxv_img_to_video_but_the_mask_layout(comfyui, captures, pack):
    """temporal_inpaint mirrors no core node in general; on LTX-Video its layout is
    LTXVImgToVideo's (strength 1): the same samples bit for bit, and the same noise mask values,
    held per latent pixel [B, 1, T, H, W] where core's is per frame [B, 1, T, 1, 1] (the sampler
    resizes core's to the latent size, so the model sees the same mask)."""
    length, k = 17, 1
    vae = KnownVAE(128, 32, video_latents(8), time_ratio=8)
    positive, negative = conditioning(comfyui)
    core_positive, core_negative, core_latent = core(
        "LTXVImgToVideo", positive=positive, negative=negative, image=start_image(1), vae=vae, width=W,
        height=H, length=length, batch_size=1, strength=1.0)
    tail = vae.encoded[-1]
    store(pack, "core_ltxv_inpaint", [tail], {"family": "ltxv"})
    ours_positive, latent, ours_negative, info = handoff(comfyui, "core_ltxv_inpaint", length=length, k=k,
                                                         adapter="temporal_inpaint")
    assert "as core's LTXVImgToVideo (strength 1) builds it" in info
    assert "noise_mask is held per latent pixel" in info
    assert_same(ours_positive, core_positive, "positive")
    assert_same(ours_negative, core_negative, "negative")
    assert_same(latent["samples"], core_latent["samples"], "samples")
    assert same_bits(latent["samples"][:, :, :k], tail)
    mask, core_mask = latent["noise_mask"], core_latent["noise_mask"]
    assert mask.shape == (1, 1, 3, 2, 2) and core_mask.shape == (1, 1, 3, 1, 1)
    assert_same(mask, core_mask.expand(mask.shape).contiguous(), "noise_mask (core's, per pixel)")
    must_fail(assert_same, latent["samples"], wrong(core_latent["samples"], (0, 0, 1, 0, 0)))
