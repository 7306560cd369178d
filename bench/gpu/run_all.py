#!/usr/bin/env python3
"""Every GPU row of the benchmark in one command: under 8 minutes on one H200, no downloads.

    COMFYUI_PATH=/path/to/ComfyUI python bench/gpu/run_all.py [--quick] [--out bench/results/gpu.json]
                                                             [--budget-s 480] [--only RUN ...] [--plan]
    # then, on any machine (no GPU needed):
    python bench/run.py --only gpu --update && python tools/update_readme_bench.py

Runs, each in a fresh process (the CUDA allocator backend and ComfyUI's memory mode are fixed when
a process starts), in this order, within one time budget (--budget-s):

  device_tier                          bench/gpu/device_tier.py: LatentStore put/get/verify of CUDA
                                       tensors by reference (with and without a host copy), an
                                       in-place write after put, a consumer on a side stream, two
                                       devices where present, the async host copy vs .to("cpu")
  padding_gpu                          bench/gpu/padding_gpu.py: row P3, the Wan I2V gray padding's
                                       one-time VAE encode (832x480, 81 frames; 17 with --quick) in
                                       ComfyUI's VAE dtype and in float32 (its record joins the device
                                       tier's file, see EachRun)
  residency_prepare                    writes the random-weight Wan 2.1-layout DiT (~6 GiB) once
  residency_classic_cudaMallocAsync    bench/gpu/residency_check.py: 10 shots unlocked and locked,
                                       classic model management, ComfyUI's default allocator
  residency_dynamic                    the same under dynamic VRAM (comfy-aimdo), where it works
  overhead_gpu_only                    bench/gpu/overhead_gpu.py under ComfyUI's --gpu-only
  overhead_default                     the same under default flags (latents on the CPU)
  residency_classic_native             classic, native allocator (--disable-cuda-malloc)
  residency_classic_native_expandable  classic, native + expandable_segments:True

A run that the budget no longer allows, that needs ComfyUI when COMFYUI_PATH is not set, or that
ends without a result is recorded as such (with the reason): its rows say NOT MEASURED, never an
estimate. Each run gets only its own allocator setting in its environment. Writes one JSON
document (format bench.sections.gpu.GPU_FORMAT) with the machine (GPU names, driver, torch, CUDA,
ComfyUI version and commit) and every run's own JSON; bench/sections/gpu.py turns it into the
rows. --plan prints the child commands and measures nothing (it needs no GPU).

Refuses to run without CUDA, in one line, exit status 2. Exit status 0 when every planned run
gave a result, 1 otherwise.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.gpu.cuda_required import require_cuda  # noqa: E402

HERE = Path(__file__).resolve().parent
SCRIPTS = {"device_tier": HERE / "device_tier.py", "residency": HERE / "residency_check.py",
           "overhead": HERE / "overhead_gpu.py", "padding": HERE / "padding_gpu.py"}
FORMAT = "zerocopy-gpu-bench/1"  # bench.sections.gpu.GPU_FORMAT reads this
ALLOC_ENV = ("PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF")  # PyTorch versions differ in which they read
# (run name suffix, label, allocator setting in the environment, residency_check --allocator)
ALLOCATORS = {
    "cudaMallocAsync": ("cudaMallocAsync (ComfyUI's default on NVIDIA)", None, "cudaMallocAsync"),
    "native": ("native (--disable-cuda-malloc)", None, "native"),
    "native_expandable": ("native + expandable_segments:True", "expandable_segments:True", "native"),
}
# Sizes and time caps per mode. Caps are per run (the budget may leave less); they are guesses made
# without a GPU and sum to more than the budget on purpose: the budget decides, runs past it are
# recorded as not measured.
MODES = {
    "full": {"shots": 10, "model_gb": 6.0, "card_gb": 24.0, "overhead_reps": 9, "device_reps": 21,
             "padding_frames": 81, "padding_reps": 3,
             "caps": {"device_tier": 120, "padding": 120, "residency_prepare": 150, "residency": 150,
                      "overhead": 180}},
    "quick": {"shots": 3, "model_gb": 1.0, "card_gb": 24.0, "overhead_reps": 3, "device_reps": 5,
              "padding_frames": 17, "padding_reps": 2,
              "caps": {"device_tier": 60, "padding": 60, "residency_prepare": 60, "residency": 60,
                       "overhead": 90}},
}
ORDER = ("device_tier", "padding_gpu", "residency_prepare", "residency_classic_cudaMallocAsync",
         "residency_dynamic", "overhead_gpu_only", "overhead_default", "residency_classic_native",
         "residency_classic_native_expandable")
# The GPU machine returns at most 8 files: the log and one per run with a result, but there are 8 such
# runs. A run named here has its record added to the file of the run before it (rewritten whole),
# not a file of its own: a short run, right after one that writes its file.
JOINS_PREVIOUS_FILE = ("padding_gpu",)
MIN_START_S = 20  # a run is not started with less of the budget left


@dataclass
class ChildRun:
    """One planned run: a fresh process with its own environment and time cap."""
    name: str
    label: str
    argv: list[str]
    result: Path | None                      # the JSON the child writes (None: it writes none)
    cap_s: int
    env: dict[str, str | None] = field(default_factory=dict)  # set (a string) or removed (None)
    skip: str | None = None                  # why it is not run at all

    def environment(self, base: dict[str, str]) -> dict[str, str]:
        env = {k: v for k, v in base.items() if self.env.get(k, "") is not None}
        env.update({k: v for k, v in self.env.items() if v is not None})
        return env


# --------------------------------------------------------------------------- arguments and plan


def parse_args(argv: list[str] | None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--comfyui", type=Path, default=os.environ.get("COMFYUI_PATH") or None,
                    help="ComfyUI checkout (default: COMFYUI_PATH); without it the ComfyUI runs are not measured")
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "gpu.json",
                    help="the JSON document (default: bench/results/gpu.json, where bench/run.py looks)")
    ap.add_argument("--work-dir", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "zc_gpu_bench",
                    help="children's files: the random DiT (kept for a rerun), logs, their JSON")
    ap.add_argument("--budget-s", type=int, default=480, help="wall time for all runs together (default 480)")
    ap.add_argument("--quick", action="store_true", help="3 shots, a 1 GiB DiT, fewer repetitions (~2-3 min)")
    ap.add_argument("--only", nargs="+", choices=ORDER, metavar="RUN", help=f"just these runs ({', '.join(ORDER)})")
    ap.add_argument("--plan", action="store_true", help="print the runs and their commands; measure nothing")
    ap.add_argument("--each-dir", type=Path, default=None,
                    help="also write each run's record into this folder the moment it ends (gpu-N-RUN.json, one "
                         "per run that has a result; bench/gpu/device_run.sh points it at $OUT)")
    ap.add_argument("--tee", action="store_true",
                    help="copy each child's output, line by line with its name, to this command's output too")
    opts = ap.parse_args(argv)
    if opts.budget_s < MIN_START_S:
        ap.error(f"--budget-s {opts.budget_s}: at least {MIN_START_S} s")
    if opts.comfyui is not None and not (opts.comfyui / "comfy" / "model_management.py").is_file():
        ap.error(f"--comfyui {opts.comfyui}: not a ComfyUI checkout (no comfy/model_management.py)")
    opts.mode = "quick" if opts.quick else "full"
    return opts


def plan(opts, scripts: dict[str, Path] = SCRIPTS, python: str = sys.executable) -> list[ChildRun]:
    """The runs, in ORDER, each with its command line, environment and cap."""
    size = MODES[opts.mode]
    caps = size["caps"]
    work = opts.work_dir
    comfy = str(opts.comfyui) if opts.comfyui else None
    no_comfy = "needs COMFYUI_PATH (or --comfyui): it runs ComfyUI's loader, sampler and nodes"
    model = work / f"zc_random_wan21_dit_{size['model_gb']:g}gb.safetensors"
    residency = [python, str(scripts["residency"]), "--comfyui", comfy or "", "--shots", str(size["shots"]),
                 "--model-gb", str(size["model_gb"]), "--card-gb", str(size["card_gb"]),
                 "--work-dir", str(work), "--model-path", str(model)]
    per_run = max(20, caps["residency"] // 2 - 5)  # residency_check runs unlocked, then locked
    comfy_default = {**{name: None for name in ALLOC_ENV}, "COMFYUI_PATH": comfy}  # ComfyUI picks the allocator
    runs = {
        "device_tier": ChildRun("device_tier", "device tier (LatentStore with CUDA tensors)",
                                [python, str(scripts["device_tier"]), "--json", str(work / "device_tier.json"),
                                 "--reps", str(size["device_reps"])], work / "device_tier.json", caps["device_tier"],
                                env={name: None for name in ALLOC_ENV}),
        "padding_gpu": ChildRun("padding_gpu", "Wan I2V gray padding: the one-time VAE encode (P3)",
                                [python, str(scripts["padding"]), "--comfyui", comfy or "",
                                 "--length", str(size["padding_frames"]), "--reps", str(size["padding_reps"]),
                                 "--json", str(work / "padding_gpu.json"), "--work-dir", str(work / "padding")],
                                work / "padding_gpu.json", caps["padding"], env=comfy_default),
        "residency_prepare": ChildRun("residency_prepare", f"random DiT, ~{size['model_gb']:g} GiB",
                                      residency + ["--prepare-only"], None, caps["residency_prepare"],
                                      env={"COMFYUI_PATH": comfy}),
        "residency_dynamic": ChildRun("residency_dynamic", "residency, dynamic VRAM (comfy-aimdo)",
                                      residency + ["--modes", "dynamic", "--allocator", "comfy-default",
                                                   "--timeout", str(per_run), "--json",
                                                   str(work / "residency_dynamic.json")],
                                      work / "residency_dynamic.json", caps["residency"], env=comfy_default),
    }
    for key, (label, conf, allocator) in ALLOCATORS.items():
        name = f"residency_classic_{key}"
        env = {name_: conf for name_ in ALLOC_ENV}  # only the setting under test (None: removed)
        env["COMFYUI_PATH"] = comfy
        runs[name] = ChildRun(name, f"residency, classic, {label}",
                              residency + ["--modes", "classic", "--allocator", allocator, "--timeout", str(per_run),
                                           "--json", str(work / f"{name}.json")],
                              work / f"{name}.json", caps["residency"], env=env)
    for flags in ("gpu-only", "default"):
        name = f"overhead_{flags.replace('-', '_')}"
        runs[name] = ChildRun(name, f"overhead, ComfyUI {'--gpu-only' if flags == 'gpu-only' else 'default flags'}",
                              [python, str(scripts["overhead"]), "--comfyui", comfy or "", "--flags", flags,
                               "--json", str(work / f"{name}.json"), "--reps", str(size["overhead_reps"]),
                               "--work-dir", str(work / "overhead")],
                              work / f"{name}.json", caps["overhead"], env=comfy_default)
    wanted = set(opts.only or ORDER)
    if wanted & {n for n in ORDER if n.startswith("residency_") and n != "residency_prepare"}:
        wanted.add("residency_prepare")  # the DiT the residency runs load
    chosen = [runs[name] for name in ORDER if name in wanted]
    for child in chosen:
        if child.name != "device_tier" and comfy is None:
            child.skip = no_comfy
    return chosen


def describe_plan(children: list[ChildRun], budget_s: int) -> str:
    lines = [f"{len(children)} runs within {budget_s} s:"]
    for c in children:
        env = " ".join(f"{k}={'(removed)' if v is None else v}" for k, v in c.env.items() if k != "COMFYUI_PATH")
        state = f"not run: {c.skip}" if c.skip else f"cap {c.cap_s} s"
        lines.append(f"  {c.name} ({c.label}); {state}\n    {env + ' ' if env else ''}{shlex.join(c.argv)}")
    return "\n".join(lines)


# --------------------------------------------------------------------------- running


def run_children(children: list[ChildRun], deadline: float, log_dir: Path, *, clock=time.monotonic,
                 say=print, on_record=None, tee=None) -> dict[str, dict]:
    """Each child in turn, within the deadline; a record per child: measured / not_measured / failed.
    on_record(child, record), if given, is called as each child's record is complete; tee(line), if
    given, gets each line a child prints (prefixed with its name) as it prints it."""
    log_dir.mkdir(parents=True, exist_ok=True)
    records: dict[str, dict] = {}
    for child in children:
        record = {"label": child.label, "command": shlex.join(child.argv), "seconds": 0.0}
        left = deadline - clock()
        if child.skip:
            record.update(status="not_measured", reason=child.skip)
        elif left < MIN_START_S:
            record.update(status="not_measured", reason=f"the time budget was spent ({max(left, 0):.0f} s left; "
                                                        f"a run is started with at least {MIN_START_S} s)")
        else:
            timeout = min(child.cap_s, int(left))
            say(f"run_all: {child.name}: {child.label} (up to {timeout} s)")
            record.update(run_one(child, timeout, log_dir / f"{child.name}.log", clock, tee=tee))
        say(f"run_all: {child.name}: {record['status']}" + (f" ({record['reason']})" if record.get("reason") else ""))
        records[child.name] = record
        if on_record is not None:
            on_record(child, record)
    return records


def _copy_lines(stream, log, prefix: str, tee) -> None:
    for raw in iter(stream.readline, b""):
        log.write(raw)
        log.flush()
        tee(f"[{prefix}] {raw.decode(errors='replace').rstrip()}")


def run_one(child: ChildRun, timeout: int, log: Path, clock=time.monotonic, tee=None) -> dict:
    """One child in its own process group (ended with everything it started on timeout)."""
    if child.result is not None:
        child.result.parent.mkdir(parents=True, exist_ok=True)
        child.result.unlink(missing_ok=True)  # never read an earlier run's file
    started = clock()
    with open(log, "wb" if tee else "w") as out:
        proc = subprocess.Popen(child.argv, env=child.environment(dict(os.environ)),
                                stdout=subprocess.PIPE if tee else out, stderr=subprocess.STDOUT,
                                start_new_session=True)
        copier = None
        if tee:
            import threading
            copier = threading.Thread(target=_copy_lines, args=(proc.stdout, out, child.name, tee), daemon=True)
            copier.start()
        try:
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            if copier is not None:
                copier.join(timeout=5)
            return {"status": "not_measured", "seconds": round(clock() - started, 1), "log": str(log),
                    "reason": f"no result within {timeout} s (its process group was ended)"}
        if copier is not None:
            copier.join(timeout=5)
    record = {"seconds": round(clock() - started, 1), "exit": code, "log": str(log)}
    tail = " ".join(log.read_text(errors="replace").strip().splitlines()[-3:])[-400:]
    if child.result is None:
        return {**record, "status": "measured" if code == 0 else "failed",
                **({} if code == 0 else {"reason": f"exited {code}: {tail}"})}
    if not child.result.is_file():
        return {**record, "status": "failed", "reason": f"exited {code} without a result: {tail}"}
    try:
        return {**record, "status": "measured", "result": json.loads(child.result.read_text())}
    except ValueError as exc:
        return {**record, "status": "failed", "reason": f"its JSON could not be read: {exc}"}


# --------------------------------------------------------------------------- the document


def nvidia_driver(run=subprocess.run) -> str:
    try:
        out = run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"], capture_output=True,
                  text=True, timeout=20)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"unknown (nvidia-smi: {type(exc).__name__})"
    versions = sorted({line.strip() for line in out.stdout.splitlines() if line.strip()})
    return ", ".join(versions) or f"unknown (nvidia-smi exited {out.returncode})"


def comfyui_record(root: Path | None, run=subprocess.run) -> dict | None:
    """Version (comfyui_version.py, read as text) and commit of the ComfyUI checkout."""
    if root is None:
        return None
    version = "unknown"
    text = (root / "comfyui_version.py").read_text() if (root / "comfyui_version.py").is_file() else ""
    m = re.search(r"__version__\s*=\s*['\"]([^'\"]+)", text)
    if m:
        version = m.group(1)
    try:
        out = run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
        commit = out.stdout.strip() if out.returncode == 0 else "unknown (not a git checkout)"
    except (OSError, subprocess.SubprocessError):
        commit = "unknown (git not available)"
    record = {"path": str(root), "version": version, "commit": commit}
    source = root / "ZC_SOURCE.json"  # a copy made by bench/gpu/prepare_device.sh: where it came from
    if commit.startswith("unknown") and source.is_file():
        try:
            copied = json.loads(source.read_text())
            record.update(commit=copied.get("commit", commit), copied_from=copied.get("source"))
        except ValueError:
            pass
    return record


def machine_record(torch, comfyui: Path | None, run=subprocess.run) -> dict:
    """The GPU machine: GPUs, driver, torch, CUDA, cuDNN, host, this checkout's commit, ComfyUI."""
    from bench.common import git_commit, host
    gpus = []
    for index in range(torch.cuda.device_count()):
        props = torch.cuda.get_device_properties(index)
        gpus.append({"index": index, "name": props.name, "memory_bytes": int(props.total_memory),
                     "capability": f"{props.major}.{props.minor}"})
    try:
        cudnn = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
    except Exception as exc:  # noqa: BLE001 - the record says so; the runs go on
        cudnn = f"unknown ({type(exc).__name__}: {exc})"
    return {"gpus": gpus, "driver": nvidia_driver(run), "torch": torch.__version__, "cuda": torch.version.cuda,
            "cudnn": cudnn, **host(), "git": git_commit(), "comfyui": comfyui_record(comfyui, run)}


