"""Section "gpu": every GPU row of the benchmark, from the JSON bench/gpu/run_all.py wrote.

Nothing here measures: the GPU command runs on a machine with CUDA (its children measure, each in
a fresh process), writes one document (format GPU_FORMAT), and this section turns it into rows
G1-G11 and P3 (the Wan I2V gray padding's encode on the GPU: the padding section's P1 and P2 run
on the CPU) and their details, on any machine. Without that document every row is NOT MEASURED with
the reason; a run the command could not finish makes its rows NOT MEASURED (or FAIL when it
raised) with what it reported. No figure is carried over from anywhere else, none is estimated.
"""

from __future__ import annotations

import json

from bench.common import (FAIL, INFO, NOT_MEASURED, PASS, Context, Row, Section, fmt_bytes, fmt_time,
                          md_table, median)
from bench.sections import overhead
from bench.gpu.run_all import FORMAT as GPU_FORMAT

NAME, TITLE = "gpu", "5. GPU rows (bench/gpu/run_all.py)"
GET_GOAL_S = 50e-6  # the store's get goal (row E2), for device tensors too
NOT_RUN = "bench/gpu/run_all.py has not run (no GPU was available)"
NOT_RUN_HERE = "bench/gpu/run_all.py has not run on this GPU machine yet (no gpu.json to read)"
HOW_TO_RUN = ("run `bench/gpu/run_all.py` on a CUDA machine (it writes bench/results/gpu.json), then "
              "`bench/run.py --only gpu --update` and `tools/update_readme_bench.py` on any machine")
HOT_GOALS = "; ".join(f"{next(x.label for x in overhead.SHAPES if x.key == key).split(',')[0]} ≤ {goal:g} × {side}"
                      for key, side, goal in overhead.HOT_PATH_GOALS)

# id: (figure, goal). The rows exist whether or not they were measured, in this order.
ROWS = {
    "G1a": ("device tier: put of a CUDA latent by reference, no host copy, vs torch.clone() on the device",
            "(info)"),
    "G1b": ("device tier: put by reference with a host copy (digest and spill) vs a plain .to('cpu')", "(info)"),
    "G1c": ("device tier: get of a CUDA latent held by reference (zero-copy views)",
            f"≤ {GET_GOAL_S * 1e6:.0f} µs"),
    "G1d": ("device tier: verify of a CUDA latent (re-digest of what the store checks)", "(info)"),
    "G2": ("what is verified is what is used: the caller writes in place after the Store's put",
           "the write is detected by verify, or the stored bytes are unchanged"),
    "G3": ("streams: a consumer on a side stream reads a stored CUDA tensor (producer still writing; slot "
           "dropped meanwhile)", "bit-identical in every trial"),
    "G4": ("two devices: put/get/verify of a cuda:1 tensor while cuda:0 is current", "bit-identical, verified"),
    "G5": ("async host copy (pinned buffer, non_blocking on a side stream) vs a plain .to('cpu')", "(info)"),
    "G6": ("residency, classic: per-shot DiT load time and bytes moved onto the GPU, 10 shots, without vs "
           "with pin", "with pin: 0 B after shot 1"),
    "G7": ("residency, dynamic VRAM (comfy-aimdo): bytes copied into VRAM again per shot, without vs with pin",
           "with pin: 0 B after shot 1"),
    "G8": ("residency: the reason the pin's report gives for each reload of the locked DiT", "(info)"),
    "G9": ("allocator statistics after 10 shots: native, native + expandable_segments, cudaMallocAsync", "(info)"),
    "G10a": ("--gpu-only: Store → Handoff vs SaveLatent → LoadLatent, every shape",
             f"ours ≤ {overhead.OURS_VS_FILE_GOAL:g} × file"),
    "G10b": ("--gpu-only: Store → Handoff vs the VAE roundtrip, every shape and VAE",
             f"ours ≤ {overhead.OURS_VS_VAE_GOAL:g} × VAE"),
    "G10c": ("--gpu-only: the hot path's goals (Wan 2.1 720p vs file and memcpy, FLUX vs file)",
             HOT_GOALS),
    "G11a": ("default flags (latents on the CPU): Store → Handoff vs SaveLatent → LoadLatent, every shape",
             f"ours ≤ {overhead.OURS_VS_FILE_GOAL:g} × file"),
    "G11b": ("default flags: Store → Handoff vs the VAE roundtrip (VAE on the GPU), every shape and VAE",
             f"ours ≤ {overhead.OURS_VS_VAE_GOAL:g} × VAE"),
    "G11c": ("default flags: the hot path's goals (Wan 2.1 720p vs file and memcpy, FLUX vs file)",
             HOT_GOALS),
    "P3": ("Wan I2V gray padding: the one-time VAE encode on a GPU (Wan 2.1 VAE architecture, width 96, "
           "random weights; P1 is the CPU's)", "(info)"),
}
# Which run of the GPU command fills which rows (bench/gpu/run_all.py names its runs so).
SOURCES = {"device_tier": ("G1a", "G1b", "G1c", "G1d", "G2", "G3", "G4", "G5"),
           "residency": ("G6", "G7", "G8", "G9"),
           "overhead_gpu_only": ("G10a", "G10b", "G10c"),
           "overhead_default": ("G11a", "G11b", "G11c"),
           "padding_gpu": ("P3",)}
