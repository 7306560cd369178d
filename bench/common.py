"""Shared pieces of the benchmark program (bench/run.py): the run context, the
result of a section, and the few measuring helpers every section uses.

A section is a module in bench/sections/ with ``run(ctx: Context) -> Section``.
It measures, writes its PNG plots into ``ctx.out_dir``, and returns rows for the
summary table plus a Markdown body with the details. A row's result is one of
PASS, FAIL, INFO or NOT MEASURED (with the reason in ``measured``); nothing is
ever estimated in place of a measurement.
"""

from __future__ import annotations

import gc
import os
import platform
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from zc_pack.zc_residency.units import fmt_bytes  # noqa: F401  (one formatter for the pack and the benchmark)

if TYPE_CHECKING:
    import torch

REPO = Path(__file__).resolve().parent.parent

PASS, FAIL, INFO, NOT_MEASURED = "PASS", "FAIL", "INFO", "NOT MEASURED"
RESULTS = (PASS, FAIL, INFO, NOT_MEASURED)


@dataclass
class Context:
    """What a section gets from the command line and the run."""
    mode: str                      # "full" (< 10 min on CPU), "quick" (< 2 min) or "smoke" (seconds:
                                   # the test suite checks the program works, no figure counts)
    out_dir: Path                  # results folder: PNGs go here (the runner writes JSON/Markdown)
    tmp_dir: Path                  # scratch space on the results' file system, removed at exit
    comfyui_path: Path | None      # COMFYUI_PATH, or None
    vae_path: Path | None = None   # --vae: a real VAE's weights for the drift section
    comfy: object | None = None    # the in-process ComfyUI (tools/comfy_inprocess.py), once started
    cuda: bool = False             # torch.cuda.is_available()
    gpu_json: Path | None = None   # --gpu-json: what bench/gpu/run_all.py wrote (the gpu section's input)

    @property
    def quick(self) -> bool:
        return self.mode != "full"

    @property
    def smoke(self) -> bool:
        return self.mode == "smoke"

    def pick(self, full, quick, smoke):
        """The value for this run's mode."""
        return {"full": full, "quick": quick, "smoke": smoke}[self.mode]

    def log(self, msg: str) -> None:
        print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


@dataclass
class Row:
    """One line of the summary table."""
    id: str            # e.g. "O1a"
    figure: str        # what is compared
    goal: str          # the goal, or "(info)"
    measured: str      # the measured value(s), or why not measured
    result: str        # PASS / FAIL / INFO / NOT MEASURED

    def __post_init__(self):
        if self.result not in RESULTS:
            raise ValueError(f"row {self.id}: result {self.result!r} is not one of {RESULTS}")


@dataclass
class Section:
    name: str                     # short id: overhead, drift, residency, scale
    title: str                    # heading in the Markdown report
    rows: list[Row] = field(default_factory=list)
    details: str = ""             # Markdown body (tables, method notes)
    data: dict = field(default_factory=dict)   # JSON-able raw numbers
    plots: list[str] = field(default_factory=list)  # PNG file names inside ctx.out_dir
    seconds: float = 0.0

    def to_json(self) -> dict:
        return {"name": self.name, "title": self.title, "rows": [r.__dict__ for r in self.rows],
                "details": self.details, "data": self.data, "plots": self.plots,
                "seconds": round(self.seconds, 2)}

    @classmethod
    def from_json(cls, doc: dict) -> "Section":
        """A section as an earlier run wrote it into bench.json (bench/run.py --update keeps it)."""
        return cls(doc["name"], doc["title"], [Row(**r) for r in doc["rows"]], doc.get("details", ""),
                   doc.get("data", {}), doc.get("plots", []), doc.get("seconds", 0.0))


def median(xs) -> float:
    return statistics.median(xs)


def meminfo(key: str) -> int:
    """A /proc/meminfo figure in bytes (``key`` such as "MemAvailable:"); 0 when absent."""
    with open("/proc/meminfo") as fh:
        for line in fh:
            if line.startswith(key):
                return int(line.split()[1]) * 1024
    return 0


def host() -> dict:
    """The machine the figures come from: CPU model, cores, memory, OS, Python."""
    cpu = "unknown"
    with open("/proc/cpuinfo") as fh:
        for line in fh:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return {"cpu": cpu, "cores": os.cpu_count(), "memory": f"{meminfo('MemTotal:') / (1 << 30):.1f} GiB",
            "os": platform.platform(), "python": platform.python_version()}


def read_text(path: str) -> str:
    """A small system file's text (/proc, /sys), stripped; "" when it cannot be read."""
    try:
        with open(path) as fh:
            return fh.read().strip()
    except OSError:
        return ""


def cpu_load() -> str:
    """How busy the machine is right now: load average (1, 5, 15 min) and CPU pressure (PSI: the share
    of time some runnable task waited for a CPU, over 10, 60 and 300 s). Other processes compete
    with the benchmark; this says how much."""
    load = " ".join(read_text("/proc/loadavg").split()[:3]) or "n/a"
    pressure = (read_text("/proc/pressure/cpu").splitlines() or ["n/a"])[0]
    return f"load {load}; CPU pressure {pressure.removeprefix('some ').rsplit(' total=', 1)[0]}"


