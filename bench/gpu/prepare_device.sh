#!/usr/bin/env bash
# Step 1 of 2 (docs/gpu.md): put into .gpu-carry/ (ignored by git) everything the GPU machine's run
# needs and its image lacks, on any Linux machine with the network (no GPU needed):
#   .gpu-carry/wheels/       the engine wheel this checkout builds (engine/, like ./setup.sh, with
#                            .venv's scikit-build-core and auditwheel) and, for CPython 3.12 on
#                            manylinux x86_64, every wheel in bench/gpu/carry-wheels.txt (pip download)
#   .gpu-carry/ComfyUI.tar.xz  the ComfyUI tree in COMFYUI_PATH without .git, models, input,
#                            output, user, temp and caches (xz: 5 MiB; the tree is 27 MiB, the
#                            trip's limit 64 MiB), with ZC_SOURCE.json (where it came from, commit)
#   .gpu-carry/manifest.json what is in it and how large
# then checks the carried size (< 60 MiB; with the working tree < 64 MiB) and prints the carry list.
#   COMFYUI_PATH=/path/to/ComfyUI bench/gpu/prepare_device.sh [--no-engine-build]
# --no-engine-build takes dist/zerocopy_engine-*.whl as it is (./setup.sh built it).
set -euo pipefail
cd "$(dirname "$0")/../.."
REPO=$PWD
CARRY=.gpu-carry
build_engine=1
[ "${1:-}" = "--no-engine-build" ] && build_engine=0
say() { echo "prepare: $*"; }
die() { echo "prepare: $*" >&2; exit 1; }

[ -n "${COMFYUI_PATH:-}" ] || die "set COMFYUI_PATH to a ComfyUI tree (main.py, comfy/)"
[ -f "$COMFYUI_PATH/main.py" ] && [ -d "$COMFYUI_PATH/comfy" ] || die "COMFYUI_PATH=$COMFYUI_PATH is not a ComfyUI tree"
PY=${PYTHON:-}
[ -n "$PY" ] || { [ -x .venv/bin/python ] && PY=.venv/bin/python || PY=python3; }
started=$SECONDS
rm -rf "$CARRY.new" && mkdir -p "$CARRY.new/wheels"

# 1. The engine wheel (py3-none-manylinux_2_N_x86_64: any CPython 3 there).
if [ $build_engine = 1 ]; then
    raw=build/gpu-wheel-raw
    rm -rf "$raw" && mkdir -p "$raw"
    say "building the engine wheel from engine/"
    "$PY" -m pip wheel --quiet --disable-pip-version-check --no-build-isolation --no-deps -w "$raw" ./engine
    PATH="$REPO/.venv/bin:$PATH" "$PY" -m auditwheel repair --only-plat -w "$CARRY.new/wheels" "$raw"/zerocopy_engine-*.whl \
        >"$raw/auditwheel.log" 2>&1 || { cat "$raw/auditwheel.log" >&2; die "auditwheel repair failed"; }
else
    ls dist/zerocopy_engine-*.whl >/dev/null 2>&1 || die "no dist/zerocopy_engine-*.whl (run ./setup.sh, or drop --no-engine-build)"
    cp dist/zerocopy_engine-*.whl "$CARRY.new/wheels/"
fi
[ "$(ls "$CARRY.new"/wheels/zerocopy_engine-*.whl | wc -l)" = 1 ] || die "expected one engine wheel"

# 2. The wheels the image lacks, for the GPU machine's Python (not this one's).
say "downloading $(python3 bench/gpu/carry.py wheels | wc -l) wheels for CPython 3.12 / manylinux x86_64"
while read -r spec pure; do
    if [ "$pure" = pure ]; then
        tags=(--implementation py --abi none --platform any)
    else
        tags=(--implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64
              --platform manylinux2014_x86_64 --platform manylinux_2_12_x86_64 --platform manylinux2010_x86_64)
    fi
    "$PY" -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: --python-version 3.12 \
        "${tags[@]}" -d "$CARRY.new/wheels" "$spec" 2>&1 | grep -v "^WARNING: Location" >&2 || true
done < <(python3 bench/gpu/carry.py wheels)
python3 bench/gpu/carry.py check-wheels "$CARRY.new/wheels" || die "the downloaded wheels are not the list's (see above)"

# 3. ComfyUI without .git, models, input/output and caches; where it came from.
say "copying ComfyUI from $COMFYUI_PATH"
python3 - "$COMFYUI_PATH" "$CARRY.new/ComfyUI.tar.xz" <<'EOF'
import io, json, subprocess, sys, tarfile
from pathlib import Path
src, dest = Path(sys.argv[1]).resolve(), sys.argv[2]
SKIP_TOP = {".git", "models", "input", "output", "user", "temp", ".venv", "venv", "custom_nodes"}
SKIP_ANY = {"__pycache__", ".pytest_cache", ".ruff_cache", ".mypy_cache"}
try:
    commit = subprocess.run(["git", "-C", str(src), "rev-parse", "HEAD"], capture_output=True, text=True,
                            timeout=20).stdout.strip() or f"unknown ({src} is not a git checkout)"
except OSError:
    commit = "unknown (git not available)"
version = "unknown"
for line in (src / "comfyui_version.py").read_text().splitlines() if (src / "comfyui_version.py").is_file() else []:
    if line.startswith("__version__"):
        version = line.split("=", 1)[1].strip().strip("\"'")
def keep(info):
    parts = Path(info.name).parts
    if len(parts) > 1 and parts[1] in SKIP_TOP or SKIP_ANY & set(parts) or info.name.endswith(".pyc"):
        return None
    return info
with tarfile.open(dest, "w:xz", preset=9) as tar:
    tar.add(src, arcname="ComfyUI", filter=keep)
    for top in ("models", "input", "output", "custom_nodes"):  # empty, as ComfyUI expects them
        info = tarfile.TarInfo(f"ComfyUI/{top}"); info.type = tarfile.DIRTYPE; info.mode = 0o755
        tar.addfile(info)
    record = json.dumps({"source": str(src), "commit": commit, "version": version}, indent=1).encode()
    info = tarfile.TarInfo("ComfyUI/ZC_SOURCE.json"); info.size = len(record); info.mode = 0o644
    tar.addfile(info, io.BytesIO(record))
print(f"prepare: ComfyUI {version}, commit {commit}")
EOF

# 4. The manifest, the size check, and the carry list.
python3 - "$CARRY.new" <<'EOF'
import json, sys
from pathlib import Path
root = Path(sys.argv[1])
files = sorted(p for p in root.rglob("*") if p.is_file())
json.dump({"written_by": "bench/gpu/prepare_device.sh", "files": {str(p.relative_to(root)): p.stat().st_size
                                                                   for p in files}},
          open(root / "manifest.json", "w"), indent=1)
EOF
rm -rf "$CARRY" && mv "$CARRY.new" "$CARRY"
python3 bench/gpu/carry.py sizes "$CARRY/wheels" "$CARRY/ComfyUI.tar.xz" || die "too large to carry"
say "done in $((SECONDS - started)) s"
echo "carry: [\"$CARRY\"]"
echo "next, on the GPU machine (docs/gpu.md): bash bench/gpu/device_run.sh   (carry $CARRY, limit 540 s)"
