"""Drift section: how far the handed-off tail moves after 1…N shot-to-shot hops.

Two ways of carrying the end of shot n into shot n+1 are compared, hop after hop:

* the roundtrip users do today: decode the latent to pixels, save the frames as 8-bit PNG
  files (ComfyUI's SaveImage), load them back (LoadImage) and encode them again;
* ours: put the latent into the ZeroCopy LatentStore and get it back, digest-verified; every
  second hop through the disk tier and a brand-new store (a restart).

The roundtrip needs a VAE that has learned something: a small video autoencoder is trained
here on generated moving test patterns (tiny_video_ae.py); with ``--vae PATH`` and ComfyUI
in-process, a real VAE's weights are used as well. Numbers are measured, never estimated.
"""

from __future__ import annotations

import math
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch

from bench.common import FAIL, INFO, NOT_MEASURED, PASS, Context, Row, Section, md_table, png_roundtrip
from bench.common import pyplot
from bench.sections import tiny_video_ae as tiny

SEED = 0
TEST_FRAMES = 16          # held-out clip of the tiny AE: 16 frames of 32×32
TEST_SIZE = tiny.TRAIN_SIZE
TAIL_FRAMES = 4           # latent frames handed off (the tiny AE has one latent frame per frame)
STORE_TAG = "bench_drift_tail"
REAL_VIDEO_FRAMES = 17    # wanted length of the real VAE's clip (1 + 4k and 1 + 8k both fit)
PLOT_NAME = "drift.png"


# --------------------------------------------------------------------------- helpers

def same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Bit-for-bit equality (dtype, shape and every byte; NaNs compare equal to themselves)."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.numel() == 0:
        return True
    as_int = torch.int32 if a.element_size() == 4 else torch.uint8
    return torch.equal(a.contiguous().reshape(-1).view(as_int),
                       b.contiguous().reshape(-1).view(as_int))


def _one_line(exc: BaseException) -> str:
    """An exception as one line (a reason goes into a Markdown table cell)."""
    return f"{type(exc).__name__}: {' '.join(str(exc).split())}"


def _finite(value: float | None) -> float | None:
    """JSON-able: None for ∞/NaN."""
    if value is None or not math.isfinite(value):
        return None
    return float(value)


def _fmt_mse(value: float | None) -> str:
    if value is None:
        return "–"
    return "0" if value == 0.0 else f"{value:.3g}"


def _fmt_db(value: float | None, identical_text: str = "∞") -> str:
    return identical_text if value is None else f"{value:.2f} dB"


# --------------------------------------------------------------------------- the roundtrip

@dataclass
class RoundtripChain:
    """Per-hop numbers of a decode → (8-bit PNG) → encode chain; index i is hop i + 1."""
    latent_mse: list[float] = field(default_factory=list)            # vs z0
    pixel_mse_vs_first_decode: list[float] = field(default_factory=list)  # D(z_n) vs D(z0)
    psnr_vs_first_decode_db: list[float | None] = field(default_factory=list)
    pixel_mse_vs_source: list[float | None] = field(default_factory=list)  # D(z_n) vs x0
    psnr_vs_source_db: list[float | None] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    source_psnr_db: float | None = None      # D(z0) vs x0: the VAE's own loss before any hop

    def to_json(self) -> dict:
        return {key: list(value) if isinstance(value, list) else value
                for key, value in self.__dict__.items()}


