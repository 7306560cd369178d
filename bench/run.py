#!/usr/bin/env python3
"""The benchmark program: the pack's performance table (README), measured side by side.

    python bench/run.py [--quick | --smoke] [--vae PATH] [--out DIR] [--only SECTION ... [--update]]
                        [--gpu-json PATH]

Sections, in order (each also runs alone with --only):
  engine     the C engine's goals: put vs clone, get latency, digest vs memcpy, spill/restore vs
             dd, resident memory over 10,000 cycles (measured in a child process of its own:
             one torch thread, one pinned core, niceness -20 when permitted)
  overhead   inter-shot overhead per latent shape: ours (Store + Handoff) vs ComfyUI's
             SaveLatent -> LoadLatent vs one memcpy of the latent vs the VAE decode -> PNG ->
             encode roundtrip, with an idle gap before every timed call; the hot path's goals
  drift      error of the handed-off tail over 1..10 hops: ours vs a VAE roundtrip through a
             small video autoencoder trained inside the benchmark (or --vae PATH)
  residency  per-shot model reloads over 10 shots with and without ZeroCopyVRAMPin (CPU)
  scale      store cost against latent size (1 MiB -> 1 GiB) and number of tags (1 -> 10,000), a Store's
             cost with 300 and 2,000 tags held (ComfyUI), GET /queue while clients list the buffers,
             resident memory over a soak
  padding    Wan I2V's gray padding as core builds it: the one-time VAE encode at 832x480, 81
             frames (the real Wan 2.1 VAE architecture, CPU; minutes on a small CPU), then the
             cached hop from memory and from the disk cache against the hot path's memcpy goal
             (the GPU encode is row P3 of the gpu section)
  farm       a Wan 2.1 720p shot through Redis on loopback against the local path, and 4 workers'
             aggregate store throughput (a real redis-server; NOT MEASURED without one)
  film       a film rendered to a video file one shot at a time (ZeroCopyFilmRender): peak memory of
             5-, 50- and 200-shot films (each in a child process) beside the IMAGE route
             (ZeroCopyFilmAssemble), a re-render after another take, a resume after a SIGKILL, and the
             file read back (stand-in VAE at 480p on the CPU; a few minutes)
  gpu        every GPU row, from the JSON bench/gpu/run_all.py wrote (--gpu-json, default
             DIR/gpu.json, or the folder bench/gpu/device_run.sh returned; bench/gpu/import_results.py
             does that and the README in one command); NOT MEASURED, with the reason, where there is none

With COMFYUI_PATH set, ComfyUI is imported in-process (CPU) and the real nodes are measured;
without it, the rows that need ComfyUI say so ("NOT MEASURED"), and the others use the engine
directly. Nothing is ever estimated. Writes DIR/bench.json, DIR/bench.md and DIR/*.png (DIR:
bench/results), and prints the summary table. Full mode takes under 10 minutes on a 2-core CPU,
--quick under 2, besides the padding section's one-time encode at 480p/81 (P1: tens of minutes on
a loaded 2-vCPU machine, reported on its own row and not counted in the run time's goal). --only
with --update keeps the other sections of DIR/bench.json as they were (e.g. `--only gpu --update`
after a GPU run: seconds, no GPU needed).

Exit status: 0 when every section ran (rows may FAIL), 1 when a section raised.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import importlib
import json
import os
import shutil
import sys
import time
import traceback
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.common import FAIL, PASS, Context, Row, Section, cpu_load, git_commit, host, md_table  # noqa: E402

SECTIONS = ("engine", "overhead", "drift", "residency", "scale", "padding", "farm", "film", "gpu")
TIME_GOAL = {"full": 600, "quick": 120, "smoke": None}


def log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def machine(ctx: Context) -> dict:
    import torch

    from zc_pack.zc_engine._library import lib
    device = "CPU only (no CUDA device)"
    if ctx.cuda:
        props = torch.cuda.get_device_properties(0)
        device = f"{props.name}, {props.total_memory / (1 << 30):.0f} GiB"
    return {
        "date_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"), **host(),
        "cpu_load_start": cpu_load(),
        "torch": torch.__version__, "device": device, "engine": lib.zc_version().decode(), "git": git_commit(),
        "comfyui": ctx.comfy.version() if ctx.comfy is not None else "not used (COMFYUI_PATH not set)",
        "comfyui_path": str(ctx.comfyui_path) if ctx.comfyui_path else None,
    }


# --------------------------------------------------------------------------- report


def markdown(info: dict, mode: str, sections: list[Section], elapsed: float, failures: list[str]) -> str:
    rows = [r for s in sections for r in s.rows]
    gpu = next((s for s in sections if s.name == "gpu"), None)
    lines = [
        "# ZeroCopy-Continuity benchmark",
        "",
        f"- Date (UTC): {info['date_utc']}; mode: {mode}; run time {elapsed:.0f} s",
        f"- Machine: {info['cpu']}, {info['cores']} cores, {info['memory']}; {info['os']}",
        f"- Device: {info['device']}",
        f"- Python {info['python']}, torch {info['torch']}, engine {info['engine']} (git {info['git']})",
        f"- ComfyUI: {info['comfyui']}",
        f"- CPU load at start / end: {info.get('cpu_load_start', '?')} / {info.get('cpu_load_end', '?')} "
        f"(other processes on the machine compete for its {info['cores']} cores)",
    ]
    if gpu is not None:
        lines.append(f"- GPU rows (G): {gpu.data.get('about', 'no GPU figures')}")
    if info.get("updated"):
        lines.append(f"- Updated (UTC): {info['updated']}")
    lines += [
        "- Absolute times are CPU times of this machine; only the ratios measured side by side "
        "carry over. Rows that need a GPU are NOT MEASURED unless a GPU run measured them, never estimated.",
        "",
        md_table(["#", "Figure", "Goal", "Measured", "Result"],
                 [[r.id, r.figure, r.goal, r.measured, f"**{r.result}**"] for r in rows]),
    ]
    if failures:
        lines += ["", "Sections that raised: " + "; ".join(failures)]
    for s in sections:
        if not (s.details or s.plots):
            continue
        lines += ["", f"## {s.title}", "", f"Section time: {s.seconds:.0f} s", ""]
        lines += [f"![{s.name}]({p})" for p in s.plots]
        if s.details:
            lines += ["", s.details]
    return "\n".join(lines) + "\n"


def run_section(name: str, ctx: Context) -> Section:
    module = importlib.import_module(f"bench.sections.{name}")
    t0 = time.perf_counter()
    section = module.run(ctx)
    section.seconds = section.seconds or (time.perf_counter() - t0)
    return section


def start_comfyui(ctx: Context) -> None:
    from tools.comfy_inprocess import ComfyInProcess
    work = ctx.tmp_dir / "comfyui"
    os.environ["ZEROCOPY_SPILL_DIR"] = str(work / "zerocopy_spill")  # never the user's folder
    t0 = time.perf_counter()
    ctx.comfy = ComfyInProcess(ctx.comfyui_path, work)
    ctx.log(f"ComfyUI {ctx.comfy.version()} started in-process (CPU) in {time.perf_counter() - t0:.1f} s")


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="fewer repetitions: under 2 minutes")
    mode.add_argument("--smoke", action="store_true",
                      help="seconds; checks the program works (the test suite runs it); no figure counts")
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "results",
                    help="folder for bench.json, bench.md and the PNG plots (default: bench/results)")
    ap.add_argument("--vae", type=Path, default=None,
                    help="a real VAE's weights (safetensors) for the drift section; needs COMFYUI_PATH")
    ap.add_argument("--only", nargs="+", choices=SECTIONS, default=None, metavar="SECTION",
                    help=f"run just these sections ({', '.join(SECTIONS)})")
    ap.add_argument("--update", action="store_true",
                    help="with --only: keep the other sections of OUT/bench.json, replace these")
    ap.add_argument("--gpu-json", type=Path, default=None,
                    help="the JSON bench/gpu/run_all.py wrote, or the folder bench/gpu/device_run.sh returned "
                         "(default: OUT/gpu.json when it exists)")
    args = ap.parse_args(argv)
    if args.vae is not None and not args.vae.is_file():
        ap.error(f"--vae {args.vae}: no such file; give the path of a VAE .safetensors file")
    if args.update and args.only is None:
        ap.error("--update goes with --only: it replaces those sections and keeps the others")
    if args.update and not (args.out / "bench.json").is_file():
        ap.error(f"--update: there is no {args.out / 'bench.json'} to update; run the whole program first")
    if args.gpu_json is not None and not args.gpu_json.exists():
        ap.error(f"--gpu-json {args.gpu_json}: no such file or folder (bench/gpu/run_all.py writes the file; "
                 "a folder: what bench/gpu/device_run.sh returned)")
    return args


def kept_sections(out: Path, replaced: list[str]) -> tuple[dict, list[Section]]:
    """For --update: the earlier run's machine record and the sections that are not run again."""
    earlier = json.loads((out / "bench.json").read_text())
    return earlier, [Section.from_json(s) for s in earlier["sections"] if s["name"] not in replaced]


