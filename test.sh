#!/usr/bin/env bash
# Run every test: C unit tests under ASan+UBSan, the concurrency test under
# TSan, the malformed-file corpus, the Python tests (pytest + hypothesis) with
# the optimised engine and again the ownership tests with the ASan engine,
# and the real-ComfyUI integration tests when COMFYUI_PATH is set.
# Prints one closing line "tests: N passed, N failed, N skipped".
set -uo pipefail
cd "$(dirname "$0")"
if [ ! -x .venv/bin/python ]; then
    echo "test: .venv is missing; run ./setup.sh first" >&2
    exit 1
fi
logs=build/test-logs
rm -rf "$logs" && mkdir -p "$logs"
status=0
stage() { # name, command...
    local name=$1; shift
    echo "== $name"
    "$@" 2>&1 | tee "$logs/$name.log"
    local rc=${PIPESTATUS[0]}
    [ "$rc" -eq 0 ] || { echo "== $name FAILED (exit $rc)"; status=1; }
}

make --no-print-directory -s all asan-lib || exit 1
stage c-engine make --no-print-directory -s test-c
stage python .venv/bin/python -m pytest -q -p no:cacheprovider tests/python
asan_rt=$(${CC:-cc} -print-file-name=libasan.so)
stage python-asan env LD_PRELOAD="$asan_rt" ZC_LIBRARY=build/libzc-asan.so \
    ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 \
    .venv/bin/python -m pytest -q -p no:cacheprovider -m asan tests/python
if [ -n "${COMFYUI_PATH:-}" ]; then
    stage integration .venv/bin/python -m pytest -q -p no:cacheprovider tests/integration
else
    echo "== integration"
    echo "skipped: COMFYUI_PATH not set (point it at a ComfyUI checkout to run the real-ComfyUI tests)"
fi
.venv/bin/python tests/summarize.py "$logs"
exit $status
