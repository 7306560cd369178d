#!/usr/bin/env python3
"""The files the GPU machine returned, into the benchmark and the README (any machine, no GPU).

    python bench/gpu/import_results.py FOLDER [--results bench/results] [--readme README.md]

FOLDER holds what bench/gpu/device_run.sh wrote into $OUT: gpu-N-RUN.json (one per run, written as
it ended) and device_run.log. Merges them into one run_all document (RESULTS/gpu.json), where every
run that did not come back is NOT MEASURED with the reason (the log tells whether it had started),
never an estimate; then `bench/run.py --only gpu --update` fills the G rows of RESULTS/bench.json
and bench.md with it, with the machine (GPUs, driver, torch, CUDA, ComfyUI version and commit), and
tools/update_readme_bench.py puts the table into the README. Exit status: bench/run.py's, or 1 when
FOLDER holds no GPU run file.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.gpu.run_all import FORMAT, ORDER  # noqa: E402

LOG = "device_run.log"


def not_back(name: str, log: str | None) -> str:
    """Why a run has no file: from the command's log, if it came back."""
    if log is None:
        return f"no result came back from the GPU machine for this run (no gpu-*-{name}.json, no {LOG})"
    started = re.search(rf"^run_all: {re.escape(name)}: .*\(up to (\d+) s\)$", log, re.M)
    if started:
        return (f"started on the GPU machine (up to {started.group(1)} s) but did not finish: the command was "
                f"ended (its time limit) before this run wrote its result; see {LOG}")
    if "device_run: no CUDA device" in log:
        return "the GPU command found no CUDA device; nothing was measured"
    return f"not reached: the GPU command ended before this run started; see {LOG}"


def merge_folder(folder: Path) -> dict:
    """One run_all document from a folder of per-run documents (and/or a whole gpu.json)."""
    parts = sorted(folder.glob("gpu-*.json"), key=lambda p: (int(re.match(r"gpu-(\d+)", p.name).group(1))
                                                            if re.match(r"gpu-(\d+)-", p.name) else 0, p.name))
    parts += [p for p in (folder / "gpu.json",) if p.is_file()]
    docs = []
    for path in parts:
        try:
            doc = json.loads(path.read_text())
        except ValueError as exc:
            raise ValueError(f"{path} could not be read: {exc}") from exc
        if doc.get("format") != FORMAT:
            raise ValueError(f"{path} is not a {FORMAT} document (format {doc.get('format')!r})")
        docs.append((path, doc))
    if not docs:
        raise ValueError(f"{folder} holds no gpu-*.json from bench/gpu/device_run.sh")
    log_path = folder / LOG
    log = log_path.read_text(errors="replace") if log_path.is_file() else None
    runs: dict[str, dict] = {}
    for _, doc in docs:
        runs.update(doc.get("runs", {}))
    for name in ORDER:
        if name not in runs:
            runs[name] = {"label": name, "status": "not_measured", "seconds": 0.0, "reason": not_back(name, log)}
    first, last = docs[0][1], docs[-1][1]
    return {"format": FORMAT, "written_by": "bench/gpu/import_results.py (from bench/gpu/run_all.py's files)",
            "date_utc": last.get("date_utc"), "mode": first.get("mode"), "budget_s": first.get("budget_s"),
            "elapsed_s": round(sum(r.get("seconds", 0) for r in runs.values()), 1), "machine": first["machine"],
            "runs": {name: runs[name] for name in [*ORDER, *sorted(set(runs) - set(ORDER))]},
            "returned": {"folder": str(folder), "files": [p.name for p, _ in docs] + ([LOG] if log else [])}}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("folder", type=Path, help="what came back from the GPU machine ($OUT of device_run.sh)")
    ap.add_argument("--results", type=Path, default=REPO / "bench" / "results",
                    help="the benchmark's folder (bench.json, bench.md; gpu.json is written there)")
    ap.add_argument("--readme", type=Path, default=REPO / "README.md", help="the README whose table is updated")
    opts = ap.parse_args(argv)
    try:
        doc = merge_folder(opts.folder)
    except ValueError as exc:
        print(f"import_results: {exc}", file=sys.stderr)
        return 1
    target = opts.results / "gpu.json"
    target.write_text(json.dumps(doc, indent=1, default=str) + "\n")
    for name, r in doc["runs"].items():
        print(f"import_results: {name}: {r['status']}" + (f" ({r['reason']})" if r.get("reason") else ""))
    print(f"import_results: wrote {target}")
    bench = subprocess.run([sys.executable, str(REPO / "bench" / "run.py"), "--out", str(opts.results),
                            "--only", "gpu", "--update", "--gpu-json", str(target)])
    if bench.returncode != 0:
        return bench.returncode
    from tools import update_readme_bench
    text = opts.readme.read_text()
    opts.readme.write_text(update_readme_bench.updated_readme(text, opts.results / "bench.md"))
    print(f"import_results: updated the G rows in {opts.results / 'bench.md'} and the table in {opts.readme}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
