#!/usr/bin/env bash
# Step 2 of 2 (docs/gpu.md): every GPU row, as ONE command on the GPU machine, within its limit.
#   OUT=/folder/for/results bash bench/gpu/device_run.sh        (needs .gpu-carry/ from step 1)
# Environment: OUT (required: results go there), ZC_DEVICE_LIMIT_S (the command's whole limit,
# default 540), PYTHON (default /opt/torch/.venv/bin/python3 where it exists, else python3),
# ZC_DEVICE_WORK (scratch, default /tmp/zc_device: installed wheels, ComfyUI, the random DiT),
# ZC_RUN_ALL_ARGS (more arguments for run_all.py, e.g. --quick).
#  1. installs the carried wheels with pip --no-index --no-deps --target and sets PYTHONPATH,
#     unpacks the carried ComfyUI and sets COMFYUI_PATH, imports every carried module;
#  2. without a CUDA device stops here: one line "device_run: no CUDA device ...", exit status 2;
#  3. prints nvidia-smi and the torch/CUDA versions;
#  4. runs bench/gpu/run_all.py with the time left (less a margin): device tier, the gray padding's
#     encode (P3), residency (classic, dynamic VRAM), overhead on the GPU, allocator variants, in that
#     order; each run's JSON lands in $OUT (gpu-N-RUN.json) the moment it ends, and everything
#     printed goes to $OUT/device_run.log as it is printed: a command stopped at its limit still
#     returns what it measured.
# At most 8 files come back: the log and 7 run files (P3's record joins the device tier's file).
# Exit status: run_all's (0: every run measured, 1: some not), 2: no CUDA device, 3: the carried
# set is incomplete or the set-up failed.
set -uo pipefail
cd "$(dirname "$0")/../.."
REPO=$PWD
[ -n "${OUT:-}" ] || { echo "device_run: set OUT to the folder the results go to" >&2; exit 3; }
mkdir -p "$OUT" || exit 3
LIMIT=${ZC_DEVICE_LIMIT_S:-540}
MARGIN=25                                  # run_all's own ending, the log's last lines
WORK=${ZC_DEVICE_WORK:-/tmp/zc_device}
CARRY=$REPO/.gpu-carry
LOG=$OUT/device_run.log
if [ -z "${PYTHON:-}" ]; then
    PYTHON=python3
    [ -x /opt/torch/.venv/bin/python3 ] && PYTHON=/opt/torch/.venv/bin/python3
fi
export PYTHONUNBUFFERED=1
: >"$LOG"
log() { echo "device_run: $*" >>"$LOG"; }                 # before the CUDA check: the log only
fail() { echo "device_run: $*" | tee -a "$LOG" >&2; exit 3; }

log "start $(date -u +%FT%TZ); limit ${LIMIT} s; python $PYTHON; checkout $(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo '?')"
[ -d "$CARRY/wheels" ] && [ -f "$CARRY/ComfyUI.tar.xz" ] ||
    fail "no .gpu-carry/ (wheels/, ComfyUI.tar.xz): run bench/gpu/prepare_device.sh first and carry .gpu-carry"

# 1. The carried wheels and ComfyUI.
rm -rf "$WORK/site" "$WORK/ComfyUI" && mkdir -p "$WORK" || fail "cannot make $WORK"
"$PYTHON" -m pip install -q --disable-pip-version-check --no-index --no-deps --no-compile --target "$WORK/site" \
    "$CARRY"/wheels/*.whl >>"$LOG" 2>&1 || fail "pip could not install the carried wheels (see $LOG)"
export PYTHONPATH="$WORK/site${PYTHONPATH:+:$PYTHONPATH}"
"$PYTHON" - "$CARRY/ComfyUI.tar.xz" "$WORK" >>"$LOG" 2>&1 <<'EOF' || fail "cannot unpack the carried ComfyUI (see $LOG)"
import sys, tarfile
with tarfile.open(sys.argv[1]) as tar:
    tar.extractall(sys.argv[2], filter="data") if hasattr(tarfile, "data_filter") else tar.extractall(sys.argv[2])
EOF
export COMFYUI_PATH="$WORK/ComfyUI"
log "installed $(ls "$CARRY"/wheels/*.whl | wc -l) wheels into $WORK/site; ComfyUI in $COMFYUI_PATH ($(cat "$COMFYUI_PATH/ZC_SOURCE.json" 2>/dev/null | tr -d '\n'))"
# Every carried module imports (an incomplete carry fails here, in one line, not in every run).
"$PYTHON" - "$WORK/site" >>"$LOG" 2>&1 <<'EOF' || fail "a carried module does not import: $(tail -1 "$LOG")"
import importlib, sys
from pathlib import Path
names = sorted({p.name.split(".")[0] for p in Path(sys.argv[1]).iterdir()
                if (p.is_dir() and "." not in p.name) or p.suffix in (".py", ".so")} - {"bin"})
for name in names:
    try:
        importlib.import_module(name)
    except Exception as exc:
        sys.exit(f"import {name}: {type(exc).__name__}: {exc}")
print(f"device_run: carried modules import: {', '.join(names)}")
EOF

# 2. A CUDA device, or one line and exit 2.
cuda=$("$PYTHON" -c 'import torch; print("yes" if torch.cuda.is_available() else "no", torch.__version__, torch.version.cuda)' 2>>"$LOG") ||
    fail "torch does not import in $PYTHON (see $LOG)"
set -- $cuda
if [ "$1" != yes ]; then
    echo "device_run: no CUDA device (torch $2, torch.cuda.is_available() is False); nothing was measured" | tee -a "$LOG" >&2
    exit 2
fi

# From here on everything printed goes to the terminal and, as it is printed, to the log.
exec > >(tee -a "$LOG") 2>&1
echo "device_run: torch $2, CUDA $3; $(sed -n 's/^device_run: installed //p' "$LOG")"
# 3. The machine.
timeout 20 nvidia-smi || echo "device_run: nvidia-smi failed or is missing"
"$PYTHON" - <<'EOF'
import torch
try:
    cudnn = torch.backends.cudnn.version()
except Exception as exc:
    cudnn = f"unknown ({type(exc).__name__})"
print(f"device_run: torch {torch.__version__}, CUDA {torch.version.cuda}, cuDNN {cudnn}, "
      f"{torch.cuda.device_count()} device(s): "
      + "; ".join(f"cuda:{i} {torch.cuda.get_device_name(i)}" for i in range(torch.cuda.device_count())))
EOF
"$PYTHON" -m pip list --format=freeze --disable-pip-version-check 2>/dev/null | tr '\n' ' ' | sed 's/^/device_run: packages: /'
echo

# 4. The runs, within what is left of the limit.
budget=$((LIMIT - SECONDS - MARGIN))
[ "$budget" -ge 20 ] || { echo "device_run: only ${budget} s left for the runs; nothing was measured"; exit 1; }
echo "device_run: run_all.py with --budget-s $budget (${SECONDS} s spent on set-up)"
# shellcheck disable=SC2086
"$PYTHON" bench/gpu/run_all.py --budget-s "$budget" --each-dir "$OUT" --tee --work-dir "$WORK/run" \
    --out "$WORK/gpu.json" ${ZC_RUN_ALL_ARGS:-}
status=$?
echo "device_run: done in ${SECONDS} s, exit ${status}; $(ls "$OUT" | tr '\n' ' ')"
echo "device_run: then, here or on any machine: python bench/gpu/import_results.py FOLDER-WITH-THE-RETURNED-FILES"
exit $status
