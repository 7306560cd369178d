#!/usr/bin/env bash
# The GPU run, dry, on this machine (no GPU): proves that .gpu-carry/ (bench/gpu/prepare_device.sh)
# holds everything the GPU machine's image lacks. In a stand-in for the image's /opt/torch/.venv
# (a Python 3.12 venv holding only bench/gpu/image-packages.txt: torch 2.11.0, on the CPU here,
# pruned to what bench/gpu/image-list.txt names; made once, then reused while that file is unchanged):
#   1. bench/gpu/device_run.sh installs the carried wheels as it does there (pip --no-index --no-deps
#      --target), unpacks ComfyUI, imports every carried module, and must stop with its one line
#      "device_run: no CUDA device ..." and exit status 2, not an ImportError;
#   2. in that installed set ComfyUI's main/execution/server/nodes import and the pack loads with
#      its five nodes (bench/gpu/import_check.py, on the CPU, with the carried ComfyUI copy);
#   3. bench/gpu/run_all.py --plan lists every run, none of them "not run".
#   bench/gpu/dry_run.sh          exit 0: all three held; 1: one did not; 77: cannot run here (why)
# Environment: ZC_DRYRUN_DIR (default build-gpu-dryrun/), ZC_DRYRUN_PYTHON (a Python 3.12; default
# python3.12 on PATH or pyenv's newest 3.12).
set -uo pipefail
cd "$(dirname "$0")/../.."
REPO=$PWD
DIR=${ZC_DRYRUN_DIR:-$REPO/build-gpu-dryrun}
say() { echo "dry_run: $*"; }
skip() { echo "dry_run: skipped: $*"; exit 77; }
bad() { echo "dry_run: FAILED: $*" >&2; failed=1; }
started=$SECONDS
failed=0

[ -d .gpu-carry/wheels ] && [ -f .gpu-carry/ComfyUI.tar.xz ] ||
    skip "no .gpu-carry/ (run bench/gpu/prepare_device.sh first)"
is312() { [ -n "$1" ] && "$1" -c 'import sys; assert sys.version_info[:2] == (3, 12)' 2>/dev/null; }
PY312=${ZC_DRYRUN_PYTHON:-}
if [ -z "$PY312" ]; then
    for candidate in $(command -v python3.12) $(ls -d "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.12.*/bin/python3.12 \
                       2>/dev/null | sort -rV) /usr/bin/python3.12 /usr/local/bin/python3.12; do
        is312 "$candidate" && { PY312=$candidate; break; }
    done
fi
is312 "$PY312" || skip "no Python 3.12 here (the GPU machine's is 3.12.3; set ZC_DRYRUN_PYTHON)"

# The stand-in for the image's Python: made once per image-packages.txt.
BASE=$DIR/base312
stamp=$(cat bench/gpu/image-packages.txt bench/gpu/image-list.txt | sha256sum | cut -c1-16)
if [ "$(cat "$BASE/.zc-stamp" 2>/dev/null)" != "$stamp" ]; then
    say "making the stand-in for the image's Python in $BASE ($("$PY312" --version); a few GB, minutes)"
    rm -rf "$BASE" && mkdir -p "$DIR" && "$PY312" -m venv "$BASE" || { bad "venv"; exit 1; }
    "$BASE/bin/python" -m pip install -q --disable-pip-version-check -r bench/gpu/image-packages.txt 2>&1 |
        grep -v "^WARNING: Location" || true
    "$BASE/bin/python" -c 'import torch' || { bad "torch does not import in $BASE"; exit 1; }
    "$BASE/bin/python" bench/gpu/carry.py prune-image "$BASE/bin/python" || { bad "prune"; exit 1; }
    echo "$stamp" >"$BASE/.zc-stamp"
fi
"$BASE/bin/python" - <<'EOF' || bad "the stand-in holds packages the image does not list"
import importlib.metadata as md, re, sys
sys.path.insert(0, "bench/gpu")
from carry import canonical, image_names
extra = sorted({canonical(d.metadata["Name"]) for d in md.distributions()} - image_names())
if extra:
    sys.exit(f"dry_run: not in the image: {', '.join(extra)}")
EOF
say "stand-in ready: $("$BASE/bin/python" -c 'import sys, torch; print(f"Python {sys.version.split()[0]}, torch {torch.__version__}")')"

# 1. device_run.sh as on the GPU machine, but here: one line, exit 2.
OUT=$DIR/out WORK=$DIR/work
rm -rf "$OUT" "$WORK"
said=$(OUT=$OUT PYTHON=$BASE/bin/python ZC_DEVICE_WORK=$WORK bash bench/gpu/device_run.sh 2>&1)
status=$?
lines=$(printf '%s\n' "$said" | grep -c .)
if [ $status = 2 ] && [ "$lines" = 1 ] && [[ "$said" == "device_run: no CUDA device"* ]]; then
    say "device_run.sh: exit 2, one line: $said"
else
    bad "device_run.sh: exit $status, $lines line(s): $said"
fi
if grep -E "Traceback|ImportError|ModuleNotFoundError" "$OUT/device_run.log" >/dev/null; then bad "device_run.log has an error:"; cat "$OUT/device_run.log" >&2; fi
sed -n 's/^device_run: carried modules import: /dry_run: carried modules import: /p' "$OUT/device_run.log"

# 2. and 3. In the set device_run.sh installed, with the carried ComfyUI.
export PYTHONPATH=$WORK/site COMFYUI_PATH=$WORK/ComfyUI
check=$("$BASE/bin/python" bench/gpu/import_check.py --cpu --work-dir "$DIR/comfy-work" 2>"$DIR/import_check.log")
if [ $? = 0 ]; then say "${check#import_check: }"; else bad "import_check: $(tail -3 "$DIR/import_check.log")"; fi
"$BASE/bin/python" bench/gpu/run_all.py --plan --work-dir "$DIR/run" >"$DIR/plan.txt" 2>&1 || bad "run_all.py --plan failed"
planned=$("$BASE/bin/python" -c 'import sys; sys.path.insert(0, "."); from bench.gpu.run_all import ORDER; print(" ".join(ORDER))')
listed=0
for run in $planned; do
    if grep -q "^  $run (.*; cap [0-9]* s" "$DIR/plan.txt"; then listed=$((listed + 1)); else bad "run_all --plan: $run missing or not run"; fi
done
say "run_all.py --plan: $listed of $(echo $planned | wc -w) runs listed, each with its cap: $planned"
if [ $failed = 0 ]; then
    say "ok in $((SECONDS - started)) s: the carried set is complete for this ComfyUI"
else
    say "FAILED in $((SECONDS - started)) s"
fi
exit $failed