ALLOCATOR_RUNS = (("residency_classic_cudaMallocAsync", "cudaMallocAsync (ComfyUI's default on NVIDIA)",
                   "cudaMallocAsync"),
                  ("residency_classic_native", "native", "native"),
                  ("residency_classic_native_expandable", "native + expandable_segments", "native"))
DYNAMIC_RUN = "residency_dynamic"


def row(rid: str, measured: str, result: str) -> Row:
    return Row(rid, *ROWS[rid], measured, result)


def load(ctx: Context) -> tuple[dict | None, str]:
    """The GPU document, or None and why there is none."""
    if ctx.gpu_json is None:
        return None, NOT_RUN_HERE if ctx.cuda else NOT_RUN
    if ctx.gpu_json.is_dir():  # what bench/gpu/device_run.sh returned: one file per run, and its log
        from bench.gpu.import_results import merge_folder
        try:
            return merge_folder(ctx.gpu_json), ""
        except (OSError, ValueError) as exc:
            return None, str(exc)
    try:
        doc = json.loads(ctx.gpu_json.read_text())
    except (OSError, ValueError) as exc:
        return None, f"{ctx.gpu_json} could not be read: {type(exc).__name__}: {exc}"
    if doc.get("format") != GPU_FORMAT:
        return None, f"{ctx.gpu_json} is not a {GPU_FORMAT} document (format {doc.get('format')!r})"
    return doc, ""


def run(ctx: Context) -> Section:
    section = Section(NAME, TITLE)
    doc, why = load(ctx)
    section.rows = rows_for(doc, why)
    section.details = details_for(doc, why)
    section.data = {"about": about(doc, why), "source": str(ctx.gpu_json) if ctx.gpu_json else None,
                    "document": doc}
    return section


def about(doc: dict | None, why: str) -> str:
    """One line for the report's header: where the GPU rows come from."""
    if doc is None:
        return f"NOT MEASURED: {why}"
    m = doc["machine"]
    gpus = ", ".join(f"cuda:{g['index']} {g['name']}" for g in m.get("gpus", [])) or "?"
    comfy = m.get("comfyui")
    comfy = (f"ComfyUI {comfy.get('version', '?')} (commit {comfy.get('commit', '?')})" if comfy
             else "ComfyUI not used (no COMFYUI_PATH)")
    return (f"{gpus}; driver {m.get('driver', '?')}, torch {m.get('torch', '?')}, CUDA {m.get('cuda', '?')}; "
            f"{comfy}; {doc.get('date_utc', '?')}, "
            f"{doc.get('mode', '?')} mode, {doc.get('elapsed_s', 0):.0f} s (bench/gpu/run_all.py, git "
            f"{m.get('git', '?')})")


# --------------------------------------------------------------------------- rows


def rows_for(doc: dict | None, why: str = NOT_RUN) -> list[Row]:
    if doc is None:
        return [row(rid, why, NOT_MEASURED) for rid in ROWS]
    runs = doc.get("runs", {})
    rows: list[Row] = []
    device = runs.get("device_tier")
    rows += device_rows(device["result"]) if measured(device) else unmeasured(SOURCES["device_tier"], device)
    rows += residency_rows(runs)
    for name in ("overhead_gpu_only", "overhead_default"):
        rows += overhead_rows(name, runs.get(name))
    padding = runs.get("padding_gpu")
    rows += [padding_row(padding["result"])] if measured(padding) else unmeasured(SOURCES["padding_gpu"], padding)
    return rows


def measured(run_: dict | None) -> bool:
    return run_ is not None and run_.get("status") == "measured"


