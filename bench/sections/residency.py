"""Benchmark section "residency": what ZeroCopyVRAMPin saves across the shots of a film.

CPU (always, with COMFYUI_PATH): a tiny random-weight Wan 2.1 T2V DiT renders N shots through
ComfyUI's own executor twice, unlocked (UNETLoader -> KSampler) and locked (UNETLoader ->
ZeroCopyVRAMPin -> KSampler). After each shot comes the film's VAE phase, emulated by the call
ComfyUI's VAE decode makes to its model manager for room: ``free_memory(request, device)`` with a
request larger than what is free. (On --cpu, ``load_models_gpu`` skips ``free_memory`` for the CPU
device, so the phase makes that call itself.) An unlocked DiT is evicted there and reloaded by the
next shot's sampler; a locked one stays. ComfyUI's own unload/offload/load functions are wrapped
for the section (counting and timing only, put back afterwards, identity-checked) and per shot we
count the unload/offload calls that reached ComfyUI, the DiT's load calls, their host time and the
bytes ComfyUI counted as loaded (growth of ``model_loaded_weight_memory``).

The GPU figures (per-shot load time and bytes moved on a real card, the reason for each reload,
dynamic VRAM, allocator statistics per backend) come from bench/gpu/run_all.py, which runs
bench/gpu/residency_check.py; the gpu section turns its JSON into rows G6-G9.
"""

from __future__ import annotations

import functools
import gc
import importlib
import sys
import time
from pathlib import Path

from bench.common import FAIL, INFO, NOT_MEASURED, PASS, REPO, Context, Row, Section, fmt_bytes, fmt_time
from bench.common import md_table, median, pyplot

NAME = "residency"
TITLE = "3. Residency: ZeroCopyVRAMPin across shots"
PLOT = "residency.png"
NEEDS_COMFYUI = "needs COMFYUI_PATH (real ComfyUI model management)"
OWNER = "bench residency section"
CANVAS = {"width": 64, "height": 64, "length": 5}  # latent [1, 16, 2, 8, 8]: a short sampler pass
PIN_HEADROOM_GB = 0.5  # the budget guard on a small CI machine; the tiny DiT needs no more
LOADER, POSITIVE, NEGATIVE, LATENT, PIN, SAMPLER = "1", "2", "3", "4", "5", "6"

def run(ctx: Context) -> Section:
    started = time.perf_counter()
    section = Section(NAME, TITLE)
    cpu = measure_cpu(ctx) if ctx.comfy is not None else None
    section.rows = cpu_rows(cpu)
    section.data = {"cpu": cpu}
    if cpu is not None:
        plot(ctx.out_dir / PLOT, cpu)
        section.plots = [PLOT]
    section.details = details(cpu)
    section.seconds = time.perf_counter() - started
    return section


# ------------------------------------------------------------------------------------------ CPU

class ComfyCallCounter:
    """Counts and times ComfyUI's own unload/offload/load calls, per model.

    Wraps ``LoadedModel.model_load`` / ``model_unload`` and ``ModelPatcher.load`` /
    ``partially_unload`` (the class attributes ComfyUI's callers look up at call time; subclasses
    with their own, such as ModelPatcherDynamic, only exist on a GPU and are not wrapped). Installed
    while no residency lock exists, so a lock's wrappers go on top of these: a call the lock
    refuses or avoids never reaches ComfyUI's function and is not counted. ``restore()`` puts the
    exact original objects back and checks it did."""

    def __init__(self, mm, patcher_module):
        self.targets = [(mm.LoadedModel, "model_load", "model_load"),
                        (mm.LoadedModel, "model_unload", "model_unload"),
                        (patcher_module.ModelPatcher, "load", "patcher_load"),
                        (patcher_module.ModelPatcher, "partially_unload", "partially_unload")]
        self.events: list[tuple[str, int, float, int]] = []  # (kind, id(BaseModel), seconds, loaded-bytes change)
        self.installed: list[tuple[type, str, object, object]] = []

    def install(self) -> None:
        for owner, name, kind in self.targets:
            original = owner.__dict__[name]
            wrapper = self._wrap(kind, original, loaded_model=name.startswith("model_"))
            setattr(owner, name, wrapper)
            self.installed.append((owner, name, original, wrapper))

    def _wrap(self, kind, original, *, loaded_model: bool):
        events = self.events

        @functools.wraps(original)
        def counted(obj, *args, **kwargs):
            patcher = obj.model if loaded_model else obj
            base = getattr(patcher, "model", None)
            before = loaded_bytes(base)
            start = time.perf_counter()
            try:
                return original(obj, *args, **kwargs)
            finally:
                events.append((kind, id(base), time.perf_counter() - start, loaded_bytes(base) - before))
        return counted

    def restore(self) -> None:
        problems = []
        for owner, name, original, wrapper in reversed(self.installed):
            if owner.__dict__.get(name) is wrapper:
                setattr(owner, name, original)
            if owner.__dict__.get(name) is not original:
                problems.append(f"{owner.__name__}.{name}")
        self.installed.clear()
        if problems:
            raise RuntimeError(f"residency bench: could not put ComfyUI's own {', '.join(problems)} back "
                               "(something wrapped them after the bench did)")


