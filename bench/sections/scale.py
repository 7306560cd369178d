"""Section 4: scale. Store cost against latent size (1 MiB -> 1 GiB), lookup cost against the
number of tags (1 -> 10,000), and resident memory over a soak of shot-sized cycles.

Everything goes through the Python bridge (``zc_engine.LatentStore``), as the nodes use it,
with torch on one thread. Cost "proportional to bytes" is checked with a least-squares line
t = a + b * n through the per-size medians (R², and the fixed part a); "constant-time
lookup" by comparing get latency with 10,000 tags to 1 tag.
"""

from __future__ import annotations

import gc
import os
import random
import time

import torch

from bench.common import (FAIL, NOT_MEASURED, PASS, REPO, Context, Row, Section, fmt_bytes, fmt_time,
                          md_table, median, pyplot, rss_bytes)

MiB = 1 << 20
COLD_SPAN = 64 * MiB  # sources of a size together span this much, so none is measured cache-hot
SOAK_SHAPE = (1, 16, 21, 90, 160)  # Wan 2.1 720p, 81 frames: 19.4 MB


def by_size(ctx: Context) -> list[dict]:
    from zc_pack.zc_engine import LatentStore
    sizes = ctx.pick([1, 4, 16, 64, 256, 1024], [1, 4, 16, 64, 256], [1, 4])
    rows = []
    store = LatentStore(depth=1)
    try:
        for mib in sizes:
            # A latent comes fresh from the sampler, not from the cache: each repetition puts
            # another source tensor, enough of them to span twice a large last-level cache
            # (64 MiB), so no size is measured with its source cache-hot.
            sources = [torch.randn(mib * MiB // 4) for _ in range(max(1, -(-COLD_SPAN // (mib * MiB))))]
            x = sources[0]
            reps = ctx.pick(9 if mib <= 64 else (5 if mib <= 256 else 3), 5 if mib <= 64 else 3, 2)
            puts, gets, verifies = [], [], []
            store.put("warm", {"latent": x})  # warm-up: the pool gets a buffer of this size
            store.drop("warm")
            for rep in range(reps):
                x = sources[rep % len(sources)]
                t0 = time.perf_counter()
                store.put("size", {"latent": x})
                t1 = time.perf_counter()
                rep_gets = []
                for _ in range(5):  # a single call is noisy at microseconds: median of five
                    g0 = time.perf_counter()
                    shot = store.get("size")
                    rep_gets.append(time.perf_counter() - g0)
                    del shot
                t3 = time.perf_counter()
                store.verify("size", rehash=True)  # the cost of hashing, not of the skip
                t4 = time.perf_counter()
                store.drop("size")
                puts.append(t1 - t0)
                gets.append(median(rep_gets))
                verifies.append(t4 - t3)
            rows.append({"mib": mib, "bytes": x.numel() * 4, "reps": reps, "put": puts, "get": gets,
                         "verify": verifies})
            ctx.log(f"scale size {mib} MiB: put {fmt_time(median(puts))}, get {fmt_time(median(gets))}, "
                    f"verify {fmt_time(median(verifies))}")
            del x, sources
            gc.collect()
    finally:
        store.close()
    return rows


def line_fit(xs: list[float], ys: list[float]) -> tuple[float, float, float]:
    """Least squares y = a + b x; returns (a, b, R²)."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    a = my - b * mx
    ss_res = sum((y - a - b * x) ** 2 for x, y in zip(xs, ys))
    ss_tot = sum((y - my) ** 2 for y in ys)
    return a, b, 1 - ss_res / ss_tot if ss_tot else 1.0


def by_tags(ctx: Context) -> list[dict]:
    from zc_pack.zc_engine import LatentStore
    counts = ctx.pick([1, 10, 100, 1000, 10000], [1, 100, 10000], [1, 100])
    calls = ctx.pick(2000, 400, 50)
    rng = random.Random(7)
    x = torch.randn(1024)  # 4 KiB: the lookup, not the bytes, is measured
    rows = []
    for count in counts:
        store = LatentStore(depth=1)
        try:
            tags = [f"shot_{i:05}" for i in range(count)]
            for tag in tags:
                store.put(tag, {"latent": x})
            order = [rng.choice(tags) for _ in range(calls)]
            samples = []
            for tag in order:
                t0 = time.perf_counter()
                shot = store.get(tag)
                samples.append(time.perf_counter() - t0)
                del shot
            t0 = time.perf_counter()
            store.put("one_more", {"latent": x})
            put_one = time.perf_counter() - t0
            rows.append({"tags": count, "get": median(samples), "get_p99": sorted(samples)[int(0.99 * len(samples))],
                         "calls": calls, "put_into": put_one})
            ctx.log(f"scale tags {count}: get {fmt_time(median(samples))}")
        finally:
            store.close()
    return rows


# ---------------------------------------------------------------- a Store's cost against tags held


class _Server:
    """A PromptServer stand-in for the pack's ui_events: with a server the Store sends its
    zerocopy.store event (and describes its slot for it), as in ComfyUI; messages go nowhere."""

    def send_sync(self, event, data, sid=None):
        pass


def store_prompts(ctx: Context) -> dict | None:
    """Store-only prompts through ComfyUI's executor, each a new tag:
    the last ``timed`` Stores with ``low`` and with ``high`` tags held. Each timed prompt is the
    executor's run of EmptyLatentImage -> ZeroCopyLatentStore plus the prompt end's durability
    step (what ComfyUI's prompt worker runs after the prompt: the flush and the memory-only check).
    The tags before the timed ones are put straight into the same store (spilled, like a Store's)."""
    if ctx.comfy is None:
        return None
    import sys
    import types

    low, high = ctx.pick(300, 300, 30), ctx.pick(2000, 2000, 120)
    timed = ctx.pick(100, 50, 10)
    comfyui = ctx.comfy
    runtime = comfyui.module("zc_nodes.runtime")
    durability = comfyui.module("zc_nodes.durability")
    previous_server = sys.modules.get("server")
    server = types.ModuleType("server")
    server.PromptServer = type("PromptServer", (), {"instance": _Server()})
    previous_spill = os.environ.get("ZEROCOPY_SPILL_DIR")
    runtime.reset(spill_dir=ctx.tmp_dir / "tags_spill")
    sys.modules["server"] = server
    x = torch.randn(1, 4, 8, 8)
    held = 0
    out = {"low": low, "high": high, "timed": timed}
    try:
        store = runtime.store()

        def fill(to: int) -> None:
            nonlocal held
            while held < to:
                store.put(f"bench_{held:05}", {"latent_tensor": x}, {"family": "sd1"}, spill=True)
                held += 1
            store.flush()

        def prompts() -> list[float]:
            nonlocal held
            samples = []
            for _ in range(timed):
                tag = f"bench_{held:05}"
                prompt = {"1": {"class_type": "EmptyLatentImage", "inputs": {"width": 64, "height": 64, "batch_size": 1}},
                          "2": {"class_type": "ZeroCopyLatentStore", "inputs": {"samples": ["1", 0], "buffer_tag": tag}}}
                t0 = time.perf_counter()
                comfyui.run(prompt, targets=["2"])
                durability.make_durable()
                samples.append(time.perf_counter() - t0)
                held += 1
            return samples

        def whole_describe() -> float:  # what each Store paid before, at least twice (for reference)
            times = []
            for _ in range(5):
                t0 = time.perf_counter()
                store.describe()
                times.append(time.perf_counter() - t0)
            return median(times)

        for name, target in (("low", low), ("high", high)):
            fill(target - timed)
            out[name + "_describe"] = whole_describe()
            out[name + "_stores"] = prompts()
            ctx.log(f"scale stores: last {timed} Stores at {held:,} tags held: median "
                    f"{fmt_time(median(out[name + '_stores']))}")
    finally:
        if previous_server is None:
            sys.modules.pop("server", None)
        else:
            sys.modules["server"] = previous_server
        runtime.reset(spill_dir=previous_spill)
        if previous_spill is None:
            os.environ.pop("ZEROCOPY_SPILL_DIR", None)
    return out


def queue_under_listings(ctx: Context) -> dict | None:
    """GET /queue's latency on a real aiohttp server (its own process: bench/sections/
    listing_server.py) holding ``tags`` tags, idle and while ``clients`` clients list the buffers
    without pause: through the pack's listing route, and through the listing as it was before
    the pack used to build it (on the event loop), for comparison."""
    import asyncio
    import subprocess
    import sys

    try:
        import aiohttp
    except ImportError:  # ComfyUI's web server is not installed here
        return None
    tags, clients, probes, rounds = ctx.pick(2000, 2000, 100), 16, ctx.pick(200, 100, 20), ctx.pick(20, 10, 2)
    process = subprocess.Popen([sys.executable, "-m", "bench.sections.listing_server",
                                str(ctx.tmp_dir / "listing_spill"), str(tags)],
                               cwd=str(REPO), stdout=subprocess.PIPE, text=True)
    try:
        line = process.stdout.readline()
        if not line.startswith("port "):
            raise RuntimeError(f"the listing server did not start (it printed {line!r})")
        base = f"http://127.0.0.1:{int(line.split()[1])}"

        async def probe(session) -> float:
            t0 = time.perf_counter()
            async with session.get(base + "/queue") as response:
                await response.read()
            return time.perf_counter() - t0

        async def list_once(session, listing) -> int:
            async with session.get(base + listing) as response:
                await response.read()
                return response.status == 200

        async def burst(listing: str, rounds: int) -> tuple[list[float], int]:
            """``clients`` listings at once (the browsers of a studio after a run); GET /queue every 10 ms until they are
            all answered; ``rounds`` times."""
            samples, listed = [], 0
            async with aiohttp.ClientSession() as session:
                for _ in range(rounds):
                    listings = asyncio.gather(*[list_once(session, listing) for _ in range(clients)])
                    await asyncio.sleep(0.005)
                    while not listings.done():
                        samples.append(await probe(session))
                        await asyncio.sleep(0.01)
                    listed += sum(await listings)
            return samples, listed

        async def continuous(listing: str | None) -> tuple[list[float], int]:
            """``clients`` clients listing without pause (none: idle), ``probes`` probes 10 ms apart."""
            stop = asyncio.Event()
            listed = 0

            async def lister(session):
                nonlocal listed
                while not stop.is_set():
                    answered = await list_once(session, listing)
                    listed += answered  # (after the await: a += across it would lose the others' counts)

            async with aiohttp.ClientSession() as session:
                workers = [asyncio.ensure_future(lister(session)) for _ in range(clients if listing else 0)]
                await asyncio.sleep(0.5 if listing else 0)
                samples = []
                for _ in range(probes):
                    samples.append(await probe(session))
                    await asyncio.sleep(0.01)
                stop.set()
                await asyncio.gather(*workers)
            return samples, listed

        out = {"tags": tags, "clients": clients, "probes": probes, "rounds": rounds}
        for name, run in (("idle", lambda: continuous(None)),
                          ("burst", lambda: burst("/zerocopy/buffers", rounds)),
                          ("listing", lambda: continuous("/zerocopy/buffers")),
                          ("old", lambda: burst("/old/buffers", max(2, rounds // 4)))):
            samples, listed = asyncio.run(run())
            out[name] = {"median": median(samples), "p99": sorted(samples)[int(0.99 * (len(samples) - 1))],
                         "max": max(samples), "listings": listed, "probes": len(samples)}
            ctx.log(f"scale queue: {name}: GET /queue median {fmt_time(out[name]['median'])}, max "
                    f"{fmt_time(out[name]['max'])} ({len(samples)} probes, {listed} listings)")
        return out
    finally:
        process.kill()
        process.wait(10)


def soak(ctx: Context) -> dict:
    """Shot-sized cycles on one tag (depth 4): put, verified get, drop the views; every 25th
    cycle spilled to disk too. RSS sampled after the warm-up and along the way."""
    from zc_pack.zc_engine import LatentStore
    cycles = ctx.pick(3000, 600, 40)
    warmup = ctx.pick(100, 40, 8)
    x = torch.randn(SOAK_SHAPE)
    store = LatentStore(depth=4, spill_dir=str(ctx.tmp_dir / "soak_spill"), disk_keep=1)
    samples = []
    t_start = time.perf_counter()
    try:
        for i in range(warmup + cycles):
            store.put("soak", {"latent_tensor": x}, {"cycle": str(i)}, spill=(i % 25 == 0))
            shot = store.get("soak", verify=True)
            del shot
            if i == warmup - 1:
                store.flush()
                gc.collect()
                base = rss_bytes()
                samples.append((0, base))
            elif i >= warmup and (i - warmup + 1) % max(1, cycles // 20) == 0:
                if i == warmup + cycles - 1:
                    store.flush()
                    gc.collect()
                samples.append((i - warmup + 1, rss_bytes()))
        stats = store.stats()  # engine counters: ints
    finally:
        store.close()
    seconds = time.perf_counter() - t_start
    return {"cycles": cycles, "warmup": warmup, "slot_bytes": x.numel() * 4, "rss": samples,
            "seconds": seconds, "per_cycle": seconds / (cycles + warmup),
            "stats": stats}


def run(ctx: Context) -> Section:
    t_start = time.perf_counter()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        sizes = by_size(ctx)
        tags = by_tags(ctx)
        soaked = soak(ctx)
        stores = store_prompts(ctx)
        queue = queue_under_listings(ctx)
    finally:
        torch.set_num_threads(threads)
    section = Section("scale", "4. Scale")
    xs = [r["bytes"] for r in sizes]
    a, b, r2 = line_fit(xs, [median(r["put"]) for r in sizes])
    ns_per_byte = [median(r["put"]) / r["bytes"] * 1e9 for r in sizes]
    va, vb, vr2 = line_fit(xs, [median(r["verify"]) for r in sizes])
    gets = [median(r["get"]) for r in sizes]
    spread = max(ns_per_byte) / min(ns_per_byte)
    section.rows.append(Row(
        "S1", f"put cost against size, {fmt_bytes(xs[0])} → {fmt_bytes(xs[-1])} (copy + digest, source not in cache)",
        "∝ bytes: cost per byte within 2× at every size",
        f"{spread:.2f}× ({min(ns_per_byte):.3f}–{max(ns_per_byte):.3f} ns/B: "
        + ", ".join(f"{fmt_bytes(n)} {v:.3f}" for n, v in zip(xs, ns_per_byte))
        + f"); line fit R² {r2:.4f}", PASS if spread <= 2.0 else FAIL))
    verify_per_byte = [median(r["verify"]) / r["bytes"] * 1e9 for r in sizes]
    vspread = max(verify_per_byte) / min(verify_per_byte)
    section.rows.append(Row(
        "S2", f"verify cost against size (re-hash), {fmt_bytes(xs[0])} → {fmt_bytes(xs[-1])}",
        "∝ bytes: cost per byte within 2× at every size",
        f"{vspread:.2f}× ({min(verify_per_byte):.3f}–{max(verify_per_byte):.3f} ns/B); line fit R² {vr2:.4f}, "
        f"{1 / vb / 1e9:.2f} GB/s", PASS if vspread <= 2.0 else FAIL))
    section.rows.append(Row(
        "S3", f"get (zero-copy views) against size, {fmt_bytes(xs[0])} → {fmt_bytes(xs[-1])}",
        "flat: largest/smallest ≤ 1.5", f"{max(gets) / min(gets):.2f}× ({fmt_time(min(gets))}–{fmt_time(max(gets))})",
        PASS if max(gets) / min(gets) <= 1.5 else FAIL))
    first, last = tags[0], tags[-1]
    ratio = last["get"] / first["get"]
    section.rows.append(Row(
        "S4", f"get latency, {first['tags']:,} tag vs {last['tags']:,} tags (random tag per call)",
        f"{last['tags']:,} tags ≤ 1.5 × 1 tag", f"{ratio:.2f}× ({fmt_time(first['get'])} → {fmt_time(last['get'])})",
        PASS if ratio <= 1.5 else FAIL))
    base = soaked["rss"][0][1]
    growth = soaked["rss"][-1][1] - base
    section.rows.append(Row(
        "S5", f"resident memory over {soaked['cycles']:,} cycles of {fmt_bytes(soaked['slot_bytes'])} shots "
              "(put, verified get, every 25th spilled)",
        f"growth ≤ one slot ({fmt_bytes(soaked['slot_bytes'])})",
        f"{fmt_bytes(max(growth, 0))} ({fmt_bytes(base)} → {fmt_bytes(soaked['rss'][-1][1])}; "
        f"{fmt_time(soaked['per_cycle'])}/cycle)", PASS if growth <= soaked["slot_bytes"] else FAIL))
    if stores is None:
        section.rows.append(Row(
            "S6", "Store-only prompts, each a new tag: the last Stores with 2,000 tags held vs 300",
            "2,000 tags ≤ 1.5 × 300 tags", "not measured: needs ComfyUI (set COMFYUI_PATH)", NOT_MEASURED))
    else:
        low, high = median(stores["low_stores"]), median(stores["high_stores"])
        ratio = high / low
        section.rows.append(Row(
            "S6", f"Store-only prompts through ComfyUI's executor, each a new tag (a server present, the prompt "
                  f"end's flush): the last {stores['timed']} Stores with {stores['high']:,} tags held vs {stores['low']:,}",
            f"{stores['high']:,} tags ≤ 1.5 × {stores['low']:,} tags",
            f"{ratio:.2f}× (median {fmt_time(low)} → {fmt_time(high)}; one whole-store describe, which each Store "
            f"used to pay at least twice: {fmt_time(stores['low_describe'])} → {fmt_time(stores['high_describe'])})",
            PASS if ratio <= 1.5 else FAIL))
    queue_figure = (f"GET /queue on a real aiohttp server holding {ctx.pick(2000, 2000, 100):,} tags while 16 clients "
                    "list the buffers (GET /zerocopy/buffers): 16 at once, then without pause")
    queue_goal = "unaffected: slowest ≤ 50 ms (or 5 × the idle slowest)"
    if queue is None:
        section.rows.append(Row("S7", queue_figure, queue_goal,
                                "not measured: aiohttp (ComfyUI's web server) is not installed", NOT_MEASURED))
    else:
        idle, burst, listing, old = queue["idle"], queue["burst"], queue["listing"], queue["old"]
        slowest = max(burst["max"], listing["max"])
        section.rows.append(Row(
            "S7", queue_figure, queue_goal,
            f"idle: median {fmt_time(idle['median'])}, slowest {fmt_time(idle['max'])}; 16 at once ({queue['rounds']} "
            f"rounds, {burst['probes']} probes): median {fmt_time(burst['median'])}, slowest {fmt_time(burst['max'])}; "
            f"without pause ({listing['listings']} listings answered): median {fmt_time(listing['median'])}, slowest "
            f"{fmt_time(listing['max'])}. The listing built on the event loop as it used to be, 16 at once: median "
            f"{fmt_time(old['median'])}, slowest {fmt_time(old['max'])}",
            PASS if slowest <= max(0.05, 5 * idle["max"]) else FAIL))
    section.data = {"sizes": sizes, "fit_put": {"a": a, "b": b, "r2": r2},
                    "fit_verify": {"a": va, "b": vb, "r2": vr2}, "tags": tags, "soak": soaked,
                    "stores": stores, "queue": queue}
    section.details = "\n".join([
        md_table(["size", "put (median)", "ns/B", "get (median)", "verify (median)", "reps"],
                 [[fmt_bytes(r["bytes"]), fmt_time(median(r["put"])), f"{nb:.3f}", fmt_time(median(r["get"])),
                   fmt_time(median(r["verify"])), r["reps"]] for r, nb in zip(sizes, ns_per_byte)]),
        "",
        md_table(["tags in the store", "get (median)", "get p99", "calls", "put of one more tag"],
                 [[f"{r['tags']:,}", fmt_time(r["get"]), fmt_time(r["get_p99"]), r["calls"],
                   fmt_time(r["put_into"])] for r in tags]),
        "",
        md_table(["cycles", "RSS"], [[f"{c:,}", fmt_bytes(v)] for c, v in soaked["rss"]]),
        "",
        *([md_table(["GET /queue", "median", "p99", "slowest", "listings answered meanwhile"],
                    [[name, fmt_time(queue[key]["median"]), fmt_time(queue[key]["p99"]), fmt_time(queue[key]["max"]),
                      queue[key]["listings"]] for name, key in (
                        ("idle", "idle"), ("16 listings at once", "burst"), ("16 clients listing without pause", "listing"),
                        ("16 listings at once, built on the event loop (as it used to be)", "old"))]),
           ""] if queue is not None else []),
        "What was timed: `LatentStore.put` of a float32 tensor (allocation from the store's buffer "
        "pool, copy fused with the XXH3 digest), `get` (zero-copy torch views), `verify` (re-hash "
        "and compare) — one torch thread; one slot at a time (depth 1, dropped after each "
        "repetition, untimed). Sizes past the buffer pool's 256 MiB cap get fresh memory on every "
        "put and pay its first-touch page faults (buffers of 32 MiB and more ask for transparent huge "
        "pages, which makes that cheaper where the kernel grants them). So the cost per byte has "
        "three levels: buffers that stay in the CPU caches, buffers recycled from the pool (memory "
        "bandwidth), and fresh memory (bandwidth + page faults). Tags: stores holding N tags of 4 KiB "
        "each, `get` of a random tag per call. Soak: one tag, depth 4, the Wan 2.1 720p shot "
        "shape; RSS (/proc/self/statm) after the warm-up and along the way. S6: ComfyUI in-process, a "
        "stand-in PromptServer so that the Store sends its event; each timed prompt is the executor's "
        "EmptyLatentImage → ZeroCopyLatentStore with a new tag plus the prompt end's durability step; the tags "
        "held before are put into the same store directly (4 KiB, spilled). S7: bench/sections/listing_server.py "
        "in a process of its own (the pack's routes on a real aiohttp app, a stand-in GET /queue, and the old "
        "listing for comparison); the clients and the probe in this process, one probe every 10 ms: during "
        "rounds of 16 listings sent at once until all are answered, and while 16 clients list "
        "without pause.",
    ])
    section.plots = [plot(ctx, sizes, tags, soaked)]
    section.seconds = time.perf_counter() - t_start
    return section


def plot(ctx: Context, sizes, tags, soaked) -> str:
    plt = pyplot()
    fig, axes = plt.subplots(1, 3, figsize=(14, 4.2))
    ax = axes[0]
    mib = [r["bytes"] / MiB for r in sizes]
    for key, label in (("put", "put (copy + digest)"), ("verify", "verify (re-hash)"), ("get", "get (views)")):
        ax.plot(mib, [median(r[key]) for r in sizes], marker="o", label=label)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("latent size (MiB)")
    ax.set_ylabel("seconds (median)")
    ax.set_title("cost against size")
    ax.legend(fontsize=8)
    ax = axes[1]
    ax.plot([r["tags"] for r in tags], [r["get"] * 1e6 for r in tags], marker="o")
    ax.set_xscale("log")
    ax.set_ylim(bottom=0)
    ax.set_xlabel("tags in the store")
    ax.set_ylabel("get latency (µs, median)")
    ax.set_title("lookup against number of tags")
    ax = axes[2]
    ax.plot([c for c, _ in soaked["rss"]], [v / MiB for _, v in soaked["rss"]], marker=".")
    ax.set_xlabel("cycles after warm-up")
    ax.set_ylabel("RSS (MiB)")
    ax.set_title(f"soak: {fmt_bytes(soaked['slot_bytes'])} shots, depth 4")
    fig.tight_layout()
    name = "scale.png"
    fig.savefig(ctx.out_dir / name, dpi=110)
    plt.close(fig)
    return name
