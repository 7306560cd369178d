"""Films: a film's line rendered to a video file one shot at a time (ZeroCopyFilmRender,
zc_film), beside the IMAGE route that holds the whole film in memory (ZeroCopyFilmAssemble).

Rows (CPU; a stand-in VAE, the real store, the nodes' own code):
  M1a  peak resident memory while rendering a 5-, 50- and 200-shot film of one shot size, each
       film in a fresh child process: the 200-shot film's peak ≤ 1.2 × the 5-shot film's
  M1b  render time per shot at each length: linear (seconds per shot at 200 within 0.8–1.25 × at 50)
  M2a  ZeroCopyFilmAssemble's peak at 5 and 50 shots, each in a child too; the headline is its
       peak over the render's at 50 shots
  M2b  the same at 200 shots: run when the film's frames (frames × H × W × 3 × 4 bytes) fit in
       70 % of this machine's RAM, else "not run" with the bytes it would need
  M2c  (full mode, info) the Assemble node as it was before the one-shot render (git 73d4567: every decoded
       clip kept, then joined: the film twice), at 5 and 50 shots
  M3a  a render after another take of the film's last shot was stored and chosen: 1 shot decoded;
       its time against the full render
  M3b  the same with a crossfade: at most 3 shots decoded
  M4   a render killed (SIGKILL) when shot 30 of 50 is asked of the decoder: no file under the
       film's name; the next render decodes exactly the 21 shots left (30–50)
  M5a  the 50-shot film plays: PyAV's frame count is the plan's, its frame rate, its duration
       within one frame; the first and last frame of every shot within the codec's loss of the
       decoded shots' frames after their trims (H.264)
  M5b  an audio-video film: its sound lasts as long as its picture, within one frame
  M5c  a lossless film (FFV1): every frame equal to the decoded shots' frames after their trims

Why a stand-in VAE: the figures are about what the pack does around the decode (memory held,
shots decoded, files written), and a real Wan VAE decode takes minutes per shot on this CPU. The
stand-in maps a Wan 2.1 480p-shaped latent [1, 16, T, 60, 104] to the (T - 1) × 4 + 1 IMAGE frames
of 832×480 that Wan's causal VAE gives (a fixed channel projection, nearest upsampling, a fine
texture): real frames of the real size, made by real work, deterministic, counted per call. Shots
are short (T = 3: 9 frames) so that the full section fits in a few minutes on a 2-core CPU.

How: the parent builds the films in a real LatentStore with a spill folder (each shot's lineage
names the shot it continues and the frame its start repeats, so the film's line is whole) and
closes it; each measurement is a child process (this file with ``--child JOB``) that opens the
store from its spill folder, mounts the pack as a package beside the stand-in comfy_api of the
node-layer tests (tools/standins/comfy_api_standin.py) and calls the node's ``execute``; its peak is the
kernel's high-water mark of its resident memory (VmHWM in /proc/self/status), so no two films'
peaks mix. M5b and M5c call zc_film.render directly (the node has no audio stand-in).
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import json
import os
import resource
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

if __package__ in (None, ""):  # run as a file: python bench/sections/film.py --child JOB
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from bench.common import (FAIL, INFO, NOT_MEASURED, PASS, REPO, Context, Row, Section,  # noqa: E402
                          cpu_load, fmt_bytes, fmt_time, host, md_table, meminfo)

NAME, TITLE = "film", "Films: rendered to a file one shot at a time"
PACK = "zc_bench_film_pack"   # the pack mounted as a package in the children
RATE = 16.0                   # frames per second (Wan)
SAMPLE_RATE = 48000           # the audio-video film's sound
CHANNELS, SCALE = 16, 8       # Wan 2.1's latent channels and spatial factor
FORMAT = "h264-mp4"           # the node's default format
PEAK_GOAL = 1.2               # M1a: longest film's peak ≤ this × the shortest's
LINEAR_BAND = (0.8, 1.25)     # M1b: CPU seconds per shot, longest / middle film
MEMORY_SHARE = 0.7            # M2: the IMAGE route runs only when its film fits in this share of the RAM
SEAM_LOSS_GOAL = 6.0          # M5a: mean |film - decoded| per seam frame, 8-bit levels (the test suite's bound)
BEFORE_36 = "73d4567"         # the Assemble node that kept every clip and then joined them
CHILD_TIMEOUT_S = {"full": 900, "quick": 300, "smoke": 120}


@dataclass(frozen=True)
class Plan:
    """What this mode measures."""

    lengths: tuple[int, int, int]   # shots of the short, middle and long film
    latent: tuple[int, int, int]    # T, h, w of every shot's latent [1, 16, T, h, w]
    crossfade: int                  # M3b and M4
    kill_at: int                    # M4: the shot of the middle film whose decode kills the render
    audio_shots: int                # M5b
    lossless_shots: int             # M5c
    before_36: bool                 # M2c is measured

    @property
    def decoded(self) -> int:
        """Pixel frames of one shot: (T - 1) × 4 + 1, as Wan's causal VAE."""
        return (self.latent[0] - 1) * 4 + 1

    @property
    def size(self) -> tuple[int, int]:
        """(width, height) of a frame."""
        return self.latent[2] * SCALE, self.latent[1] * SCALE

    def film_frames(self, shots: int) -> int:
        """Frames of a film of ``shots`` cut shots: every shot after the first drops the frame its
        start repeats of the shot before (its lineage's trim, 1 here)."""
        return shots * (self.decoded - 1) + 1

    def image_bytes(self, shots: int) -> int:
        """The film as one IMAGE batch: frames × H × W × 3 float32."""
        width, height = self.size
        return self.film_frames(shots) * height * width * 3 * 4

    def shot_text(self) -> str:
        width, height = self.size
        return (f"latent [1,{CHANNELS},{self.latent[0]},{self.latent[1]},{self.latent[2]}] → {self.decoded} frames "
                f"{width}×{height}")