def loaded_bytes(base) -> int:
    return int(getattr(base, "model_loaded_weight_memory", 0) or 0)


def graph(unet: str, *, pinned: bool, seed: int) -> tuple[dict, list[str]]:
    """UNETLoader -> [ZeroCopyVRAMPin] -> KSampler (2 steps); test conditioning, empty video latent."""
    prompt = {
        LOADER: {"class_type": "UNETLoader", "inputs": {"unet_name": unet, "weight_dtype": "default"}},
        POSITIVE: {"class_type": "ZCTestConditioning", "inputs": {"seed": 1, "tokens": 8}},
        NEGATIVE: {"class_type": "ZCTestConditioning", "inputs": {"seed": 2, "tokens": 8}},
        LATENT: {"class_type": "EmptyHunyuanLatentVideo", "inputs": {"batch_size": 1, **CANVAS}},
    }
    model = [LOADER, 0]
    if pinned:
        prompt[PIN] = {"class_type": "ZeroCopyVRAMPin",
                       "inputs": {"model": [LOADER, 0], "enable_pinning": True, "tune_allocator": False,
                                  "vram_headroom_gb": PIN_HEADROOM_GB}}
        model = [PIN, 0]
    prompt[SAMPLER] = {"class_type": "KSampler", "inputs": {
        "model": model, "seed": seed, "steps": 2, "cfg": 1.0, "sampler_name": "euler", "scheduler": "simple",
        "positive": [POSITIVE, 0], "negative": [NEGATIVE, 0], "latent_image": [LATENT, 0], "denoise": 1.0}}
    return prompt, [SAMPLER] + ([PIN] if pinned else [])


def output_of(result: dict, node: str, index: int = 0):
    """A node's output from a run result (ComfyUI's CacheEntry, or its raw output list)."""
    entry = result[node]
    values = getattr(entry, "outputs", entry)
    return values[index][0]


def vae_phase(mm, device, model_bytes: int) -> None:
    """What a VAE decode asks of ComfyUI's model manager between two sampler runs: room for its
    work, more than is free (load_models_gpu(vae, memory_required) -> free_memory on a GPU)."""
    mm.free_memory(mm.get_free_memory(device) + 2 * model_bytes, device)


def lock_kept(service, base) -> int:
    """free_memory calls the residency lock told to keep this model (outside queue runs)."""
    lock = service.registry.find(base)
    if lock is None:
        return 0
    return lock.evidence.run(None).free_memory_kept


