"""Build the example workflows (UI format) from the node schemas of a real ComfyUI.

    COMFYUI_PATH=/path/to/ComfyUI python tools/build_examples.py [--check]

writes example_workflows/<name>.json (ComfyUI's template browser lists that
folder) and examples/README.md, the index of the workflows with the model files each
needs. The JSON files are not copied into examples/: ComfyUI scans both folders for
templates, and a copy would list every workflow twice. ``--check`` writes nothing and exits
1 when a file differs from what the schemas give (the integration tests run the
same check). Each example is a function of a ``Profile``: "release" names the
real model files and sizes; "tiny" (Wan 2.1 only) swaps in the tests' random-weight
models and test-only nodes at 64x64x9 so the very same graph runs on a CPU.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from dataclasses import dataclass, replace
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
WORKFLOW_DIR = REPO / "example_workflows"
INDEX = REPO / "examples" / "README.md"
# loader inputs that name a model file: (node type, input)
MODEL_INPUTS = {
    ("UNETLoader", "unet_name"): "diffusion_models",
    ("CheckpointLoaderSimple", "ckpt_name"): "checkpoints",
    ("CLIPLoader", "clip_name"): "text_encoders",
    ("DualCLIPLoader", "clip_name1"): "text_encoders",
    ("DualCLIPLoader", "clip_name2"): "text_encoders",
    ("VAELoader", "vae_name"): "vae",
    ("CLIPVisionLoader", "clip_name"): "clip_vision",
    ("LTXAVTextEncoderLoader", "text_encoder"): "text_encoders",
    ("LTXVAudioVAELoader", "ckpt_name"): "checkpoints",
    ("AudioEncoderLoader", "audio_encoder_name"): "audio_encoders",
    ("LoraLoaderModelOnly", "lora_name"): "loras",
}
# examples that need a custom node pack besides this one: (node types, the pack, its path variable).
# Without the pack the builder keeps the shipped file as it is and says so.
NEEDS_PACKS = {
    "wan22_svi_pro_chain": (("WanImageToVideoSVIPro",), "kijai/ComfyUI-KJNodes", "KJNODES_PATH"),
}
TAG_NOTE = (
    "Every ZeroCopy Latent Store writes the tag; the Handoff of the next shot reads it. The "
    "`continuity` link orders the graph (Store before Handoff) and pins the exact shot. "
    "ZeroCopy VRAM Pin keeps the diffusion model resident between shots and queue runs."
)
WAN_TEXT_ENCODER = "umt5_xxl_fp8_e4m3fn_scaled.safetensors"  # Wan 2.1 and 2.2 alike
WAN_NEGATIVE = "blurry, low quality, static, distorted, watermark"


@dataclass(frozen=True)
class Profile:
    name: str = "release"
    width: int = 832
    height: int = 480
    length: int = 81
    steps: int = 20
    cfg: float = 6.0
    sampler: str = "uni_pc"
    unet: str = "wan2.1_i2v_480p_14B_fp16.safetensors"
    vae: str = "wan_2.1_vae.safetensors"
    text_encoder: str | None = WAN_TEXT_ENCODER  # None: ZCTestClip
    clip_vision: str | None = "clip_vision_h.safetensors"  # None: no CLIP vision
    start_image: str | None = "example.png"  # None: ZCTestNoiseImage
    tag: str = "wan21_i2v_film"


RELEASE = Profile()


def tiny_profile(unet: str, vae: str, tag: str = "zc_tiny_film") -> Profile:
    """The Wan 2.1 I2V chain on the integration tests' tiny models and test-only nodes."""
    return replace(
        RELEASE,
        name="tiny",
        width=64,
        height=64,
        length=9,
        steps=2,
        cfg=1.0,
        sampler="euler",
        unet=unet,
        vae=vae,
        text_encoder=None,
        clip_vision=None,
        start_image=None,
        tag=tag,
    )


def _read_me(wf, lines: list[str], size):
    """The example's note at the top left: its own lines, then the tag paragraph every example shares."""
    return wf.note((-520, -40), "\n".join([*lines, "", TAG_NOTE]), size=size)


def _pin(wf, model_ref, pos=(0, 120)):
    """ZeroCopyVRAMPin after the loader: the diffusion model stays resident between shots."""
    return wf.add(
        "ZeroCopyVRAMPin",
        pos,
        size=(340, 250),  # its widgets and its residency badge (the frontends' own minimum size)
        model=model_ref,
        enable_pinning=True,
        tune_allocator=False,
        title="Keep the model in VRAM",
    )


def _unet(wf, name, pos=(0, 0), title=None):
    """A UNETLoader of the standard size, default weight dtype."""
    return wf.add("UNETLoader", pos, size=(340, 90), unet_name=name, weight_dtype="default", title=title)


def _wan_model(wf, unet_name, y=390):
    """The Wan examples' model column: UNETLoader -> ZeroCopyVRAMPin -> ModelSamplingSD3 (shift 8) at y."""
    pin = _pin(wf, _unet(wf, unet_name).out(0))
    return wf.add("ModelSamplingSD3", (0, y), size=(340, 60), model=pin.out(0), shift=8.0)


def _wan_loaders(wf, unet_name, vae_name, y=390):
    """The Wan examples' loader column: the model (as _wan_model) at y, the text encoder and the VAE
    below it. Returns (model, clip, vae)."""
    return (_wan_model(wf, unet_name, y), _clip_loader(wf, y + 100, WAN_TEXT_ENCODER, "wan"),
            _vae_loader(wf, y + 250, vae_name))


def _clip_loader(wf, y, name, kind):
    """A CLIPLoader of the standard size in the loader column."""
    return wf.add("CLIPLoader", (0, y), size=(340, 110), clip_name=name, type=kind, device="default")


def _vae_loader(wf, y, name):
    """A VAELoader of the standard size in the loader column."""
    return wf.add("VAELoader", (0, y), size=(340, 60), vae_name=name)


def _image(wf, y, name="example.png", title=None):
    """A LoadImage of the standard size in the loader column."""
    return wf.add("LoadImage", (0, y), size=(340, 330), image=name, title=title)


def _text(wf, pos, clip, text, title):
    """A CLIPTextEncode (a prompt) of the standard size."""
    return wf.add("CLIPTextEncode", pos, size=(400, 140), clip=clip, text=text, title=title)


