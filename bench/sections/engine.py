"""Section 0: the C engine's goals, each compared side by side with the operation it must match.

  E1a, E1b  LatentStore.put of a host tensor ≤ 1.3 × torch.clone() of it (19.4 MB and 1 MiB; the
            put copies AND digests, both are part of its cost)
  E2        LatentStore.get (zero-copy torch views) ≤ 50 µs at every size, flat: the largest
            per-size median ≤ 1.5 × the smallest (4 KiB … 256 MiB)
  E3        the digest (zc_xxh3_64) ≥ 0.5 × memcpy bandwidth, one core, out of cache
  E4a, E4b  spill write ≥ 0.7 × `dd conv=fsync`; restore with digest verification ≥ 0.7 × `dd`
            read, page cache dropped before each side when the kernel lets us (E4c: warm, info)
  E5        10,000 put/get/release cycles at depth 4: RSS grows by ≤ one slot
  E6        (info) what first-touch page faults of fresh memory cost on this machine

Fairness: every comparison runs interleaved (bench.common.interleaved: the order rotates each
repetition), with the garbage collector off inside the timed calls, torch on one thread, the
highest CFS weight the process may take (niceness -20 when permitted; dd inherits it), and every
figure but E4 pinned to the idlest allowed CPU (E4's spill writer is a thread of its own). Those
settings are process-wide and one-way (niceness cannot be raised back without privilege), and
E5's resident-memory figure wants a process without ComfyUI in it, so ``run()`` starts this same
module as a child (``--child``): the child measures and writes the raw figures as JSON, the parent
turns them into rows and details. No C helper is compiled: memcpy is libc's (ctypes.memmove) and
the digest is libzc's, both called once per multi-megabyte buffer, so the ctypes call overhead
(about a microsecond) is negligible.
"""

from __future__ import annotations

import argparse
import ctypes
import datetime as _dt
import gc
import glob
import json
import os
import platform
import re
import resource
import shutil
import subprocess
import sys
import time
import traceback
from pathlib import Path

if __package__ in (None, ""):  # run as a file: python bench/sections/engine.py --child ...
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.common import (FAIL, INFO, PASS, Context, Probe, Row, Section, cpu_load, fmt_bytes,  # noqa: E402
                          fmt_time, interleaved, md_table, median, meminfo, read_text, rotation, rss_bytes)

NAME, TITLE = "engine", "0. C engine"
MiB = 1 << 20
LATENT_SHAPE = (1, 16, 21, 90, 160)   # Wan 2.1 720p, 81 frames: 19,353,600 bytes as float32 ("19.4 MB")
IMAGE_SHAPE = (1, 16, 128, 128)       # FLUX 1024²: 1,048,576 bytes as float32 (1 MiB)
GET_SIZES = (("4 KiB", (1024,)), ("1 MiB", IMAGE_SHAPE), ("19.4 MB", LATENT_SHAPE), ("256 MiB", (64 * MiB,)))
# The store's digest function in libzc. If the store moves to another digest (XXH3), E3 must time that one.
DIGEST = "zc_xxh3_64"  # the engine's digest (XXH64 is kept only for files of engine 0.2)
CHILD_TIMEOUT_S = {"full": 900, "quick": 300, "smoke": 180}
PUT_GOAL, GET_GOAL_S, FLAT_GOAL, DIGEST_GOAL, DISK_GOAL = 1.3, 50e-6, 1.5, 0.5, 0.7


# =========================================================================== the parent (bench/run.py)


def run(ctx: Context) -> Section:
    """Start the child, read its figures, build the rows."""
    started = time.perf_counter()
    section = Section(NAME, TITLE)
    result = ctx.tmp_dir / "engine_figures.json"
    work = ctx.tmp_dir / "engine"
    work.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, str(Path(__file__).resolve()), "--child", "--mode", ctx.mode,
               "--json", str(result), "--tmp", str(work)]
    ctx.log("engine: measuring in a child process (one torch thread, pinned, niceness -20 when permitted)")
    try:
        proc = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              timeout=CHILD_TIMEOUT_S[ctx.mode])
        output, code = proc.stdout, proc.returncode
    except subprocess.TimeoutExpired as exc:
        output, code = exc.stdout or "", f"killed after {CHILD_TIMEOUT_S[ctx.mode]} s"
        if isinstance(output, bytes):
            output = output.decode(errors="replace")
    if not result.is_file():
        tail = " ".join(output.strip().splitlines()[-3:])[-400:]
        section.rows = [Row("E", "C engine goals", "—", f"the measuring process ended ({code}) without "
                            f"figures: {tail}", FAIL)]
        section.seconds = time.perf_counter() - started
        return section
    doc = json.loads(result.read_text())
    section.rows = rows_for(doc["figures"], doc["config"])
    section.details = details_for(doc)
    section.data = doc
    section.seconds = time.perf_counter() - started
    return section


# --------------------------------------------------------------------------- rows


def fmt_bw(bytes_per_s: float) -> str:
    return f"{bytes_per_s / 1e9:.2f} GB/s"


def verdict(ok: bool) -> str:
    return PASS if ok else FAIL


def judge_put(fig: dict, cfg: dict):
    s, ratio = fig["seconds"], fig["ratio_per_rep"]["median"]
    text = (f"{ratio:.2f} × (put {fmt_time(s['put']['median'])}, clone {fmt_time(s['clone']['median'])}; "
            f"by thread CPU time {fig['cpu_time_ratio_per_rep']['median']:.2f} ×)")
    faults = fig["page_faults_per_op_median"]
    if faults["put"] or faults["clone"]:
        text += (f"; page faults per call: put {faults['put']:.0f}, clone {faults['clone']:.0f} "
                 f"of {fig['bytes'] // 4096} pages")
    return text, verdict(ratio <= PUT_GOAL)


def judge_get(fig: dict, cfg: dict):
    medians = {label: v["get_seconds"]["median"] for label, v in fig["sizes"].items()}
    flat = max(medians.values()) / min(medians.values())
    text = ", ".join(f"{label} {fmt_time(m)}" for label, m in medians.items()) + f"; largest/smallest {flat:.2f}×"
    return text, verdict(all(m <= GET_GOAL_S for m in medians.values()) and flat <= FLAT_GOAL)