def unmeasured(ids, run_: dict | None, what: str = "") -> list[Row]:
    """Rows whose run did not produce figures: NOT MEASURED (not run, budget, timeout) or FAIL (it raised)."""
    if run_ is None:
        reason, result = "the GPU command did not plan this run (--only)", NOT_MEASURED
    else:
        reason = run_.get("reason") or run_.get("status", "?")
        result = FAIL if run_.get("status") == "failed" else NOT_MEASURED
    prefix = f"{what}: " if what else ""
    return [row(rid, f"{prefix}{'not measured' if result == NOT_MEASURED else 'failed'}: {reason}", result)
            for rid in ids]


def part(result: dict, key: str) -> tuple[dict | None, str]:
    """One measurement of a child's result, or None and why (it raised, or could not be made here)."""
    value = result.get(key)
    if value is None:
        return None, f"the run reported no '{key}'"
    if "error" in value:
        return None, f"raised {value['error']}"
    if "not_measured" in value:
        return None, value["not_measured"]
    return value, ""


def device_rows(r: dict) -> list[Row]:
    rows = []
    size = f"{fmt_bytes(r['latent']['bytes'])} latent on {r.get('device', 'the GPU')}"
    v, why = part(r, "put_reference")
    rows.append(row("G1a", f"put {fmt_time(median(v['put_s']))} vs clone {fmt_time(median(v['clone_s']))} "
                           f"({size}; CUDA-synchronised)", INFO) if v else row("G1a", why, verdict_of(why)))
    v, why = part(r, "put_host_copy")
    rows.append(row("G1b", f"put {fmt_time(median(v['put_s']))} vs .to('cpu') {fmt_time(median(v['to_cpu_s']))} "
                           f"({size})", INFO) if v else row("G1b", why, verdict_of(why)))
    v, why = part(r, "get")
    if v:
        rows.append(row("G1c", f"{fmt_time(v['median_s'])} (p99 {fmt_time(v['p99_s'])}, {v['calls']} calls; {size})",
                        PASS if v["median_s"] <= GET_GOAL_S else FAIL))
    else:
        rows.append(row("G1c", why, verdict_of(why)))
    v, why = part(r, "verify")
    rows.append(row("G1d", f"{fmt_time(median(v['verify_s']))} ({v['what']})", INFO) if v
                else row("G1d", why, verdict_of(why)))
    v, why = part(r, "in_place_write")
    if v:
        node = v["node_path"]
        others = "; ".join(f"{k}: {w['outcome']}" for k, w in v.items() if k != "node_path")
        rows.append(row("G2", f"the Store's path (host copy, no clone): {node['outcome']} ({node['detail']}); "
                              f"{others}", PASS if node["outcome"] in ("isolated", "detected") else FAIL))
    else:
        rows.append(row("G2", why, verdict_of(why)))
    v, why = part(r, "streams")
    if v:
        n = v["trials"]
        ok = v["handover_identical"] == n and v["lifetime_identical"] == n
        rows.append(row("G3", f"handover (producer still writing): {v['handover_identical']}/{n} bit-identical; "
                              f"lifetime (slot dropped, memory reused while the consumer reads): "
                              f"{v['lifetime_identical']}/{n}; {v['interface']}", PASS if ok else FAIL))
    else:
        rows.append(row("G3", why, verdict_of(why)))
    v, why = part(r, "two_devices")
    if v:
        ok = v["identical"] and v["verified"]
        rows.append(row("G4", f"{v['devices']}: bytes identical {v['identical']}, verify passed {v['verified']}",
                        PASS if ok else FAIL))
    else:
        rows.append(row("G4", why, verdict_of(why)))
    v, why = part(r, "async_copy")
    if v:
        text = (f"plain .to('cpu') {fmt_time(median(v['plain_s']))}; pinned + non_blocking on a side stream: "
                f"{fmt_time(median(v['caller_s']))} on the caller's thread, done (event) after "
                f"{fmt_time(median(v['done_s']))}; bytes identical: {v['identical']} ({size})")
        rows.append(row("G5", text, INFO if v["identical"] else FAIL))
    else:
        rows.append(row("G5", why, verdict_of(why)))
    return rows


def verdict_of(why: str) -> str:
    """A measurement that raised is a FAIL; one that could not be made here is NOT MEASURED."""
    return FAIL if why.startswith("raised") else NOT_MEASURED


# --------------------------------------------------------------------------- residency