def roundtrip_chain(decode: Callable[[torch.Tensor], torch.Tensor],
                    encode: Callable[[torch.Tensor], torch.Tensor], z0: torch.Tensor,
                    source: torch.Tensor | None, hops: int, png_dir: Path | None,
                    log: Callable[[str], None] | None = None, label: str = "") -> RoundtripChain:
    """Run ``hops`` hops of decode → PNG → encode from ``z0``.

    ``decode(latent)`` returns frames ``[N, H, W, 3]`` in [0, 1] and ``encode(frames)`` the
    latent, as ComfyUI's VAEDecode/VAEEncode do. With ``png_dir`` the frames go through
    8-bit PNG files (``png_roundtrip``), without it they stay float (the VAE's part of the
    drift alone). ``source`` (frames like decode's) is the clip z0 was encoded from.
    """
    chain = RoundtripChain()
    first_decode = decode(z0)
    if source is not None and source.shape != first_decode.shape:
        source = None  # the VAE cropped or resized: no pixel-for-pixel comparison
    if source is not None:
        chain.source_psnr_db = tiny.psnr(first_decode, source)
    pixels = first_decode
    for hop in range(1, hops + 1):
        start = time.perf_counter()
        frames = png_roundtrip(pixels, png_dir, f"hop{hop:02d}") if png_dir else pixels
        latent = encode(frames)
        pixels = decode(latent)
        chain.seconds.append(time.perf_counter() - start)
        if latent.shape != z0.shape or pixels.shape != first_decode.shape:
            raise RuntimeError(f"hop {hop} changed the shape: latent {tuple(z0.shape)} → "
                               f"{tuple(latent.shape)}, frames {tuple(first_decode.shape)} → "
                               f"{tuple(pixels.shape)}")
        chain.latent_mse.append(tiny.mse(latent, z0))
        chain.pixel_mse_vs_first_decode.append(tiny.mse(pixels, first_decode))
        chain.psnr_vs_first_decode_db.append(tiny.psnr(pixels, first_decode))
        chain.pixel_mse_vs_source.append(tiny.mse(pixels, source) if source is not None else None)
        chain.psnr_vs_source_db.append(tiny.psnr(pixels, source) if source is not None else None)
        if log is not None:
            log(f"drift: {label} hop {hop}/{hops}: latent MSE {chain.latent_mse[-1]:.3g}, "
                f"PSNR {_fmt_db(chain.psnr_vs_first_decode_db[-1])} "
                f"({chain.seconds[-1]:.2f} s)")
    return chain


# --------------------------------------------------------------------------- ours

@dataclass
class StoreChain:
    """Per-hop numbers of the store chain; index i is hop i + 1."""
    reference_digest: str = ""
    latent_mse: list[float] = field(default_factory=list)
    bit_identical: list[bool] = field(default_factory=list)
    stored_digest: list[str | None] = field(default_factory=list)   # the engine's digest of the slot
    tensor_digest: list[str] = field(default_factory=list)          # re-digest of what get returned
    digest_equal: list[bool] = field(default_factory=list)
    through_disk: list[bool] = field(default_factory=list)
    tier: list[str] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return (bool(self.latent_mse) and all(m == 0.0 for m in self.latent_mse)
                and all(self.bit_identical) and all(self.digest_equal))

    def to_json(self) -> dict:
        return dict(self.__dict__, passed=self.passed)


def store_chain(z0: torch.Tensor, hops: int, spill_dir: Path, tag: str = STORE_TAG) -> StoreChain:
    """Carry ``z0`` through the LatentStore ``hops`` times: put → get(verify=True) → next hop.

    Every second hop is put with ``spill=True``, flushed to ``spill_dir``, the store closed
    and a new ``LatentStore(spill_dir=...)`` opened, which restores the tail from disk
    (digest-verified) on get: a restart. Each hop records the MSE against z0, bitwise
    equality, the engine's digest of the slot and a re-digest of the returned tensor.
    """
    from zc_pack.zc_engine import LatentStore, digest_tensor

    chain = StoreChain(reference_digest=digest_tensor(z0))
    store = LatentStore(spill_dir=spill_dir)
    try:
        current = z0
        for hop in range(1, hops + 1):
            through_disk = hop % 2 == 0
            start = time.perf_counter()
            store.put(tag, {"latent": current}, spill=through_disk)
            if through_disk:
                store.flush()
                store.close()
                store = LatentStore(spill_dir=spill_dir)
            bundle = store.get(tag, verify=True)
            current = bundle.tensors["latent"]
            chain.seconds.append(time.perf_counter() - start)
            chain.through_disk.append(through_disk)
            chain.tier.append(bundle.info["latent"].tier)
            chain.latent_mse.append(tiny.mse(current, z0))
            chain.bit_identical.append(same_bits(current, z0))
            stored, again = bundle.digest("latent"), digest_tensor(current)
            chain.stored_digest.append(stored)
            chain.tensor_digest.append(again)
            chain.digest_equal.append(stored == chain.reference_digest == again)
        store.drop(tag, disk=True)
    finally:
        store.close()
    return chain


