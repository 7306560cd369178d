#!/usr/bin/env python3
"""Does ComfyUI import, and does this pack load in it, with the packages this Python has?

    COMFYUI_PATH=/path/to/ComfyUI python bench/gpu/import_check.py [--cpu] [--work-dir DIR]

The check the GPU dry run makes (tests/python/test_gpu_prepare.py, docs/gpu.md): imports ComfyUI's
`main` (as `python main.py` would, without starting the server), `execution`, `server` and `nodes`,
loads ComfyUI's built-in extra nodes and then this pack through ComfyUI's own custom-node loader, and
checks that all five ZeroCopy nodes are registered. A built-in extra node that fails to import is an
error unless the module it misses is one bench/gpu/carry-wheels.txt leaves out on purpose (its
`# not carried:` lines). Prints one `import_check: ok ...` line and exits 0, or says what failed
and exits 1.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
NODES = ("ZeroCopyLatentStore", "ZeroCopyLatentLoad", "ZeroCopyLatentHandoff", "ZeroCopyVRAMPin",
         "ZeroCopyFilmAssemble", "ZeroCopyFilmRender")
CARRY_LIST = Path(__file__).resolve().parent / "carry-wheels.txt"


def not_carried(path: Path = CARRY_LIST) -> dict[str, str]:
    """{module: why} for the `# not carried: module[, module] - why` lines of the carry list."""
    out = {}
    for line in path.read_text().splitlines():
        m = re.match(r"#\s*not carried:\s*([\w., ]+?)\s+-\s+(.*)", line.strip())
        if m:
            for module in m.group(1).replace(",", " ").split():
                out[module] = m.group(2)
    return out


class Failures(logging.Handler):
    """ComfyUI logs each extra node it cannot import as 'Cannot import PATH module ...: ERROR'."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.seen: dict[str, str] = {}

    def emit(self, record):
        m = re.match(r"Cannot import (\S+) module for custom nodes: (.*)", record.getMessage(), re.S)
        if m:
            self.seen[Path(m.group(1)).name] = m.group(2).strip().splitlines()[-1]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--comfyui", type=Path, default=os.environ.get("COMFYUI_PATH") or None)
    ap.add_argument("--cpu", action="store_true", help="ComfyUI's --cpu (a machine without a GPU)")
    ap.add_argument("--work-dir", type=Path, default=None, help="ComfyUI's input/output folders (default: a temp dir)")
    opts = ap.parse_args(argv)
    if opts.comfyui is None or not (opts.comfyui / "main.py").is_file():
        print(f"import_check: --comfyui/COMFYUI_PATH {opts.comfyui}: not a ComfyUI tree (no main.py)", file=sys.stderr)
        return 1
    root = opts.comfyui.resolve()
    work = opts.work_dir or Path(tempfile.mkdtemp(prefix="zc_import_check_"))
    failures = Failures()
    logging.getLogger().addHandler(failures)
    sys.argv = [str(root / "main.py"), *(["--cpu"] if opts.cpu else [])]  # comfy.cli_args parses sys.argv
    sys.path[:0] = [str(root), str(REPO)]
    os.chdir(root)
    import main as comfy_main  # noqa: F401  (its module-level set-up, as `python main.py` runs it)
    import execution  # noqa: F401
    import nodes
    import server  # noqa: F401
    from tools.comfy_inprocess import ComfyInProcess
    comfy = ComfyInProcess(root, work, test_nodes=False, cpu=opts.cpu)
    missing = [n for n in NODES if n not in nodes.NODE_CLASS_MAPPINGS]
    allowed = not_carried()
    extra_failed, tolerated = [], []
    for name, error in sorted(failures.seen.items()):
        m = re.search(r"No module named '([\w.]+)'", error)
        top = m.group(1).split(".")[0] if m else None
        (tolerated if top in allowed else extra_failed).append(f"{name} ({error})")
    problems = []
    if missing:
        problems.append(f"the pack registered no {', '.join(missing)}")
    if extra_failed:
        problems.append("ComfyUI's extra nodes failed to import: " + "; ".join(extra_failed))
    if problems:
        print("import_check: FAILED: " + " | ".join(problems), file=sys.stderr)
        return 1
    print(f"import_check: ok: ComfyUI {comfy.version()} at {root} (main, execution, server, nodes imported); "
          f"the pack loaded, {len(NODES)} nodes registered ({', '.join(NODES)}); "
          f"{len(nodes.NODE_CLASS_MAPPINGS)} node types in all"
          + (f"; not carried on purpose, so not imported: {'; '.join(tolerated)}" if tolerated else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