def _load(wf, pos, tag, shot, frames, frames_from, title):
    """A ZeroCopyLatentLoad of the standard size (generation 0: the newest that verifies)."""
    return wf.add("ZeroCopyLatentLoad", pos, size=(340, 200), buffer_tag=tag, shot=shot, generation=0,
                  frames=frames, frames_from=frames_from, title=title)


def _sampling(steps, cfg, sampler) -> dict:
    """The KSampler settings of an example (simple scheduler, full denoise)."""
    return {"steps": steps, "cfg": cfg, "sampler_name": sampler, "scheduler": "simple", "denoise": 1.0}


def _ksampler(wf, pos, model, seed, positive, negative, latent, sampler_args):
    """A KSampler node of the standard size at pos."""
    return wf.add(
        "KSampler",
        pos,
        size=(320, 270),
        model=model,
        seed=seed,
        positive=positive,
        negative=negative,
        latent_image=latent,
        **sampler_args,
    )


def _handoff(wf, pos, **inputs):
    """A ZeroCopyLatentHandoff node of the standard size at pos; the examples' settings
    (zero-copy mode, one tail frame, auto adapter, newest generation) unless given."""
    for name, value in (
        ("continuity_mode", "zero_copy_latent_only"),
        ("blend_ratio", 0.0),
        ("tail_frames", 1),
        ("adapter", "auto"),
        ("generation", 0),
    ):
        inputs.setdefault(name, value)
    # the height Nodes 2.0 gives every input unfolded (a ComfyUI without advanced=, v0.3.75: 786 px) and the badge
    return wf.add("ZeroCopyLatentHandoff", pos, size=(380, 800), **inputs)


def _store(wf, pos, samples, tag, title, model=None):
    """A ZeroCopyLatentStore of the standard size (the model, when given, names the family)."""
    model_input = {} if model is None else {"model": model}
    return wf.add("ZeroCopyLatentStore", pos, size=(340, 260), samples=samples, buffer_tag=tag, title=title,
                  **model_input)


@dataclass(frozen=True)
class Saving:
    """How a shot's stored latent is decoded and saved, placed from its Store's position."""

    prefix: str = "zerocopy/shot"  # the file name's prefix; the shot's number follows
    fps: float | None = 16  # an animated WEBP at this frame rate; None: a still (SaveImage)
    decode_at: tuple[int, int] = (0, 300)  # VAEDecode, from the Store
    save_at: tuple[int, int] = (250, 300)  # the save node, from the Store

    @property
    def noun(self) -> str:
        return "shot" if self.fps else "still"


VIDEO = Saving()


def _stills(prefix: str) -> tuple[Saving, Saving]:
    """The stills' savings: still 1 decoded below its Store, a later still beside it."""
    below = Saving(prefix, fps=None, save_at=(260, 300))
    return below, replace(below, decode_at=(380, 0), save_at=(380, 100))


def _shot_outputs(wf, x, y, samples, vae, tag, model, shot, saving=VIDEO):
    """The end of a shot: ZeroCopyLatentStore at (x, y) -> VAEDecode -> save, as ``saving`` places
    them. Returns [store, decode, save]."""
    store = _store(wf, (x, y), samples, tag, f"Store {saving.noun} {shot}", model)
    decode = wf.add("VAEDecode", (x + saving.decode_at[0], y + saving.decode_at[1]), size=(220, 50),
                    samples=store.out(0), vae=vae)
    at = (x + saving.save_at[0], y + saving.save_at[1])
    if saving.fps is None:
        save = wf.add("SaveImage", at, size=(330, 330), images=decode.out(0),
                      filename_prefix=f"{saving.prefix}{shot}")
    else:
        save = wf.add(
            "SaveAnimatedWEBP",
            at,
            size=(300, 330),  # the shot's group ends before the next shot's Handoff (shots are 1000 apart)
            images=decode.out(0),
            filename_prefix=f"{saving.prefix}{shot}",
            fps=float(saving.fps),
            lossless=False,
            quality=90,
            method="default",
        )
    return [store, decode, save]


def _store_of(nodes):
    """The ZeroCopyLatentStore among a shot's nodes."""
    return next(node for node in nodes if node.type == "ZeroCopyLatentStore")


@dataclass(frozen=True)
class Film:
    """What every shot of an example is wired to: the workflow and tag, the model and VAE, the text
    encoder and negative prompt its Handoffs use, the sampler settings and how shots are saved."""

    wf: object
    tag: str
    model: object
    vae: object
    clip: object = None
    negative: object = None
    sampler_args: dict | None = None
    saving: Saving = VIDEO

    def shot(self, x, shot, seed, positive, negative, latent, *, sampler_args=None, ending=None) -> list:
        """One shot from its conditioning and latent: KSampler at (x, 0), the shot's end below it at
        (x, 320): Store -> VAEDecode -> save as ``saving`` places them, or ``ending(x, samples, shot)``
        (its nodes, the Store among them). Returns every node of the shot, the KSampler first."""
        sampled = _ksampler(self.wf, (x, 0), self.model, seed, positive, negative, latent,
                            sampler_args or self.sampler_args)
        if ending is None:
            outputs = _shot_outputs(self.wf, x, 320, sampled.out(0), self.vae, self.tag, self.model, shot,
                                    self.saving)
        else:
            outputs = ending(x, sampled.out(0), shot)
        return [sampled, *outputs]

    def continued(self, x, shot, previous, prompt, width, height, length, seed, *, condition=None,
                  sampler_args=None, ending=None, **handoff_inputs) -> list:
        """A shot continued from the ``previous`` shot's Store: the Handoff at (x, 0), then the shot
        itself (``Film.shot``) at x + 420. ``condition(wf, x, handoff)`` adds nodes between the Handoff and the KSampler and
        returns (those nodes, positive, negative); ``handoff_inputs`` go to the Handoff (its title:
        "Handoff to shot N" unless given). Returns every node of the shot, the Handoff first."""
        handoff_inputs.setdefault("title", f"Handoff to {self.saving.noun} {shot}")
        handoff = _handoff(self.wf, (x, 0), clip=self.clip, vae=self.vae, prompt=prompt, width=width,
                           height=height, length=length, buffer_tag=self.tag, negative=self.negative,
                           model=self.model, continuity=previous.out(1), **handoff_inputs)
        added, positive, negative = (condition(self.wf, x, handoff) if condition
                                     else ([], handoff.out(0), handoff.out(2)))
        sampled = self.shot(x + 420, shot, seed, positive, negative, handoff.out(1), sampler_args=sampler_args,
                            ending=ending)
        return [handoff, *added, *sampled]