def check_runs(result: dict) -> dict:
    """{"unlocked": run, "locked": run} of a residency_check result (measured runs only)."""
    runs = {}
    for run_ in result.get("runs", []):
        if run_.get("shots") and not run_.get("skipped") and not run_.get("failed"):
            runs["locked" if run_.get("locked") else "unlocked"] = run_
    return runs


def why_no_runs(run_: dict | None) -> str:
    if run_ is None:
        return "not planned (--only)"
    if not measured(run_):
        return run_.get("reason") or run_.get("status", "?")
    notes = [r.get("skipped") or r.get("failed") for r in run_["result"].get("runs", [])
             if r.get("skipped") or r.get("failed")]
    return "; ".join(n.strip().splitlines()[-1] for n in notes if n) or "no measured run"


def moved(shot: dict) -> int:
    copied = shot.get("bytes_copied_into_vbar")
    return int(copied if copied is not None else shot.get("bytes_loaded", 0))


def film_text(label: str, off: dict, on: dict) -> tuple[str, int, int]:
    moved_off = sum(moved(s) for s in off["shots"][1:])
    moved_on = sum(moved(s) for s in on["shots"][1:])
    later_off = [s["load_s"] for s in off["shots"][1:]] or [0.0]
    later_on = [s["load_s"] for s in on["shots"][1:]] or [0.0]
    text = (f"{label}: shots 2-{len(on['shots'])} moved {fmt_bytes(moved_off)} vs {fmt_bytes(moved_on)}; median "
            f"load {fmt_time(median(later_off))} vs {fmt_time(median(later_on))} (shot 1: "
            f"{fmt_time(off['shots'][0]['load_s'])} vs {fmt_time(on['shots'][0]['load_s'])}); "
            f"{fmt_bytes(on.get('model_bytes', 0))} DiT on {on.get('device', 'the GPU')}")
    return text, moved_off, moved_on


def film_row(rid: str, label: str, runs: dict, why: str) -> Row:
    if not {"unlocked", "locked"} <= set(runs):
        return row(rid, f"not measured: {why}", NOT_MEASURED)
    text, moved_off, moved_on = film_text(label, runs["unlocked"], runs["locked"])
    if moved_off == 0:
        return row(rid, text + "; the unlocked control was not evicted, so this shows nothing", INFO)
    return row(rid, text, PASS if moved_on == 0 else FAIL)


def reload_reasons(run_: dict) -> list[str]:
    """'shot N: reason (bytes)' for each shot of a locked run that reloaded (the pin's own report)."""
    out = []
    for shot in run_["shots"]:
        reload = shot.get("reload")
        if reload:
            out.append(f"shot {shot['shot']}: {reload['reason']} ({fmt_bytes(reload.get('bytes') or 0)})")
    return out


def residency_rows(runs: dict) -> list[Row]:
    classic = {name: check_runs(runs[name]["result"]) if measured(runs.get(name)) else {}
               for name, _, _ in ALLOCATOR_RUNS}
    source = next((name for name, _, _ in ALLOCATOR_RUNS if {"unlocked", "locked"} <= set(classic[name])), None)
    if source is None:
        why = "; ".join(f"{label}: {why_no_runs(runs.get(name))}" for name, label, _ in ALLOCATOR_RUNS)
        rows = [row("G6", f"not measured: {why}", NOT_MEASURED)]
    else:
        label = next(label for name, label, _ in ALLOCATOR_RUNS if name == source)
        rows = [film_row("G6", label, classic[source], "")]
    dynamic_run = runs.get(DYNAMIC_RUN)
    dynamic = check_runs(dynamic_run["result"]) if measured(dynamic_run) else {}
    rows.append(film_row("G7", "dynamic VRAM", dynamic, why_no_runs(dynamic_run)))
    reasons = []
    films = ([("classic", classic[source])] if source else []) + ([("dynamic", dynamic)] if dynamic else [])
    for label, film in films:
        locked = film.get("locked")
        if locked is None:
            continue
        found = reload_reasons(locked)
        first = locked["shots"][0].get("reload")
        later = [r for r in found if not r.startswith("shot 1:")]
        reasons.append(f"{label}: " + ("; ".join(later) if later else "no reload after shot 1")
                       + (f" (shot 1: {first['reason']})" if first else ""))
    rows.append(row("G8", " | ".join(reasons), INFO) if reasons
                else row("G8", "not measured: no locked run was measured", NOT_MEASURED))
    parts = []
    for name, label, backend in ALLOCATOR_RUNS:
        measured_runs = classic[name]
        if not measured_runs:
            parts.append(f"{label}: not measured ({why_no_runs(runs.get(name))})")
            continue
        wrong = sorted({str(r.get("backend")) for r in measured_runs.values()} - {backend})
        if wrong:
            parts.append(f"{label}: PyTorch used backend {', '.join(wrong)}, not {backend}: these figures are "
                         "not of this setting")
            continue
        sides = [f"{'with' if side == 'locked' else 'without'} pin: "
                 f"{allocator_summary(measured_runs[side]['shots'][-1].get('allocator', {}), backend)}"
                 for side in ("unlocked", "locked") if side in measured_runs]
        parts.append(f"{label} — " + "; ".join(sides))
    rows.append(row("G9", " | ".join(parts), INFO if any(classic.values()) else NOT_MEASURED))
    return rows