def render_shots(ctx: Context, mm, service, counter: ComfyCallCounter, unet: str, *, pinned: bool,
                 shots: int) -> dict:
    """N shots of one film: per shot a queue run (sampler) then the VAE phase."""
    mm.unload_all_models()
    gc.collect()
    series: dict = {"pinned": pinned, "shots": []}
    base = None
    for index in range(shots):
        first_event = len(counter.events)
        prompt, targets = graph(unet, pinned=pinned, seed=100 + index)
        start = time.perf_counter()
        result = ctx.comfy.run(prompt, targets=targets)
        run_s = time.perf_counter() - start
        patcher = output_of(result, LOADER)
        if base is None:
            base = patcher.model
            series["model_bytes"] = int(patcher.model_size())
            series["model_class"] = type(base).__name__
            if pinned:
                lock = service.registry.find(base)
                series["locked"] = lock is not None
                series["pin_report"] = str(output_of(result, PIN, 1)).splitlines()[0]
        elif patcher.model is not base:
            raise RuntimeError("residency bench: the loader produced a new model mid-film")
        kept_before = lock_kept(service, base) if pinned else 0
        resident_before_vae = loaded_bytes(base)
        start = time.perf_counter()
        vae_phase(mm, patcher.load_device, series["model_bytes"])
        vae_s = time.perf_counter() - start
        mine = [e for e in counter.events[first_event:] if e[1] == id(base)]
        series["shots"].append(shot_record(index + 1, mine, run_s=run_s, vae_s=vae_s,
                                           resident_before_vae=resident_before_vae,
                                           resident_after=loaded_bytes(base),
                                           tracked_after=any(lm.model is not None and lm.model.model is base
                                                             for lm in mm.current_loaded_models),
                                           kept=(lock_kept(service, base) - kept_before) if pinned else 0))
    if pinned:
        lock = service.registry.find(base)
        series["lock_evidence"] = lock.evidence.as_dict(False) if lock is not None else None
    return series


def shot_record(shot: int, events, *, run_s: float, vae_s: float, resident_before_vae: int,
                resident_after: int, tracked_after: bool, kept: int) -> dict:
    """One shot's figures from the counter events (kind, base id, seconds, loaded-bytes change) of the DiT."""
    def of(kind):
        return [e for e in events if e[0] == kind]
    loads = of("model_load")
    return {
        "shot": shot,
        "load_calls": len(loads),
        "load_s": sum(e[2] for e in loads),
        "bytes_loaded": sum(max(0, e[3]) for e in loads),
        "patcher_loads": len(of("patcher_load")),
        "unload_calls": len(of("model_unload")),
        "partial_unload_calls": len(of("partially_unload")),
        "bytes_freed": max(0, resident_before_vae - resident_after),
        "resident_after": resident_after,
        "tracked_after": tracked_after,
        "kept_by_lock": kept,
        "run_s": run_s,
        "vae_phase_s": vae_s,
    }


def offload_calls(shot: dict) -> int:
    return shot["unload_calls"] + shot["partial_unload_calls"]


def measure_cpu(ctx: Context) -> dict:
    """Both films on the in-process ComfyUI; everything put back afterwards."""
    helpers = str(REPO / "tools" / "standins")  # tiny_models (ComfyInProcess puts it there too)
    if helpers not in sys.path:
        sys.path.insert(0, helpers)
    import tiny_models

    mm = importlib.import_module("comfy.model_management")
    patcher_module = importlib.import_module("comfy.model_patcher")
    service = ctx.comfy.module("zc_residency").get_service()
    folder = Path(ctx.tmp_dir) / "residency_models"
    tiny_models.register_model_folder("diffusion_models", folder)
    built = tiny_models.build_tiny_wan21_dit(folder, "t2v", seed=70)
    shots = ctx.pick(10, 10, 3)
    ctx.log(f"residency: {shots} shots x 2 (without / with ZeroCopyVRAMPin), tiny Wan 2.1 DiT "
            f"{fmt_bytes(built.bytes)}")

    service.release_all(f"{OWNER}: start")
    if len(service.hooks):
        raise RuntimeError("residency bench: residency hooks are still installed with no lock")
    ctx.comfy.executor.reset()  # the loader and the pin node really run (no cached outputs from elsewhere)
    counter = ComfyCallCounter(mm, patcher_module)
    try:
        counter.install()
        unpinned = render_shots(ctx, mm, service, counter, built.name, pinned=False, shots=shots)
        pinned = render_shots(ctx, mm, service, counter, built.name, pinned=True, shots=shots)
    finally:
        service.release_all(f"{OWNER}: done")
        mm.unload_all_models()
        counter.restore()
        ctx.comfy.executor.reset()  # drop this section's models from the node cache
        gc.collect()
    return {"comfyui": comfyui_version(), "model": built.name, "model_file_bytes": built.bytes,
            "shots_per_film": shots, "unpinned": unpinned, "pinned": pinned,
            "restored": "ComfyUI's LoadedModel.model_load/model_unload, ModelPatcher.load/partially_unload "
                        "are its own objects again (identity-checked)"}


def comfyui_version() -> str:
    try:
        return importlib.import_module("comfyui_version").__version__
    except ImportError:
        return "unknown"