def _flux_guidance(guidance):
    """A ``condition`` for FLUX: FluxGuidance on the Handoff's positive, below the KSampler."""
    def condition(wf, x, handoff):
        guided = wf.add("FluxGuidance", (x + 420, 600), size=(240, 60), conditioning=handoff.out(0),
                        guidance=guidance)
        return [guided], guided.out(0), handoff.out(2)
    return condition


def _ltxv_conditioning(wf, pos, positive, negative):
    """LTXVConditioning at 25 fps: LTX conditioning carries the frame rate."""
    return wf.add("LTXVConditioning", pos, size=(300, 80), positive=positive, negative=negative, frame_rate=25.0)


def _ltx_frame_rate(wf, x, handoff):
    """The ``condition`` for LTX: the Handoff's conditioning goes through LTXVConditioning too."""
    conditioned = _ltxv_conditioning(wf, (x, 600), handoff.out(0), handoff.out(2))
    return [conditioned], conditioned.out(0), conditioned.out(1)


def wan21_i2v_chain(schemas, profile: Profile = RELEASE):
    """Wan 2.1 I2V 3-shot chain: shot 1 from a start image (WanImageToVideo), shots 2 and 3
    from the stored tail of the shot before (ZeroCopyLatentHandoff, no VAE round trip)."""
    from comfy_workflows import Workflow

    p = profile
    wf = Workflow(
        schemas, "wan21_i2v_3shot_chain" if p.name == "release" else f"wan21_i2v_3shot_chain_{p.name}"
    )
    wf.note(
        (-520, -40),
        "\n".join(
            [
                "## Wan 2.1 I2V: a 3-shot film in latent space",
                "Shot 1 starts from an image. Shots 2 and 3 continue from the **end of the shot before**,",
                "taken from the ZeroCopy store in latent space: no VAE decode/encode between shots,",
                "bit-identical.",
                "",
                TAG_NOTE,
                "",
                "Each Handoff's `info` output is the certificate (digests, bit-identical yes/no,",
                "frames to trim).",
                "Models: " + ", ".join(x for x in (p.unet, p.text_encoder, p.vae, p.clip_vision) if x) + ".",
            ]
        ),
        size=(460, 300),
    )
    model = _wan_model(wf, p.unet)
    if p.text_encoder:
        clip = _clip_loader(wf, 490, p.text_encoder, "wan")
    else:
        clip = wf.add("ZCTestClip", (0, 490), size=(340, 60), tokens=8)
    vae = _vae_loader(wf, 640, p.vae)
    if p.start_image:
        image = _image(wf, 740, p.start_image)
    else:
        image = wf.add(
            "ZCTestNoiseImage", (0, 740), size=(340, 130), seed=0, width=p.width, height=p.height, frames=1
        )
    negative = _text(wf, (400, 420), clip.out(0), WAN_NEGATIVE, "Negative prompt")
    positive = _text(wf, (400, 240), clip.out(0),
                     "Shot 1: a lighthouse on a cliff at dusk, waves crashing, slow push-in", "Shot 1 prompt")
    extra = {}
    if p.clip_vision:
        vision = wf.add("CLIPVisionLoader", (400, 0), size=(340, 60), clip_name=p.clip_vision)
        encoded = wf.add(
            "CLIPVisionEncode",
            (400, 110),
            size=(340, 80),
            clip_vision=vision.out(0),
            image=image.out(0),
            crop="none",
        )
        extra["clip_vision_output"] = encoded.out(0)
    i2v = wf.add(
        "WanImageToVideo",
        (400, 620),
        size=(340, 230),
        positive=positive.out(0),
        negative=negative.out(0),
        vae=vae.out(0),
        width=p.width,
        height=p.height,
        length=p.length,
        batch_size=1,
        start_image=image.out(0),
        **extra,
    )
    film = Film(wf, p.tag, model.out(0), vae.out(0), clip.out(0), negative.out(0),
                _sampling(p.steps, p.cfg, p.sampler))
    nodes = film.shot(860, 1, 1001, i2v.out(0), i2v.out(1), i2v.out(2))
    wf.group("Shot 1: image to video, stored", [*nodes, i2v])
    prompts = {
        2: "Shot 2: the camera rises above the lighthouse, its beam sweeping the sea",
        3: "Shot 3: night falls, the beam cuts through rain, wide aerial shot",
    }
    for shot in (2, 3):
        nodes = film.continued(860 + (shot - 1) * 1000, shot, _store_of(nodes), prompts[shot], p.width,
                               p.height, p.length, 1000 + shot)
        wf.group(f"Shot {shot}: continued in latent space", nodes)
    return wf


def wan22_5b_chain(schemas):
    """Wan 2.2 TI2V 5B: shot 1 from an image (Wan22ImageToVideoLatent), shot 2 from its tail."""
    from comfy_workflows import Workflow

    wf = Workflow(schemas, "wan22_5b_2shot_chain")
    tag = "wan22_5b_film"
    _read_me(
        wf,
        [
            "## Wan 2.2 TI2V 5B: continue a shot in latent space",
            "48-channel latents at 16x spatial compression (the Wan 2.2 VAE). Shot 2 starts from the",
            "stored tail of shot 1: the causal first latent of a tail stands for 4 pixel frames, so the",
            "certificate tells how many of shot 2's first frames repeat shot 1 (trim them when joining).",
        ],
        size=(460, 260),
    )
    model, clip, vae = _wan_loaders(wf, "wan2.2_ti2v_5B_fp16.safetensors", "wan2.2_vae.safetensors")
    image = _image(wf, 740)
    positive = _text(wf, (400, 0), clip.out(0), "Shot 1: a red kite over green hills, handheld, golden hour",
                     "Shot 1 prompt")
    negative = _text(wf, (400, 180), clip.out(0), "blurry, low quality, watermark", "Negative prompt")
    latent = wf.add(
        "Wan22ImageToVideoLatent",
        (400, 360),
        size=(340, 200),
        vae=vae.out(0),
        width=1280,
        height=704,
        length=121,
        batch_size=1,
        start_image=image.out(0),
    )
    film = Film(wf, tag, model.out(0), vae.out(0), clip.out(0), negative.out(0), _sampling(30, 5.0, "uni_pc"),
                Saving("zerocopy/wan22_shot", fps=24))
    shot1 = film.shot(860, 1, 2201, positive.out(0), negative.out(0), latent.out(0))
    wf.group("Shot 1", shot1)
    wf.group("Shot 2", film.continued(1860, 2, _store_of(shot1),
                                      "Shot 2: the kite string snaps, the kite drifts toward the sea",
                                      1280, 704, 121, 2202))
    return wf


