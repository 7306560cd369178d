#!/usr/bin/env bash
# Run every test: C unit tests under ASan+UBSan, the concurrency test under TSan, the
# malformed-file corpus and the crash test; the same C suite built as strict POSIX; the
# Windows build of it under wine (when mingw-w64 and wine are installed); the engine wheel
# in a fresh environment without a compiler; the Python tests (pytest + hypothesis) with
# the installed wheel and again the ownership tests with the ASan engine; and the
# real-ComfyUI integration tests when COMFYUI_PATH is set.  A stage whose tools are
# missing says "skipped: <reason>" and counts as skipped.
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
    local start=$SECONDS
    echo "== $name"
    "$@" 2>&1 | tee "$logs/$name.log"
    local rc=${PIPESTATUS[0]}
    [ "$rc" -eq 0 ] || { echo "== $name FAILED (exit $rc)"; status=1; }
    echo "== $name took $((SECONDS - start)) s"
}
skip_stage() { # name, reason
    echo "== $1"
    echo "skipped: $2" | tee "$logs/$1.log"
}

# The Python tests use the installed engine wheel: rebuild it when engine/ changed since.
installed=$(.venv/bin/python -c "import zerocopy_engine; print(zerocopy_engine.library_path())" 2>/dev/null)
if [ -z "$installed" ] || [ ! -f "$installed" ] || [ -n "$(find engine -newer "$installed" -type f -print -quit)" ]; then
    echo "test: engine/ is newer than the installed engine wheel; rebuilding it (./setup.sh --engine)"
    ./setup.sh --engine || exit 1
fi

make --no-print-directory -s all asan-lib || exit 1
stage c-engine make --no-print-directory -s -j2 test-c
stage c-strict-posix make --no-print-directory -s -j2 test-c-strict
wine=$(command -v wine64 || ls /usr/lib/wine/wine64 2>/dev/null)
if ! command -v x86_64-w64-mingw32-gcc >/dev/null 2>&1; then
    skip_stage c-windows "no mingw-w64 cross compiler (apt-get install gcc-mingw-w64-x86-64 wine64)"
elif [ -z "$wine" ]; then
    skip_stage c-windows "no wine to run the Windows build (apt-get install wine64)"
else
    stage c-windows make --no-print-directory -s -j2 test-windows WINE="$wine"
fi
stage wheel .venv/bin/python -m pytest -q -p no:cacheprovider -s tests/wheel
stage python .venv/bin/python -m pytest -q -p no:cacheprovider tests/python
asan_rt=$(${CC:-cc} -print-file-name=libasan.so)
stage python-asan env LD_PRELOAD="$asan_rt" ZC_LIBRARY=build/libzc-asan.so \
    ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 \
    .venv/bin/python -m pytest -q -p no:cacheprovider -m asan tests/python
if [ -n "${COMFYUI_PATH:-}" ]; then
    stage integration .venv/bin/python -m pytest -q -p no:cacheprovider tests/integration
else
    skip_stage integration "COMFYUI_PATH not set (point it at a ComfyUI checkout to run the real-ComfyUI tests)"
fi
.venv/bin/python tests/summarize.py "$logs"
exit $status
