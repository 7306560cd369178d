"""install.py, the step ComfyUI-Manager runs after it has installed requirements.txt: by
default it only checks that the engine loads and, when it does not, says in one line what
to install; it compiles only with --build (developers), and never downloads anything."""

from __future__ import annotations

import ctypes
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from pack_files import copy_install_rules

REPO = Path(__file__).resolve().parents[2]
HAS_COMPILER = bool(shutil.which("cc") or shutil.which("gcc") or shutil.which("clang"))


def run_install(*args, env=None, cwd=REPO, script=REPO / "install.py", block_package=False):
    """Run install.py in a fresh interpreter; block_package hides the installed
    zerocopy_engine, as in a Python where requirements.txt was never installed."""
    prelude = "import sys; sys.modules['zerocopy_engine'] = None; " if block_package else ""
    code = (f"{prelude}import runpy; sys.argv = [{str(script)!r}, *{list(args)!r}]; "
            f"runpy.run_path({str(script)!r}, run_name='__main__')")
    if not block_package:
        code = "import sys; " + code
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=300)


def bare_checkout(tmp_path: Path) -> Path:
    """install.py and the pack's locating rules alone, with no build/ beside them."""
    return copy_install_rules(tmp_path / "pack")


def without(env_names=("ZC_LIBRARY", "CC"), path=None):
    env = {k: v for k, v in os.environ.items() if k not in env_names}
    if path is not None:
        env["PATH"] = path
    return env


def test_by_default_it_checks_the_installed_engine_and_builds_nothing():
    pytest.importorskip("zerocopy_engine", reason="skipped: zerocopy-engine is not installed (./setup.sh)")
    result = run_install(env=without())
    assert result.returncode == 0, result.stdout + result.stderr
    assert "loads from" in result.stdout and "site-packages" in result.stdout
    assert "building" not in result.stdout


def test_without_the_engine_it_says_in_one_line_what_to_install(tmp_path):
    root = bare_checkout(tmp_path)
    empty = tmp_path / "bin"
    empty.mkdir()
    result = run_install(env=without(path=str(empty)), script=root / "install.py", cwd=root,
                         block_package=True)
    assert result.returncode == 1
    lines = [line for line in result.stdout.splitlines() if line.strip()]
    assert len(lines) == 1, result.stdout
    line = lines[0]
    assert "not installed for" in line and "libzc.so" in line
    assert f"{sys.executable} -m pip install zerocopy-engine==0.4.0" in line
    assert "5 of 6 nodes are not loaded" in line and "ZeroCopyFilmAssemble" in line
    assert "install.py --build" not in line  # no compiler on PATH: building is no fix here
    assert not (root / "build").exists()


def test_an_engine_for_another_platform_is_named_with_the_fix(tmp_path):
    root = bare_checkout(tmp_path)
    (root / "build").mkdir()
    (root / "build" / "libzc.so").write_bytes(b"MZ\x90\x00" + bytes(252))  # a Windows DLL's start
    result = run_install(env=without(), script=root / "install.py", cwd=root, block_package=True)
    assert result.returncode == 1
    assert f"cannot be loaded on {platform.system()} {platform.machine()}" in result.stdout
    fix = f"{root / 'install.py'} --build --force" if HAS_COMPILER else "-m pip install zerocopy-engine==0.4.0"
    assert str(root / "build" / "libzc.so") in result.stdout and fix in result.stdout


def test_build_without_a_compiler_says_what_to_install(tmp_path):
    empty = tmp_path / "bin"
    empty.mkdir()
    result = run_install("--build", "--build-dir", str(tmp_path / "build"), env=without(path=str(empty)))
    assert result.returncode == 1
    assert "no C compiler found" in result.stdout and "build-essential" in result.stdout
    assert "zerocopy-engine==0.4.0" in result.stdout
    assert "install.py" in result.stdout and not (tmp_path / "build" / "libzc.so").exists()


@pytest.mark.skipif(not HAS_COMPILER, reason="skipped: no C compiler on this machine")
def test_build_makes_a_loadable_engine_then_knows_it_is_up_to_date(tmp_path):
    build = tmp_path / "build"
    result = run_install("--build", "--build-dir", str(build), env=without())
    assert result.returncode == 0, result.stdout + result.stderr
    assert "built" in result.stdout
    lib = ctypes.CDLL(str(build / "libzc.so"))
    lib.zc_version.restype = ctypes.c_char_p
    assert lib.zc_version().decode() == "0.4.0"
    again = run_install("--build", "--build-dir", str(build), env=without())
    assert again.returncode == 0 and "up to date" in again.stdout


def test_install_py_has_no_way_to_download():
    # A guard on the source, not a proof: no network module and no pip call of its own.
    text = (REPO / "install.py").read_text()
    for network in ("urllib", "http.client", "requests", "socket", "\"pip\"", "'pip'"):
        assert network not in text, network