def judge_digest(fig: dict, cfg: dict):
    bw, ratio = fig["bandwidth_Bps"], fig["ratio_per_rep"]["median"]
    return (f"{ratio:.2f} × (digest {fmt_bw(bw['digest']['median'])}, memcpy {fmt_bw(bw['memcpy']['median'])})",
            verdict(ratio >= DIGEST_GOAL))


def judge_spill(fig: dict, cfg: dict):
    ratio = fig["ratio_per_rep"]["median"]
    return (f"{ratio:.2f} × (spill {fmt_bw(fig['spill_write_Bps_median'])}, dd {fmt_bw(fig['dd_write_Bps_median'])})",
            verdict(ratio >= DISK_GOAL))


def restore_text(r: dict) -> str:
    return (f"{r['ratio_per_rep']['median']:.2f} × (restore {fmt_bw(r['restore_Bps_median'])}, dd "
            f"{fmt_bw(r['dd_read_Bps_median'])})")


def judge_restore(fig: dict, cfg: dict):
    """Cold when the page cache could be dropped (the goal's case), else warm on both sides, said so."""
    r = fig["cold" if fig["drop_caches"] else "warm"]
    note = "" if fig["drop_caches"] else f"; page cache not dropped ({fig['why_not_dropped']}): both sides warm"
    return restore_text(r) + note, verdict(r["ratio_per_rep"]["median"] >= DISK_GOAL)


def judge_restore_warm(fig: dict, cfg: dict):
    """The warm case beside a cold one, for information; None when the warm case is E4b itself."""
    return (restore_text(fig["warm"]), INFO) if fig["drop_caches"] and "warm" in fig else None


def judge_rss(fig: dict, cfg: dict):
    growth = fig["rss_after_cycles"] - fig["rss_after_warmup"]
    ok = growth <= fig["slot_bytes"] and fig["stats_at_end"]["slots"] == 4 and fig["stats_at_end"]["retained_bytes"] == 0
    return (f"{fmt_bytes(growth)} ({fmt_bytes(fig['rss_after_warmup'])} → {fmt_bytes(fig['rss_after_cycles'])}; "
            f"{fmt_time(fig['seconds_per_cycle'])}/cycle, {fig['page_faults_per_cycle']:.0f} page faults/cycle)",
            verdict(ok))


def judge_touch(fig: dict, cfg: dict):
    s = fig["seconds"]
    return (f"{fig['fault_ns_per_byte']:.3f} ns/B = {fig['fault_ns_per_4k_page'] / 1e3:.2f} µs per 4 KiB page (fill "
            f"of a fresh buffer {fmt_time(s['fresh']['median'])} vs the same buffer again "
            f"{fmt_time(s['prefaulted']['median'])})", INFO)


def shape_label(shape: tuple) -> str:
    nbytes = 4
    for d in shape:
        nbytes *= d
    return f"[{','.join(map(str, shape))}] f32, {size_label(nbytes)}"


# row id: (the figure it is judged from, title(config, figure), goal, judge(figure, config) -> (measured,
# result), or None for no row)
PUT_TITLE = "put vs torch.clone(), {}"
RESTORE_TITLE = "restore (verified) vs dd read, {} MiB ({})"
ROW_SPECS = {
    "E1a": ("E1a", lambda cfg, fig: PUT_TITLE.format(shape_label(LATENT_SHAPE)),
            f"put ≤ {PUT_GOAL:g} × clone", judge_put),
    "E1b": ("E1b", lambda cfg, fig: PUT_TITLE.format(shape_label(IMAGE_SHAPE)),
            f"put ≤ {PUT_GOAL:g} × clone", judge_put),
    "E2": ("E2", lambda cfg, fig: f"get latency (zero-copy views), {GET_SIZES[0][0]} … {GET_SIZES[-1][0]}",
           f"≤ {GET_GOAL_S * 1e6:.0f} µs at every size; largest/smallest median ≤ {FLAT_GOAL:g}", judge_get),
    "E3": ("E3", lambda cfg, fig: f"digest ({DIGEST}) vs memcpy, one core, {fmt_bytes(cfg['bw_bytes'])} buffer",
           f"digest ≥ {DIGEST_GOAL:g} × memcpy", judge_digest),
    "E4a": ("E4a", lambda cfg, fig: f"spill write vs dd conv=fsync, {cfg['spill_mib']} MiB",
            f"spill ≥ {DISK_GOAL:g} × dd write", judge_spill),
    "E4b": ("E4b", lambda cfg, fig: RESTORE_TITLE.format(cfg["spill_mib"], "cold" if fig.get("drop_caches")
                                                         else "warm"),
            f"restore ≥ {DISK_GOAL:g} × dd read", judge_restore),
    "E4c": ("E4b", lambda cfg, fig: RESTORE_TITLE.format(cfg["spill_mib"], "warm page cache, info"),
            f"(info: {DISK_GOAL:g} × dd read)", judge_restore_warm),
    "E5": ("E5", lambda cfg, fig: f"RSS over {cfg['rss_cycles']:,} put/get/release cycles (depth 4, 1 MiB bundle)",
           "growth ≤ one slot (1 MiB)", judge_rss),
    "E6": ("E6", lambda cfg, fig: f"first-touch cost of fresh memory ({fmt_bytes(cfg['touch_bytes'])}, page faults)",
           "(info)", judge_touch),
}


def rows_for(figures: dict, cfg: dict) -> list[Row]:
    """The summary rows, from the child's raw figures (one dict per figure id)."""
    rows = []
    for rid, (source, title, goal, judge) in ROW_SPECS.items():
        fig = figures.get(source)
        if fig is None:
            continue
        if "error" in fig:
            if rid == source:  # one FAIL row per figure that raised
                rows.append(Row(rid, title(cfg, fig), goal, f"the measurement raised {fig['error']}", FAIL))
            continue
        judged = judge(fig, cfg)
        if judged is not None:
            rows.append(Row(rid, title(cfg, fig), goal, *judged))
    return rows


