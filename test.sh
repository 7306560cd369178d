#!/usr/bin/env bash
# Run every test: C unit tests under ASan+UBSan, the concurrency test under TSan, the
# malformed-file corpus and the crash test; the same C suite built as strict POSIX; the
# Windows build of it under wine (when mingw-w64 and wine are installed); the engine wheel
# in a fresh environment without a compiler; the Python tests (pytest + hypothesis) with
# the installed wheel and again the ownership tests with the ASan engine; and the
# real-ComfyUI integration tests when COMFYUI_PATH is set.  A stage whose tools are
# missing says "skipped: <reason> (<the command that installs them>)" and counts as skipped;
# so does a test (the farm tests without redis-server, the browser test without Chromium).
# Prints the plan first (which stages run here, which are skipped and why), then every
# stage's counts, then one line per skipped stage and per reason tests were skipped, and last
# the closing line "tests: N passed, N failed, N skipped".
#   ./test.sh          run everything
#   ./test.sh --plan   print the plan and exit (no build, no test)
set -uo pipefail
cd "$(dirname "$0")"

# ---- The plan: what this machine lacks, decided once; the run below follows it. ----
# The system tools a stage or its tests need, each with the Debian package that brings it
# (.ci/run installs them all, so in CI every one of these stages runs).
declare -A skip=()   # stage -> why it cannot run here (the command that enables it included)
declare -A note=()   # stage -> which of its tests will skip, and why
packages=()
wine=$(command -v wine64 || { [ -x /usr/lib/wine/wine64 ] && echo /usr/lib/wine/wine64; })
mingw=$(command -v x86_64-w64-mingw32-gcc)
if [ -z "$mingw" ] && [ -z "$wine" ]; then
    skip[c-windows]="no x86_64-w64-mingw32-gcc/wine (apt-get install gcc-mingw-w64-x86-64 wine64)"
    packages+=(gcc-mingw-w64-x86-64 wine64)
elif [ -z "$mingw" ]; then
    skip[c-windows]="no x86_64-w64-mingw32-gcc (apt-get install gcc-mingw-w64-x86-64)"
    packages+=(gcc-mingw-w64-x86-64)
elif [ -z "$wine" ]; then
    skip[c-windows]="no wine to run the Windows build (apt-get install wine64)"
    packages+=(wine64)
fi
if ! command -v redis-server >/dev/null 2>&1; then
    note[python]="its farm tests skip: no redis-server (apt-get install redis-server)"
    packages+=(redis-server)
fi
if [ -z "${COMFYUI_PATH:-}" ]; then
    skip[integration]="COMFYUI_PATH not set (point it at a ComfyUI checkout to run the real-ComfyUI tests)"
else
    command -v redis-server >/dev/null 2>&1 ||
        note[integration]="its farm-workers test skips: no redis-server (apt-get install redis-server)"
    if ! { command -v chromium || command -v chromium-browser; } >/dev/null 2>&1 ||
        ! command -v chromedriver >/dev/null 2>&1; then
        browser="its browser test skips: no chromium/chromedriver (apt-get install chromium chromium-driver)"
        note[integration]="${note[integration]:+${note[integration]}; }$browser"
        packages+=(chromium chromium-driver)
    fi
fi
stages=(c-engine c-strict-posix c-windows wheel python python-asan integration)
print_plan() {
    local name
    for name in "${stages[@]}"; do
        if [ -n "${skip[$name]:-}" ]; then
            echo "plan: $name skipped: ${skip[$name]}"
        elif [ -n "${note[$name]:-}" ]; then
            echo "plan: $name runs; ${note[$name]}"
        else
            echo "plan: $name runs"
        fi
    done
    if [ ${#packages[@]} -gt 0 ]; then
        echo "plan: to run what is skipped here: apt-get install ${packages[*]}"
    fi
}
if [ "${1:-}" = "--plan" ]; then
    print_plan
    exit 0
fi
[ $# -eq 0 ] || { echo "usage: ./test.sh [--plan]" >&2; exit 2; }

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
print_plan

# The Python tests use the installed engine wheel: rebuild it when engine/ changed since.
installed=$(.venv/bin/python -c "import zerocopy_engine; print(zerocopy_engine.library_path())" 2>/dev/null)
if [ -z "$installed" ] || [ ! -f "$installed" ] || [ -n "$(find engine -newer "$installed" -type f -print -quit)" ]; then
    echo "test: engine/ is newer than the installed engine wheel; rebuilding it (./setup.sh --engine)"
    ./setup.sh --engine || exit 1
fi

# pytest -rs: every skipped test's reason goes to the log, for the closing summary.
pytest=(.venv/bin/python -m pytest -q -rs -p no:cacheprovider)
make --no-print-directory -s all asan-lib || exit 1
stage c-engine make --no-print-directory -s -j2 test-c
stage c-strict-posix make --no-print-directory -s -j2 test-c-strict
if [ -n "${skip[c-windows]:-}" ]; then
    skip_stage c-windows "${skip[c-windows]}"
else
    stage c-windows make --no-print-directory -s -j2 test-windows WINE="$wine"
fi
stage wheel "${pytest[@]}" -s tests/wheel
stage python "${pytest[@]}" tests/python
asan_rt=$(${CC:-cc} -print-file-name=libasan.so)
stage python-asan env LD_PRELOAD="$asan_rt" ZC_LIBRARY=build/libzc-asan.so \
    ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 \
    "${pytest[@]}" -m asan tests/python
if [ -n "${skip[integration]:-}" ]; then
    skip_stage integration "${skip[integration]}"
else
    stage integration "${pytest[@]}" tests/integration
fi
.venv/bin/python tests/summarize.py "$logs"
exit $status
