#!/usr/bin/env bash
# Set everything up on a fresh machine and run the main job.
#   - a virtual environment in .venv/ with the pinned dependencies
#   - the C engine (build/libzc.so) and the `zc` tool, installed into .venv/bin/
#   - the main job: a multi-shot store -> spill -> new process -> restore -> verify
#     run that prints the certificate; with COMFYUI_PATH set, also a tiny 3-shot film
#     through real ComfyUI (tools/comfy_chain_demo.py) that prints each handoff's certificate
# Usage: ./setup.sh [--no-demo]
set -euo pipefail
cd "$(dirname "$0")"

demo=1
[ "${1:-}" = "--no-demo" ] && demo=0

if ! command -v cc >/dev/null 2>&1 && ! command -v gcc >/dev/null 2>&1; then
    echo "setup: no C compiler found; install one (Debian/Ubuntu: apt-get install build-essential) and run ./setup.sh again" >&2
    exit 1
fi
PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    echo "setup: creating .venv with $($PYTHON --version)"
    "$PYTHON" -m venv .venv
fi
requirements=requirements-dev.txt
if [ -n "${COMFYUI_PATH:-}" ]; then
    # The real-ComfyUI integration tests need ComfyUI's own dependencies.
    requirements=requirements-comfyui.txt
    [ -f "$COMFYUI_PATH/nodes.py" ] || { echo "setup: COMFYUI_PATH=$COMFYUI_PATH is not a ComfyUI checkout (no nodes.py)" >&2; exit 1; }
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
echo "setup: installing pinned dependencies ($requirements)"
.venv/bin/python -m pip install --quiet --disable-pip-version-check -r "$requirements"
echo "setup: building the C engine"
make --no-print-directory -s all
install -m 0755 build/zc .venv/bin/zc
echo "setup: engine $(.venv/bin/zc --version) built; zc installed in .venv/bin"

if [ "$demo" = 1 ]; then
    .venv/bin/python -m zc_engine.demo
    if [ -n "${COMFYUI_PATH:-}" ]; then
        echo "setup: the same continuity through real ComfyUI ($COMFYUI_PATH): a tiny 3-shot chain"
        .venv/bin/python tools/comfy_chain_demo.py
    fi
fi