def ltx2_av_chain(schemas):
    """LTX-2 audio-video: shot 1 image-to-video with an audio latent, stored as one AV bundle;
    shot 2 continues from its tail."""
    from comfy_workflows import Workflow

    wf = Workflow(schemas, "ltx2_av_2shot_chain")
    tag = "ltx2_av_film"
    ckpt = "ltx-2-19b-dev-fp8.safetensors"
    _read_me(
        wf,
        [
            "## LTX-2: an audio-video shot continued in latent space",
            "The Store keeps the video and audio latents of the shot as one bundle (both digested). The",
            "Handoff continues the video stream from its tail at LTX's legal insertion point; each LTX",
            "latent after the first stands for 8 pixel frames.",
        ],
        size=(460, 260),
    )
    checkpoint = wf.add("CheckpointLoaderSimple", (0, 0), size=(340, 100), ckpt_name=ckpt)
    model = _pin(wf, checkpoint.out(0), pos=(0, 140))
    text = wf.add(
        "LTXAVTextEncoderLoader",
        (0, 410),
        size=(340, 120),
        text_encoder="gemma_3_12B_it_fp4_mixed.safetensors",
        ckpt_name=ckpt,
        device="default",
    )
    audio_vae = wf.add("LTXVAudioVAELoader", (0, 570), size=(340, 60), ckpt_name=ckpt)
    image = _image(wf, 670)
    positive = _text(wf, (400, 0), text.out(0),
                     "Shot 1: a street musician plays violin in the rain, close-up, city ambience", "Shot 1 prompt")
    negative = _text(wf, (400, 180), text.out(0), "blurry, low quality, distorted audio", "Negative prompt")
    conditioned = _ltxv_conditioning(wf, (400, 360), positive.out(0), negative.out(0))
    i2v = wf.add(
        "LTXVImgToVideo",
        (400, 480),
        size=(340, 240),
        positive=conditioned.out(0),
        negative=conditioned.out(1),
        vae=checkpoint.out(2),
        image=image.out(0),
        width=768,
        height=512,
        length=97,
        batch_size=1,
        strength=1.0,
    )
    audio = wf.add(
        "LTXVEmptyLatentAudio",
        (400, 760),
        size=(340, 130),
        frames_number=97,
        frame_rate=25.0,
        batch_size=1,
        audio_vae=audio_vae.out(0),
    )
    av = wf.add(
        "LTXVConcatAVLatent", (400, 930), size=(260, 60), video_latent=i2v.out(2), audio_latent=audio.out(0)
    )

    def outputs(x, samples, shot):
        """The AV shot's end: Store, streams separated, video and audio decoded, joined and saved."""
        store = _store(wf, (x, 320), samples, tag, f"Store shot {shot}", model.out(0))
        split = wf.add("LTXVSeparateAVLatent", (x, 620), size=(260, 60), av_latent=store.out(0))
        decode = wf.add("VAEDecode", (x, 720), size=(220, 50), samples=split.out(0), vae=checkpoint.out(2))
        sound = wf.add(
            "LTXVAudioVAEDecode",
            (x + 260, 620),
            size=(260, 60),
            samples=split.out(1),
            audio_vae=audio_vae.out(0),
        )
        video = wf.add(
            "CreateVideo", (x + 260, 720), size=(260, 80), images=decode.out(0), fps=25.0, audio=sound.out(0)
        )
        preview = wf.add(
            "SaveAnimatedWEBP",
            (x, 840),
            size=(330, 330),
            images=decode.out(0),
            filename_prefix=f"zerocopy/ltx2_shot{shot}",
            fps=25.0,
            lossless=False,
            quality=90,
            method="default",
        )
        return [store, split, decode, sound, video, preview]

    film = Film(wf, tag, model.out(0), checkpoint.out(2), text.out(0), negative.out(0),
                _sampling(20, 3.0, "euler"))
    shot1 = film.shot(860, 1, 3301, i2v.out(0), i2v.out(1), av.out(0), ending=outputs)
    wf.group("Shot 1 (audio + video)", shot1)
    wf.group("Shot 2", film.continued(1860, 2, _store_of(shot1),
                                      "Shot 2: the musician bows, the crowd applauds, wide shot", 768, 512, 97,
                                      3302, condition=_ltx_frame_rate, ending=outputs))
    return wf


def minimax_h3_chain(schemas):
    """MiniMax H3 audio-video: shot 1 from a first frame, shot 2 from the stored AV tail."""
    from comfy_workflows import Workflow

    wf = Workflow(schemas, "minimax_h3_av_2shot_chain")
    tag = "h3_av_film"
    _read_me(
        wf,
        [
            "## MiniMax H3: audio + video continued in latent space",
            "H3 latents are a video stream [B,24,T,H/16,W/16] and an audio stream [B,32,2,T_a].",
            "The Store",
            "keeps both; the Handoff takes the last chunk-aligned latents (5j+2) so the 17-frame causal",
            "chunking of the H3 VAE stays aligned.",
        ],
        size=(460, 260),
    )
    pin = _pin(wf, _unet(wf, "minimax_h3_bf16.safetensors").out(0))
    model = wf.add(
        "MiniMaxH3SigmaShift", (0, 390), size=(340, 80), model=pin.out(0), shift_video=12.0, shift_audio=3.0
    )
    clip = _clip_loader(wf, 510, "qwen3_vl_32b_fp8_scaled.safetensors", "minimax")
    vae = _vae_loader(wf, 660, "minimax_h3_av_vae.safetensors")
    image = _image(wf, 760)
    i2v = wf.add(
        "MiniMaxH3ImageToVideo",
        (400, 0),
        size=(380, 300),
        clip=clip.out(0),
        vae=vae.out(0),
        prompt="Shot 1: a chef flambés a pan, flames roar, kitchen noise",
        width=1344,
        height=768,
        length=124,
        first_frame=image.out(0),
    )
    negative = _text(wf, (400, 340), clip.out(0), "blurry, low quality, muffled audio", "Negative prompt")
    film = Film(wf, tag, model.out(0), vae.out(0), clip.out(0), negative.out(0), _sampling(30, 4.0, "euler"),
                Saving("zerocopy/h3_shot", fps=24))
    shot1 = film.shot(860, 1, 4401, i2v.out(0), negative.out(0), i2v.out(1))
    wf.group("Shot 1 (audio + video)", shot1)
    wf.group("Shot 2", film.continued(1860, 2, _store_of(shot1),
                                      "Shot 2: the chef plates the dish, the kitchen falls quiet", 1344, 768, 124,
                                      4402))
    return wf


