"""The main job: a multi-shot continuity run through the engine's tiers.

Shot latents of real model shapes (Wan 2.1 720p, LTX-2 audio-video, MiniMax
H3 audio-video, FLUX.1 1024^2) are generated deterministically, stored with
digests and spilled to disk; a *new process* opens the spill directory,
restores the newest shot of every tag (verifying every digest), regenerates
the originals from their seeds and compares them bit for bit. It prints the
certificate and the timings.

    python tools/engine_demo.py [--dir DIR] [--shots N]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from zc_pack.zc_engine import LatentStore, digest_tensor  # noqa: E402

# family -> {stream name: shape}; "latent_tensor" is the video (or image) stream.
SHAPES = {
    "wan21_720p_81f": {"latent_tensor": (1, 16, 21, 90, 160)},
    "ltx2_av_768x512_97f": {"latent_tensor": (1, 128, 13, 16, 24), "audio": (1, 8, 121, 16)},
    "minimax_h3_av_1344x768": {"latent_tensor": (1, 24, 7, 48, 84), "audio": (1, 32, 2, 206)},
    "flux1_1024": {"latent_tensor": (1, 16, 128, 128)},
}


def shot_tensors(family: str, shot: int) -> dict[str, torch.Tensor]:
    """The deterministic latent of one shot (stands in for a sampler's output)."""
    gen = torch.Generator().manual_seed(sum(map(ord, family)) * 1000 + shot)
    return {name: torch.randn(shape, generator=gen) for name, shape in SHAPES[family].items()}


def store_shots(spill_dir: Path, shots: int) -> dict:
    record = {"tags": {}, "timings_ms": {}}
    put_ms, flush_ms = [], 0.0
    with LatentStore(spill_dir=spill_dir) as store:
        for family in SHAPES:
            for shot in range(shots):
                tensors = shot_tensors(family, shot)
                t0 = time.perf_counter()
                gen = store.put(family, tensors, {"family": family, "shot": str(shot)}, spill=True)
                put_ms.append((time.perf_counter() - t0) * 1000)
            got = store.get(family)
            record["tags"][family] = {
                "generation": gen, "shot": shots - 1,
                "digests": {name: info.digest for name, info in got.info.items()},
                "bytes": sum(info.nbytes for info in got.info.values()),
            }
        t0 = time.perf_counter()
        store.flush()
        flush_ms = (time.perf_counter() - t0) * 1000
    record["timings_ms"] = {"put_median": sorted(put_ms)[len(put_ms) // 2],
                            "put_total": sum(put_ms), "flush_wait": flush_ms}
    return record


def restore_and_verify(spill_dir: Path, expected: dict) -> dict:
    """Runs in the new process: restore, verify, compare with regenerated originals."""
    results = {}
    with LatentStore(spill_dir=spill_dir) as store:
        for family, want in expected["tags"].items():
            t0 = time.perf_counter()
            got = store.get(family)  # restores from disk and checks every recorded digest
            restore_ms = (time.perf_counter() - t0) * 1000
            originals = shot_tensors(family, want["shot"])
            identical = all(torch.equal(got.tensors[n].view(-1).view(torch.uint8),
                                        originals[n].contiguous().view(-1).view(torch.uint8))
                            for n in originals)
            recomputed = {n: digest_tensor(t) for n, t in got.tensors.items()}
            results[family] = {
                "generation": got.generation,
                "digests_recorded": {n: i.digest for n, i in got.info.items()},
                "digests_recomputed": recomputed,
                "digests_match": recomputed == want["digests"],
                "bit_identical": identical,
                "restore_ms": restore_ms,
            }
    return {"tags": results}


def print_certificate(record: dict, restored: dict, files_ok: str) -> bool:
    ok = True
    print("\nZeroCopy-Continuity certificate (store -> spill -> new process -> restore -> verify)")
    print(f"{'tag':<26} {'gen':>3} {'MB':>7}  {'digest (latent_tensor)':<24} {'restored':>9} {'bit-identical':>13}")
    for family, want in record["tags"].items():
        got = restored["tags"][family]
        same = got["digests_match"] and got["bit_identical"] and got["generation"] == want["generation"]
        ok &= same
        print(f"{family:<26} {got['generation']:>3} {want['bytes'] / 1e6:>7.2f}  "
              f"{got['digests_recomputed']['latent_tensor']:<24} {got['restore_ms']:>7.1f}ms "
              f"{'yes' if same else 'NO':>13}")
    t = record["timings_ms"]
    print(f"\nput (copy + digest) median {t['put_median']:.2f} ms; background spill finished "
          f"{t['flush_wait']:.1f} ms after the last put; restore with verification "
          f"{sum(r['restore_ms'] for r in restored['tags'].values()):.1f} ms in all, in the new process")
    print(f"zc verify on the spill files: {files_ok}")
    print(f"\nresult: {'every shot bit-identical: yes' if ok else 'MISMATCH: see above'}")
    return ok


def verify_files_with_cli(spill_dir: Path) -> str:
    repo = Path(__file__).resolve().parent.parent
    for candidate in (Path(sys.executable).parent / "zc", repo / "build" / "zc"):
        if candidate.exists():
            files = sorted(str(p) for p in spill_dir.glob("*.latent") if not p.name.startswith("."))
            proc = subprocess.run([str(candidate), "verify", *files], capture_output=True, text=True)
            return f"exit {proc.returncode}, {len(files)} files " + ("all OK" if proc.returncode == 0
                                                                    else proc.stdout.strip())
    return "skipped (zc not built)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", type=Path, help="spill directory (default: a fresh temporary one)")
    parser.add_argument("--shots", type=int, default=3, help="shots per tag (default 3)")
    parser.add_argument("--restore-from", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.restore_from:  # the new process
        expected = json.loads((args.restore_from / "expected.json").read_text())
        print(json.dumps(restore_and_verify(args.restore_from, expected)))
        return 0

    spill_dir = args.dir or Path(tempfile.mkdtemp(prefix="zc-demo-"))
    print(f"demo: storing {args.shots} shots of {len(SHAPES)} model families in {spill_dir}")
    record = store_shots(spill_dir, args.shots)
    (spill_dir / "expected.json").write_text(json.dumps(record))
    print("demo: restoring in a new process")
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--restore-from", str(spill_dir)],
                          capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        print(proc.stderr, file=sys.stderr)
        return 1
    restored = json.loads(proc.stdout.strip().splitlines()[-1])
    ok = print_certificate(record, restored, verify_files_with_cli(spill_dir))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