def git_commit() -> str:
    """This checkout's commit, marked when the code a figure depends on has uncommitted changes."""
    try:
        out = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--", "engine", "zc_engine",
                                "zc_nodes", "zc_residency", "zc_continuity", "bench", "tools",
                                ":(exclude)bench/results"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return (out or "unknown") + (" (with uncommitted changes)" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def rss_bytes() -> int:
    """This process's resident memory (VmRSS, from /proc/self/statm)."""
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def timed(fn: Callable[[], object]) -> tuple[float, object]:
    """(seconds, return value) of one call, with the garbage collector held off."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        t0 = time.perf_counter()
        value = fn()
        return time.perf_counter() - t0, value
    finally:
        if enabled:
            gc.enable()


def rotation(i: int, items: list) -> list:
    """The order of repetition ``i``: ``items`` rotated by ``i`` places, so over a full turn each
    comes first, last and in every place between (with two items: alternating)."""
    k = i % len(items)
    return items[k:] + items[:k]


class Probe:
    """Counters read just before and just after each call that ``interleaved`` times, outside its
    timed window (e.g. thread CPU time and page faults, which explain a wall time).
    ``deltas[side]`` lists, per call, the differences of what ``read()`` returns (a tuple)."""

    def __init__(self, read: Callable[[], tuple]):
        self.read = read
        self.deltas: dict[str, list[tuple]] = {}

    def note(self, side: str, before: tuple) -> None:
        after = self.read()
        self.deltas.setdefault(side, []).append(tuple(a - b for a, b in zip(after, before)))

    def clear(self) -> None:
        self.deltas.clear()


def interleaved(sides: dict[str, Callable[[], object]], reps: int,
                after: Callable[[str, object], None] | None = None, *,
                before: Callable[[str], None] | None = None, idle: float = 0.0,
                probe: Probe | None = None) -> dict[str, list[float]]:
    """Time each side ``reps`` times, in an order that rotates every repetition (``rotation``) so
    drift and noise hit all sides alike. Untimed around each call: ``before(name)`` (set-up, e.g.
    drop the page cache) and ``after(name, value)`` (cleanup, or collect a figure the call
    returned). ``idle`` seconds of sleep come before every timed call, untimed: shots are minutes
    apart in real use, so a real shot transition finds torch's intra-op worker threads asleep;
    back-to-back calls find them awake and would time a cost no user sees (0.3 s is enough for
    them to sleep). Returns the list of seconds per side."""
    names = list(sides)
    out: dict[str, list[float]] = {n: [] for n in names}
    for i in range(reps):
        for name in rotation(i, names):
            if before is not None:
                before(name)
            if idle > 0:
                time.sleep(idle)
            start = probe.read() if probe is not None else None
            seconds, value = timed(sides[name])
            if probe is not None:
                probe.note(name, start)
            out[name].append(seconds)
            if after is not None:
                after(name, value)
            del value  # freed before the next side allocates: every side sees the same allocator state
    return out


def pairwise_ratio(num: list[float], den: list[float]) -> float:
    """Median of the per-repetition ratios num_i / den_i (pairs measured in the same repetition)."""
    return median([a / b for a, b in zip(num, den)])


def fmt_time(sec: float) -> str:
    if sec >= 1:
        return f"{sec:.2f} s"
    if sec >= 1e-3:
        return f"{sec * 1e3:.2f} ms"
    return f"{sec * 1e6:.1f} µs"


def md_table(header: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def pyplot():
    """matplotlib's pyplot with the non-interactive Agg backend."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def png_roundtrip(frames: torch.Tensor, folder: Path, stem: str = "frame") -> torch.Tensor:
    """Write frames ``[T, H, W, 3]`` (floats in [0, 1]) as one 8-bit PNG each, read them back.

    Quantizes exactly as ComfyUI's SaveImage node does (``255 * x``, clipped to [0, 255],
    truncated to uint8; PNG compress_level 4, SaveImage's default) and loads as LoadImage does
    (``uint8 / 255``). Returns float32 ``[T, H, W, 3]``; the files are deleted afterwards.
    """
    import numpy as np
    import torch
    from PIL import Image

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    pixels = 255.0 * frames.detach().to("cpu", torch.float32).numpy()
    loaded = []
    for index, frame in enumerate(pixels):
        path = folder / f"{stem}_{index:05d}.png"
        # NaN (a random-weight VAE can emit it) is written as 0, as SaveImage's cast would, but
        # without numpy's invalid-cast warning; finite values are untouched
        frame = np.nan_to_num(frame, nan=0.0, posinf=255.0, neginf=0.0)
        Image.fromarray(np.clip(frame, 0, 255).astype(np.uint8)).save(path, compress_level=4)
        with Image.open(path) as image:
            loaded.append(np.array(image.convert("RGB")).astype(np.float32) / 255.0)
        path.unlink()
    return torch.from_numpy(np.stack(loaded))