def size_label(nbytes: int) -> str:
    if nbytes == 19_353_600:
        return "19.4 MB"
    if nbytes >= MiB:
        return f"{nbytes // MiB} MiB"
    return f"{nbytes // 1024} KiB"


# --------------------------------------------------------------------------- details


TIMED = {
    "E1": ("LatentStore.put(tag, {'latent': x}) (Python call: DLPack borrow, zc_bundle_add_copy = allocate + "
           "copy + digest, zc_store_put) vs x.clone(), and the bare C call zc_bundle_add_copy, rotating in one "
           "loop; each frees its buffer before the next allocates the same size, so all see the same allocator "
           "state (slot dropped, clone freed, bundle freed: untimed). Warm-up of at least 30 rounds and 0.5 s "
           "first (glibc settles its mmap threshold and heap; on a VM a fresh buffer copies slower for the "
           "first ~10 rounds). Value = median over repetitions of put_i / clone_i; thread CPU time and page "
           "faults are read just outside each timed call. memcpy and digest allocate nothing and run in a "
           "loop of their own"),
    "E2": ("LatentStore.get(tag) → StoredBundle of zero-copy torch views (zc_store_get, zc_view_export_dlpack, "
           "torch.from_dlpack, view release); each call timed alone, the value per repetition is the median "
           "of its calls, the sizes rotate between repetitions; dropping the returned bundle (release) is "
           "timed separately"),
    "E3": (f"{DIGEST}(buf, n, 0) via ctypes vs libc memcpy (ctypes.memmove) of the same pre-faulted buffer into "
           "another pre-faulted buffer, interleaved; bandwidth = n / time (bytes copied, not read + written); "
           "value = median of per-repetition digest_bw / memcpy_bw"),
    "E4a": ("spill = wall time from the return of put(spill=True) (the writer thread is signalled at the end "
            "of put, after the copy + digest) to the return of flush(): safetensors header, temp file, "
            "fallocate, write, sync_file_range, fsync, rename, directory fsync; bandwidth = file bytes / that "
            "time. dd = the time dd itself reports for `dd if=/dev/zero of=FILE bs=1M count=N conv=fsync`. "
            "Interleaved with a put without spill, sync before each; files deleted after each repetition"),
    "E4b": ("restore = LatentStore(spill_dir=same).get(tag) on a fresh store: open + header/JSON validation, "
            "allocate, pread 1 MiB chunks, digest of each chunk, digest compare, slot adopt, torch views; dd = "
            "the time dd reports for `dd if=FILE of=/dev/null bs=1M` on the same spill file; interleaved; "
            "cold: page cache dropped (echo 3 > /proc/sys/vm/drop_caches) before each side, untimed"),
    "E5": ("VmRSS (/proc/self/statm) after gc.collect(), after the warm-up and after the cycles; one cycle = "
           "put(tag, {'latent_tensor': 1 MiB}, {'step': i}) + get(tag) + drop the returned views; also "
           "requires the engine's stats: slots == 4, retained == 0"),
    "E6": ("torch.empty(n).fill_(1) of a new buffer (glibc maps fresh pages above its mmap threshold) minus "
           "fill_(1) of a buffer already faulted in, interleaved; every allocation of fresh memory (put, "
           "restore, clone) pays this per byte"),
}


def details_for(doc: dict) -> str:
    """Conditions, breakdowns and method of every figure, from the child's document."""
    info, cfg, figs = doc["machine"], doc["config"], doc["figures"]
    lines = [
        f"- Measured in a child process: torch.set_num_threads(1); niceness {cfg['nice']} (lowered to -20 "
        f"when permitted; dd inherits it); every figure except E4 pinned to CPU {cfg['cpu']} of "
        f"{info['cpus_allowed']} (the idlest over 0.3 s; os.sched_setaffinity); E4 unpinned (the spill "
        "writer is a thread). Values are medians over repetitions, `median / min (reps)` gives the spread; "
        "GB/s = 10⁹ B/s.",
        f"- L3 {info['l3_cache']}; transparent huge pages {info['transparent_hugepages']}; kernel "
        f"{info['kernel']}; temporary files on {info['tmp_filesystem']}",
        f"- Engine library {info['engine_library']} (built {info['engine_library_mtime']}); numpy "
        f"{info['numpy']}, xxhash (reference) {info['xxhash']}",
        f"- CPU load at the child's start / end: {info['cpu_load_start']} / {info['cpu_load_end']}",
        f"- Child run time {doc['elapsed_seconds']:.0f} s",
        "",
    ]
    spread = []
    for fid in ("E1a", "E1b", "E3"):
        fig = figs.get(fid, {})
        if "ratio_per_rep" in fig:
            r = fig["ratio_per_rep"]
            spread.append([fid, f"{r['median']:.2f}× / {r['min']:.2f}× ({r['reps']})"])
    for fid, key in (("E4a", None), ("E4b", "cold"), ("E4b", "warm")):
        fig = figs.get(fid, {})
        r = (fig.get(key) or {}).get("ratio_per_rep") if key else fig.get("ratio_per_rep")
        if r:
            spread.append([f"{fid}{' ' + key if key else ''}", f"{r['median']:.2f}× / {r['min']:.2f}× ({r['reps']})"])
    if spread:
        lines += [md_table(["figure", "ratio median / min (reps)"], spread), ""]
    lines += breakdown_put(figs) + breakdown_get(figs) + breakdown_bandwidth(figs) + breakdown_disk(figs)
    lines += breakdown_rss(figs)
    errors = [f"{fid}: {fig['error']}" for fid, fig in figs.items() if "error" in fig]
    if errors:
        lines += ["Raised: " + "; ".join(errors), ""]
    lines += ["What was timed:", ""] + [f"- **{fid}**: {text}." for fid, text in TIMED.items()]
    return "\n".join(lines)