def allocator_summary(figures: dict, backend: str | None) -> str:
    """The figures the backend provides, short; missing ones are left out, never filled in."""
    parts = [f"backend {backend or '?'}"]
    for key, label in (("reserved", "reserved"), ("allocated", "allocated"), ("inactive_split", "inactive split")):
        if key in figures:
            parts.append(f"{label} {fmt_bytes(figures[key])}")
    for key, label in (("alloc_retries", "retries"), ("segments", "segments"),
                       ("expandable_segments", "expandable")):
        if key in figures:
            parts.append(f"{label} {figures[key]}")
    return ", ".join(parts)


# --------------------------------------------------------------------------- overhead on the GPU


def overhead_rows(name: str, run_: dict | None) -> list[Row]:
    ids = SOURCES[name]
    if not measured(run_):
        return unmeasured(ids, run_)
    r = run_["result"]
    results = r["results"]
    via_nodes = r.get("via_nodes", True)
    ok = [x for x in results if "error" not in x and "unavailable" not in x]
    where = f"latents on {r.get('latent_device', '?')}"
    if not ok:
        problems = "; ".join(f"{x['label']}: {x.get('error') or x.get('unavailable')}" for x in results)
        return [row(rid, f"not measured: {problems}", FAIL if any("error" in x for x in results) else NOT_MEASURED)
                for rid in ids]
    file_ratios = [(x["label"], x["ours_vs_file"]) for x in ok]
    rows = [row(ids[0], f"{where}: " + ", ".join(f"{label} {v:.3f}×" for label, v in file_ratios),
                PASS if all(v <= overhead.OURS_VS_FILE_GOAL for _, v in file_ratios) else FAIL)]
    vae = [(f"{x['label']} {kind}", v["ours_vs_vae"]) for x in ok for kind, v in x["vae"].items() if "times" in v]
    skipped = [f"{x['label']} {kind}: {v['skipped']}" for x in ok for kind, v in x["vae"].items() if "skipped" in v]
    if vae:
        rows.append(row(ids[1], f"{where}: " + ", ".join(f"{label} {v:.5f}×" for label, v in vae)
                        + (f"; not run: {'; '.join(skipped)}" if skipped else ""),
                        PASS if all(v <= overhead.OURS_VS_VAE_GOAL for _, v in vae) else FAIL))
    else:
        rows.append(row(ids[1], "not measured: " + ("; ".join(skipped) or "no VAE roundtrip ran"), NOT_MEASURED))
    checks = overhead.hot_path_checks(results, via_nodes)
    texts, verdicts = [], []
    for c in checks:
        if "ratio" in c:
            texts.append(f"{c['label']} vs {c['side']} {c['ratio']:.3f}× (goal {c['goal']:g})")
            verdicts.append(c["ratio"] <= c["goal"])
        else:
            texts.append(f"{c['label']} vs {c['side']}: not measured ({c.get('not_measured') or c.get('error')})")
    if not verdicts:
        result = NOT_MEASURED
    elif not all(verdicts):
        result = FAIL
    else:  # a goal not measured is not a pass
        result = PASS if len(verdicts) == len(checks) else NOT_MEASURED
    rows.append(row(ids[2], f"{where}: " + "; ".join(texts), result))
    return rows


# --------------------------------------------------------------------------- the padding encode