# --------------------------------------------------------------------------- tiny AE

def _tiny_codec(model: tiny.TinyVideoAE):
    """decode/encode in ComfyUI's IMAGE layout ([N, H, W, 3]) for the tiny AE."""
    @torch.no_grad()
    def decode(latent: torch.Tensor) -> torch.Tensor:
        return tiny.to_frames(model.decode(latent))

    @torch.no_grad()
    def encode(frames: torch.Tensor) -> torch.Tensor:
        return model.encode(tiny.from_frames(frames))
    return decode, encode


# --------------------------------------------------------------------------- real VAE

def _consistent_frames(vae, wanted: int) -> int:
    """The smallest frame count ≥ wanted that the VAE's temporal compression maps back to
    itself (decode(encode(x)) has as many frames as x), when it says how it compresses."""
    down, up = getattr(vae, "downscale_ratio", None), getattr(vae, "upscale_ratio", None)
    if isinstance(down, tuple) and isinstance(up, tuple) and callable(down[0]) and callable(up[0]):
        for frames in range(wanted, wanted + 64):
            if up[0](down[0](frames)) == frames:
                return frames
    return wanted


def _real_vae_size(vae, wanted: int) -> int:
    """A frame side that is a multiple of the VAE's spatial compression."""
    try:
        factor = int(vae.spacial_compression_encode())
    except Exception:
        factor = 8
    factor = max(1, factor)
    return max(factor, (wanted // factor) * factor)


def real_vae_drift(ctx: Context, hops: int, work: Path) -> dict:
    """The roundtrip chain with a real VAE loaded by ComfyUI, and ours with its latent.

    Returns {"reason": ...} when not measured, else the measured chains and the setup."""
    if ctx.vae_path is None:
        return {"reason": "no --vae PATH given"}
    if ctx.comfy is None:
        return {"reason": "--vae needs COMFYUI_PATH: ComfyUI's VAE loader reads the weights"}
    path = Path(ctx.vae_path)
    if not path.is_file():
        return {"reason": f"--vae {path}: no such file"}
    import comfy.sd
    import comfy.utils

    ctx.log(f"drift: loading the VAE {path.name} through ComfyUI")
    start = time.perf_counter()
    try:
        state, metadata = comfy.utils.load_torch_file(str(path), return_metadata=True)
        vae = comfy.sd.VAE(sd=state, metadata=metadata)
        vae.throw_exception_if_invalid()
    except Exception as exc:  # not a VAE ComfyUI knows
        return {"reason": f"ComfyUI could not load {path.name} as a VAE: {_one_line(exc)}"}
    del state
    load_seconds = time.perf_counter() - start
    latent_dim = int(getattr(vae, "latent_dim", 2))
    if latent_dim == 1:
        return {"reason": f"{path.name} is an audio VAE (1-D latent); drift is measured on video"}
    video = latent_dim == 3 and not getattr(vae, "not_video", False)
    # A video VAE gets a short clip, an image VAE one frame. On a GPU the clip is 256×256;
    # on the CPU smaller, so ten hops of a real VAE stay within minutes.
    side = _real_vae_size(vae, 256 if ctx.cuda else ctx.pick(128, 128, 64))
    frames = _consistent_frames(vae, REAL_VIDEO_FRAMES if ctx.cuda else ctx.pick(9, 9, 5)) if video else 1
    clip = tiny.make_clip(torch.Generator().manual_seed(SEED * 7919 + 1), frames, side)
    source = clip.permute(1, 2, 3, 0).contiguous()       # [frames, H, W, 3]

    @torch.no_grad()
    def decode(latent: torch.Tensor) -> torch.Tensor:
        pixels = vae.decode(latent)
        return pixels.reshape(-1, *pixels.shape[-3:]).to("cpu", torch.float32)

    @torch.no_grad()
    def encode(images: torch.Tensor) -> torch.Tensor:
        return vae.encode(images).to("cpu")

    try:
        z0 = encode(source).contiguous()
        ctx.log(f"drift: real VAE latent {tuple(z0.shape)} {z0.dtype} from {frames}×{side}×{side}")
        png = roundtrip_chain(decode, encode, z0, source, hops, work / "real_png", ctx.log, "real VAE")
    except Exception as exc:
        return {"reason": f"the roundtrip through {path.name} failed: {_one_line(exc)}"}
    try:
        ours = store_chain(z0, hops, work / "real_spill", tag=STORE_TAG + "_real").to_json()
    except Exception as exc:  # reported in the row, like D1
        ours = {"error": _one_line(exc)}
    return {"vae": path.name, "load_seconds": load_seconds, "latent_dim": latent_dim,
            "video": video, "frames": frames, "size": side, "latent_shape": list(z0.shape),
            "latent_dtype": str(z0.dtype).replace("torch.", ""),
            "latent_variance": z0.double().var().item(),
            "roundtrip_png": png.to_json(), "ours": ours}


# --------------------------------------------------------------------------- plot

def plot_drift(path: Path, hops: int, png: RoundtripChain, floating: RoundtripChain,
               real: dict | None) -> None:
    """Two panels: latent MSE per hop (log) and pixel PSNR per hop; ours drawn at the
    bottom of the MSE axis (it is exactly 0) and the top of the PSNR axis (∞)."""
    plt = pyplot()
    x = list(range(1, hops + 1))
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 5.4))

    curves = [("tiny AE, 8-bit PNG", png, "-", "o", "tab:blue"),
              ("tiny AE, float (no PNG)", floating, ":", ".", "tab:orange")]
    if real is not None:
        curves.append((f"real VAE ({real['vae']}), 8-bit PNG", real["chain"], "--", "s", "tab:purple"))
    positive = [v for _, chain, _, _, _ in curves for v in chain.latent_mse if v > 0]
    for label, chain, style, marker, colour in curves:
        pts = [(h, v) for h, v in zip(x, chain.latent_mse, strict=True) if v > 0]
        if pts:
            left.plot(*zip(*pts, strict=True), style, marker=marker, color=colour,
                      label=f"roundtrip: {label}")
    left.set_yscale("log")
    low = min(positive) / 30 if positive else 1e-8
    high = max(positive) * 3 if positive else 1.0
    left.set_ylim(low, high)
    ours_y = low * 1.6
    left.plot(x, [ours_y] * hops, "-", color="tab:green", marker="D", label="ours: 0 (bit-identical)")
    left.annotate("ours: MSE = 0, bit-identical, digest-checked\n(drawn at the floor: a log axis has no 0)",
                  (x[0], ours_y), textcoords="offset points", xytext=(4, 8), color="tab:green",
                  fontsize=8)
    left.set_xlabel("hop")
    left.set_ylabel("latent MSE vs z0 (log)")
    left.set_title("Latent drift of the handed-off tail")
    left.set_xticks(x)
    left.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.14))

    finite = [v for _, chain, _, _, _ in curves for v in chain.psnr_vs_first_decode_db if v is not None]
    for label, chain, style, marker, colour in curves:
        pts = [(h, v) for h, v in zip(x, chain.psnr_vs_first_decode_db, strict=True) if v is not None]
        if pts:
            right.plot(*zip(*pts, strict=True), style, marker=marker, color=colour,
                       label=f"roundtrip: {label}, vs D(z0)")
    source_pts = [(h, v) for h, v in zip(x, png.psnr_vs_source_db, strict=True) if v is not None]
    if source_pts:
        right.plot(*zip(*source_pts, strict=True), "-", color="tab:blue", alpha=0.35, marker="o",
                   markersize=3, label="roundtrip: tiny AE, 8-bit PNG, vs source clip")
        finite += [v for _, v in source_pts]
    top = (max(finite) if finite else 40.0) + 8.0
    bottom = (min(finite) if finite else 20.0) - 3.0
    right.set_ylim(bottom, top + 3.0)
    right.plot(x, [top] * hops, "-", color="tab:green", marker="D", label="ours: ∞ (bit-identical)")
    right.annotate("ours: PSNR = ∞ (identical latent, identical pixels)", (x[0], top),
                   textcoords="offset points", xytext=(4, -12), color="tab:green", fontsize=8)
    right.set_xlabel("hop")
    right.set_ylabel("pixel PSNR of D(z_n) [dB]")
    right.set_title("Pixel drift of the decoded tail")
    right.set_xticks(x)
    right.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.14))
    fig.tight_layout()
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