def breakdown_put(figs: dict) -> list[str]:
    present = [fid for fid in ("E1a", "E1b") if "seconds" in figs.get(fid, {})]
    if not present:
        return []
    sides = ("clone", "put", "add_copy", "memcpy", "digest")
    table = []
    for fid in present:
        d = figs[fid]
        table.append([f"{fid}: {size_label(d['bytes'])}"] + [
            f"{fmt_time(d['seconds'][k]['median'])} ({d['bandwidth_GBps'][k]:.1f} GB/s)" for k in sides])
    out = ["Put vs clone, breakdown (one core, medians):", "",
           md_table(["tensor", "clone", "put", "zc_bundle_add_copy (C)", "memcpy into a pre-faulted buffer",
                     f"{DIGEST} of the source (warm)"], table), ""]
    for fid in present:
        d = figs[fid]
        pf, sec = d["page_faults_per_op_median"], {k: v["median"] for k, v in d["seconds"].items()}
        out.append(f"- {fid}, {size_label(d['bytes'])}: put/clone by thread CPU time "
                   f"{d['cpu_time_ratio_per_rep']['median']:.2f}× (wall/CPU median {d['wall_over_cpu_median']:.2f}: "
                   f"near 1 means little preemption); ratio of medians {d['ratio_of_medians']:.2f}×; page faults "
                   f"per operation (median): clone {pf['clone']:.0f}, put {pf['put']:.0f}, add_copy "
                   f"{pf['add_copy']:.0f}; put − zc_bundle_add_copy (bridge, tag check, zc_store_put) "
                   f"{fmt_time(sec['put'] - sec['add_copy'])}; memcpy + digest {fmt_time(sec['memcpy'] + sec['digest'])}")
    return out + [""]


def breakdown_get(figs: dict) -> list[str]:
    d = figs.get("E2", {})
    if "sizes" not in d:
        return []
    table = [[label, fmt_time(v["get_seconds"]["median"]), fmt_time(v["get_seconds"]["min"]),
              fmt_time(v["p99_seconds"]), fmt_time(v["release_seconds_median"]), v["get_seconds"]["reps"]]
             for label, v in d["sizes"].items()]
    return ["Get latency by size:", "",
            md_table(["size", "get median", "get min", "p99", "release (drop the views)", "reps"], table), ""]


def breakdown_bandwidth(figs: dict) -> list[str]:
    d = figs.get("E3", {})
    if "bandwidth_Bps" not in d:
        return []
    b, big, small = d["bandwidth_Bps"], fmt_bytes(d["bytes"]), fmt_bytes(d["in_cache_bytes"])
    names = {"memcpy": f"memcpy, {big}", "digest": f"{DIGEST}, {big}",
             "memcpy_in_cache": f"memcpy, {small} buffer, warm (just copied)",
             "digest_in_cache": f"{DIGEST}, {small} buffer, warm",
             "digest_xxhash_ref": f"python-xxhash xxh3_64 (reference implementation), {big}",
             "read_numpy_sum": f"read-only (numpy uint64 sum), {big}"}
    table = [[label, fmt_bw(b[k]["median"])] for k, label in names.items() if k in b]
    if d.get("digest_equals_reference") is not None:
        table.append([f"{DIGEST} == the xxhash package's xxh3_64", d["digest_equals_reference"]])
    return ["Bandwidths on one core (medians):", "", md_table(["measurement", "bandwidth"], table), ""]


def breakdown_disk(figs: dict) -> list[str]:
    table = []
    w = figs.get("E4a", {})
    if "seconds" in w:
        s = w["seconds"]
        alt = w["alt_spill_seconds_put_plus_flush_minus_put"]
        table += [
            [f"dd write conv=fsync ({fmt_bytes(w['tensor_bytes'])})", fmt_time(s["dd"]["median"]),
             fmt_bw(w["dd_write_Bps_median"])],
            [f"spill: put return → flush return ({fmt_bytes(w['file_bytes'])} file)", fmt_time(s["spill"]["median"]),
             fmt_bw(w["spill_write_Bps_median"])],
            ["spill: (put(spill) + flush) − put(no spill)", fmt_time(alt["median"]), fmt_bw(w["alt_spill_Bps"])],
            ["put without spill", fmt_time(s["put_nospill"]["median"]),
             fmt_bw(w["tensor_bytes"] / s["put_nospill"]["median"])]]
    r = figs.get("E4b", {})
    for mode in ("cold", "warm"):
        if mode in r:
            s = r[mode]["seconds"]
            table += [[f"dd read ({mode})", fmt_time(s["dd"]["median"]), fmt_bw(r[mode]["dd_read_Bps_median"])],
                      [f"restore + verify ({mode})", fmt_time(s["restore"]["median"]),
                       fmt_bw(r[mode]["restore_Bps_median"])],
                      [f"zc_file_open + zc_file_read into a pre-faulted buffer ({mode}; restore without "
                       "fresh-memory faults)", fmt_time(s["file_read_prefaulted"]["median"]),
                       fmt_bw(r[mode]["file_read_prefaulted_Bps_median"])]]
    if not table:
        return []
    return ["Disk tier:", "", md_table(["measurement", "median time", "bandwidth"], table), ""]


def breakdown_rss(figs: dict) -> list[str]:
    d = figs.get("E5", {})
    if "trend" not in d:
        return []
    base = d["rss_after_warmup"]
    table = [[f"0 (after {d['warmup']} warm-up)", fmt_bytes(base), "0"]]
    table += [[f"{c:,}", fmt_bytes(v), fmt_bytes(v - base)] for c, v in d["trend"]]
    return ["Resident memory along the cycles:", "", md_table(["cycles", "RSS", "Δ since warm-up"], table), ""]


# =========================================================================== the child (measures)