def flux_kontext_stills(schemas):
    """FLUX.1 Kontext stills: still 1 edits an input image; still 2 continues from still 1's
    latent (the reference latent comes from the store, not from a VAE re-encode)."""
    from comfy_workflows import Workflow

    wf = Workflow(schemas, "flux_kontext_stills_chain")
    tag = "kontext_stills"
    _read_me(
        wf,
        [
            "## FLUX.1 Kontext: a series of stills without a VAE round trip",
            "Still 1 edits the input image. The Store keeps its latent; still 2 takes that latent from",
            "the store as its reference, so the series never goes through decode/encode between edits.",
        ],
        size=(460, 240),
    )
    model = _pin(wf, _unet(wf, "flux1-dev-kontext_fp8_scaled.safetensors").out(0))
    clip = wf.add(
        "DualCLIPLoader",
        (0, 390),
        size=(340, 130),
        clip_name1="clip_l.safetensors",
        clip_name2="t5xxl_fp8_e4m3fn_scaled.safetensors",
        type="flux",
        device="default",
    )
    vae = _vae_loader(wf, 560, "ae.safetensors")
    image = _image(wf, 660)
    scaled = wf.add("FluxKontextImageScale", (400, 400), size=(260, 40), image=image.out(0))
    encoded = wf.add("VAEEncode", (400, 480), size=(220, 50), pixels=scaled.out(0), vae=vae.out(0))
    positive = _text(wf, (400, 0), clip.out(0), "Still 1: turn the scene into a watercolor painting",
                     "Still 1 prompt")
    negative = _text(wf, (400, 180), clip.out(0), "", "Negative prompt (empty)")
    reference = wf.add(
        "ReferenceLatent", (400, 580), size=(240, 50), conditioning=positive.out(0), latent=encoded.out(0)
    )
    guided = wf.add("FluxGuidance", (400, 680), size=(240, 60), conditioning=reference.out(0), guidance=2.5)
    below, beside = _stills("zerocopy/kontext_still")
    film = Film(wf, tag, model.out(0), vae.out(0), clip.out(0), negative.out(0), _sampling(20, 1.0, "euler"),
                below)
    still1 = film.shot(860, 1, 5501, guided.out(0), negative.out(0), encoded.out(0))
    wf.group("Still 1", still1)
    still2 = replace(film, saving=beside).continued(
        1860, 2, _store_of(still1), "Still 2: same painting, now at night with lanterns", 1024, 1024, 1, 5502,
        condition=_flux_guidance(2.5),
        adapter="flux_kontext_reference")  # Kontext loads as FLUX Dev's architecture: auto is img2img
    wf.group("Still 2", still2)
    return wf


def flux_dev_img2img_stills(schemas):
    """FLUX.1 Dev stills in latent space: still 1 from text; still 2 starts from still 1's latent,
    taken from the store (img2img without a VAE encode: the Handoff's adapter auto for FLUX) and
    re-sampled at denoise 0.6."""
    from comfy_workflows import Workflow

    wf = Workflow(schemas, "flux_dev_img2img_stills")
    tag = "flux_dev_stills"
    _read_me(
        wf,
        [
            "## FLUX.1 Dev: a series of stills, each starting from the one before",
            "Still 2's latent is still 1's, bit-identical, from the store: img2img with no VAE encode.",
            "The KSampler's denoise (0.6 here) says how much of it changes: 1.0 would ignore it.",
            "Schnell works the same way (4 steps, no FluxGuidance). For FLUX.1 Kontext use the",
            "Kontext example: Kontext loads as the same architecture, so choose its adapter by name.",
        ],
        size=(460, 260),
    )
    model = _pin(wf, _unet(wf, "flux1-dev.safetensors").out(0))
    clip = wf.add("DualCLIPLoader", (0, 390), size=(340, 130), clip_name1="clip_l.safetensors",
                  clip_name2="t5xxl_fp16.safetensors", type="flux", device="default")
    vae = _vae_loader(wf, 560, "ae.safetensors")
    positive = _text(wf, (400, 0), clip.out(0), "Still 1: a harbour town at dawn, fishing boats, soft mist",
                     "Still 1 prompt")
    negative = _text(wf, (400, 180), clip.out(0), "", "Negative prompt (empty)")
    empty = wf.add("EmptySD3LatentImage", (400, 360), size=(300, 110), width=1024, height=1024, batch_size=1)
    guided = wf.add("FluxGuidance", (400, 520), size=(240, 60), conditioning=positive.out(0), guidance=3.5)
    below, beside = _stills("zerocopy/flux_dev_still")
    film = Film(wf, tag, model.out(0), vae.out(0), clip.out(0), negative.out(0), _sampling(20, 1.0, "euler"),
                below)
    still1 = film.shot(860, 1, 7101, guided.out(0), negative.out(0), empty.out(0))
    wf.group("Still 1", [*still1, empty, guided])
    still2 = replace(film, saving=beside).continued(
        1860, 2, _store_of(still1), "Still 2: the same harbour at noon, bright sun, people on the quay", 1024,
        1024, 1, 7102, condition=_flux_guidance(3.5), sampler_args=dict(film.sampler_args, denoise=0.6),
        title="Handoff to still 2 (img2img)")
    wf.group("Still 2: img2img from the stored still 1", still2)
    return wf