# ------------------------------------------------------------------------------------------ CPU rows

def film_totals(series: dict) -> dict:
    shots = series["shots"]
    later = shots[1:]
    reloads = [s for s in later if s["bytes_loaded"] > 0]
    return {"offload_calls": sum(offload_calls(s) for s in shots),
            "reloads": len(reloads),
            "reload_bytes": sum(s["bytes_loaded"] for s in later),
            "first_load_s": shots[0]["load_s"] if shots else 0.0,
            "later_load_s": median([s["load_s"] for s in later]) if later else None}


def cpu_rows(cpu: dict | None) -> list[Row]:
    if cpu is None:
        return [Row("R1", "unload/offload calls over 10 shots, without pin vs with pin", "with pin: 0",
                    NEEDS_COMFYUI, NOT_MEASURED),
                Row("R2", "DiT (re)loads after shot 1, without vs with pin", "with pin: 0", NEEDS_COMFYUI,
                    NOT_MEASURED),
                Row("R3", "per-shot DiT load time on CPU, without vs with pin", "(info)", NEEDS_COMFYUI,
                    NOT_MEASURED)]
    n = cpu["shots_per_film"]
    off, on = film_totals(cpu["unpinned"]), film_totals(cpu["pinned"])
    not_locked = not cpu["pinned"].get("locked", False)
    lock_note = f"; the pin did not lock: {cpu['pinned'].get('pin_report', '?')}" if not_locked else ""
    control = off["offload_calls"] > 0 and off["reloads"] > 0

    def verdict(pinned_value: int) -> str:
        if not control:
            return INFO  # the control film was never evicted: nothing here tests the pin
        return PASS if pinned_value == 0 and not not_locked else FAIL
    control_note = "" if control else "; the unpinned control was not evicted, so this shows nothing"
    rows = [
        Row("R1", f"ComfyUI unload/offload calls on the DiT over {n} shots (model_unload + partially_unload "
                  "that reached ComfyUI), without pin vs with pin", "with pin: 0",
            f"{off['offload_calls']} vs {on['offload_calls']}{lock_note}{control_note}",
            verdict(on["offload_calls"])),
        Row("R2", f"DiT (re)loads after shot 1 (shots 2-{n} whose load moved weights), without vs with pin",
            "with pin: 0",
            f"{off['reloads']} ({fmt_bytes(off['reload_bytes'])}) vs {on['reloads']} "
            f"({fmt_bytes(on['reload_bytes'])}){lock_note}{control_note}", verdict(on["reloads"])),
    ]
    if off["later_load_s"] is None:
        timing = "only one shot"
    else:
        timing = (f"shot 1: {fmt_time(off['first_load_s'])} vs {fmt_time(on['first_load_s'])}; shots 2-{n} "
                  f"median: {fmt_time(off['later_load_s'])} vs {fmt_time(on['later_load_s'])} "
                  f"(tiny DiT, {fmt_bytes(cpu['unpinned'].get('model_bytes', 0))}; host time of ComfyUI's "
                  "LoadedModel.model_load)")
    rows.append(Row("R3", "per-shot DiT load time on CPU, without vs with pin", "(info)", timing, INFO))
    return rows


# ------------------------------------------------------------------------------------------ report

