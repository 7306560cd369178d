#!/usr/bin/env python3
"""GPU check for the residency lock (ZeroCopyVRAMPin): one command, no downloads.

    COMFYUI_PATH=/path/to/ComfyUI python bench/gpu/residency_check.py [--shots 10] [--model-gb 6]

What it does, in fresh processes (the memory mode is chosen at ComfyUI start-up):

  prepare   writes a random-weight Wan 2.1-architecture DiT of about --model-gb
            (dim 5120, the 14B layout with fewer blocks; bf16 safetensors) into a
            work folder, once.
  runs      classic / dynamic VRAM (when comfy-aimdo works here) x unlocked /
            locked. Each run emulates a --card-gb card (a ballast tensor takes
            the rest of the GPU), loads the DiT with ComfyUI's own loader, and
            renders --shots shots. A shot is: sample 2 steps with ComfyUI's
            sampler (comfy.sample.sample: the real load_models_gpu path), then a
            VAE-sized phase: ComfyUI loads a random Wan 2.1 VAE with
            load_models_gpu(memory_required=P) as VAE decode does, and P bytes are
            allocated and touched; if that runs out of memory it is retried in 4
            pieces, the way ComfyUI falls back to tiled decoding. P is chosen from
            the free memory measured after the first shot so that ComfyUI's own
            estimate asks for more room than is free (it evicts an unlocked DiT),
            while the physical allocation still fits beside a resident one
            (override with --pressure-gb).

Per shot it prints: the time of ComfyUI's load calls for the DiT (CUDA
synchronised), the bytes they moved onto the GPU (classic: growth of ComfyUI's
loaded-weight count; dynamic: weights whose VBAR signature changed, i.e. copied
into VRAM again), what was still resident after the VAE phase, whether the VAE
phase needed the tiled fallback, the allocator figures the backend provides and,
for a locked DiT, the reason the pin's report gives for a reload in that shot
(the lock state's last_reload_reason / last_reload_causes). Results go to stdout
and, as JSON, to --json. bench/gpu/run_all.py runs it once per allocator setting
and once for dynamic VRAM.

Allocator (--allocator): comfy-default lets ComfyUI's cuda_malloc decide
(cudaMallocAsync on most NVIDIA cards), cudaMallocAsync forces it (ComfyUI's
--cuda-malloc), native is --disable-cuda-malloc: PYTORCH_CUDA_ALLOC_CONF is then
left as given, e.g. expandable_segments:True. PyTorch picks its allocator backend
when it loads, so each run's child process starts ComfyUI's cuda_malloc before
importing torch, and the JSON records the backend PyTorch really used and the
setting it started with (bench/sections/residency.py runs one setting per call).

It refuses to run without CUDA, and claims nothing it did not measure.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.gpu.cuda_required import refuse as refuse_as, require_cuda  # noqa: E402

GIB = 1 << 30
MIB = 1 << 20
DIM, FFN, HEADS, TEXT_DIM = 5120, 13824, 40, 4096  # Wan 2.1 14B widths
LATENT = (1, 16, 3, 16, 16)  # 9 frames at 128x128: a short sampler pass, so loads dominate
TEXT_TOKENS = 64
ALLOC_ENV = ("PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF")


def refuse(message: str) -> None:
    refuse_as("residency_check", message)


def check_cuda() -> str:
    return require_cuda("residency_check").cuda.get_device_name(0)


# ------------------------------------------------------------------------------------------ prepare

def layers_for(model_gb: float) -> int:
    per_layer = 8 * DIM * DIM + 2 * DIM * FFN  # self + cross attention, FFN (biases and norms are small)
    fixed = TEXT_DIM * DIM + DIM * DIM + 256 * DIM + 7 * DIM * DIM  # text/time embeddings, projection
    return max(1, round((model_gb * GIB / 2 - fixed) / per_layer))


def prepare(comfyui: Path, path: Path, model_gb: float) -> None:
    """Write the random DiT (ComfyUI's own WanModel key layout, built on the meta device)."""
    sys.path.insert(0, str(comfyui))
    from comfy.cli_args import args
    args.disable_dynamic_vram = True
    import comfy.ldm.wan.model
    import comfy.ops
    import torch
    from safetensors.torch import save_file

    layers = layers_for(model_gb)
    with torch.device("meta"):
        model = comfy.ldm.wan.model.WanModel(model_type="t2v", dim=DIM, ffn_dim=FFN, num_layers=layers,
                                             num_heads=HEADS, in_dim=16, out_dim=16, text_dim=TEXT_DIM,
                                             operations=comfy.ops.disable_weight_init)
    generator = torch.Generator(device="cuda").manual_seed(0)
    state = {}
    for key, tensor in sorted(model.state_dict().items()):
        value = torch.randn(tensor.shape, generator=generator, device="cuda", dtype=torch.float32) * 0.02
        if key.endswith((".norm_q.weight", ".norm_k.weight", "norm3.weight")):
            value += 1.0
        state[key] = value.to(torch.bfloat16).cpu()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    save_file(state, str(tmp))
    tmp.replace(path)
    size = path.stat().st_size
    print(f"prepared {path.name}: {layers} blocks, {size / GIB:.2f} GiB", flush=True)


# ------------------------------------------------------------------------------------------ one run

def init_comfyui(comfyui: Path, mode: str, allocator: str):
    """Start ComfyUI's memory stack in this process the way main.py does, through its own
    functions: allocator choice before torch, comfy-aimdo before comfy.model_management,
    devices after. Returns (model_management, dynamic_active, note)."""
    sys.path.insert(0, str(comfyui))
    from comfy.cli_args import args
    if "torch" in sys.modules:
        refuse("internal: torch was imported before ComfyUI's cuda_malloc; the allocator setting would not apply")
    args.disable_cuda_malloc = allocator == "native"
    if allocator == "cudaMallocAsync" and hasattr(args, "cuda_malloc"):
        args.cuda_malloc = True  # ComfyUI's --cuda-malloc
    import cuda_malloc  # noqa: F401  sets PYTORCH_CUDA_ALLOC_CONF as ComfyUI does
    check_cuda()  # imports torch, which fixes the allocator backend: only now
    note = ""
    aimdo = None
    if mode == "dynamic":
        try:
            import comfy_aimdo.control as aimdo
            if not aimdo.init():
                return None, False, "comfy_aimdo.control.init() returned False (no usable aimdo library)"
        except Exception as exc:  # noqa: BLE001 - any failure means: no dynamic mode here
            return None, False, f"comfy-aimdo unavailable: {type(exc).__name__}: {exc}"
    else:
        if hasattr(args, "disable_dynamic_vram"):
            args.disable_dynamic_vram = True
    import comfy.memory_management
    import comfy.model_management as mm
    import comfy.model_patcher
    dynamic = False
    if aimdo is not None:
        try:
            ok = aimdo.init_devices([d.index for d in mm.get_all_torch_devices()])
        except Exception as exc:  # noqa: BLE001 - reported, the run is skipped
            ok, note = False, f"init_devices failed: {type(exc).__name__}: {exc}"
        if ok and hasattr(comfy.model_patcher, "ModelPatcherDynamic"):
            comfy.model_patcher.CoreModelPatcher = comfy.model_patcher.ModelPatcherDynamic
            comfy.memory_management.aimdo_enabled = True
            dynamic = True
        elif not note:
            note = "aimdo init_devices did not succeed, or this ComfyUI has no ModelPatcherDynamic"
        if not dynamic:
            return None, False, note
    return mm, dynamic, note


def random_wan_vae():
    import comfy.ldm.wan.vae
    import comfy.sd
    import torch
    with torch.device("meta"):
        vae = comfy.ldm.wan.vae.WanVAE(dim=96, z_dim=16, dim_mult=[1, 2, 4, 4], num_res_blocks=2, attn_scales=[],
                                       temperal_downsample=[False, True, True], dropout=0.0)
    generator = torch.Generator().manual_seed(1)
    state = {}
    for key, tensor in vae.state_dict().items():
        value = torch.randn(tensor.shape, generator=generator) * 0.02
        if key.endswith(".gamma"):
            value += 1.0
        state[key] = value
    return comfy.sd.VAE(sd=state)


def one_run(opts) -> dict:
    comfyui = Path(opts.comfyui)
    mm, dynamic, note = init_comfyui(comfyui, opts.mode, opts.allocator)
    result = {"mode": opts.mode, "locked": opts.locked, "allocator": opts.allocator, "shots": [],
              "alloc_conf": {name: os.environ[name] for name in ALLOC_ENV if os.environ.get(name)}}
    if mm is None:
        result["skipped"] = note
        return result
    import torch
    sys.path.insert(0, str(REPO))
    import comfy.sample
    import comfy.sd

    from zc_pack.zc_residency import get_service
    from zc_pack.zc_residency.cuda_allocator import TorchCuda, describe_figures
    from zc_pack.zc_residency.load_evidence import recopied_bytes, signature_snapshot
    from zc_pack.zc_residency.report import lock_state

    device = mm.get_torch_device()
    cuda = TorchCuda()
    backend = cuda.backend()
    result.update(device=torch.cuda.get_device_name(device), backend=backend, dynamic_vram=dynamic)

    free = torch.cuda.mem_get_info(device)[0]
    ballast_bytes = max(0, free - int(opts.card_gb * GIB))
    ballast = torch.empty(ballast_bytes, dtype=torch.uint8, device=device) if ballast_bytes else None
    result["card_bytes"] = torch.cuda.mem_get_info(device)[0]

    patcher = comfy.sd.load_diffusion_model(opts.model_path)
    base = patcher.model
    vae = random_wan_vae()
    result["model_bytes"], result["dynamic_patcher"] = patcher.model_size(), patcher.is_dynamic()
    if opts.locked:
        outcome = get_service().lock(patcher, "residency_check", headroom_bytes=0)
        result["lock"] = outcome.message
        if not outcome.locked:
            result["skipped"] = "the budget guard refused the lock: " + outcome.message
            return result

    # Measure ComfyUI's load calls for the DiT (script instrumentation, for locked and unlocked alike).
    loads = {"seconds": 0.0, "bytes": 0, "calls": 0}
    original_load = mm.load_models_gpu

    def measured_load_models_gpu(models, *args, **kwargs):
        if not any(getattr(m, "model", None) is base for m in models):
            return original_load(models, *args, **kwargs)
        torch.cuda.synchronize(device)
        before, start = int(base.model_loaded_weight_memory), time.perf_counter()
        try:
            return original_load(models, *args, **kwargs)
        finally:
            torch.cuda.synchronize(device)
            loads["seconds"] += time.perf_counter() - start
            loads["calls"] += 1
            if not dynamic:
                loads["bytes"] += max(0, int(base.model_loaded_weight_memory) - before)

    mm.load_models_gpu = measured_load_models_gpu
    generator = torch.Generator().manual_seed(2)
    positive = [[torch.randn(1, TEXT_TOKENS, TEXT_DIM, generator=generator), {}]]
    negative = [[torch.randn(1, TEXT_TOKENS, TEXT_DIM, generator=generator), {}]]
    latent = torch.zeros(LATENT)
    pressure = int(opts.pressure_gb * GIB) if opts.pressure_gb else None
    signatures = signature_snapshot(base.named_modules())[0] if dynamic else None
    last_reload = None  # the lock state's last reload (time) seen so far: a new one belongs to this shot

    for shot in range(opts.shots):
        loads.update(seconds=0.0, bytes=0, calls=0)
        noise = torch.randn(LATENT, generator=torch.Generator().manual_seed(100 + shot))
        start = time.perf_counter()
        comfy.sample.sample(patcher, noise, 2, 1.0, "euler", "simple", positive, negative, latent,
                            seed=100 + shot, disable_pbar=True)
        torch.cuda.synchronize(device)
        sample_s = time.perf_counter() - start
        node_boundary(mm, dynamic)
        copied = 0
        if dynamic:
            current, sizes = signature_snapshot(base.named_modules())
            copied, signatures = recopied_bytes(signatures, current, sizes), current
        resident_after_sample = int(patcher.loaded_size())
        if pressure is None:  # from the first shot: see the module docstring
            free_now = mm.get_free_memory(device)
            vae_bytes = vae.patcher.model_size()
            margin = 128 * MIB if dynamic else vae_bytes + 200 * MIB
            pressure = max(256 * MIB, int(free_now - margin))
            result["pressure_bytes"] = pressure
        tiled = vae_phase(mm, vae, pressure, device, torch)
        node_boundary(mm, dynamic)
        row = {"shot": shot + 1, "load_calls": loads["calls"], "load_s": round(loads["seconds"], 6),
               "bytes_loaded": loads["bytes"], "bytes_copied_into_vbar": copied if dynamic else None,
               "sample_s": round(sample_s, 4), "resident_after_sample": resident_after_sample,
               "resident_after_vae": int(patcher.loaded_size()), "vae_phase": tiled,
               "allocator": allocator_figures(cuda, device, backend), "reload": None}
        if opts.locked:
            row["reload"], last_reload = reload_of_shot(get_service(), base, last_reload, lock_state)
        result["shots"].append(row)
        print_row(result, row, describe_figures(row["allocator"], backend))
    if opts.locked:
        lock = get_service().registry.find(base)
        result["lock_evidence"] = lock.evidence.as_dict(lock.dynamic) if lock is not None else None
        get_service().release_all("residency_check done")
    del ballast
    return result


def reload_of_shot(service, base, seen, lock_state) -> tuple[dict | None, object]:
    """The reload the pin's report recorded since the last shot (None: none), from its lock state."""
    lock = service.registry.find(base)
    if lock is None:
        return {"reason": "the lock is gone", "causes": [], "detail": None, "bytes": None}, seen
    state = lock_state(service, lock)
    stamp = state.get("last_reload_unix")
    if stamp is None or stamp == seen:
        return None, seen
    return {"reason": state.get("last_reload_reason"), "causes": state.get("last_reload_causes"),
            "detail": state.get("last_reload_detail"), "bytes": state.get("last_reload_bytes"),
            "seconds": state.get("last_reload_s")}, stamp


def allocator_figures(cuda, device, backend: str) -> dict:
    """The pack's allocator figures (fragmentation(): reserved, allocated; native also inactive split,
    retries, OOMs, largest free block; device free/total) plus, for native, the segment count and how
    many segments are expandable (memory_snapshot), and the peaks. For any other backend, every
    non-zero figure of memory_stats() as PyTorch reports it (cudaMallocAsync fills only a few)."""
    from zc_pack.zc_residency.cuda_allocator import fragmentation
    figures = fragmentation(cuda, device, backend)
    stats = cuda.stats(device)
    for name, key in (("reserved_peak", "reserved_bytes.all.peak"), ("allocated_peak", "allocated_bytes.all.peak")):
        if key in stats:
            figures[name] = int(stats[key])
    if backend == "native":
        if "segment.all.current" in stats:
            figures["segments"] = int(stats["segment.all.current"])
        try:
            snapshot = cuda.snapshot()
            figures["expandable_segments"] = sum(1 for segment in snapshot if segment.get("is_expandable"))
        except Exception:  # noqa: BLE001, S110 - left out, never invented
            pass
    else:
        figures["memory_stats_nonzero"] = {k: int(v) for k, v in stats.items() if v}
    return figures


def node_boundary(mm, dynamic: bool) -> None:
    """What execution.py does after every node under dynamic VRAM: drop cast buffers and reset
    every VBAR watermark limit (through the module attribute, so the lock's re-apply runs)."""
    if not dynamic:
        return
    import comfy_aimdo.model_vbar
    mm.reset_cast_buffers()
    comfy_aimdo.model_vbar.vbars_reset_watermark_limits()


def vae_phase(mm, vae, pressure: int, device, torch) -> str:
    """ComfyUI's VAE load for a decode needing `pressure` bytes, then those bytes; tiled on OOM."""
    mm.load_models_gpu([vae.patcher], memory_required=pressure)
    try:
        block = torch.empty(pressure, dtype=torch.uint8, device=device)
        block.fill_(1)
        del block
        return "whole"
    except torch.cuda.OutOfMemoryError:
        mm.soft_empty_cache()
        piece = pressure // 4
        try:
            for _ in range(4):
                block = torch.empty(piece, dtype=torch.uint8, device=device)
                block.fill_(1)
                del block
        except torch.cuda.OutOfMemoryError:
            mm.soft_empty_cache()
            return "OOM even in 4 pieces"
        return "tiled (OOM on the whole block)"
    finally:
        torch.cuda.synchronize(device)


def print_row(result, row, figures) -> None:
    label = f"{result['mode']:>7}/{'locked' if result['locked'] else 'unlocked':<8}"
    moved = f"{row['bytes_loaded'] / MIB:9.1f} MiB loaded"
    if row["bytes_copied_into_vbar"] is not None:
        moved = f"{row['bytes_copied_into_vbar'] / MIB:9.1f} MiB copied into VBAR"
    why = f"; reload: {row['reload']['reason']}" if row.get("reload") else ""
    print(f"{label} shot {row['shot']:2d}: load {row['load_s'] * 1000:8.2f} ms ({row['load_calls']} call), "
          f"{moved}, resident after VAE {row['resident_after_vae'] / GIB:6.2f} GiB, VAE {row['vae_phase']}; "
          f"sample {row['sample_s']:.2f} s{why}; {figures}", flush=True)


# ------------------------------------------------------------------------------------------ driver

def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--comfyui", default=os.environ.get("COMFYUI_PATH"), help="ComfyUI checkout (or COMFYUI_PATH)")
    parser.add_argument("--shots", type=int, default=10)
    parser.add_argument("--model-gb", type=float, default=6.0, help="size of the random DiT (bf16)")
    parser.add_argument("--card-gb", type=float, default=24.0, help="emulated card: free VRAM left to the run")
    parser.add_argument("--pressure-gb", type=float, default=None, help="VAE-phase bytes (default: from free memory)")
    parser.add_argument("--modes", default="classic,dynamic")
    parser.add_argument("--allocator", choices=["comfy-default", "native", "cudaMallocAsync"], default="comfy-default",
                        help="comfy-default: what ComfyUI picks (cudaMallocAsync on NVIDIA); native: --disable-cuda-malloc "
                             "(PYTORCH_CUDA_ALLOC_CONF as given, e.g. expandable_segments:True); cudaMallocAsync: "
                             "--cuda-malloc")
    parser.add_argument("--work-dir", default=str(Path(os.environ.get("TMPDIR", "/tmp")) / "zc_residency_check"))
    parser.add_argument("--json", default=None, help="write every figure here (default: <work-dir>/results.json)")
    parser.add_argument("--timeout", type=int, default=90, help="seconds per run (prepare + 4 runs stay under 8 min)")
    parser.add_argument("--child", nargs=2, metavar=("MODE", "LOCKED"), help=argparse.SUPPRESS)
    parser.add_argument("--prepare-only", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--model-path", default=None, help=argparse.SUPPRESS)
    opts = parser.parse_args()
    if not opts.comfyui or not (Path(opts.comfyui) / "comfy" / "model_management.py").is_file():
        refuse(f"--comfyui / COMFYUI_PATH must point at a ComfyUI checkout (got {opts.comfyui!r}).")
    work = Path(opts.work_dir)
    model_path = Path(opts.model_path or work / f"zc_random_wan21_dit_{opts.model_gb:g}gb.safetensors")
    if opts.child:  # torch is imported inside, after ComfyUI's cuda_malloc (allocator choice)
        opts.mode, opts.locked = opts.child[0], opts.child[1] == "locked"
        opts.model_path = str(model_path)
        print("RESULT " + json.dumps(one_run(opts)), flush=True)
        return 0
    gpu = check_cuda()

    if opts.prepare_only:  # kept from an earlier run when it is there: same seed, same bytes
        if not model_path.exists():
            prepare(Path(opts.comfyui), model_path, opts.model_gb)
        return 0

    work.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    print(f"residency_check on {gpu}: {opts.shots} shots per run, ~{opts.model_gb:g} GiB DiT, emulated "
          f"{opts.card_gb:g} GiB card, allocator {opts.allocator}", flush=True)
    base_cmd = [sys.executable, str(Path(__file__).resolve()), "--comfyui", opts.comfyui, "--shots", str(opts.shots),
                "--model-gb", str(opts.model_gb), "--card-gb", str(opts.card_gb), "--allocator", opts.allocator,
                "--work-dir", str(work), "--model-path", str(model_path)]
    if opts.pressure_gb:
        base_cmd += ["--pressure-gb", str(opts.pressure_gb)]
    if not model_path.exists():
        subprocess.run(base_cmd + ["--prepare-only"], check=True, timeout=opts.timeout)
    results = []
    for mode in [m.strip() for m in opts.modes.split(",") if m.strip()]:
        for locked in ("unlocked", "locked"):
            try:
                done = subprocess.run(base_cmd + ["--child", mode, locked], capture_output=True, text=True, check=False,
                                      timeout=opts.timeout)
                lines = done.stdout.splitlines()
                for line in lines:
                    if not line.startswith("RESULT "):
                        print(line, flush=True)
                found = [json.loads(line[7:]) for line in lines if line.startswith("RESULT ")]
                if found:
                    results.append(found[-1])
                    if found[-1].get("skipped"):
                        print(f"{mode}/{locked}: skipped: {found[-1]['skipped']}", flush=True)
                else:
                    tail = "\n".join(done.stderr.splitlines()[-15:])
                    results.append({"mode": mode, "locked": locked == "locked", "failed": tail})
                    print(f"{mode}/{locked}: FAILED (exit {done.returncode}):\n{tail}", flush=True)
            except subprocess.TimeoutExpired:
                results.append({"mode": mode, "locked": locked == "locked", "failed": f"timeout {opts.timeout} s"})
                print(f"{mode}/{locked}: FAILED: no result within {opts.timeout} s", flush=True)
    summarize(results)
    out = Path(opts.json or work / "results.json")
    out.write_text(json.dumps({"gpu": gpu, "options": vars(opts), "runs": results,
                               "seconds": round(time.perf_counter() - started, 1)}, indent=1))
    print(f"figures: {out} ({time.perf_counter() - started:.0f} s in all)")
    return 0 if all("failed" not in r for r in results) else 1


def summarize(results) -> None:
    print("\nsummary (shots 2..N, after the first load):")
    for r in results:
        label = f"{r['mode']:>7}/{'locked' if r['locked'] else 'unlocked':<8}"
        shots = r.get("shots", [])[1:]
        if r.get("skipped") or r.get("failed") or not shots:
            print(f"  {label} {r.get('skipped') or r.get('failed') or 'no shots'}")
            continue
        moved = sum((s["bytes_copied_into_vbar"] if s["bytes_copied_into_vbar"] is not None else s["bytes_loaded"])
                    for s in shots)
        load_s = sum(s["load_s"] for s in shots)
        tiled = sum(1 for s in shots if s["vae_phase"] != "whole")
        print(f"  {label} {moved / GIB:7.2f} GiB moved onto the GPU, {load_s * 1000:9.1f} ms in DiT load calls, "
              f"{tiled} tiled VAE phases, pressure {r.get('pressure_bytes', 0) / GIB:.2f} GiB, backend {r.get('backend')}")


if __name__ == "__main__":
    raise SystemExit(main())