def wan22_s2v_extend(schemas):
    """Wan 2.2 S2V: shot 1 from a reference image and an audio clip (WanSoundImageToVideo); each
    later queue run continues the film with core's WanSoundImageToVideoExtend, fed the newest
    stored shot by ZeroCopyLatentLoad (no VAE round trip; the shot survives restarts)."""
    from comfy_workflows import Workflow

    wf = Workflow(schemas, "wan22_s2v_extend_chain")
    tag = "wan22_s2v_film"
    _read_me(
        wf,
        [
            "## Wan 2.2 S2V: extend a talking shot across queue runs",
            "Queue once: group 'Shot 1' makes shot 1 and stores it ('Next shot' is muted). Then mute",
            "'Shot 1', un-mute 'Next shot' (select the nodes, Ctrl+M) and queue once per further shot:",
            "ZeroCopy Latent Load hands the newest stored shot, bit-identical, to",
            "WanSoundImageToVideoExtend as video_latent (core takes its last 19 latents as motion),",
            "and the Store keeps the new shot. A restart of ComfyUI loses nothing: the store spills.",
        ],
        size=(460, 280),
    )
    model, clip, vae = _wan_loaders(wf, "wan2.2_s2v_14B_fp8_scaled.safetensors", "wan_2.1_vae.safetensors")
    encoder = wf.add("AudioEncoderLoader", (0, 740), size=(340, 60),
                     audio_encoder_name="wav2vec2_large_english_fp16.safetensors")
    audio = wf.add("LoadAudio", (0, 840), size=(340, 140), audio="speech.mp3")
    image = _image(wf, 1020)
    encoded = wf.add("AudioEncoderEncode", (400, 740), size=(260, 50), audio_encoder=encoder.out(0),
                     audio=audio.out(0))
    positive = _text(wf, (400, 0), clip.out(0), "a woman speaks to the camera in a quiet cafe, natural light",
                     "Prompt")
    negative = _text(wf, (400, 180), clip.out(0), WAN_NEGATIVE, "Negative prompt")
    s2v = wf.add("WanSoundImageToVideo", (400, 360), size=(340, 250), positive=positive.out(0),
                 negative=negative.out(0), vae=vae.out(0), width=640, height=640, length=77, batch_size=1,
                 audio_encoder_output=encoded.out(0), ref_image=image.out(0))
    film = Film(wf, tag, model.out(0), vae.out(0), sampler_args=_sampling(20, 6.0, "uni_pc"),
                saving=Saving("zerocopy/s2v_shot"))
    wf.group("Shot 1 (bypass it after the first run)",
             [s2v, *film.shot(860, 1, 8101, s2v.out(0), s2v.out(1), s2v.out(2))])
    loaded = _load(wf, (1860, 0), tag, "newest", 0, "end", "Newest stored shot")
    extend = wf.add("WanSoundImageToVideoExtend", (1860, 260), size=(340, 200), positive=positive.out(0),
                    negative=negative.out(0), vae=vae.out(0), length=77, video_latent=loaded.out(0),
                    audio_encoder_output=encoded.out(0), ref_image=image.out(0))
    next_shot = [loaded, extend, *film.shot(2280, "N", 8102, extend.out(0), extend.out(1), extend.out(2))]
    wf.group("Next shot: extend the newest stored one (queue again for each)", next_shot)
    wf.mute(next_shot)  # the first run makes shot 1 only
    return wf


def wan22_svi_pro(schemas):
    """Wan 2.2 I2V 14B with SVI 2.0 Pro (kijai/ComfyUI-KJNodes' WanImageToVideoSVIPro and the SVI
    2.0 Pro LoRAs), over queue runs: run 1 encodes the start image and stores it as the film's
    anchor, then makes shot 1; each later run feeds ZeroCopyLatentLoad 'first' (the anchor) to
    anchor_samples and ZeroCopyLatentLoad 'newest' to prev_samples, bit-identical, and stores the
    new shot. Needs KJNodes installed."""
    from comfy_workflows import Workflow

    wf = Workflow(schemas, "wan22_svi_pro_chain")
    tag = "wan22_svi_film"
    _read_me(
        wf,
        [
            "## Wan 2.2 SVI 2.0 Pro: a long shot over queue runs",
            "Needs kijai/ComfyUI-KJNodes (WanImageToVideoSVIPro) and the SVI 2.0 Pro LoRAs.",
            "Queue once: group 'Shot 1' encodes the start image, stores it as the film's anchor",
            "(generation 1) and makes shot 1. Then mute 'Shot 1', un-mute 'Next shot' (select the",
            "nodes, Ctrl+M) and queue once per further shot: ZeroCopy Latent Load 'first' hands the",
            "anchor to anchor_samples, 'newest' the previous shot to prev_samples (SVI uses its last",
            "motion_latent_count latents), both verified and bit-identical; the Store keeps the new",
            "shot and records which shot it continued. A restart loses nothing: the store spills.",
        ],
        size=(460, 300),
    )
    high = _unet(wf, "wan2.2_i2v_high_noise_14B_fp16.safetensors", title="High-noise model")
    low = _unet(wf, "wan2.2_i2v_low_noise_14B_fp16.safetensors", (0, 130), title="Low-noise model")
    high_lora = wf.add("LoraLoaderModelOnly", (0, 260), size=(340, 90), model=high.out(0),
                       lora_name="SVI_v2_PRO_Wan2.2-I2V-A14B_HIGH_lora_rank_128_fp16.safetensors",
                       strength_model=1.0)
    low_lora = wf.add("LoraLoaderModelOnly", (0, 390), size=(340, 90), model=low.out(0),
                      lora_name="SVI_v2_PRO_Wan2.2-I2V-A14B_LOW_lora_rank_128_fp16.safetensors",
                      strength_model=1.0)
    high_model = wf.add("ModelSamplingSD3", (0, 520), size=(340, 60), model=high_lora.out(0), shift=8.0)
    low_model = wf.add("ModelSamplingSD3", (0, 620), size=(340, 60), model=low_lora.out(0), shift=8.0)
    clip = _clip_loader(wf, 720, WAN_TEXT_ENCODER, "wan")
    vae = _vae_loader(wf, 870, "wan_2.1_vae.safetensors")
    image = _image(wf, 970)
    positive = _text(wf, (400, 0), clip.out(0),
                     "a lighthouse keeper climbs the spiral stairs, lantern in hand, warm light", "Prompt")
    negative = _text(wf, (400, 180), clip.out(0), WAN_NEGATIVE, "Negative prompt")
    length = 81

    def sample(x, seed, conditioned, shot):
        """High-noise steps 0-3 then low-noise steps 3-6 (KSamplerAdvanced), then store and save."""
        args = {"noise_seed": seed, "steps": 6, "cfg": 1.0, "sampler_name": "euler", "scheduler": "simple"}
        first = wf.add("KSamplerAdvanced", (x, 0), size=(320, 330), model=high_model.out(0), add_noise="enable",
                       positive=conditioned.out(0), negative=conditioned.out(1), latent_image=conditioned.out(2),
                       start_at_step=0, end_at_step=3, return_with_leftover_noise="enable",
                       title="High noise", **args)
        second = wf.add("KSamplerAdvanced", (x + 360, 0), size=(320, 330), model=low_model.out(0),
                        add_noise="disable", positive=conditioned.out(0), negative=conditioned.out(1),
                        latent_image=first.out(0), start_at_step=3, end_at_step=10000,
                        return_with_leftover_noise="disable", title="Low noise", **args)
        outputs = _shot_outputs(wf, x + 360, 380, second.out(0), vae.out(0), tag, low_model.out(0), shot,
                                Saving("zerocopy/svi_shot"))
        return [first, second, *outputs]

    scaled = wf.add("ImageScale", (400, 400), size=(300, 130), image=image.out(0), upscale_method="lanczos",
                    width=832, height=480, crop="center")
    encoded = wf.add("VAEEncode", (400, 570), size=(220, 50), pixels=scaled.out(0), vae=vae.out(0))
    anchor = _store(wf, (400, 660), encoded.out(0), tag, "Store the anchor (start image)")
    svi1 = wf.add("WanImageToVideoSVIPro", (860, 400), size=(340, 160), positive=positive.out(0),
                  negative=negative.out(0), length=length, anchor_samples=anchor.out(0), motion_latent_count=1)
    shot1 = sample(1240, 9101, svi1, 1)
    wf.group("Shot 1 (bypass it after the first run)", [scaled, encoded, anchor, svi1, *shot1])
    first = _load(wf, (2400, 0), tag, "first", 1, "start", "The film's anchor")
    newest = _load(wf, (2400, 240), tag, "newest", 0, "end", "Newest stored shot")
    svi = wf.add("WanImageToVideoSVIPro", (2400, 480), size=(340, 160), positive=positive.out(0),
                 negative=negative.out(0), length=length, anchor_samples=first.out(0),
                 prev_samples=newest.out(0), motion_latent_count=1)
    shot_n = sample(2800, 9102, svi, "N")
    wf.group("Next shot: continue the newest stored one (queue again for each)", [first, newest, svi, *shot_n])
    wf.mute([first, newest, svi, *shot_n])  # the first run makes the anchor and shot 1 only
    return wf


