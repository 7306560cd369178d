"""install.py, the step ComfyUI-Manager runs after installing the pack: it builds the
C engine with any C compiler, and says in one line what to install when there is none."""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def run_install(*args, env=None):
    return subprocess.run([sys.executable, str(REPO / "install.py"), *args], capture_output=True, text=True,
                          env=env, timeout=300)


def test_without_a_compiler_it_says_what_to_install(tmp_path):
    empty = tmp_path / "bin"
    empty.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "CC"}
    env["PATH"] = str(empty)
    result = run_install("--build-dir", str(tmp_path / "build"), env=env)
    assert result.returncode == 1
    assert "no C compiler found" in result.stdout and "build-essential" in result.stdout
    assert "install.py" in result.stdout and not (tmp_path / "build" / "libzc.so").exists()


@pytest.mark.skipif(not (shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")),
                    reason="skipped: no C compiler on this machine")
def test_it_builds_a_loadable_engine_then_knows_it_is_up_to_date(tmp_path):
    build = tmp_path / "build"
    result = run_install("--build-dir", str(build))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "built" in result.stdout
    lib = ctypes.CDLL(str(build / "libzc.so"))
    lib.zc_version.restype = ctypes.c_char_p
    assert lib.zc_version().decode().count(".") == 2
    again = run_install("--build-dir", str(build))
    assert again.returncode == 0 and "up to date" in again.stdout
