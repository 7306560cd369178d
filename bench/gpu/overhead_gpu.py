#!/usr/bin/env python3
"""The benchmark's overhead measurement (bench/sections/overhead.py) on a GPU, under one of
ComfyUI's device set-ups. bench/gpu/run_all.py runs it once per set-up, each in a fresh process.

    python bench/gpu/overhead_gpu.py --comfyui PATH --flags gpu-only|default --json OUT [--reps 9]

  gpu-only  ComfyUI's --gpu-only: its intermediate device is the GPU, so samplers return latents
            there; the Store then holds them by reference (the device tier) and SaveLatent copies
            them to the host.
  default   ComfyUI's default flags on a GPU: samplers return latents on the CPU (ComfyUI's
            intermediate device), so the Store takes the host path; the VAE runs on the GPU.

The latents are made where ComfyUI's samplers would leave them
(comfy.model_management.intermediate_device()), then the same three routes as on the CPU run
side by side, with the same idle gap before every call: ours (the real Store and Handoff nodes),
SaveLatent -> LoadLatent, one memcpy of the latent (a device copy when the latent is on the GPU),
and the VAE decode -> PNG -> encode roundtrip (real architectures, random weights, on the GPU).
Every timed call ends with torch.cuda.synchronize(). ComfyUI runs in-process after its own
cuda_malloc chose the allocator, as main.py does; comfy-aimdo (dynamic VRAM) is started only by
main.py, so model management here is classic: the latent path does not depend on it.
Refuses to run without CUDA.
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

FLAGS = ("gpu-only", "default")
VAE_REPS = 2  # a roundtrip is ~1000x ours: two decide the ratio


def start_comfyui(root: Path, flags: str, work: Path):
    """ComfyUI in this process with the given device flags; the allocator is chosen before torch loads."""
    if not (root / "comfy" / "model_management.py").is_file():
        refuse("overhead_gpu", f"--comfyui / COMFYUI_PATH must point at a ComfyUI checkout (got {str(root)!r}).")
    if "torch" in sys.modules:
        refuse("overhead_gpu", "internal: torch was imported before ComfyUI's cuda_malloc; the allocator would "
                               "not be ComfyUI's")
    sys.path.insert(0, str(root))
    from comfy.cli_args import args
    args.gpu_only = flags == "gpu-only"
    import cuda_malloc  # noqa: F401  sets PYTORCH_CUDA_ALLOC_CONF as ComfyUI's main.py does
    require_cuda("overhead_gpu")  # imports torch: the allocator backend is fixed from here on
    os.environ["ZEROCOPY_SPILL_DIR"] = str(work / "zerocopy_spill")  # never the user's folder
    from tools.comfy_inprocess import ComfyInProcess
    return ComfyInProcess(root, work / "comfyui", cpu=False)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--comfyui", type=Path, default=os.environ.get("COMFYUI_PATH"), help="ComfyUI checkout")
    ap.add_argument("--flags", choices=FLAGS, required=True)
    ap.add_argument("--json", type=Path, required=True, help="where the figures go")
    ap.add_argument("--reps", type=int, default=9, help="repetitions of ours / file route / memcpy")
    ap.add_argument("--work-dir", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "zc_overhead_gpu")
    args = ap.parse_args(argv)
    if args.comfyui is None:
        refuse("overhead_gpu", "needs --comfyui or COMFYUI_PATH (the nodes and SaveLatent/LoadLatent are ComfyUI's)")
    started = time.perf_counter()
    work = args.work_dir / args.flags
    work.mkdir(parents=True, exist_ok=True)
    comfy = start_comfyui(Path(args.comfyui), args.flags, work)
    import comfy.model_management as mm
    import torch

    from bench.common import Context
    from bench.sections import overhead

    ctx = Context(mode="full", out_dir=work, tmp_dir=work, comfyui_path=Path(args.comfyui), comfy=comfy,
                  cuda=True)
    latent_device = mm.intermediate_device()
    results, via_nodes = overhead.measure_shapes(ctx, overhead.SHAPES, args.reps,
                                                 {kind: VAE_REPS for kind in overhead.VAE_REPS}, latent_device)
    out = {"flags": args.flags, "comfyui": comfy.version(), "latent_device": str(latent_device),
           "vae_device": str(mm.vae_device()), "torch_device": str(mm.get_torch_device()),
           "gpu": torch.cuda.get_device_name(0), "allocator_backend": torch.cuda.get_allocator_backend(),
           "via_nodes": via_nodes, "reps": args.reps, "idle_s": overhead.IDLE_S, "results": results,
           "seconds": round(time.perf_counter() - started, 1)}
    args.json.write_text(json.dumps(out, indent=1, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