def wan21_loop_film(schemas):
    """Wan 2.1 I2V, a whole film in one prompt with core's native loop (ComfyUI v0.36+ StartLoop /
    EndLoop): each iteration's Handoff continues the shot the previous iteration stored, carried as
    the loop value (Store.continuity -> EndLoop.next_iteration_value -> StartLoop.current_iteration_value
    -> Handoff.continuity); the models and the start image load once, outside the loop. The loop
    carries continuity tokens only, never frames: after it, ZeroCopyFilmRender (continuity from End
    Loop's output, the last shot's token) renders the film from the store to
    output/zerocopy/wan21_loop_film.mp4 with its clips and .otio, one shot in memory at a time. Not
    run here: no ComfyUI with loops could be tested (docs/compatibility.md, Loops)."""
    from comfy_workflows import Workflow

    wf = Workflow(schemas, "wan21_i2v_loop_film")
    tag = "wan21_loop_film"
    _read_me(
        wf,
        [
            "## Wan 2.1 I2V: a 6-shot film in one prompt (ComfyUI v0.36+ loops)",
            "Needs ComfyUI v0.36 or later (Start Loop / End Loop). Start Loop runs the body (Handoff,",
            "KSampler, Store) once per shot. Each Store's `continuity` goes to End Loop's",
            "`next_iteration_value`, which the next iteration's Start Loop hands out as",
            "`current_iteration_value`, linked to the Handoff's `continuity`: shot k continues exactly",
            "the shot k-1 stored, bit-identical, and waits for it. The first iteration has no carried",
            "value: its Handoff starts from the start image (or the tag's newest shot). The seed is",
            "the iteration index. The loop carries continuity tokens only: End Loop does not",
            "accumulate frames (its `output_value` is the Store's `continuity` too, so after the loop",
            "it gives the last shot's token). After the loop, ZeroCopy Film Render renders the film",
            "from the store to output/zerocopy/wan21_loop_film.mp4, with its clips and .otio, one shot",
            "in memory at a time, however long the film. Queued again, the loop continues the film",
            "and the render decodes only the new shots. `cache_iterations` may stay off (every",
            "iteration runs) or be on.",
            "Checked against the loop nodes' schema as read (comfy_extras/nodes_loop.py @023f153c)",
            "and by emulating the loop's expansion on ComfyUI v0.33.0 and master; not run on a",
            "ComfyUI with loops.",
        ],
        size=(460, 480),
    )
    model, clip, vae = _wan_loaders(wf, RELEASE.unet, RELEASE.vae, y=410)
    image = _image(wf, 760, RELEASE.start_image, title="Start image")
    negative = _text(wf, (400, 0), clip.out(0), WAN_NEGATIVE, "Negative prompt")
    start = wf.add("StartLoop", (400, 220), size=(320, 170), title="Start Loop: one iteration per shot",
                   **{"mode": "simple", "mode.num_iterations": 6, "cache_iterations": False})
    handoff = _handoff(
        wf, (860, 0), clip=clip.out(0), vae=vae.out(0),
        prompt="a lighthouse on a cliff, the camera keeps moving through the evening, one continuous take",
        width=RELEASE.width, height=RELEASE.height, length=RELEASE.length, fallback_first_frame=image.out(0),
        buffer_tag=tag, negative=negative.out(0), model=model.out(0), continuity=start.out(4),
        title="Handoff: continues the carried shot")
    film = Film(wf, tag, model.out(0), vae.out(0),
                sampler_args=_sampling(RELEASE.steps, RELEASE.cfg, RELEASE.sampler))

    def stored(x, samples, _):
        """The iteration's end: its Store only (the film is rendered after the loop)."""
        return [_store(wf, (x, 320), samples, tag, "Store this iteration's shot", model.out(0))]

    body = film.shot(1280, None, start.out(0), handoff.out(0), handoff.out(2), handoff.out(1), ending=stored)
    store = _store_of(body)
    wf.group("The loop body: one shot per iteration", [handoff, *body])
    # the loop carries tokens only: output_value is the Store's continuity as well (accumulate off), so
    # End Loop's output after the loop is the last shot's token, and no frame is held across iterations
    end = wf.add("EndLoop", (1700, 320), size=(300, 110), output_value=store.out(1),
                 next_iteration_value=store.out(1), accumulate=False, title="End Loop: carries the shot")
    # after the loop, in a column of its own (nothing right of or below it, however tall a frontend draws it)
    wf.add("ZeroCopyFilmRender", (2060, 0), size=(380, 760), buffer_tag=tag, vae=vae.out(0), format="h264-mp4",
           frame_rate=16.0, quality=19, folder="zerocopy", crossfade_frames=0, first_shot=1, last_shot=0,
           seam_trim=-1, timeline=True, assemble_incomplete=False, continuity=end.out(0), decode="auto",
           title="Render the film (after the loop)")
    return wf