def config(mode: str) -> dict:
    """Sizes and repetitions per mode. Smoke mode only checks that every figure runs (seconds)."""
    l3 = 0
    m = re.match(r"(\d+)([KMG]?)", read_text("/sys/devices/system/cpu/cpu0/cache/index3/size"))
    if m:
        l3 = int(m.group(1)) * {"": 1, "K": 1024, "M": MiB, "G": 1 << 30}[m.group(2)]
    bw = 256 * MiB  # out of cache: at least 256 MiB and at least twice the L3 (a power of two) ...
    while bw < 2 * l3:
        bw *= 2
    available = meminfo("MemAvailable:")
    while available and bw > 256 * MiB and 3 * bw > available // 2:  # ... that fits: source + destination + slack
        bw //= 2

    def pick(full, quick, smoke):
        return {"full": full, "quick": quick, "smoke": smoke}[mode]
    return {
        "mode": mode, "l3_bytes": l3,
        "put_reps_large": pick(101, 11, 3), "put_reps_small": pick(301, 31, 5),
        "get_reps": pick(11, 5, 2), "get_calls": pick(2000, 300, 30),
        "bw_bytes": pick(bw, bw, 16 * MiB), "bw_reps": pick(15, 3, 2),
        "incache_bytes": pick(19_353_600, 19_353_600, 4 * MiB),
        "spill_mib": pick(256, 64, 8), "spill_reps": pick(9, 3, 2),
        "drop_caches": mode != "smoke",  # never in the test suite: it slows everything else on the machine
        "rss_cycles": pick(10_000, 10_000, 200), "rss_warmup": pick(300, 100, 10),
        "touch_bytes": pick(256 * MiB, 64 * MiB, 8 * MiB), "touch_reps": pick(15, 5, 2),
    }


def minflt() -> int:
    """Minor page faults of this thread so far (first touches of fresh memory)."""
    return resource.getrusage(resource.RUSAGE_THREAD).ru_minflt


def cpu_and_faults() -> tuple[int, int]:
    return time.thread_time_ns(), minflt()


def summary(samples: list[float]) -> dict:
    return {"median": median(samples), "min": min(samples), "max": max(samples), "reps": len(samples)}


class Pinned:
    """This thread (and the threads it starts) on one CPU for a block."""

    def __init__(self, cpu: int):
        self.cpu = cpu

    def __enter__(self):
        self.before = os.sched_getaffinity(0)
        os.sched_setaffinity(0, {self.cpu})

    def __exit__(self, *exc):
        os.sched_setaffinity(0, self.before)


def idlest_cpu(cpus: set[int]) -> int:
    """The allowed CPU with the most idle time over 0.3 s."""
    def idle_times():
        out = {}
        for line in read_text("/proc/stat").splitlines():
            m = re.match(r"cpu(\d+)\s+(.*)", line)
            if m:
                v = [int(x) for x in m.group(2).split()]
                out[int(m.group(1))] = v[3] + (v[4] if len(v) > 4 else 0)
        return out
    a = idle_times()
    time.sleep(0.3)
    b = idle_times()
    return max(sorted(cpus), key=lambda c: b.get(c, 0) - a.get(c, 0))


def child_machine(tmp: Path) -> dict:
    """What the figures depend on beyond bench.md's machine line."""
    from zc_pack.zc_engine._library import lib
    mount, fstype, dev, best = "?", "?", "?", ""
    for line in read_text("/proc/mounts").splitlines():
        parts = line.split()
        if len(parts) >= 3 and str(tmp).startswith(parts[1]) and len(parts[1]) >= len(best):
            best, dev, mount, fstype = parts[1], parts[0], parts[1], parts[2]
    versions = {}
    for module in ("numpy", "xxhash"):
        try:
            imported = __import__(module)
            versions[module] = getattr(imported, "__version__", None) or getattr(imported, "VERSION", None)
        except ImportError:
            versions[module] = None
    library = Path(lib._name)
    return {
        "cpus_allowed": sorted(os.sched_getaffinity(0)),
        "l3_cache": read_text("/sys/devices/system/cpu/cpu0/cache/index3/size") or None,
        "kernel": platform.release(),
        "transparent_hugepages": read_text("/sys/kernel/mm/transparent_hugepage/enabled") or None,
        "engine_library": str(library),
        "engine_library_mtime": _dt.datetime.fromtimestamp(library.stat().st_mtime, _dt.timezone.utc)
        .isoformat(timespec="seconds"),
        "tmp_filesystem": f"{fstype} on {dev} (mounted at {mount})",
        "cpu_load_start": cpu_load(), **versions,
    }


def log(msg: str) -> None:
    print(f"[engine {time.strftime('%H:%M:%S')}] {msg}", flush=True)


# --------------------------------------------------------------------------- E1: put vs clone


