"""`make` puts a rebuilt library in place while a process has the old one loaded (a ComfyUI
server or a benchmark run on build/libzc.so) without crashing that process: the new file is
copied under a temporary name and renamed over the old one, so the running process keeps its
mapping of the old file. Copying over the file in place truncates the pages under it.

Real processes, a real build: the library is built into a build folder of the test's own, a
child process loads it and calls into it without pause, and `make lib` runs again meanwhile."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

CHILD = r"""
import ctypes, sys, time
lib = ctypes.CDLL(sys.argv[1])
lib.zc_version.restype = ctypes.c_char_p
calls = 0
print("loaded", flush=True)
deadline = time.monotonic() + float(sys.argv[2])
while time.monotonic() < deadline:
    lib.zc_version()
    calls += 1
print("calls", calls, flush=True)
"""

needs_build = pytest.mark.skipif(not (shutil.which("make") and (shutil.which("cmake") or (REPO / ".venv/bin/cmake").is_file())
                                      and shutil.which("cc")),
                                 reason="skipped: make, cmake and cc are needed to build the engine")


@needs_build
def test_a_process_with_the_library_loaded_survives_make_lib(tmp_path):
    build = tmp_path / "build"
    make = ["make", "-s", "-C", str(REPO), f"BUILD={build}", "lib"]
    subprocess.run(make, check=True, capture_output=True, timeout=600)
    library = build / "libzc.so"
    inode = library.stat().st_ino
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(library), "60"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "loaded"
        for _ in range(3):  # the library put in place again while the child calls into it
            subprocess.run(make, check=True, capture_output=True, timeout=600)
            assert child.poll() is None, f"the process died while make put the library in place: {child.stderr.read()}"
        assert library.stat().st_ino != inode, "the library was written over in place, not renamed over"
        assert not list(build.glob("*.tmp")), "a temporary copy was left behind"
    finally:
        child.terminate()
        out, err = child.communicate(timeout=30)
    assert child.returncode in (0, -15), f"the child failed: {err}"
