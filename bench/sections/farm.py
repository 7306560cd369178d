"""Farm: a Wan 2.1 720p shot through Redis on loopback against the local path, and the aggregate
store throughput of 4 workers.

    python -m bench.sections.farm [--quick] [--out DIR]     (alone: writes DIR/farm.json, farm.md)

Rows (a real redis-server started on a free 127.0.0.1 port, no persistence; NOT MEASURED, with
the reason, without redis-server or redis-py):
  F1  publish: Store with the farm (allocation, put, export, chunked upload, commit) until the
      shot is in Redis, against the local put with spill until the spill file is on disk
  F2  fetch: another worker's Handoff read (the newest lookup, download, digest check, import,
      restore with verification) against a second process's read of the spill file
  F3  4 worker processes storing 720p shots at once (each its own tag, one shot after another, each
      published before the next) against the same 4 storing locally (each spilled before the
      next): shots per second in all
A section module (``run(ctx) -> Section``) of bench/run.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import INFO, NOT_MEASURED, REPO, Context, Row, Section, fmt_time, interleaved, md_table, median

SHAPE = (1, 16, 21, 90, 160)  # Wan 2.1 720p, 81 frames: 19.35 MB of float32
WORKERS = 4

WORKER = r"""
import sys, time, torch
from zc_pack.zc_engine import LatentStore
url, spill, tag, shots = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
torch.set_num_threads(1)
latent = torch.randn(1, 16, 21, 90, 160, generator=torch.Generator().manual_seed(len(tag)))
with LatentStore(spill_dir=spill) as store:
    farm = None
    if url != "-":
        from zc_pack.zc_farm import Farm, FarmConfig
        farm = Farm(store, FarmConfig(url=url, worker_id=tag, keep=16))  # keeps all: none skipped
    sys.stdout.write("ready\n"); sys.stdout.flush()
    sys.stdin.readline()
    start = time.perf_counter()
    for _ in range(shots):  # one shot after another, as a sampler hands them: each on disk / in Redis
        if farm is None:
            store.put(tag, {"latent_tensor": latent}, spill=True)
            store.flush()
        else:
            farm.put(tag, {"latent_tensor": latent})
            assert farm.wait_published(600)
    if farm is not None:
        published = farm.counts["published"]
    seconds = time.perf_counter() - start
    print(seconds, published if farm else shots, flush=True)
    if farm:
        farm.close()