def put_vs_clone(shape: tuple, reps: int, cpu: int) -> dict:
    import torch

    from zc_pack.zc_engine import LatentStore, dlpack
    from zc_pack.zc_engine._library import check, lib

    x = torch.randn(shape)
    nbytes = x.numel() * x.element_size()
    store = LatentStore(depth=4)
    prefaulted = torch.empty_like(x).fill_(0)
    bundle = ctypes.c_void_p()

    def new_bundle(name: str) -> None:
        if name == "add_copy":
            check(lib.zc_bundle_create(ctypes.byref(bundle)))

    def cleanup(name: str, value) -> None:
        if name == "put":
            store.drop("e1")
        elif name == "add_copy":
            lib.zc_bundle_free(bundle.value)
            check(value)

    probe = Probe(cpu_and_faults)
    digest = getattr(lib, DIGEST)
    with Pinned(cpu), dlpack.borrowed_dltensor(x) as dl:
        sides = {"clone": x.clone,
                 "put": lambda: store.put("e1", {"latent": x}),
                 "add_copy": lambda: lib.zc_bundle_add_copy(bundle.value, b"latent", dl)}
        gc.collect()
        warm_until, rounds = time.monotonic() + 0.5, 0
        while rounds < 30 or time.monotonic() < warm_until:
            interleaved(sides, len(sides), cleanup, before=new_bundle)
            rounds += len(sides)
        probe.clear()
        t = interleaved(sides, reps, cleanup, before=new_bundle, probe=probe)
        copies = interleaved({"memcpy": lambda: ctypes.memmove(prefaulted.data_ptr(), x.data_ptr(), nbytes),
                              "digest": lambda: digest(x.data_ptr(), nbytes, 0)}, max(5, reps // 2) + 2)
    store.close()
    t.update({k: v[2:] for k, v in copies.items()})  # the first two of each warm up
    cpu_ns = {k: [d[0] for d in probe.deltas[k]] for k in ("clone", "put")}
    faults = {k: [d[1] for d in probe.deltas[k]] for k in ("clone", "put", "add_copy")}
    seconds = {k: summary(v) for k, v in t.items()}
    return {
        "shape": list(shape), "bytes": nbytes, "seconds": seconds,
        "cpu_time_seconds": {k: summary([v_ / 1e9 for v_ in v]) for k, v in cpu_ns.items()},
        "cpu_time_ratio_per_rep": summary([p / c for p, c in zip(cpu_ns["put"], cpu_ns["clone"])]),
        "wall_over_cpu_median": median([w / max(c / 1e9, 1e-9) for w, c in
                                        zip(t["put"] + t["clone"], cpu_ns["put"] + cpu_ns["clone"])]),
        "page_faults_per_op_median": {k: median(v) for k, v in faults.items()},
        "ratio_per_rep": summary([p / c for p, c in zip(t["put"], t["clone"])]),
        "ratio_of_medians": seconds["put"]["median"] / seconds["clone"]["median"],
        "bandwidth_GBps": {k: nbytes / v["median"] / 1e9 for k, v in seconds.items()},
        "samples_ms": {k: [round(v_ * 1e3, 4) for v_ in t[k]] for k in ("clone", "put")},
    }


# --------------------------------------------------------------------------- E2: get latency


def get_latency(calls: int, reps: int, cpu: int) -> dict:
    """Each call timed alone (microseconds: a whole-loop time would hide the distribution)."""
    import torch

    from zc_pack.zc_engine import LatentStore

    store = LatentStore(depth=4)
    tags = []
    for label, shape in GET_SIZES:
        tag = "get_" + label.replace(" ", "").replace(".", "_")
        store.put(tag, {"latent": torch.empty(shape, dtype=torch.float32).fill_(0.5)})
        tags.append((label, tag))
    per_rep = {tag: [] for _, tag in tags}
    release = {tag: [] for _, tag in tags}
    every_call = {tag: [] for _, tag in tags}
    clock = time.perf_counter_ns
    enabled = gc.isenabled()
    try:
        with Pinned(cpu):
            gc.collect()
            gc.disable()
            for _, tag in tags:  # warm-up
                for _ in range(200):
                    store.get(tag)
            for i in range(reps):
                for tag in rotation(i, [tag for _, tag in tags]):
                    samples, released = [], []
                    for _ in range(calls):
                        t0 = clock()
                        shot = store.get(tag)
                        t1 = clock()
                        del shot
                        t2 = clock()
                        samples.append(t1 - t0)
                        released.append(t2 - t1)
                    per_rep[tag].append(median(samples) / 1e9)
                    release[tag].append(median(released) / 1e9)
                    every_call[tag].extend(samples)
    finally:
        if enabled:
            gc.enable()
        store.close()
    sizes = {}
    for label, tag in tags:
        ordered = sorted(every_call[tag])
        sizes[label] = {"get_seconds": summary(per_rep[tag]),
                        "p99_seconds": ordered[int(0.99 * (len(ordered) - 1))] / 1e9,
                        "release_seconds_median": median(release[tag])}
    return {"calls_per_rep": calls, "sizes": sizes}


# --------------------------------------------------------------------------- E3: digest vs memcpy


def digest_vs_memcpy(nbytes: int, small: int, reps: int, cpu: int) -> dict:
    import torch

    from zc_pack.zc_engine._library import lib

    digest = getattr(lib, DIGEST)
    try:
        import numpy as np
        import xxhash
    except ImportError:
        np = xxhash = None
    with Pinned(cpu):
        src = torch.empty(nbytes, dtype=torch.uint8).fill_(0x5A)  # touch every page
        src[::4096] = torch.arange(0, nbytes, 4096).remainder(251).to(torch.uint8)
        dst = torch.empty(nbytes, dtype=torch.uint8).fill_(0)
        s_src = torch.empty(small, dtype=torch.uint8).fill_(0x33)
        s_dst = torch.empty(small, dtype=torch.uint8).fill_(0)
        sides = {"memcpy": lambda: ctypes.memmove(dst.data_ptr(), src.data_ptr(), nbytes),
                 "digest": lambda: digest(src.data_ptr(), nbytes, 0)}
        interleaved(sides, 1)  # warm-up
        t = interleaved(sides, reps)
        warm = {"memcpy_in_cache": lambda: ctypes.memmove(s_dst.data_ptr(), s_src.data_ptr(), small),
                "digest_in_cache": lambda: digest(s_src.data_ptr(), small, 0)}
        if xxhash is not None:
            src_np = src.numpy()
            warm["digest_xxhash_ref"] = lambda: xxhash.xxh3_64_intdigest(memoryview(src_np))
            warm["read_numpy_sum"] = lambda: np.add.reduce(src_np.view(np.uint64))

        def warm_the_cache(name: str) -> None:
            if name in ("memcpy_in_cache", "digest_in_cache"):
                warm[name]()  # the same call once untimed: the buffers are in the cache for the timed one
        t.update(interleaved(warm, reps, before=warm_the_cache))
        same = None
        if xxhash is not None:
            same = xxhash.xxh3_64_intdigest(memoryview(src_np)) == digest(src.data_ptr(), nbytes, 0)
    in_cache = ("memcpy_in_cache", "digest_in_cache")
    bandwidth = {k: summary([(small if k in in_cache else nbytes) / s for s in v]) for k, v in t.items()}
    return {"bytes": nbytes, "in_cache_bytes": small, "bandwidth_Bps": bandwidth,
            "ratio_per_rep": summary([m / d for m, d in zip(t["memcpy"], t["digest"])]),  # digest bw / memcpy bw
            "digest_equals_reference": same}


# --------------------------------------------------------------------------- E4: spill and restore vs dd


DD_RE = re.compile(r"^(\d+) bytes.*copied, ([0-9.eE+-]+) s", re.M)


def run_dd(args: list[str]) -> tuple[int, float]:
    """Run dd; (bytes, the seconds dd itself reports)."""
    proc = subprocess.run(["dd", *args], capture_output=True, text=True, env={**os.environ, "LC_ALL": "C"},
                          timeout=300)
    if proc.returncode != 0:
        raise RuntimeError(f"dd {' '.join(args)} failed: {proc.stderr.strip()}")
    m = DD_RE.search(proc.stderr)
    if not m:
        raise RuntimeError(f"cannot parse dd output: {proc.stderr.strip()!r}")
    return int(m.group(1)), float(m.group(2))


def drop_caches() -> bool:
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w") as fh:
            fh.write("3\n")
        return True
    except OSError:
        return False


def spill_write(x, mib: int, reps: int, tmp: Path) -> dict:
    from zc_pack.zc_engine import LatentStore

    nbytes = mib * MiB
    spill_dir, dd_file = tmp / "spill", tmp / "dd.bin"
    store = LatentStore(depth=1, spill_dir=spill_dir)
    figures = {"dd": [], "spill": [], "put_spill": []}
    file_bytes = []

    def dd_write():
        return run_dd(["if=/dev/zero", f"of={dd_file}", "bs=1M", f"count={mib}", "conv=fsync"])

    def spill():
        t0 = time.perf_counter()
        store.put("spill", {"latent": x}, spill=True)
        t1 = time.perf_counter()
        store.flush()
        t2 = time.perf_counter()
        return t2 - t0, t2 - t1

    def collect(name: str, value) -> None:
        if name == "dd":
            assert value[0] == nbytes, value
            figures["dd"].append(value[1])
            dd_file.unlink()
        elif name == "spill":
            figures["put_spill"].append(value[0])
            figures["spill"].append(value[1])
            files = glob.glob(str(spill_dir / "spill@*.latent"))
            assert len(files) == 1, files
            file_bytes.append(os.path.getsize(files[0]))
            store.drop("spill", disk=True)
        else:
            store.drop("nospill")

    try:
        t = interleaved({"dd": dd_write, "spill": spill, "put_nospill": lambda: store.put("nospill", {"latent": x})},
                        reps, collect, before=lambda name: os.sync())
    finally:
        store.close()
        if dd_file.exists():
            dd_file.unlink()
    figures["put_nospill"] = t["put_nospill"]
    s = {k: summary(v) for k, v in figures.items()}
    extra = [ps - po for ps, po in zip(figures["put_spill"], figures["put_nospill"])]
    return {"tensor_bytes": nbytes, "file_bytes": file_bytes[0], "seconds": s,
            "dd_write_Bps_median": nbytes / s["dd"]["median"],
            "spill_write_Bps_median": file_bytes[0] / s["spill"]["median"],
            "alt_spill_seconds_put_plus_flush_minus_put": summary(extra),
            "alt_spill_Bps": file_bytes[0] / median(extra),
            "ratio_per_rep": summary([(fb / sp) / (nbytes / d)
                                      for fb, sp, d in zip(file_bytes, figures["spill"], figures["dd"])])}


def restore_read(x, reps: int, tmp: Path, may_drop: bool) -> dict:
    import torch

    from zc_pack.zc_engine import LatentStore
    from zc_pack.zc_engine._library import FileTensor, check, lib

    spill_dir = tmp / "spill"
    writer = LatentStore(depth=1, spill_dir=spill_dir)
    writer.put("restore", {"latent": x}, spill=True)
    writer.flush()
    want = writer.get("restore").info["latent"].digest
    writer.close()
    files = glob.glob(str(spill_dir / "restore@*.latent"))
    assert len(files) == 1, files
    path = files[0]
    size = os.path.getsize(path)
    # The engine's read + verify path alone (restore without allocating fresh memory): zc_file_open +
    # zc_file_read into a buffer that is already faulted in.
    handle = ctypes.c_void_p()
    check(lib.zc_file_open(path.encode(), ctypes.byref(handle)))
    tensor = FileTensor()
    check(lib.zc_file_tensor_at(handle.value, 0, ctypes.byref(tensor)))
    lib.zc_file_close(handle.value)
    assert tensor.name == b"latent", tensor.name
    prefaulted = torch.empty(tensor.nbytes, dtype=torch.uint8).fill_(0)
    can_drop = may_drop and drop_caches()
    why_warm = None if can_drop else ("not in smoke mode" if not may_drop else "not permitted (needs root)")
    out = {"file_bytes": size, "drop_caches": can_drop, "why_not_dropped": why_warm}
    for mode in (["cold", "warm"] if can_drop else ["warm"]):
        state = {"checked": False, "store": None}

        def file_read():
            f, digest = ctypes.c_void_p(), ctypes.c_uint64()
            check(lib.zc_file_open(path.encode(), ctypes.byref(f)))
            try:
                check(lib.zc_file_read(f.value, 0, prefaulted.data_ptr(), tensor.nbytes, ctypes.byref(digest)))
            finally:
                lib.zc_file_close(f.value)

        def prepare(name: str) -> None:
            if mode == "cold":
                drop_caches()
            if name == "restore":
                state["store"] = LatentStore(depth=1, spill_dir=spill_dir)

        def check_restore(name: str, value) -> None:
            if name == "dd":
                assert value[0] == size, value
                dd_seconds.append(value[1])
            elif name == "restore":
                store = state["store"]
                assert store.stats()["restores"] == 1, store.stats()
                assert value.info["latent"].digest == want
                if not state["checked"]:
                    assert torch.equal(value.tensors["latent"], x), "restored bytes differ"
                    state["checked"] = True
                store.close()

        dd_seconds: list[float] = []
        sides = {"dd": lambda: run_dd([f"if={path}", "of=/dev/null", "bs=1M"]),
                 "restore": lambda: state["store"].get("restore"),
                 "file_read_prefaulted": file_read}
        if mode == "warm":  # one untimed round brings the file into the page cache
            interleaved(sides, 1, check_restore, before=prepare)
            dd_seconds.clear()
        t = interleaved(sides, reps, check_restore, before=prepare)
        t["dd"] = dd_seconds
        out[mode] = {"seconds": {k: summary(v) for k, v in t.items()},
                     "ratio_per_rep": summary([d / r for r, d in zip(t["restore"], t["dd"])]),
                     "dd_read_Bps_median": size / median(t["dd"]),
                     "restore_Bps_median": size / median(t["restore"]),
                     "file_read_prefaulted_Bps_median": size / median(t["file_read_prefaulted"])}
    return out


# --------------------------------------------------------------------------- E5: RSS over cycles


def rss_cycles(cycles: int, warmup: int, cpu: int) -> dict:
    import torch

    from zc_pack.zc_engine import LatentStore

    x = torch.randn(IMAGE_SHAPE)
    store = LatentStore(depth=4)
    trend = []

    def cycle(i):
        store.put("rss", {"latent_tensor": x}, {"step": str(i)})
        shot = store.get("rss")
        assert shot.tensors["latent_tensor"].shape == x.shape
        del shot

    with Pinned(cpu):
        for i in range(warmup):
            cycle(i)
        gc.collect()
        before = rss_bytes()
        faults = minflt()
        t0 = time.perf_counter()
        step = max(1, cycles // 10)
        for i in range(cycles):
            cycle(warmup + i)
            if (i + 1) % step == 0:
                gc.collect()
                trend.append((i + 1, rss_bytes()))
        elapsed = time.perf_counter() - t0
        faults = (minflt() - faults) / cycles
        gc.collect()
        after = rss_bytes()
    stats = store.stats()
    store.close()
    return {"cycles": cycles, "warmup": warmup, "slot_bytes": x.numel() * 4, "rss_after_warmup": before,
            "rss_after_cycles": after, "trend": trend, "seconds_per_cycle": elapsed / cycles,
            "page_faults_per_cycle": faults, "stats_at_end": stats}


# --------------------------------------------------------------------------- E6: first touch


def first_touch(nbytes: int, reps: int, cpu: int) -> dict:
    import torch

    again = torch.empty(nbytes, dtype=torch.uint8).fill_(0)
    with Pinned(cpu):
        t = interleaved({"fresh": lambda: torch.empty(nbytes, dtype=torch.uint8).fill_(1),  # new pages each call
                         "prefaulted": lambda: again.fill_(1)}, reps)
    extra = [f - p for f, p in zip(t["fresh"], t["prefaulted"])]
    per_byte = median(extra) / nbytes
    return {"bytes": nbytes, "seconds": {k: summary(v) for k, v in t.items()},
            "fault_ns_per_byte": per_byte * 1e9, "fault_ns_per_4k_page": per_byte * 4096 * 1e9}


# --------------------------------------------------------------------------- the child's main


def disk_figures(cfg: dict, tmp: Path, figure) -> None:
    """E4a and E4b, on one tensor of spill_mib MiB; the spill folder is removed afterwards."""
    import torch

    x = torch.arange(cfg["spill_mib"] * MiB // 4, dtype=torch.float32)
    try:
        figure("E4a", "spill write vs dd", lambda: spill_write(x, cfg["spill_mib"], cfg["spill_reps"], tmp))
        figure("E4b", "restore vs dd read", lambda: restore_read(x, cfg["spill_reps"], tmp, cfg["drop_caches"]))
    finally:
        shutil.rmtree(tmp / "spill", ignore_errors=True)


def measure(cfg: dict, tmp: Path) -> dict:
    """Every figure; one that raises is recorded as such and the others still run."""
    cpu = cfg["cpu"]
    figures: dict[str, dict] = {}

    def figure(fid: str, what: str, fn) -> None:
        log(f"{fid}: {what}")
        try:
            figures[fid] = fn()
        except Exception as exc:  # noqa: BLE001 - reported in its row, never hidden
            traceback.print_exc()
            figures[fid] = {"error": f"{type(exc).__name__}: {exc}"}

    figure("E1a", "put vs clone, 19.4 MB", lambda: put_vs_clone(LATENT_SHAPE, cfg["put_reps_large"], cpu))
    figure("E1b", "put vs clone, 1 MiB", lambda: put_vs_clone(IMAGE_SHAPE, cfg["put_reps_small"], cpu))
    figure("E2", "get latency by size", lambda: get_latency(cfg["get_calls"], cfg["get_reps"], cpu))
    figure("E3", "digest vs memcpy",
           lambda: digest_vs_memcpy(cfg["bw_bytes"], cfg["incache_bytes"], cfg["bw_reps"], cpu))
    disk_figures(cfg, tmp, figure)
    figure("E5", "RSS over cycles", lambda: rss_cycles(cfg["rss_cycles"], cfg["rss_warmup"], cpu))
    figure("E6", "first-touch cost", lambda: first_touch(cfg["touch_bytes"], cfg["touch_reps"], cpu))
    return figures


def child_main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description="the engine section's measuring process (started by bench/run.py)")
    ap.add_argument("--child", action="store_true", required=True)
    ap.add_argument("--mode", choices=("full", "quick", "smoke"), default="full")
    ap.add_argument("--json", type=Path, required=True, help="where the raw figures go")
    ap.add_argument("--tmp", type=Path, required=True, help="scratch folder (spill files, dd's file)")
    args = ap.parse_args(argv)
    import torch

    started = time.perf_counter()
    args.tmp.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(1)
    try:  # the highest CFS weight permitted: other processes disturb the figures less (both sides alike)
        os.setpriority(os.PRIO_PROCESS, 0, -20)
    except OSError:
        pass
    cfg = config(args.mode)
    cfg["nice"] = os.getpriority(os.PRIO_PROCESS, 0)
    cfg["cpu"] = idlest_cpu(os.sched_getaffinity(0))
    info = child_machine(args.tmp)
    log(f"mode {args.mode}; torch threads 1; pinned figures on CPU {cfg['cpu']}; niceness {cfg['nice']}")
    figures = measure(cfg, args.tmp)
    info["cpu_load_end"] = cpu_load()
    doc = {"machine": info, "config": cfg, "figures": figures,
           "elapsed_seconds": round(time.perf_counter() - started, 1)}
    args.json.write_text(json.dumps(doc, indent=1) + "\n")
    return 1 if any("error" in f for f in figures.values()) else 0


if __name__ == "__main__":
    sys.exit(child_main(sys.argv[1:]))