# --------------------------------------------------------------------------- report

def _details(hops: int, training: tiny.TrainResult, heldout_psnr: float | None, params: int,
             budget: float, z0: torch.Tensor, png: RoundtripChain, floating: RoundtripChain,
             ours: StoreChain | None, ours_error: str | None, real: dict) -> str:
    lines = ["#### Per hop (tiny video AE, tail of the held-out clip)", ""]
    rows = []
    for i in range(hops):
        row = [i + 1, _fmt_mse(png.latent_mse[i]), _fmt_db(png.psnr_vs_first_decode_db[i]),
               _fmt_db(png.psnr_vs_source_db[i]), _fmt_mse(floating.latent_mse[i]),
               _fmt_db(floating.psnr_vs_first_decode_db[i])]
        if ours is not None:
            row += [_fmt_mse(ours.latent_mse[i]), "yes" if ours.bit_identical[i] else "**no**",
                    "yes" if ours.digest_equal[i] else "**no**",
                    "disk + restart" if ours.through_disk[i] else "RAM"]
        rows.append(row)
    header = ["hop", "roundtrip latent MSE", "PSNR vs D(z0)", "PSNR vs source",
              "float-only latent MSE", "float-only PSNR vs D(z0)"]
    if ours is not None:
        header += ["ours MSE", "ours bit-identical", "ours digest = hop 0", "ours path"]
    lines.append(md_table(header, rows))
    lines.append("")
    if ours is not None:
        lines.append(f"Digest of z0 (hop 0): `{ours.reference_digest}`. Ours per hop (put + get with "
                     f"verification, restarts included): "
                     + ", ".join(f"{s * 1e3:.2f} ms" for s in ours.seconds) + ". Roundtrip per hop "
                     "(PNG write + read, encode, decode): "
                     + ", ".join(f"{s * 1e3:.1f} ms" for s in png.seconds) + ".")
    else:
        lines.append(f"Ours was not run through: {ours_error}")
    lines.append("")
    if "reason" not in real:
        chain = real["roundtrip_png"]
        setup = (f"Loaded by ComfyUI (`comfy.sd.VAE`) in {real['load_seconds']:.1f} s; "
                 f"{'video' if real['video'] else 'image'} VAE, generated clip "
                 f"{real['frames']} frame(s) of {real['size']}×{real['size']}, latent "
                 f"{tuple(real['latent_shape'])} {real['latent_dtype']} (variance "
                 f"{real['latent_variance']:.3g}), carried whole (slicing a causal video VAE's "
                 f"latent mid-clip changes what its first latent frame means). First decode vs "
                 f"source: {_fmt_db(chain['source_psnr_db'])}.")
        lines += [f"#### Real VAE: {real['vae']}", "", setup, ""]
        real_ours = real["ours"]
        real_rows = [[i + 1, _fmt_mse(chain["latent_mse"][i]),
                      _fmt_db(chain["psnr_vs_first_decode_db"][i]),
                      _fmt_db(chain["psnr_vs_source_db"][i]), f"{chain['seconds'][i]:.2f} s"]
                     for i in range(hops)]
        header = ["hop", "roundtrip latent MSE", "PSNR vs D(z0)", "PSNR vs source", "roundtrip time"]
        if "error" not in real_ours:
            header += ["ours MSE", "ours bit-identical + digest"]
            for i, row in enumerate(real_rows):
                row += [_fmt_mse(real_ours["latent_mse"][i]),
                        "yes" if real_ours["bit_identical"][i] and real_ours["digest_equal"][i]
                        else "**no**"]
        lines += [md_table(header, real_rows), ""]
    training_note = (
        f"- **Tiny video AE, trained here.** {params:,} parameters; the 4×4 patches of a frame "
        "become 48 channels, a linear projection plus a nonlinear Conv3d branch (3×3×3 over "
        "space and time) encodes them into 8 latent channels at ÷4 spatially and ÷1 in time; "
        "the decoder mirrors it and adds a small full-resolution 3×3×3 refinement. The linear "
        f"paths start from a PCA of the patches of {tiny.PCA_CLIPS} generated clips, then Adam "
        f"trains everything on fresh generated clips ({tiny.TRAIN_BATCH} clips of "
        f"{tiny.TRAIN_FRAMES} frames of {tiny.TRAIN_SIZE}×{tiny.TRAIN_SIZE} per step: scrolling "
        "colour bars, translating checkerboards or travelling colour waves with 1–3 moving "
        f"discs, random velocities), seed {SEED}, a {budget:.0f} s wall-clock budget on "
        f"{training.threads} CPU thread(s): {training.steps} steps in {training.seconds:.1f} s, "
        f"pixel MSE {training.first_loss:.5f} at the first step → {training.final_loss:.5f} "
        f"(mean of the last 10 steps). Held-out clip ({TEST_FRAMES} frames of "
        f"{TEST_SIZE}×{TEST_SIZE}, a seed never used in training): encode → decode PSNR "
        f"{_fmt_db(heldout_psnr)}.")
    tail_note = (
        f"- **The handed-off tail.** z0 = the last {TAIL_FRAMES} latent frames of E(held-out "
        f"clip), shape {tuple(z0.shape)} float32 (latent variance "
        f"{z0.double().var().item():.3g}); the tiny AE has one latent frame per video frame, "
        f"so these are the latents of the clip's last {TAIL_FRAMES} frames.")
    roundtrip_note = (
        "- **Roundtrip (what users do today).** Hop n: decode z_{n-1} → frames → 8-bit PNG "
        "per frame written and read back with Pillow, quantized exactly as ComfyUI's SaveImage "
        "(255·x clipped, truncated to uint8) and loaded as LoadImage (uint8 / 255) → encode → "
        "z_n. Reported: latent MSE(z_n, z0); pixel PSNR of D(z_n) against D(z0) (the frames "
        "shot n showed) and against the source clip's last frames (peak 1.0). The float-only "
        "chain skips the PNG step: the part of the drift that is the VAE's own.")
    ours_note = (
        "- **Ours.** Hop n: `LatentStore.put(tag, {\"latent\": tail})` → `get(tag, "
        "verify=True)` → the returned tensor is the next hop's input. Even hops are put with "
        "`spill=True`, flushed, the store closed and a new `LatentStore(spill_dir=same)` "
        "opened, which restores the tail from disk (digest-verified): a restart. Per hop: "
        "MSE vs z0, bitwise equality (int32 views), the engine's digest of the slot and a "
        "re-digest of the returned tensor, both compared with the digest of z0.")
    real_note = (
        "- **Real VAE** (`--vae PATH`, needs ComfyUI in-process): the same roundtrip chain "
        "through `comfy.sd.VAE` (ComfyUI's VAEDecode/VAEEncode calls) on a generated clip, "
        "carried whole; ours with its latent. "
        + ("Measured above." if "reason" not in real else f"Not measured: {real['reason']}."))
    caveat = (
        "- The tiny AE shows the mechanism (a decode → encode roundtrip is not the identity, "
        "and each hop starts from the previous hop's error); how fast a real VAE drifts is its "
        "own figure (`--vae PATH`).")
    lines += ["#### What was measured", "", training_note, tail_note, roundtrip_note, ours_note,
              real_note, caveat, "- Nothing is estimated: every number above is from this run."]
    return "\n".join(lines)