def machine_free(value):
    """The child's result with every file path cut to its name: the results are committed, and a
    path names this machine's folders."""
    if isinstance(value, dict):
        return {k: (Path(v).name if k == "file" and isinstance(v, str) else machine_free(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [machine_free(v) for v in value]
    return value

def plan_for(ctx: Context) -> Plan:
    return Plan(lengths=ctx.pick((5, 50, 200), (3, 10, 30), (2, 3, 4)),
                latent=ctx.pick((3, 60, 104), (3, 60, 104), (2, 8, 12)),
                crossfade=ctx.pick(2, 2, 1), kill_at=ctx.pick(30, 6, 2),
                audio_shots=ctx.pick(5, 3, 2), lossless_shots=ctx.pick(4, 3, 2),
                before_36=ctx.pick(True, False, False))


def tag_of(shots: int) -> str:
    return f"film_{shots}"


# =========================================================================== the stand-in film


def shot_latent(seed: int, shape: tuple[int, int, int], head: torch.Tensor | None = None) -> torch.Tensor:
    """A shot's latent [1, 16, T, h, w]: smooth random fields (a real latent is smooth at this
    scale, and a smooth picture encodes at a realistic speed), its first frame the last frame of
    the shot it continues (the handed-off tail), when it continues one."""
    frames, height, width = shape
    coarse = torch.randn(1, CHANNELS, frames, max(2, height // 6), max(2, width // 6),
                         generator=torch.Generator().manual_seed(seed))
    latent = F.interpolate(coarse, size=(frames, height, width), mode="trilinear", align_corners=False)
    if head is not None:
        latent[:, :, :1] = head
    return latent.contiguous()


@functools.cache
def _projection() -> torch.Tensor:
    return torch.randn(CHANNELS, 3, generator=torch.Generator().manual_seed(36)) * 0.5


@functools.lru_cache(maxsize=4)
def _texture(height: int, width: int) -> torch.Tensor:
    """A fine static pattern (± 3 levels of 255): detail the encoder must keep, the same in every frame."""
    y = torch.arange(height, dtype=torch.float32).view(-1, 1, 1)
    x = torch.arange(width, dtype=torch.float32).view(1, -1, 1)
    return 0.012 * torch.sin(0.9 * x) * torch.sin(0.7 * y)


def stand_in_frames(latent: torch.Tensor) -> torch.Tensor:
    """IMAGE frames [(T - 1) × 4 + 1, 8h, 8w, 3] float32 in 0..1 of a latent [1, 16, T, h, w]: pixel
    frame i shows latent frame ceil(i / 4) (Wan's causal layout: the first latent frame gives one
    pixel frame, each later one four), its 16 channels projected to RGB, upsampled ×8 (nearest),
    with a fine texture. Deterministic: the checks decode a shot again and compare."""
    frames = latent.shape[2]
    index = torch.tensor([(i + 3) // 4 for i in range((frames - 1) * 4 + 1)])
    rgb = torch.sigmoid(torch.einsum("cfhw,cd->fhwd", latent[0].float().index_select(1, index), _projection()))
    count, height, width, _ = rgb.shape
    up = rgb[:, :, None, :, None, :].expand(count, height, SCALE, width, SCALE, 3)
    up = up.reshape(count, height * SCALE, width * SCALE, 3)  # one copy: the frames' own memory
    return up.add_(_texture(height * SCALE, width * SCALE)).clamp_(0, 1)


class StandInVAE:
    """What the nodes decode with: ``decode(latent)`` gives ``stand_in_frames`` and counts the call.
    With ``kill_at``, the process SIGKILLs itself when asked for that decode (after writing how long
    the render ran to ``progress``): a crash in the middle of a film, as real as it gets."""

    def __init__(self, kill_at: int = 0, progress: Path | None = None):
        self.calls, self.kill_at, self.progress, self.started = 0, kill_at, progress, time.perf_counter()
        self._zerocopy_identity = "bench stand-in VAE (film section, v1)"  # the render cache's key for it

    def decode(self, latent: torch.Tensor) -> torch.Tensor:
        if self.kill_at and self.calls + 1 == self.kill_at:
            if self.progress is not None:
                self.progress.write_text(json.dumps({"decodes": self.calls,
                                                     "seconds": time.perf_counter() - self.started}))
            os.kill(os.getpid(), signal.SIGKILL)
        self.calls += 1
        return stand_in_frames(latent)


def put_shot(store, engine, lineage, tag: str, seed: int, shape, parent: tuple[int, torch.Tensor] | None) -> int:
    """Store a shot under ``tag``, continuing ``parent`` ((generation, latent)) when given: its
    lineage names the parent, the handed-off tail's digest and the 1 pixel frame its start repeats."""
    latent = shot_latent(seed, shape, None if parent is None else parent[1][:, :, -1:])
    meta = {}
    if parent is not None:
        tail = engine.digest_tensor(parent[1][:, :, -1:])
        meta[lineage.LINEAGE_KEY] = lineage.record(lineage.marker(
            parent_tag=tag, parent_generation=parent[0], tail_frames=1, tail_digest=tail, used_digest=tail,
            adapter="temporal_inpaint", trim=1))
    return store.put(tag, {"latent_tensor": latent}, meta, spill=True)


def build_films(spill: Path, plan: Plan) -> dict[str, int]:
    """The three films, each a line of shots continuing one another, in one spill folder (the
    store is closed after: each child opens it as ComfyUI does after a restart)."""
    from zc_pack import zc_engine
    from zc_pack.zc_continuity import lineage

    made = {}
    with zc_engine.LatentStore(spill_dir=str(spill)) as store:
        for shots in plan.lengths:
            parent = None
            for index in range(shots):
                seed = 1000 * shots + index
                generation = put_shot(store, zc_engine, lineage, tag_of(shots), seed, plan.latent, parent)
                parent = (generation, store.get(tag_of(shots), generation).tensors["latent_tensor"])
            made[tag_of(shots)] = shots
        store.flush()
    return made


# =========================================================================== the child (measures one film)


def proc_status(key: str) -> int:
    """A /proc/self/status memory figure in bytes (VmHWM: the peak resident memory; VmRSS: now)."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    return 0


def mount_pack() -> dict:
    """The pack mounted as the package PACK beside the stand-in comfy_api the node-layer tests use
    (tools/standins/comfy_api_standin.py): the nodes' own code runs, ComfyUI's is absent. Its
    modules by short name."""
    from tools.standins import comfy_api_standin

    sys.modules.update(comfy_api_standin.modules(PACK, with_ui=True))
    names = ("zc_nodes.film_render_node", "zc_nodes.film_assemble_node", "zc_nodes.comfy_calls",
             "zc_nodes.runtime", "zc_nodes.farm_link", "zc_nodes.film_view", "zc_engine",
             "zc_continuity.lineage", "zc_continuity.film_join", "zc_film.plan", "zc_film.pieces")
    return {name: importlib.import_module(f"{PACK}.{name}") for name in names}


def wire(mods: dict, store, out_dir: Path, cache_dir: Path) -> None:
    """What ComfyUI would give the nodes: the store, the output folder, the render cache; the farm
    off, no progress bar, the VIDEO output a plain tuple."""
    calls = mods["zc_nodes.comfy_calls"]
    calls.output_directory = lambda: str(out_dir)
    calls.video_from_file = lambda path: ("VideoFromFile", path)
    calls.preview_video = lambda name, folder: ("PreviewVideo", name, folder)
    calls.progress_bar = lambda total: calls._NoProgress()
    mods["zc_nodes.farm_link"].complete_film = lambda tag: 0
    mods["zc_nodes.runtime"].store = lambda: store
    os.environ["ZEROCOPY_RENDER_CACHE"] = str(cache_dir)


def cpu_seconds() -> float:
    """CPU time of this process so far, every thread (the encoder's too), user + system."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def render_film(mods: dict, vae: StandInVAE, job: dict, crossfade: int) -> dict:
    """One ZeroCopyFilmRender.execute of the job's film: wall and CPU seconds, shots decoded, the
    node's summary."""
    node = mods["zc_nodes.film_render_node"].ZeroCopyFilmRender
    before, cpu, started = vae.calls, cpu_seconds(), time.perf_counter()
    vae.started = started
    (video, info), _ = node.execute(buffer_tag=job["tag"], vae=vae, format=FORMAT, frame_rate=RATE,
                                    folder=job["folder"], crossfade_frames=crossfade)
    return {"seconds": time.perf_counter() - started, "cpu_seconds": cpu_seconds() - cpu,
            "decodes": vae.calls - before, "summary": info.splitlines()[0], "file": video[1]}


def line_cuts(mods: dict, tag: str, plan: Plan, crossfade: int) -> list:
    """The film's plan (zc_film.plan) from the store's line, independently of the node."""
    view, join = mods["zc_nodes.film_view"], mods["zc_continuity.film_join"]
    shots = view.line(view.describe(tag))
    trims = join.seam_trims(shots, -1)
    return mods["zc_film.plan"].cut(list(range(1, len(shots) + 1)), [s["generation"] for s in shots],
                                    [plan.decoded] * len(shots), trims, crossfade)


def seam_frames(path: str, wanted: set[int]) -> tuple[int, dict, float, float | None]:
    """(frames in the file, {index: RGB frame} of the wanted ones, frame rate, duration in s)."""
    import av

    kept = {}
    with av.open(path) as container:
        stream = container.streams.video[0]
        count = 0
        for count, frame in enumerate(container.decode(stream), start=1):
            if count - 1 in wanted:
                kept[count - 1] = frame.to_ndarray(format="rgb24")
        duration = container.duration / 1e6 if container.duration else None
        return count, kept, float(stream.average_rate), duration


def check_film(mods: dict, store, job: dict, plan: Plan, path: str) -> dict:
    """M5a: the film file read back with PyAV against the plan and the decoded shots (each shot
    decoded again, one at a time: the first and last frame it gives the film)."""
    import numpy as np

    cuts = line_cuts(mods, job["tag"], plan, 0)
    wanted = {c.start for c in cuts} | {c.end - 1 for c in cuts}
    count, frames, rate, duration = seam_frames(path, wanted)
    to_rgb8 = mods["zc_film.pieces"].to_rgb8
    errors = []
    for cut in cuts:
        latent = store.get(job["tag"], cut.generation).tensors["latent_tensor"]
        decoded = to_rgb8(stand_in_frames(latent))
        for film_index, shot_index in ((cut.start, cut.trim), (cut.end - 1, cut.decoded - 1)):
            if film_index in frames:
                errors.append(float(np.abs(frames[film_index].astype(np.int16)
                                           - decoded[shot_index].astype(np.int16)).mean()))
    total = mods["zc_film.plan"].total_frames(cuts)
    return {"frames": count, "planned": total, "rate": rate, "duration_s": duration,
            "seam_frames": len(errors), "missing_seam_frames": 2 * len(cuts) - len(errors),
            "seam_error_max": max(errors) if errors else None, "seam_error_mean": float(np.mean(errors)) if errors else None,
            "bytes": os.path.getsize(path)}


def retake_last_shot(mods: dict, store, tag: str, plan: Plan, seed: int) -> int:
    """Store another take of the film's last shot (a sibling: the same parent) and choose it in the
    storyboard (film_view.choose, as the sidebar does). The last shot, because a new take in the
    middle of the line ends the line there (its continuations belong to the other take)."""
    view = mods["zc_nodes.film_view"]
    line = view.line(view.describe(tag))
    parent = line[-2]["generation"]
    parent_latent = store.get(tag, parent).tensors["latent_tensor"]
    generation = put_shot(store, mods["zc_engine"], mods["zc_continuity.lineage"], tag, seed, plan.latent,
                          (parent, parent_latent))
    chosen = view.line(view.choose(tag, generation))
    if chosen[-1]["generation"] != generation or len(chosen) != len(line):
        raise RuntimeError(f"the new take {generation} does not end a line of {len(line)} shots: "
                           f"{[s['generation'] for s in chosen]}")
    return generation


def child_render(mods: dict, store, job: dict, plan: Plan) -> dict:
    """M1 (and, for the middle film, M5a and M3a): the film rendered; the peak read before
    anything else runs; then the file checked; then another take of the last shot rendered."""
    vae = StandInVAE()
    result = {"rss_before": proc_status("VmRSS"), "peak_before": proc_status("VmHWM")}
    result["render"] = render_film(mods, vae, job, 0)
    result["peak"] = proc_status("VmHWM")
    if job.get("check"):
        result["plays"] = check_film(mods, store, job, plan, result["render"]["file"])
    if job.get("retake"):
        result["take"] = retake_last_shot(mods, store, job["tag"], plan, seed=job["retake"])
        result["retake"] = render_film(mods, vae, job, 0)
    return result


def child_kill(mods: dict, store, job: dict, plan: Plan) -> dict:
    """M4, first half: a render that SIGKILLs itself when the decoder is asked for shot kill_at."""
    vae = StandInVAE(kill_at=job["kill_at"], progress=Path(job["progress"]))
    return {"render": render_film(mods, vae, job, job["crossfade"]), "killed": False}  # only when never asked


def child_resume(mods: dict, store, job: dict, plan: Plan) -> dict:
    """M4, second half: the same render again (what it decodes); then M3b: another take of the
    last shot chosen and the film rendered once more, with the crossfade."""
    vae = StandInVAE()
    result = {"render": render_film(mods, vae, job, job["crossfade"])}
    result["take"] = retake_last_shot(mods, store, job["tag"], plan, seed=job["retake"])
    result["retake"] = render_film(mods, vae, job, job["crossfade"])
    return result


def load_before_36(source: Path):
    """The Assemble node's module as it was before the one-shot render (its file from git), inside the pack."""
    name = f"{PACK}.zc_nodes.film_assemble_before_36"
    spec = importlib.util.spec_from_file_location(name, source)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def child_assemble(mods: dict, store, job: dict, plan: Plan) -> dict:
    """M2: ZeroCopyFilmAssemble.execute (today's, or the one before the one-shot render): its peak."""
    module = load_before_36(Path(job["source"])) if job.get("source") else mods["zc_nodes.film_assemble_node"]
    vae = StandInVAE()
    result = {"rss_before": proc_status("VmRSS"), "peak_before": proc_status("VmHWM")}
    started = time.perf_counter()
    (images, _audio, info), _ = module.ZeroCopyFilmAssemble.execute(buffer_tag=job["tag"], vae=vae)
    result.update(seconds=time.perf_counter() - started, peak=proc_status("VmHWM"), decodes=vae.calls,
                  frames=int(images.shape[0]), image_bytes=images.numel() * images.element_size(),
                  summary=info.splitlines()[0])
    return result


CHILDREN = {"render": child_render, "kill": child_kill, "resume": child_resume, "assemble": child_assemble}


def child_main(argv: list[str]) -> int:
    job = json.loads(Path(argv[argv.index("--child") + 1]).read_text())
    plan = Plan(**{k: tuple(v) if isinstance(v, list) else v for k, v in job["plan"].items()})
    mods = mount_pack()
    store = mods["zc_engine"].LatentStore(spill_dir=job["spill"])
    try:
        wire(mods, store, Path(job["out"]), Path(job["cache"]))
        result = CHILDREN[job["kind"]](mods, store, job, plan)
    finally:
        store.close()
    Path(job["result"]).write_text(json.dumps(result, indent=1))
    return 0


# =========================================================================== the parent: measuring


class Children:
    """Starts the children of one section run, one at a time, each with its job as a JSON file."""

    def __init__(self, ctx: Context, plan: Plan, work: Path):
        self.ctx, self.plan, self.work, self.count = ctx, plan, work, 0

    def run(self, kind: str, **job) -> dict:
        """The child's result; {"error": why} when it failed; {"returncode": n} always."""
        self.count += 1
        job_file, result = self.work / f"job_{self.count}.json", self.work / f"result_{self.count}.json"
        job = {"kind": kind, "plan": asdict(self.plan), "spill": str(self.work / "spill"),
               "out": str(self.work / "output"), "cache": str(self.work / "render_cache"),
               "folder": "films", "result": str(result), **job}
        job_file.write_text(json.dumps(job))
        limit = CHILD_TIMEOUT_S[self.ctx.mode]
        self.ctx.log(f"film: child {self.count}: {kind} {job.get('tag', '')}")
        try:
            proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", str(job_file)],
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=limit)
        except subprocess.TimeoutExpired:
            return {"error": f"the child ran past {limit} s", "returncode": None}
        if result.is_file():
            return {**machine_free(json.loads(result.read_text())), "returncode": proc.returncode}
        tail = " ".join(proc.stdout.strip().splitlines()[-3:])[-400:]
        return {"error": f"the child ended ({proc.returncode}) without a result: {tail}", "returncode": proc.returncode}


def memory_refusal(need: int) -> str | None:
    """Why a film of ``need`` bytes is not held as one IMAGE batch here (None: it may run): more
    than MEMORY_SHARE of this machine's RAM, or of what is available right now."""
    total, available = meminfo("MemTotal:"), meminfo("MemAvailable:")
    if need > MEMORY_SHARE * total:
        return f"not run: would need {fmt_bytes(need)}, this machine has {fmt_bytes(total)}"
    if need > MEMORY_SHARE * available:
        return f"not run: would need {fmt_bytes(need)}, this machine has {fmt_bytes(available)} available now"
    return None


def source_before_36(work: Path) -> tuple[Path | None, str]:
    """The Assemble node's file at git BEFORE_36, written into ``work`` (None and why when git cannot give it)."""
    try:
        proc = subprocess.run(["git", "-C", str(REPO), "show", f"{BEFORE_36}:zc_nodes/film_assemble_node.py"],
                              capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"not measured: git show {BEFORE_36} failed ({exc})"
    if proc.returncode != 0:
        return None, f"not measured: this checkout has no commit {BEFORE_36} ({proc.stderr.strip()[:120]})"
    path = work / "film_assemble_before_36.py"
    path.write_text(proc.stdout)
    return path, ""


def measure_renders(children: Children, plan: Plan) -> dict:
    """M1 (and M5a, M3a on the middle film): each film rendered in a child of its own."""
    out = {}
    for shots in plan.lengths:
        middle = shots == plan.lengths[1]
        out[shots] = children.run("render", tag=tag_of(shots), check=middle, retake=90_000 + shots if middle else 0)
    return out


def measure_assembles(children: Children, plan: Plan, before_36: Path | None) -> dict:
    """M2: today's Assemble node at every length whose film fits (and, in full mode, the one before
    the one-shot render at the two shorter lengths, whose peak is the film twice)."""
    out = {"today": {}, "before_36": {}}
    for shots in plan.lengths:
        refusal = memory_refusal(plan.image_bytes(shots))
        out["today"][shots] = {"refused": refusal} if refusal else children.run("assemble", tag=tag_of(shots))
    if before_36 is not None:
        for shots in plan.lengths[:2]:
            refusal = memory_refusal(2 * plan.image_bytes(shots))
            out["before_36"][shots] = {"refused": refusal} if refusal else children.run(
                "assemble", tag=tag_of(shots), source=str(before_36))
    return out


def measure_resume(children: Children, plan: Plan, work: Path) -> dict:
    """M4 and M3b, on the middle film with a crossfade, in a render cache and folder of their own."""
    shots = plan.lengths[1]
    where = {"tag": tag_of(shots), "crossfade": plan.crossfade, "folder": "resumed",
             "cache": str(work / "render_cache_resume")}
    progress = work / "killed_progress.json"
    killed = children.run("kill", kill_at=plan.kill_at, progress=str(progress), **where)
    final = work / "output" / "resumed" / f"{tag_of(shots)}.mp4"
    killed.update(file_after_kill=final.exists(), progress=json.loads(progress.read_text()) if progress.is_file()
                  else None, partial_files=sorted(p.name for p in final.parent.glob(".zc-part-*"))
                  if final.parent.is_dir() else [])
    resumed = children.run("resume", retake=95_000 + shots, **where)
    return {"killed": killed, "resumed": resumed}


def direct_film(folder: Path, plan: Plan, shots: int, fmt_name: str, crossfade: int, audio: bool):
    """A film rendered by zc_film.render directly (no node): its Job, Report and the decoded
    frames of each shot (uint8), with the stand-in's frames and, with ``audio``, a tone per shot."""
    import numpy as np

    from zc_pack.zc_film import formats, pieces, render
    from zc_pack.zc_film.segment_cache import SegmentCache

    latents, head = [], None
    for index in range(shots):
        latents.append(shot_latent(7000 + index, plan.latent, head))
        head = latents[-1][:, :, -1:]
    decoded = {}

    def decode(shot):
        frames = stand_in_frames(latents[shot.place - 1])
        decoded[shot.place] = pieces.to_rgb8(frames)
        if not audio:
            return render.Decoded(frames)
        t = np.arange(round(frames.shape[0] * SAMPLE_RATE / RATE), dtype=np.float32) / SAMPLE_RATE
        wave = 0.2 * np.sin(2 * np.pi * (220 + 30 * shot.place) * t)
        return render.Decoded(frames, np.stack([wave, wave]).astype(np.float32), SAMPLE_RATE)

    fmt = formats.resolve(fmt_name)
    line = [render.LineShot(place, place, f"bench-{fmt_name}-{place}", 0 if place == 1 else 1)
            for place in range(1, shots + 1)]
    job = render.Job(film="direct", shots=line, fmt=fmt, quality=19, frame_rate=RATE, crossfade=crossfade,
                     identity={"vae": "bench stand-in"}, output=folder / f"direct.{fmt.extension}",
                     cache=SegmentCache(folder / "cache", "direct", 10**10))
    return job, render.render(job, decode), decoded


def measure_audio(work: Path, plan: Plan) -> dict:
    """M5b: an audio-video film (H.264 + AAC, with the crossfade): the sound's length against the picture's."""
    import av

    job, report, _ = direct_film(work / "audio", plan, plan.audio_shots, FORMAT, plan.crossfade, audio=True)
    with av.open(str(job.output)) as container:
        stream = container.streams.audio[0]
        samples = sum(frame.samples for frame in container.decode(stream))
        rate = stream.codec_context.sample_rate
    with av.open(str(job.output)) as container:
        video_frames = sum(1 for _ in container.decode(video=0))
    return {"shots": plan.audio_shots, "frames": report.frames, "video_frames": video_frames,
            "video_s": report.frames / RATE, "audio_samples": samples, "sample_rate": rate,
            "audio_s": samples / rate, "written_samples": report.audio_samples}


def measure_lossless(work: Path, plan: Plan) -> dict:
    """M5c: a lossless film (FFV1, cuts): every frame against the decoded shots after their trims."""
    import numpy as np

    from zc_pack.zc_film import pieces

    job, report, decoded = direct_film(work / "lossless", plan, plan.lossless_shots, "ffv1-mkv", 0, audio=False)
    film = pieces.read_frames(job.output)
    expected = np.concatenate([decoded[c.place][c.trim:] for c in report.cuts])
    seams = [i for c in report.cuts for i in (c.start, c.end - 1)]
    same = [bool(np.array_equal(film[i], expected[i])) for i in range(min(len(film), len(expected)))]
    return {"shots": plan.lossless_shots, "frames": len(film), "planned": report.frames,
            "equal_frames": sum(same), "seam_frames": len(seams),
            "equal_seam_frames": sum(same[i] for i in seams if i < len(same)),
            "max_abs": int(np.abs(film.astype(np.int16) - expected.astype(np.int16)).max())
            if film.shape == expected.shape else None}


# =========================================================================== rows


def machine_note() -> str:
    info = host()
    return f"CPU timings: {info['cpu']}, {info['cores']} cores, {info['memory']}"


def failed(result: dict | None) -> str | None:
    """Why a child's result holds no figures (None when it does)."""
    if result is None:
        return "not run"
    if "error" in result:
        return result["error"]
    return None


def peak_rows(plan: Plan, renders: dict, note: str) -> list[Row]:
    """M1a and M1b."""
    small, middle, large = plan.lengths
    shot = plan.shot_text()
    problems = [f"{n} shots: {failed(renders[n])}" for n in plan.lengths if failed(renders[n])]
    if problems:
        return [Row("M1a", f"peak RSS rendering a {small}/{middle}/{large}-shot film", "—", "; ".join(problems), FAIL),
                Row("M1b", "render time per shot", "—", "; ".join(problems), FAIL)]
    peaks = {n: renders[n]["peak"] for n in plan.lengths}
    ratio = peaks[large] / peaks[small]
    growth = {n: renders[n]["peak"] - renders[n]["rss_before"] for n in plan.lengths}
    per_shot = {n: renders[n]["render"]["seconds"] / n for n in plan.lengths}
    cpu_per_shot = {n: renders[n]["render"]["cpu_seconds"] / n for n in plan.lengths}
    linear = cpu_per_shot[large] / cpu_per_shot[middle]
    return [
        Row("M1a", f"peak RSS rendering a {small}-, {middle}- and {large}-shot film (ZeroCopyFilmRender, {FORMAT}; "
                   f"shot: {shot}; stand-in VAE; each film in a fresh child process)",
            f"{large}-shot peak ≤ {PEAK_GOAL} × {small}-shot peak",
            f"{ratio:.3f} × (" + ", ".join(f"{n} shots {fmt_bytes(peaks[n])}" for n in plan.lengths)
            + "; the render's own growth over the process before it: "
            + ", ".join(fmt_bytes(growth[n]) for n in plan.lengths) + f"); {note}",
            PASS if ratio <= PEAK_GOAL else FAIL),
        Row("M1b", f"render time per shot, {small}/{middle}/{large}-shot film (decode, encode, remux, clips, "
                   "timeline)",
            f"linear: the process's CPU time per shot at {large} within {LINEAR_BAND[0]}–{LINEAR_BAND[1]} × at "
            f"{middle} (wall time reported: other processes share the cores)",
            f"{linear:.2f} × (CPU " + ", ".join(f"{n} shots {fmt_time(cpu_per_shot[n])}/shot" for n in plan.lengths)
            + "; wall " + ", ".join(f"{fmt_time(per_shot[n])}" for n in plan.lengths)
            + f"/shot, {per_shot[large] / per_shot[middle]:.2f} ×; {large} shots in "
            f"{renders[large]['render']['seconds']:.0f} s); {note}",
            PASS if LINEAR_BAND[0] <= linear <= LINEAR_BAND[1] else FAIL),
    ]


def image_rows(plan: Plan, renders: dict, assembles: dict, before_36_reason: str, note: str) -> list[Row]:
    """M2a, M2b (and M2c in full mode)."""
    small, middle, large = plan.lengths
    today = assembles["today"]
    rows = []
    problems = [f"{n} shots: {failed(today[n]) or failed(renders[n])}" for n in (small, middle)
                if failed(today[n]) or failed(renders[n])]
    if problems:
        rows.append(Row("M2a", "ZeroCopyFilmAssemble (IMAGE route) peak RSS vs the render's", "—", "; ".join(problems),
                        FAIL))
    else:
        ratio = today[middle]["peak"] / renders[middle]["peak"]
        rows.append(Row(
            "M2a", f"ZeroCopyFilmAssemble (IMAGE route: the film held once, + one shot) peak RSS beside the "
                   f"render's, {small} and {middle} shots (same shots, stand-in VAE and store; child processes)",
            f"render's peak below the IMAGE route's at {middle} shots",
            f"{ratio:.2f} × the render's peak at {middle} shots (IMAGE {fmt_bytes(today[middle]['peak'])} vs render "
            f"{fmt_bytes(renders[middle]['peak'])}; its batch {fmt_bytes(today[middle]['image_bytes'])}); at {small}: "
            f"{today[small]['peak'] / renders[small]['peak']:.2f} × ({fmt_bytes(today[small]['peak'])} vs "
            f"{fmt_bytes(renders[small]['peak'])}); {note}",
            PASS if ratio > 1 else FAIL))
    need = plan.image_bytes(large)
    figure = f"ZeroCopyFilmAssemble peak RSS at {large} shots ({plan.film_frames(large)} frames as one IMAGE batch)"
    if today[large].get("refused"):
        render_peak = "" if failed(renders[large]) else (
            f"; its frames alone are {need / renders[large]['peak']:.1f} × the render's whole peak "
            f"({fmt_bytes(renders[large]['peak'])}), computed, not measured")
        rows.append(Row("M2b", figure, f"render's peak below the IMAGE route's at {large} shots",
                        today[large]["refused"] + render_peak, NOT_MEASURED))
    elif failed(today[large]) or failed(renders[large]):
        rows.append(Row("M2b", figure, "—", failed(today[large]) or failed(renders[large]), FAIL))
    else:
        ratio = today[large]["peak"] / renders[large]["peak"]
        rows.append(Row("M2b", figure, f"render's peak below the IMAGE route's at {large} shots",
                        f"{ratio:.2f} × the render's peak (IMAGE {fmt_bytes(today[large]['peak'])} vs render "
                        f"{fmt_bytes(renders[large]['peak'])}; its batch {fmt_bytes(today[large]['image_bytes'])}); "
                        f"{note}", PASS if ratio > 1 else FAIL))
    rows.append(before_36_row(plan, assembles["before_36"], today, before_36_reason, note))
    return rows


def before_36_row(plan: Plan, before: dict, today: dict, reason: str, note: str) -> Row:
    """M2c: the Assemble node before the one-shot render (the film twice), beside today's."""
    small, middle = plan.lengths[:2]
    figure = (f"(context) ZeroCopyFilmAssemble before the one-shot render (git {BEFORE_36}: every clip kept, then joined) "
              f"peak RSS, {small} and {middle} shots")
    if reason or not plan.before_36:
        return Row("M2c", figure, "(info)", reason or "not measured in this mode", NOT_MEASURED)
    parts = []
    for shots in (small, middle):
        if before[shots].get("refused"):
            parts.append(f"{shots} shots: {before[shots]['refused']}")
        elif failed(before[shots]):
            parts.append(f"{shots} shots: {failed(before[shots])}")
        else:
            now = "" if failed(today[shots]) else f" (today's {fmt_bytes(today[shots]['peak'])})"
            parts.append(f"{shots} shots {fmt_bytes(before[shots]['peak'])}{now}")
    return Row("M2c", figure, "(info)", "; ".join(parts) + f"; {note}", INFO)


def retake_rows(plan: Plan, renders: dict, resume: dict, note: str) -> list[Row]:
    """M3a (cut, the middle film's child) and M3b (crossfade, the resume child)."""
    middle = plan.lengths[1]
    where = f"shot {middle} of {middle}: a new take in the middle would end the line there"
    rows = []
    first = renders[middle]
    if failed(first):
        rows.append(Row("M3a", "re-render after another take of the last shot, cut", "—", failed(first), FAIL))
    else:
        retake, full = first["retake"], first["render"]
        rows.append(Row(
            "M3a", f"re-render after another take of one shot was stored and chosen ({where}), cut",
            "1 shot decoded", f"{retake['decodes']} decoded; {retake['seconds']:.1f} s = "
            f"{retake['seconds'] / full['seconds']:.3f} × the full render ({full['seconds']:.1f} s); {note}",
            PASS if retake["decodes"] == 1 else FAIL))
    resumed, killed = resume["resumed"], resume["killed"]
    if failed(resumed) or not killed.get("progress"):
        why = failed(resumed) or "the killed render left no progress record"
        rows.append(Row("M3b", "re-render after another take of the last shot, crossfade", "—", why, FAIL))
    else:
        full = killed["progress"]["seconds"] + resumed["render"]["seconds"]
        retake = resumed["retake"]
        rows.append(Row(
            "M3b", f"the same with a crossfade of {plan.crossfade} frames ({where})", "≤ 3 shots decoded",
            f"{retake['decodes']} decoded; {retake['seconds']:.1f} s = {retake['seconds'] / full:.3f} × the full "
            f"render with the crossfade ({full:.1f} s: M4's render until its kill + the resumed one); {note}",
            PASS if retake["decodes"] <= 3 else FAIL))
    return rows


def resume_row(plan: Plan, resume: dict, note: str) -> Row:
    """M4: the kill and what the next render decodes."""
    middle, at = plan.lengths[1], plan.kill_at
    left = middle - at + 1
    figure = (f"resume after a SIGKILL when shot {at} of {middle} is asked of the decoder (crossfade "
              f"{plan.crossfade}; a child process kills itself)")
    goal = f"exactly the {left} shots left decoded ({at}–{middle}); no file under the film's name after the kill"
    killed, resumed = resume["killed"], resume["resumed"]
    if killed.get("returncode") != -signal.SIGKILL:
        return Row("M4", figure, goal, f"the render was not killed: {failed(killed) or killed.get('returncode')}",
                   FAIL)
    if failed(resumed):
        return Row("M4", figure, goal, failed(resumed), FAIL)
    decodes = resumed["render"]["decodes"]
    ok = decodes == left and not killed["file_after_kill"]
    return Row("M4", figure, goal,
               f"{decodes} decoded by the next render ({resumed['render']['seconds']:.1f} s); after the kill: "
               f"{'a file' if killed['file_after_kill'] else 'no file'} under the film's name, "
               f"{len(killed['partial_files'])} partial file(s) beside it; shots decoded and cached before the "
               f"kill: {killed['progress']['decodes'] if killed.get('progress') else '?'}; {note}",
               PASS if ok else FAIL)


def plays_rows(plan: Plan, renders: dict, audio: dict, lossless: dict, note: str) -> list[Row]:
    """M5a, M5b, M5c."""
    middle = plan.lengths[1]
    rows = []
    result = renders[middle]
    figure = f"the {middle}-shot {FORMAT} film plays (PyAV reads it back)"
    goal = (f"frames = the plan's, {RATE:g} fps, duration within one frame; seam frames within the codec's loss "
            f"(mean abs error ≤ {SEAM_LOSS_GOAL:g} of 255)")
    if failed(result) or "plays" not in result:
        rows.append(Row("M5a", figure, goal, failed(result) or "not checked", FAIL))
    else:
        p = result["plays"]
        duration_ok = p["duration_s"] is not None and abs(p["duration_s"] - p["planned"] / RATE) <= 1 / RATE
        ok = (p["frames"] == p["planned"] and p["rate"] == RATE and duration_ok and not p["missing_seam_frames"]
              and p["seam_error_max"] is not None and p["seam_error_max"] <= SEAM_LOSS_GOAL)
        rows.append(Row("M5a", figure, goal,
                        f"{p['frames']} frames (plan {p['planned']}), {p['rate']:g} fps, {p['duration_s']:.3f} s "
                        f"(plan {p['planned'] / RATE:.3f} s); {p['seam_frames']} seam frames: max mean abs error "
                        f"{p['seam_error_max']:.2f}, mean {p['seam_error_mean']:.2f} of 255 (H.264 CRF 19); "
                        f"{fmt_bytes(p['bytes'])}; {note}", PASS if ok else FAIL))
    gap = audio["audio_s"] - audio["video_s"]
    rows.append(Row("M5b", f"audio-video film, {audio['shots']} shots ({FORMAT} + AAC, {SAMPLE_RATE} Hz, crossfade "
                           f"{plan.crossfade}; zc_film.render with a stand-in audio decoder)",
                    "sound's duration within one frame of the picture's",
                    f"{gap * 1000:+.1f} ms (sound {audio['audio_s']:.4f} s, picture {audio['video_s']:.4f} s = "
                    f"{audio['frames']} frames; one frame {1000 / RATE:.1f} ms); {note}",
                    PASS if abs(gap) <= 1 / RATE and audio["video_frames"] == audio["frames"] else FAIL))
    exact = lossless["equal_frames"] == lossless["frames"] == lossless["planned"]
    rows.append(Row("M5c", f"lossless film (ffv1-mkv), {lossless['shots']} shots, cuts: every frame against the "
                           "decoded shots' after their trims",
                    "every frame equal (seams included)",
                    f"{lossless['equal_frames']} of {lossless['frames']} frames equal (plan {lossless['planned']}); "
                    f"seam frames {lossless['equal_seam_frames']} of {lossless['seam_frames']}; max abs error "
                    f"{lossless['max_abs']}; {note}", PASS if exact else FAIL))
    return rows


# =========================================================================== details


def details_for(plan: Plan, renders: dict, assembles: dict, info: dict) -> str:
    rows = []
    for shots in plan.lengths:
        r = renders[shots]
        if failed(r):
            rows.append([shots, plan.film_frames(shots), failed(r), "", "", "", "", ""])
            continue
        rows.append([shots, plan.film_frames(shots), fmt_bytes(r["peak"]), fmt_bytes(r["rss_before"]),
                     fmt_bytes(r["peak"] - r["rss_before"]), f"{r['render']['seconds']:.1f} s",
                     fmt_time(r["render"]["seconds"] / shots), fmt_time(r["render"]["cpu_seconds"] / shots)])
    image = []
    for label, runs in (("today", assembles["today"]), (f"before the one-shot render ({BEFORE_36})", assembles["before_36"])):
        for shots, r in runs.items():
            peak = r.get("refused") or failed(r) or fmt_bytes(r["peak"])
            batch = "" if r.get("refused") or failed(r) else fmt_bytes(r["image_bytes"])
            seconds = "" if r.get("refused") or failed(r) else f"{r['seconds']:.1f} s"
            image.append([label, shots, fmt_bytes(plan.image_bytes(shots)), batch, peak, seconds])
    return "\n".join([
        f"Shot: {plan.shot_text()} (stand-in VAE), trim 1 frame at every seam; {FORMAT} at {RATE:g} fps, "
        f"quality (CRF) 19; clips and the OTIO timeline written (the node's defaults). "
        f"CPU load at the section's start / end: {info['load_start']} / {info['load_end']}.",
        "",
        md_table(["shots", "film frames", "peak RSS (VmHWM)", "RSS before the render", "render's growth",
                  "render time (wall)", "wall per shot", "CPU per shot"], rows),
        "",
        md_table(["IMAGE route", "shots", "film as IMAGE (computed)", "batch returned", "peak RSS", "time"], image),
        "",
        "What was measured: each film in a child process of its own (a fresh interpreter: "
        "`bench/sections/film.py --child JOB`), which opens the store from its spill folder (depth 4, as "
        "the nodes' store: older shots are read back from their files), mounts the pack with a stand-in "
        "comfy_api and calls the node's `execute`; its peak is VmHWM from /proc/self/status read right "
        "after the call, so it includes the interpreter, torch and PyAV (the RSS before the render says how "
        "much). Render time is the `execute` call's wall time (the film's digests verified, every shot "
        "decoded, encoded and cached, the film remuxed, the per-shot clips and the timeline written) and "
        "the process's CPU time over the call (getrusage: every thread, the encoder's included); M1b judges "
        "linearity on the CPU time, which other processes on the shared cores disturb far less than the "
        "wall time (both are in the row). The "
        "IMAGE route at a length runs only when its film fits in "
        f"{MEMORY_SHARE:.0%} of the RAM (and of what is available at the time); the film as IMAGE is "
        "frames × H × W × 3 × 4 bytes. M3: another take of the film's last shot (its parent is shot "
        f"{plan.lengths[1] - 1}'s generation) stored and chosen with film_view.choose, then the render "
        "again; the shots decoded are the stand-in VAE's calls. M4: a child renders with a crossfade and "
        f"SIGKILLs itself when the decoder is asked for shot {plan.kill_at}; the next child renders the "
        "same film with the same render cache. M5b/M5c call zc_film.render directly with the stand-in "
        "frames (and a tone per shot for M5b). These are CPU timings of this machine, shared with other "
        "work: the ratios carry over, the absolute times do not.",
    ])


# =========================================================================== the section


def run(ctx: Context) -> Section:
    started = time.perf_counter()
    plan = plan_for(ctx)
    work = ctx.tmp_dir / "film"
    work.mkdir(parents=True, exist_ok=True)
    info = {"load_start": cpu_load()}
    ctx.log(f"film: building films of {', '.join(map(str, plan.lengths))} shots ({plan.shot_text()})")
    build_films(work / "spill", plan)
    children = Children(ctx, plan, work)
    before_36, before_36_reason = source_before_36(work) if plan.before_36 else (None, "")
    renders = measure_renders(children, plan)
    assembles = measure_assembles(children, plan, before_36)
    resume = measure_resume(children, plan, work)
    ctx.log("film: the audio-video and the lossless film (zc_film.render directly)")
    audio, lossless = measure_audio(work, plan), measure_lossless(work, plan)
    info["load_end"] = cpu_load()
    note = machine_note()
    section = Section(NAME, TITLE)
    section.rows = [*peak_rows(plan, renders, note), *image_rows(plan, renders, assembles, before_36_reason, note),
                    *retake_rows(plan, renders, resume, note), resume_row(plan, resume, note),
                    *plays_rows(plan, renders, audio, lossless, note)]
    section.details = details_for(plan, renders, assembles, info)
    section.data = {"plan": asdict(plan), "machine": host(), **info, "renders": renders, "assembles": assembles,
                    "resume": resume, "audio": audio, "lossless": lossless}
    section.seconds = time.perf_counter() - started
    return section


if __name__ == "__main__":
    sys.exit(child_main(sys.argv[1:]))