def document(machine: dict, opts, runs: dict[str, dict], elapsed: float) -> dict:
    return {"format": FORMAT, "written_by": "bench/gpu/run_all.py",
            "date_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "mode": opts.mode, "budget_s": opts.budget_s, "elapsed_s": round(elapsed, 1),
            "machine": machine, "runs": runs}


class EachRun:
    """Writes each run's record into a folder as soon as it ends (so a command cut short by its time
    limit still returns what it measured): gpu-N-RUN.json, a GPU_FORMAT document with just that run
    (and the records of runs without a result of their own, e.g. residency_prepare, that ended
    before it). A run in JOINS_PREVIOUS_FILE is added to the last file written instead (that file is
    rewritten with both; it is replaced atomically, so a command ended meanwhile still returns the
    earlier run's record). bench/sections/gpu.py merges a folder of them."""

    def __init__(self, folder: Path, machine: dict, opts):
        self.folder, self.machine, self.opts = folder, machine, opts
        self.pending: dict[str, dict] = {}
        self.count = 0
        self.last: tuple[Path, str, dict] | None = None  # the last file written: path, part, its runs
        folder.mkdir(parents=True, exist_ok=True)

    def __call__(self, child: ChildRun, record: dict) -> None:
        self.pending[child.name] = record
        if child.result is not None:
            self.flush(child.name, join=child.name in JOINS_PREVIOUS_FILE)

    def flush(self, name: str | None = None, join: bool = False) -> None:
        if not self.pending:
            return
        if join and self.last is not None:
            path, part, runs = self.last
            runs = {**runs, **self.pending}
        else:
            part = name or next(iter(self.pending))
            self.count += 1
            path, runs = self.folder / f"gpu-{self.count}-{part}.json", dict(self.pending)
        doc = document(self.machine, self.opts, runs, sum(r.get("seconds", 0) for r in runs.values()))
        doc["part"] = part
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(doc, indent=1, default=str) + "\n")
        os.replace(tmp, path)
        print(f"run_all: wrote {path}" + (f" (with {', '.join(self.pending)})" if join else ""), flush=True)
        self.last = (path, part, runs)
        self.pending = {}