def run(ctx: Context) -> Section:
    """Measure drift over ctx.pick(10, 10, 3) hops; write drift.png; return the section."""
    started = time.perf_counter()
    section = Section(name="drift", title="2. Drift across hops: the handed-off tail after 1…N hops")
    hops = ctx.pick(10, 10, 3)
    budget = ctx.pick(60.0, 15.0, 2.0)
    work = Path(ctx.tmp_dir) / "drift"
    work.mkdir(parents=True, exist_ok=True)
    Path(ctx.out_dir).mkdir(parents=True, exist_ok=True)
    try:
        ctx.log(f"drift: training the tiny video AE ({budget:.0f} s budget)")
        model = tiny.build_model(SEED)
        training = tiny.train(model, budget, SEED, log=ctx.log)
        params = tiny.parameter_count(model)
        source_clip = tiny.held_out_clip(SEED, TEST_FRAMES, TEST_SIZE)
        with torch.no_grad():
            latent_clip = model.encode(source_clip)
            heldout_psnr = tiny.psnr(model.decode(latent_clip), source_clip)
        ctx.log(f"drift: {training.steps} steps in {training.seconds:.1f} s, loss "
                f"{training.final_loss:.5f}, held-out PSNR {_fmt_db(heldout_psnr)}")
        z0 = latent_clip[:, :, -TAIL_FRAMES:].contiguous()
        source_tail = tiny.to_frames(source_clip[:, :, -TAIL_FRAMES:])
        decode, encode = _tiny_codec(model)
        png = roundtrip_chain(decode, encode, z0, source_tail, hops, work / "png", ctx.log,
                              "tiny AE 8-bit PNG")
        floating = roundtrip_chain(decode, encode, z0, source_tail, hops, None)

        ours: StoreChain | None = None
        ours_error = None
        try:
            ours = store_chain(z0, hops, work / "spill")
        except ImportError as exc:  # EngineNotBuilt is an ImportError
            ours_error = f"engine not available: {_one_line(exc)}"
        except Exception as exc:
            ours_error = _one_line(exc)
        real = real_vae_drift(ctx, hops, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    # ---- rows
    disk_hops = sum(ours.through_disk) if ours else 0
    figure_ours = (f"ours: handed-off tail after {hops} hops through the store "
                   f"(RAM; every 2nd hop disk + restart)")
    if ours is None:
        result = NOT_MEASURED if ours_error and ours_error.startswith("engine not available") else FAIL
        section.rows.append(Row("D1", figure_ours, "MSE exactly 0, digest unchanged",
                                ours_error or "not run", result))
    else:
        section.rows.append(Row(
            "D1", figure_ours, "MSE exactly 0, digest unchanged",
            f"max MSE {max(ours.latent_mse):g}; bit-identical {sum(ours.bit_identical)}/{hops}; "
            f"digest = hop 0 {sum(ours.digest_equal)}/{hops} ({ours.reference_digest}); "
            f"{disk_hops} of them via disk + restart", PASS if ours.passed else FAIL))
    section.rows.append(Row(
        "D2", f"VAE roundtrip, tiny video AE trained here (held-out PSNR {_fmt_db(heldout_psnr)}), "
              f"8-bit PNG: hop 1 → hop {hops}", "(info)",
        f"latent MSE {_fmt_mse(png.latent_mse[0])} → {_fmt_mse(png.latent_mse[-1])}; pixel PSNR vs "
        f"first decode {_fmt_db(png.psnr_vs_first_decode_db[0])} → "
        f"{_fmt_db(png.psnr_vs_first_decode_db[-1])}, vs source "
        f"{_fmt_db(png.psnr_vs_source_db[0])} → {_fmt_db(png.psnr_vs_source_db[-1])}", INFO))
    if "reason" in real:
        section.rows.append(Row("D3", "VAE roundtrip with a real VAE (--vae PATH)", "(info)",
                                real["reason"], NOT_MEASURED))
    else:
        chain, ours_real = real["roundtrip_png"], real["ours"]
        if "error" in ours_real:
            real_ours_text = f"not run ({ours_real['error']})"
        elif ours_real["passed"]:
            real_ours_text = f"MSE 0, bit-identical, digest unchanged over {hops} hops"
        else:
            real_ours_text = "NOT bit-identical (see details)"
        section.rows.append(Row(
            "D3", f"VAE roundtrip, real VAE {real['vae']} ({real['frames']}×{real['size']}²), "
                  f"8-bit PNG: hop 1 → hop {hops}", "(info)",
            f"latent MSE {_fmt_mse(chain['latent_mse'][0])} → {_fmt_mse(chain['latent_mse'][-1])}; "
            f"pixel PSNR vs first decode {_fmt_db(chain['psnr_vs_first_decode_db'][0])} → "
            f"{_fmt_db(chain['psnr_vs_first_decode_db'][-1])}; ours with this latent: {real_ours_text}",
            INFO if ours_real.get("passed") else FAIL))  # ours must stay bit-identical here too

    # ---- plot, data, details
    real_for_plot = None
    if "reason" not in real:
        real_chain = RoundtripChain(**real["roundtrip_png"])
        real_for_plot = {"vae": real["vae"], "chain": real_chain}
    plot_drift(Path(ctx.out_dir) / PLOT_NAME, hops, png, floating, real_for_plot)
    section.plots = [PLOT_NAME]

    def clean(chain_json: dict) -> dict:
        return {k: ([_finite(v) if isinstance(v, float) or v is None else v for v in value]
                    if isinstance(value, list) else (_finite(value) if isinstance(value, float) else value))
                for k, value in chain_json.items()}

    section.data = {
        "hops": hops,
        "seed": SEED,
        "tail_latent_frames": TAIL_FRAMES,
        "tail_latent_shape": list(z0.shape),
        "tail_latent_variance": z0.double().var().item(),
        "tiny_ae": {"parameters": params, "latent_channels": model.latent_channels,
                    "spatial_factor": tiny.PATCH, "temporal_factor": 1,
                    "train_budget_s": budget, "train_seconds": training.seconds,
                    "train_steps": training.steps, "train_threads": training.threads,
                    "first_loss": training.first_loss, "final_loss": training.final_loss,
                    "heldout_psnr_db": _finite(heldout_psnr),
                    "test_clip": {"frames": TEST_FRAMES, "size": TEST_SIZE}},
        "roundtrip_png": clean(png.to_json()),
        "roundtrip_float": clean(floating.to_json()),
        "ours": ours.to_json() if ours else {"error": ours_error},
        "real_vae": ({"reason": real["reason"]} if "reason" in real else
                     dict(real, roundtrip_png=clean(real["roundtrip_png"]))),
        "note": "PSNR None = identical (infinite); MSE values are exact float64 means",
    }
    section.details = _details(hops, training, heldout_psnr, params, budget, z0, png, floating,
                               ours, ours_error, real)
    section.seconds = time.perf_counter() - started
    ctx.log(f"drift: done in {section.seconds:.1f} s")
    return section