"""


def _skip_reason() -> str | None:
    sys.path.insert(0, str(REPO / "tools" / "standins"))
    from redis_server import skip_reason
    return skip_reason()


def _latent():
    import torch
    return torch.randn(*SHAPE, generator=torch.Generator().manual_seed(720))


def single_shot(ctx: Context, url: str, tmp: Path) -> dict:
    """F1 and F2: median seconds of each side, interleaved."""
    from zc_pack.zc_engine import LatentStore
    from zc_pack.zc_farm import Farm, FarmConfig

    latent = {"latent_tensor": _latent()}
    reps = ctx.pick(15, 5, 2)
    a_store, b_store = LatentStore(spill_dir=tmp / "a"), LatentStore(spill_dir=tmp / "b")
    local_store = LatentStore(spill_dir=tmp / "local")
    a = Farm(a_store, FarmConfig(url=url, worker_id="bench-a", keep=4))
    b = Farm(b_store, FarmConfig(url=url, worker_id="bench-b", keep=4))
    try:
        def farm_publish():
            generation = a.put("bench", latent)
            assert a.wait_published(120)
            return generation

        def local_put():
            generation = local_store.put("local", latent, spill=True)
            local_store.flush()
            return generation

        published = interleaved({"farm": farm_publish, "local": local_put}, reps)
        size = len(a_store.export_shot("bench"))

        def farm_fetch():
            if b_store.describe_tag("bench") is not None:  # every repetition fetches: nothing held here
                b_store.drop("bench", disk=True)
            t0 = time.perf_counter()
            assert b.pull("bench") is not None
            b_store.get("bench", verify=True)
            return time.perf_counter() - t0

        def local_read():
            with LatentStore(spill_dir=tmp / "local") as other:  # another process's view of the folder
                t0 = time.perf_counter()
                other.get("local", verify=True)
                return time.perf_counter() - t0

        fetched: dict[str, list[float]] = {"farm": [], "local": []}
        for index in range(reps):
            for side in (("farm", "local") if index % 2 == 0 else ("local", "farm")):
                fetched[side].append(farm_fetch() if side == "farm" else local_read())
        return {"bytes": size, "reps": reps,
                "publish_s": {k: median(v) for k, v in published.items()},
                "fetch_s": {k: median(v) for k, v in fetched.items()},
                "publish_all_s": published, "fetch_all_s": fetched}
    finally:
        a.close()
        b.close()
        for store in (a_store, b_store, local_store):
            store.close()


def workers(ctx: Context, url: str, tmp: Path) -> dict:
    """F3: shots per second of 4 processes storing at once, with the farm and without."""
    shots = ctx.pick(12, 4, 2)
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = {}
    for side, side_url in (("local", "-"), ("farm", url)):
        procs = [subprocess.Popen([sys.executable, "-c", WORKER, side_url, str(tmp / f"{side}-{w}"),
                                   f"w{w}", str(shots)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True, env=env) for w in range(WORKERS)]
        for proc in procs:
            assert proc.stdout.readline().strip() == "ready"
        start = time.perf_counter()
        for proc in procs:
            proc.stdin.write("go\n")
            proc.stdin.flush()
        results = []
        for proc in procs:
            line, _ = proc.communicate(timeout=900)
            assert proc.returncode == 0, f"a {side} worker exited with {proc.returncode}"
            seconds, done = line.split()
            results.append((float(seconds), int(done)))
        wall = time.perf_counter() - start
        total = sum(done for _, done in results)
        out[side] = {"shots": WORKERS * shots, "published": total if side == "farm" else None,
                     "wall_s": wall, "per_worker_s": [s for s, _ in results],
                     "shots_per_s": WORKERS * shots / max(s for s, _ in results)}
    return out


def run(ctx: Context) -> Section:
    section = Section("farm", "Farm: Redis on loopback vs the local path")
    t0 = time.perf_counter()
    reason = _skip_reason()
    if reason:
        for row_id, figure in (("F1", "publish a Wan 2.1 720p shot"), ("F2", "fetch it on another worker"),
                               ("F3", f"{WORKERS} workers storing 720p shots")):
            why = "not measured: " + reason.removeprefix("skipped: ")
            section.rows.append(Row(row_id, figure, "(info)", why, NOT_MEASURED))
        return section
    from redis_server import RedisServer

    with tempfile.TemporaryDirectory(dir=ctx.tmp_dir) as tmp_name:
        tmp = Path(tmp_name)
        server = RedisServer(tmp / "redis").start()
        try:
            one = single_shot(ctx, server.url, tmp)
            many = workers(ctx, server.url, tmp)
            version = server.client().info("server")["redis_version"]
        finally:
            server.stop()
    mb = one["bytes"] / 1e6
    p, f = one["publish_s"], one["fetch_s"]
    section.rows += [
        Row("F1", f"publish a Wan 2.1 720p shot ({mb:.2f} MB) to Redis on loopback vs local put + spill",
            "(info)", f"farm {fmt_time(p['farm'])} ({mb / p['farm']:.0f} MB/s), local {fmt_time(p['local'])} "
            f"({p['farm'] / p['local']:.1f}x)", INFO),
        Row("F2", "fetch it on another worker (download, digest, import, restore) vs a second process's read",
            "(info)", f"farm {fmt_time(f['farm'])} ({mb / f['farm']:.0f} MB/s), local {fmt_time(f['local'])} "
            f"({f['farm'] / f['local']:.1f}x)", INFO),
        Row("F3", f"{WORKERS} workers storing 720p shots at once, all published vs local only", "(info)",
            f"farm {many['farm']['shots_per_s']:.1f} shots/s ({many['farm']['shots_per_s'] * mb:.0f} MB/s; "
            f"{many['farm']['published']} of {many['farm']['shots']} published), "
            f"local {many['local']['shots_per_s']:.1f} shots/s", INFO),
    ]
    section.details = "\n".join([
        f"Redis {version} on 127.0.0.1 (no persistence), chunks of 8 MiB, {one['reps']} interleaved repetitions "
        "(medians). F1 times `Farm.put` until `wait_published` (allocation, local put with spill, export, "
        "upload, commit) against `LatentStore.put(spill=True)` + `flush`. F2 times `Farm.pull` + "
        "`get(verify=True)` on a worker holding nothing of the tag against a new store's `get(verify=True)` "
        "of the spill file (page cache warm). F3: each worker its own tag, each put published (farm) or "
        "spilled (local) before the next; shots/s = all shots / the slowest worker's time.", "",
        md_table(["", "farm", "local"], [
            ["publish / put (s)", f"{p['farm']:.4f}", f"{p['local']:.4f}"],
            ["fetch / read (s)", f"{f['farm']:.4f}", f"{f['local']:.4f}"],
            [f"{WORKERS} workers, shots/s", f"{many['farm']['shots_per_s']:.2f}", f"{many['local']['shots_per_s']:.2f}"],
        ])])
    section.data = {"single_shot": one, "workers": many, "redis_version": version, "shape": list(SHAPE)}
    section.seconds = time.perf_counter() - t0
    return section


def main() -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=args.out) as tmp:
        ctx = Context(mode="quick" if args.quick else "full", out_dir=args.out, tmp_dir=Path(tmp),
                      comfyui_path=None)
        section = run(ctx)
    machine = {"cpu": next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo")
                            if line.startswith("model name")), "unknown"), "cores": os.cpu_count()}
    (args.out / "farm.json").write_text(json.dumps({"machine": machine, **section.to_json()}, indent=1))
    (args.out / "farm.md").write_text(
        f"# {section.title}\n\nMachine: {machine['cpu']}, {machine['cores']} cores.\n\n"
        + md_table(["id", "figure", "goal", "measured", "result"],
                   [[r.id, r.figure, r.goal, r.measured, r.result] for r in section.rows])
        + "\n\n" + section.details + "\n")
    for row in section.rows:
        print(f"{row.id}  {row.figure}: {row.measured} [{row.result}]")
    return 0


if __name__ == "__main__":  # python -m bench.sections.farm, from the repository root
    raise SystemExit(main())