def padding_row(r: dict) -> Row:
    """P3 from bench/gpu/padding_gpu.py: the first encode at the canvas and the median of the rest,
    per dtype; an encode that raised makes the row a FAIL."""
    size = f"{r['width']}x{r['height']}, {r['length']} frames"
    parts, failed = [], False
    for name, label in (("comfy_default", "ComfyUI's VAE dtype"), ("float32", "float32")):
        e = r.get("encodes", {}).get(name)
        if e is None:
            parts.append(f"{label}: not reported")
        elif "error" in e:
            failed = True
            parts.append(f"{label} ({e.get('dtype', '?')}): raised {e['error']}")
        elif "same_as" in e:
            parts.append(f"{label}: the same run (ComfyUI chose float32)")
        else:
            later = e["seconds"][1:]
            parts.append(f"{label} ({e['dtype']}): {e['first_s']:.2f} s the first time at this canvas"
                         + (f", then {fmt_time(median(later))} (median of {len(later)})" if later else "")
                         + f"; peak {fmt_bytes(e.get('peak_bytes', 0))} on the GPU")
    shape = next((e["latent_shape"] for e in r.get("encodes", {}).values() if e.get("latent_shape")), None)
    text = (f"{size} on {r.get('gpu', '?')}: " + "; ".join(parts)
            + (f" → latent {'x'.join(str(d) for d in shape)}" if shape else "")
            + " (after a 64x64 warm-up encode; CUDA-synchronised)")
    return row("P3", text, FAIL if failed else INFO)


# --------------------------------------------------------------------------- details


def details_for(doc: dict | None, why: str = NOT_RUN) -> str:
    if doc is None:
        return (f"Not measured: {why}. Every G row comes from one command: {HOW_TO_RUN} (docs/benchmarks.md). "
                "It refuses to run without CUDA; no GPU figure is claimed before it has run.")
    m = doc["machine"]
    lines = [f"From `{doc.get('written_by', 'bench/gpu/run_all.py')}`: {about(doc, '')}.", ""]
    gpus = [[g["index"], g["name"], fmt_bytes(g.get("memory_bytes", 0)), g.get("capability", "?")]
            for g in m.get("gpus", [])]
    if gpus:
        lines += [md_table(["cuda:", "GPU", "memory", "compute capability"], gpus), ""]
    lines.append(f"Host: {m.get('cpu', '?')}, {m.get('cores', '?')} cores, {m.get('memory', '?')}; {m.get('os', '?')}; "
                 f"Python {m.get('python', '?')}, cuDNN {m.get('cudnn', '?')}")
    lines += ["", md_table(["run", "status", "seconds", "why / exit"],
                           [[name, r.get("status"), f"{r.get('seconds', 0):.0f}",
                             r.get("reason") or f"exit {r.get('exit', '?')}"] for name, r in doc["runs"].items()]), ""]
    device = doc["runs"].get("device_tier")
    if measured(device):
        interface = device["result"].get("interface", {})
        lines += ["### Device tier", "", f"Store interface seen: {interface.get('note', '?')}", ""]
    for name, label, _ in ALLOCATOR_RUNS + ((DYNAMIC_RUN, "dynamic VRAM", None),):
        run_ = doc["runs"].get(name)
        if not measured(run_):
            continue
        for side, one in check_runs(run_["result"]).items():
            lines += [f"### Residency, {label}, {'with' if side == 'locked' else 'without'} pin "
                      f"(backend {one.get('backend')}, VAE-phase pressure {fmt_bytes(one.get('pressure_bytes', 0))})",
                      "", shot_table(one), ""]
            raw = one["shots"][-1].get("allocator", {}).get("memory_stats_nonzero") if one["shots"] else None
            if raw is not None:
                lines += ["PyTorch's `memory_stats()` after the last shot, non-zero entries: "
                          + (", ".join(f"`{k}` {v}" for k, v in sorted(raw.items())) or "none"), ""]
    for name in ("overhead_gpu_only", "overhead_default"):
        run_ = doc["runs"].get(name)
        if measured(run_):
            r = run_["result"]
            lines += [f"### Overhead, {r.get('flags')} (latents on {r.get('latent_device')})", "",
                      overhead.details_for(r["results"], r.get("via_nodes", True)), ""]
    return "\n".join(lines)


def shot_table(run_: dict) -> str:
    rows = [[s["shot"], fmt_time(s["load_s"]), fmt_bytes(moved(s)), fmt_bytes(s.get("resident_after_vae", 0)),
             s.get("vae_phase", "?"), (s.get("reload") or {}).get("reason", "—"),
             allocator_summary(s.get("allocator", {}), run_.get("backend"))] for s in run_["shots"]]
    return md_table(["shot", "DiT load (CUDA-synced)", "bytes moved", "resident after VAE phase", "VAE phase",
                     "reload reason (pin's report)", "allocator"], rows)