def main(argv: list[str] | None = None) -> int:
    opts = parse_args(argv)
    children = plan(opts)
    if opts.plan:
        print(describe_plan(children, opts.budget_s))
        return 0
    torch = require_cuda("run_all")
    started = time.monotonic()
    machine = machine_record(torch, opts.comfyui)
    print(f"run_all: {', '.join(g['name'] for g in machine['gpus'])}; torch {machine['torch']}, CUDA "
          f"{machine['cuda']}; {opts.mode} mode, budget {opts.budget_s} s", flush=True)
    each = EachRun(opts.each_dir, machine, opts) if opts.each_dir else None
    runs = run_children(children, started + opts.budget_s, opts.work_dir / "logs",
                        say=lambda text: print(text, flush=True), on_record=each,
                        tee=(lambda line: print(line, flush=True)) if opts.tee else None)
    if each is not None:
        each.flush()
    doc = document(machine, opts, runs, time.monotonic() - started)
    opts.out.parent.mkdir(parents=True, exist_ok=True)
    opts.out.write_text(json.dumps(doc, indent=1, default=str) + "\n")
    print(f"run_all: wrote {opts.out} in {doc['elapsed_s']:.0f} s; next: python bench/run.py --only gpu --update")
    return 0 if all(r["status"] == "measured" for r in runs.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
