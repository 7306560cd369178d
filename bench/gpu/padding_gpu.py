#!/usr/bin/env python3
"""Row P3: the Wan I2V gray padding's one-time VAE encode on a GPU (P1 is the same encode on the
CPU, bench/sections/padding.py). bench/gpu/run_all.py runs it in a fresh process.

    python bench/gpu/padding_gpu.py --comfyui PATH --json OUT [--width 832] [--height 480]
                                    [--length 81] [--reps 3]

What is timed is the encode the pack makes once per VAE and canvas
(``zc_nodes.adapters.gray_padding.encode_gray``: ``length`` frames of 0.5 gray through ComfyUI's
``VAE.encode``), with P1's model: ComfyUI's Wan 2.1 VAE architecture at the released width 96,
seeded random weights (``bench.sections.padding.wan21_vae``; the cost depends on the architecture
and size, not on the weights). Twice: in the dtype ComfyUI chooses for a VAE on this GPU (what a
user's encode runs in) and in float32 (P1's dtype), each after a warm-up encode at 64x64 (kernels,
the weights moved onto the device): the first encode at the canvas (what a film pays once), then
``reps - 1`` more. Every timing ends with torch.cuda.synchronize(). An encode that raises is
recorded with its error (the row says FAIL), the other still runs. ComfyUI runs in-process after
its cuda_malloc chose the allocator, as main.py does. Refuses to run without CUDA.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.gpu.cuda_required import refuse, require_cuda  # noqa: E402

WARM_UP = (64, 64, 5)  # width, height, length of the warm-up encode


def start_comfyui(root: Path, work: Path):
    """ComfyUI in this process on the GPU; the allocator is chosen before torch loads."""
    if not (root / "comfy" / "model_management.py").is_file():
        refuse("padding_gpu", f"--comfyui / COMFYUI_PATH must point at a ComfyUI checkout (got {str(root)!r}).")
    sys.path.insert(0, str(root))
    import cuda_malloc  # noqa: F401  sets PYTORCH_CUDA_ALLOC_CONF as ComfyUI's main.py does
    require_cuda("padding_gpu")
    os.environ["ZEROCOPY_SPILL_DIR"] = str(work / "zerocopy_spill")  # never the user's folder
    from tools.comfy_inprocess import ComfyInProcess
    return ComfyInProcess(root, work / "comfyui", cpu=False)


def encodes(gray, vae, width: int, height: int, length: int, reps: int) -> dict:
    """The warm-up, then ``reps`` CUDA-synchronised encodes at the canvas; or the error it raised."""
    import torch
    try:
        with torch.inference_mode():
            gray.encode_gray(vae, *WARM_UP)
            torch.cuda.synchronize()
            seconds, shape = [], None
            for _ in range(reps):
                t0 = time.perf_counter()
                latent = gray.encode_gray(vae, width, height, length)
                torch.cuda.synchronize()
                seconds.append(time.perf_counter() - t0)
                shape = list(latent.shape)
                del latent
    except Exception as exc:  # noqa: BLE001 - the row says what happened
        return {"dtype": str(vae.vae_dtype).replace("torch.", ""),
                "error": f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:300]}
    return {"dtype": str(vae.vae_dtype).replace("torch.", ""), "device": str(vae.device),
            "first_s": seconds[0], "seconds": seconds, "latent_shape": shape,
            "peak_bytes": int(torch.cuda.max_memory_allocated())}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--comfyui", type=Path, default=os.environ.get("COMFYUI_PATH"), help="ComfyUI checkout")
    ap.add_argument("--json", type=Path, required=True, help="where the figures go")
    ap.add_argument("--width", type=int, default=832)
    ap.add_argument("--height", type=int, default=480)
    ap.add_argument("--length", type=int, default=81, help="pixel frames (4k+1)")
    ap.add_argument("--reps", type=int, default=3, help="encodes at the canvas per dtype (the first counts apart)")
    ap.add_argument("--work-dir", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "zc_padding_gpu")
    args = ap.parse_args(argv)
    if args.comfyui is None:
        refuse("padding_gpu", "needs --comfyui or COMFYUI_PATH (the VAE is ComfyUI's)")
    if args.reps < 1 or (args.length - 1) % 4:
        refuse("padding_gpu", f"--reps {args.reps} must be at least 1 and --length {args.length} of the form 4k+1")
    started = time.perf_counter()
    args.work_dir.mkdir(parents=True, exist_ok=True)
    comfy = start_comfyui(Path(args.comfyui), args.work_dir)
    import comfy.model_management as mm
    import torch

    from bench.sections import padding

    gray = comfy.module("zc_nodes.adapters.gray_padding")
    runs = {}
    for name, dtype in (("comfy_default", None), ("float32", torch.float32)):
        if name == "float32" and runs["comfy_default"].get("dtype") == "float32":
            runs[name] = {"dtype": "float32", "same_as": "comfy_default"}  # ComfyUI chose float32 itself
            continue
        vae = padding.wan21_vae("cuda", dtype=dtype)
        torch.cuda.reset_peak_memory_stats()
        runs[name] = encodes(gray, vae, args.width, args.height, args.length, args.reps)
        del vae
        mm.unload_all_models()
        mm.soft_empty_cache()
    out = {"gpu": torch.cuda.get_device_name(0), "comfyui": comfy.version(), "width": args.width,
           "height": args.height, "length": args.length, "reps": args.reps, "vae_width": padding.VAE_DIM,
           "weights": "seeded random (the cost depends on the architecture and size)", "encodes": runs,
           "seconds": round(time.perf_counter() - started, 1)}
    args.json.write_text(json.dumps(out, indent=1, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