# name -> builder; every shipped example (release profile)
EXAMPLES = {
    "wan21_i2v_3shot_chain": wan21_i2v_chain,
    "wan22_5b_2shot_chain": wan22_5b_chain,
    "ltx2_av_2shot_chain": ltx2_av_chain,
    "minimax_h3_av_2shot_chain": minimax_h3_chain,
    "flux_kontext_stills_chain": flux_kontext_stills,
    "flux_dev_img2img_stills": flux_dev_img2img_stills,
    "wan22_s2v_extend_chain": wan22_s2v_extend,
    "wan22_svi_pro_chain": wan22_svi_pro,
    "wan21_i2v_loop_film": wan21_loop_film,
}


def render(workflow: dict) -> str:
    return json.dumps(workflow, indent=2) + "\n"


def missing_pack(name: str, schemas) -> str | None:
    """Why an example cannot be built from these schemas (a custom node pack it needs is not
    loaded), or None."""
    types, pack, variable = NEEDS_PACKS.get(name, ((), "", ""))
    absent = [t for t in types if t not in schemas]
    if not absent:
        return None
    return f"{', '.join(absent)} missing: set {variable} to a checkout of {pack}"


def build_all(schemas) -> dict[str, str]:
    """Every example as the builder makes it; one whose custom node pack is not loaded is the
    shipped file, unchanged."""
    return {name: render(builder(schemas).to_json()) if missing_pack(name, schemas) is None
            else (WORKFLOW_DIR / f"{name}.json").read_text() for name, builder in EXAMPLES.items()}


def model_files(workflow: dict, schemas) -> list[tuple[str, str]]:
    """(models folder, file) for every loader in a workflow, in graph order, without repeats."""
    found = []
    for node in workflow["nodes"]:
        if node["type"] not in schemas:
            continue
        widgets = schemas[node["type"]].widgets
        values = node.get("widgets_values", [])
        position = 0
        for widget in widgets:
            folder = MODEL_INPUTS.get((node["type"], widget.name))
            if folder and (folder, values[position]) not in found:
                found.append((folder, values[position]))
            position += 2 if widget.has_control else 1
    return found


def index_text(built: dict[str, str], schemas) -> str:
    lines = [
        "# Example workflows",
        "",
        "The workflows are in [`example_workflows/`](../example_workflows/): ComfyUI lists them in its",
        "template browser under this pack's name (Workflow → Browse Templates), or drag a file onto the",
        "canvas. They are generated from the node schemas by `tools/build_examples.py` and checked by the",
        "integration tests; the Wan 2.1 chain also runs there, on tiny random-weight models.",
        "",
        "Families other than Wan 2.1 need the Handoff adapters of this version (see the README's",
        "per-family table); every workflow loads and validates on ComfyUI v0.33.0, except the native-loop",
        "film, which needs v0.36 or later (Start Loop / End Loop; see docs/compatibility.md, Loops).",
        "",
    ]
    for name, builder in EXAMPLES.items():
        workflow = json.loads(built[name])
        summary = " ".join((builder.__doc__ or "").split())
        lines += [f"## `{name}.json`", "", summary, "", "Model files (ComfyUI/models/...):", ""]
        lines += [f"- `{folder}/{file}`" for folder, file in model_files(workflow, schemas)]
        lines.append("")
    return "\n".join(lines)


def start_comfyui(root: Path) -> None:
    """Import ComfyUI in-process (CPU) with its nodes, the test-only nodes and this pack."""
    sys.path.insert(0, str(root))
    from comfy.cli_args import args

    args.cpu = True
    import nodes

    asyncio.run(nodes.init_extra_nodes(init_custom_nodes=False, init_api_nodes=False))
    for pack in (REPO / "tools" / "standins" / "zc_test_nodes", REPO):
        assert asyncio.run(nodes.load_custom_node(str(pack), module_parent="custom_nodes")), pack
    for _, pack, variable in NEEDS_PACKS.values():  # the peer packs some examples use, when given
        if os.environ.get(variable):
            assert asyncio.run(nodes.load_custom_node(os.environ[variable], module_parent="custom_nodes")), pack


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if a file is out of date")
    options = parser.parse_args()
    root = os.environ.get("COMFYUI_PATH")
    if not root:
        print("build_examples: set COMFYUI_PATH to a ComfyUI checkout", file=sys.stderr)
        return 2
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    start_comfyui(Path(root))
    from comfy_workflows import validate
    from loop_nodes import LoopSchemas

    schemas = LoopSchemas()  # the running ComfyUI's nodes, with core's loop nodes as read
    stale = []
    built = build_all(schemas)
    outputs = {WORKFLOW_DIR / f"{name}.json": text for name, text in built.items()}
    outputs[INDEX] = index_text(built, schemas)
    for name in EXAMPLES:
        why = missing_pack(name, schemas)
        if why:
            print(f"build_examples: {name} kept as shipped ({why})", file=sys.stderr)
            outputs.pop(WORKFLOW_DIR / f"{name}.json")
    for name, text in built.items():
        if missing_pack(name, schemas):
            continue
        problems = validate(json.loads(text), schemas)
        if problems:
            print(f"{name}: " + "; ".join(problems), file=sys.stderr)
            return 1
    for path, text in outputs.items():
        if options.check:
            if not path.is_file() or path.read_text() != text:
                stale.append(str(path.relative_to(REPO)))
        else:
            path.parent.mkdir(exist_ok=True)
            path.write_text(text)
    if stale:
        print("out of date (run tools/build_examples.py): " + ", ".join(stale), file=sys.stderr)
        return 1
    print(f"build_examples: {len(EXAMPLES)} workflows {'checked' if options.check else 'written'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
