#!/usr/bin/env python3
"""What travels to the GPU machine, and the stand-in for its Python here (no GPU needed).

    python bench/gpu/carry.py wheels                 # NAME==VERSION [pure] of carry-wheels.txt, one a line
    python bench/gpu/carry.py check-wheels DIR       # DIR holds exactly one wheel of each, for CPython 3.12
    python bench/gpu/carry.py prune-image PYTHON     # uninstall from PYTHON's venv what the image lacks
    python bench/gpu/carry.py sizes PATH ...         # bytes of each path and in all, and the tree's

Used by bench/gpu/prepare_device.sh and the dry run (bench/gpu/dry_run.sh); docs/gpu.md says how.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
CARRY_LIST = HERE / "carry-wheels.txt"
IMAGE_LIST = HERE / "image-list.txt"
CARRY_DIR = REPO / ".gpu-carry"      # the one ignored path that travels (docs/gpu.md)
LIMIT_CARRY = 60 << 20               # the carried files
LIMIT_TRIP = 64 << 20                # everything that travels: tracked + untracked-not-ignored + carried
MAX_CARRY_PATHS = 8


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def carry_wheels(path: Path = CARRY_LIST) -> list[tuple[str, str, bool]]:
    """(name, version, pure) of every wheel to carry; pure: the py3-none-any build is wanted."""
    out = []
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        m = re.fullmatch(r"([A-Za-z0-9_.-]+)==([^\s;]+)\s*(pure)?", line)
        if not m:
            raise SystemExit(f"{path}: cannot read {line!r} (want NAME==VERSION [pure])")
        out.append((m.group(1), m.group(2), bool(m.group(3))))
    return out


def image_names(path: Path = IMAGE_LIST) -> set[str]:
    return {canonical(line.strip()) for line in path.read_text().splitlines()
            if line.strip() and not line.startswith("#")}


def wheel_name(filename: str) -> tuple[str, str, list[str]]:
    """(canonical name, version, tags 'py-abi-platform') of a wheel file name."""
    parts = filename[:-4].split("-")
    name, version, py, abi, plat = parts[0], parts[1], parts[-3], parts[-2], parts[-1]
    return canonical(name), version, [f"{p}-{a}-{pl}" for p in py.split(".") for a in abi.split(".")
                                      for pl in plat.split(".")]


def installs_on_cp312_x86_64(tags: list[str]) -> bool:
    for tag in tags:
        py, abi, plat = tag.split("-")
        py_ok = py in ("py3", "py312", "cp312") or (py.startswith("cp3") and abi == "abi3" and int(py[3:]) <= 12)
        plat_ok = plat == "any" or (plat.endswith("x86_64") and plat.startswith(("manylinux", "linux")))
        if py_ok and plat_ok:
            return True
    return False


def check_wheels(folder: Path, wanted=None) -> list[str]:
    """What is wrong with the folder's wheels: missing, extra, duplicate or not for CPython 3.12 x86_64."""
    wanted = wanted if wanted is not None else carry_wheels()
    have: dict[str, list[tuple[str, str]]] = {}
    problems = []
    for wheel in sorted(folder.glob("*.whl")):
        name, version, tags = wheel_name(wheel.name)
        have.setdefault(name, []).append((version, wheel.name))
        if not installs_on_cp312_x86_64(tags):
            problems.append(f"{wheel.name}: not a wheel CPython 3.12 on manylinux x86_64 installs")
    for name, version, _ in wanted:
        got = have.pop(canonical(name), [])
        if not got:
            problems.append(f"{name}=={version}: no wheel")
        elif len(got) > 1 or got[0][0] != version:
            problems.append(f"{name}=={version}: found {', '.join(w for _, w in got)}")
    problems += [f"{w}: not in bench/gpu/carry-wheels.txt" for name, got in have.items()
                 if name != "zerocopy-engine" for _, w in got]
    return problems


def prune_image(python: str) -> list[str]:
    """Uninstall from that Python's environment every distribution the GPU image does not list."""
    out = subprocess.run([python, "-m", "pip", "list", "--format=json", "--disable-pip-version-check"],
                         capture_output=True, text=True, check=True).stdout
    image = image_names()
    extra = sorted(d["name"] for d in json.loads(out) if canonical(d["name"]) not in image)
    if extra:
        subprocess.run([python, "-m", "pip", "uninstall", "-q", "-y", "--disable-pip-version-check", *extra],
                       check=True)
    return extra


def size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def tree_bytes(repo: Path = REPO) -> int:
    """What travels besides the carried paths: tracked files and untracked files git does not ignore."""
    out = subprocess.run(["git", "-C", str(repo), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                         capture_output=True, check=True).stdout
    return sum((repo / p).stat().st_size for p in out.decode().split("\0") if p and (repo / p).is_file())


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    cmd, args = argv[0], argv[1:]
    if cmd == "wheels":
        for name, version, pure in carry_wheels():
            print(f"{name}=={version}{' pure' if pure else ''}")
        return 0
    if cmd == "check-wheels":
        problems = check_wheels(Path(args[0]))
        for p in problems:
            print(f"carry: {p}", file=sys.stderr)
        return 1 if problems else 0
    if cmd == "prune-image":
        extra = prune_image(args[0])
        print(f"carry: removed what the GPU image does not list: {', '.join(extra) or 'nothing'}")
        return 0
    if cmd == "sizes":
        paths = [Path(a) for a in args]
        if len(paths) > MAX_CARRY_PATHS:
            print(f"carry: {len(paths)} paths to carry, at most {MAX_CARRY_PATHS}", file=sys.stderr)
            return 1
        total = 0
        for p in paths:
            n = size(p)
            total += n
            print(f"carry: {p}: {n / (1 << 20):.1f} MiB")
        tree = tree_bytes()
        print(f"carry: carried {total / (1 << 20):.1f} MiB (limit {LIMIT_CARRY >> 20} MiB); with the working tree "
              f"({tree / (1 << 20):.1f} MiB) {(total + tree) / (1 << 20):.1f} MiB travel (limit {LIMIT_TRIP >> 20} MiB)")
        if total >= LIMIT_CARRY or total + tree >= LIMIT_TRIP:
            print("carry: TOO LARGE: drop a wheel or shrink the ComfyUI copy", file=sys.stderr)
            return 1
        return 0
    print(f"carry: unknown command {cmd!r}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