def plot(path: Path, cpu: dict) -> None:
    plt = pyplot()
    off, on = cpu["unpinned"]["shots"], cpu["pinned"]["shots"]
    shots = [s["shot"] for s in off]
    width = 0.38
    fig, axes = plt.subplots(3, 1, figsize=(7.5, 8), sharex=True)
    axes[0].plot(shots, [s["load_s"] * 1e3 for s in off], "o-", label="without ZeroCopyVRAMPin")
    axes[0].plot(shots, [s["load_s"] * 1e3 for s in on], "s-", label="with ZeroCopyVRAMPin")
    axes[0].set_ylabel("DiT load call (ms)")
    axes[0].set_yscale("log")
    axes[0].legend(fontsize=8)
    axes[1].bar([x - width / 2 for x in shots], [s["bytes_loaded"] / 2**20 for s in off], width, label="without")
    axes[1].bar([x + width / 2 for x in shots], [s["bytes_loaded"] / 2**20 for s in on], width, label="with")
    axes[1].set_ylabel("bytes loaded (MiB)")
    axes[2].bar([x - width / 2 for x in shots], [offload_calls(s) for s in off], width, label="without")
    axes[2].bar([x + width / 2 for x in shots], [offload_calls(s) for s in on], width, label="with")
    axes[2].set_ylabel("unload/offload calls")
    axes[2].yaxis.get_major_locator().set_params(integer=True)
    axes[2].set_xlabel("shot")
    axes[2].set_xticks(shots)
    fig.suptitle(f"Residency on CPU (ComfyUI {cpu['comfyui']}): tiny Wan 2.1 DiT, "
                 f"{cpu['shots_per_film']} shots, VAE phase after each", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def shot_table(series: dict) -> str:
    rows = [[s["shot"], s["load_calls"], fmt_time(s["load_s"]), fmt_bytes(s["bytes_loaded"]), s["patcher_loads"],
             s["unload_calls"], s["partial_unload_calls"], s["kept_by_lock"],
             fmt_bytes(s["resident_after"]) + ("" if s["tracked_after"] else " (evicted)"),
             fmt_time(s["run_s"])] for s in series["shots"]]
    return md_table(["shot", "DiT load calls", "load time", "bytes loaded", "ModelPatcher.load", "model_unload",
                     "partially_unload", "kept by lock", "loaded after VAE phase", "queue run"], rows)


def details(cpu: dict | None) -> str:
    out = ["### CPU", ""]
    if cpu is None:
        out.append(f"Not measured: {NEEDS_COMFYUI}.")
    else:
        model_bytes = cpu["unpinned"].get("model_bytes", 0)
        out += [
            (f"ComfyUI {cpu['comfyui']} in-process (`--cpu`, classic model management), tiny random Wan 2.1 "
             f"T2V DiT `{cpu['model']}` ({fmt_bytes(model_bytes)} as ComfyUI counts it), "
             f"{cpu['shots_per_film']} shots per film, 2 sampler steps per shot."),
            "", "**Without ZeroCopyVRAMPin** (UNETLoader → KSampler)", "", shot_table(cpu["unpinned"]),
            "", "**With ZeroCopyVRAMPin** (UNETLoader → ZeroCopyVRAMPin → KSampler)", "",
            shot_table(cpu["pinned"]), "",
            f"Pin node: {cpu['pinned'].get('pin_report', '?')}", "",
        ]
    out += ["### What was measured", "",
            ("- A *shot* is one queue run through ComfyUI's own executor (UNETLoader, test conditioning, "
             "EmptyHunyuanLatentVideo, KSampler with a new seed; the loader and pin node are cached as in a "
             "real session), followed by the film's **VAE phase**: the call a VAE decode makes to ComfyUI's model "
             "manager for room, `free_memory(free + 2 × DiT size, device)` — more than is free. On `--cpu`, "
             "`load_models_gpu` skips `free_memory` for the CPU device, so the phase makes that call itself; "
             "on a GPU `load_models_gpu(vae, memory_required)` makes it."),
            ("- Counted by wrapping ComfyUI's `LoadedModel.model_load` / `model_unload` and "
             "`ModelPatcher.load` / `partially_unload` for this section only (put back afterwards, checked by "
             "identity). The wrappers sit *under* the residency lock's, so a call the lock avoids or refuses "
             "does not reach ComfyUI and is not counted. *unload/offload calls* = `model_unload` + "
             "`partially_unload` calls on the DiT; *bytes loaded* = growth of ComfyUI's "
             "`model_loaded_weight_memory` during `model_load`; *load time* = host wall time of `model_load`. "
             "A *(re)load* is a shot after the first whose load moved bytes. *kept by lock* = `free_memory` calls "
             "the lock told to keep the DiT (the pack's own evidence)."),
            ("- On the CPU the load device is the CPU: nothing physically moves; the figures are ComfyUI's "
             "load bookkeeping and the code paths are ComfyUI's own. Load times are of a tiny model and say "
             "nothing about a real one."),
            "- Afterwards every lock is released, every model unloaded and the node cache emptied."]
    out += ["", "### GPU", "",
            "The GPU figures of this section (rows G6-G9: load time and bytes moved per shot on a real card, the "
            "reason the pin's report gives for each reload, dynamic VRAM, allocator statistics per backend) come "
            "from `bench/gpu/run_all.py`; see the section GPU rows."]
    return "\n".join(out)