def in_order(sections: list[Section]) -> list[Section]:
    """Sections in the program's order; the run-time row last."""
    rank = {name: i for i, name in enumerate((*SECTIONS, "runtime"))}
    return sorted(sections, key=lambda s: rank.get(s.name, len(rank)))


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    mode = "smoke" if args.smoke else ("quick" if args.quick else "full")
    started = time.perf_counter()
    try:
        import torch

        from zc_pack.zc_engine import EngineNotBuilt  # noqa: F401  (loads libzc.so)
    except Exception as exc:
        print(f"bench: cannot load torch and the C engine: {exc}\nbench: run ./setup.sh (or make) first",
              file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    tmp = args.out / f"tmp-run-{os.getpid()}"
    tmp.mkdir(parents=True, exist_ok=True)
    comfyui_path = os.environ.get("COMFYUI_PATH")
    gpu_json = args.gpu_json or (args.out / "gpu.json")
    ctx = Context(mode=mode, out_dir=args.out, tmp_dir=tmp,
                  comfyui_path=Path(comfyui_path) if comfyui_path else None,
                  vae_path=args.vae, cuda=torch.cuda.is_available(),
                  gpu_json=gpu_json if gpu_json.exists() else None)
    sections: list[Section] = []
    failures: list[str] = []
    names = args.only or SECTIONS
    try:
        if ctx.comfyui_path and any(n in ("overhead", "drift", "residency", "scale", "padding") for n in names):
            start_comfyui(ctx)
        info = machine(ctx)
        ctx.log(f"mode {mode}; {info['device']}; torch {info['torch']}; ComfyUI: {info['comfyui']}")
        for name in names:
            ctx.log(f"section {name} ...")
            try:
                section = run_section(name, ctx)
            except Exception as exc:
                traceback.print_exc()
                failures.append(f"{name}: {type(exc).__name__}: {exc}")
                section = Section(name, name, rows=[Row(name, f"section {name}", "—",
                                                        f"raised {type(exc).__name__}: {exc}", FAIL)])
            sections.append(section)
            ctx.log(f"section {name} done in {section.seconds:.0f} s")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    elapsed = time.perf_counter() - started
    info["cpu_load_end"] = cpu_load()
    goal = TIME_GOAL[mode]
    if goal is not None and args.only is None:
        # P1 (the padding section's one-time Wan VAE encode at 480p/81) is a cost measured for its own
        # sake, minutes on a small CPU: reported on its own row, not counted against the run's goal
        encode = next((s.data.get("encode_s", 0.0) for s in sections if s.name == "padding"), 0.0)
        counted = elapsed - encode
        measured = f"{elapsed:.0f} s" + (f" ({counted:.0f} s without P1's one-time encode, {encode:.0f} s, "
                                         "which the goal does not count)" if encode else "")
        sections.append(Section("runtime", "Run time", rows=[Row(
            "T", f"benchmark run time, {mode} mode, all sections", f"≤ {goal // 60} min",
            measured, PASS if counted <= goal else FAIL)]))
    if args.update:  # the header stays the earlier run's: its sections were measured there
        earlier, kept = kept_sections(args.out, list(names))
        sections = in_order(kept + sections)
        info = {**earlier["machine"], "updated": f"{info['date_utc']}: section(s) {', '.join(names)} "
                f"re-run with --update (git {info['git']}); the others are from the run above"}
        mode, elapsed = earlier["mode"], earlier["elapsed_seconds"]
        failures = earlier.get("failures", []) + failures
    doc = {"machine": info, "mode": mode, "elapsed_seconds": round(elapsed, 1),
           "sections": [s.to_json() for s in sections], "failures": failures}
    (args.out / "bench.json").write_text(json.dumps(doc, indent=2, default=str) + "\n")
    md = markdown(info, mode, sections, elapsed, failures)
    (args.out / "bench.md").write_text(md)
    print(md_table(["#", "Figure", "Goal", "Measured", "Result"],
                   [[r.id, r.figure, r.goal, r.measured, r.result] for s in sections for r in s.rows]))
    log(f"wrote {args.out / 'bench.json'}, {args.out / 'bench.md'} and plots in {elapsed:.0f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
