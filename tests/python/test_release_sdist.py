"""The engine's sdist, what pip builds on a platform without a wheel: `python -m build --sdist
engine` makes it complete (the LICENSE in it, the C tests consistently left out), pip builds and
installs it with a C compiler (the library loads and answers zc_version, the zc tool runs), and
without one pip fails with one clear line that names the fix."""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
VERSION = "0.4.0"
HAS_COMPILER = bool(shutil.which("cc") or shutil.which("gcc") or shutil.which("clang"))
NO_COMPILER_LINE = (f"zerocopy-engine {VERSION}: no C compiler found to build the engine from source (no prebuilt "
                    f"wheel for this platform); install gcc or clang")


def _need_build_tools():
    for module in ("build", "scikit_build_core", "cmake", "ninja"):
        pytest.importorskip(module, reason=f"skipped: {module} is not installed (pip install -r "
                                           f"requirements-dev.txt -r requirements-build.txt)")


@pytest.fixture(scope="module")
def sdist(tmp_path_factory) -> Path:
    _need_build_tools()
    out = tmp_path_factory.mktemp("sdist")
    # --no-isolation: the pinned scikit-build-core of requirements-build.txt, no download
    result = subprocess.run([sys.executable, "-m", "build", "--sdist", "--no-isolation", "-o", str(out),
                             str(REPO / "engine")], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    (path,) = out.glob("zerocopy_engine-*.tar.gz")
    return path


def pip_install(sdist: Path, target: Path, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pip", "install", "--no-build-isolation", "--no-deps",
                           "--no-index", "--disable-pip-version-check", "--target", str(target), str(sdist)],
                          capture_output=True, text=True, timeout=900, env=env)


def test_the_sdist_is_complete_and_leaves_the_c_tests_out_consistently(sdist):
    assert sdist.name == f"zerocopy_engine-{VERSION}.tar.gz"
    with tarfile.open(sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
        license_text = tar.extractfile(f"zerocopy_engine-{VERSION}/LICENSE").read()
        pkg_info = tar.extractfile(f"zerocopy_engine-{VERSION}/PKG-INFO").read().decode()
    assert license_text == (REPO / "LICENSE").read_bytes() == (REPO / "engine" / "LICENSE").read_bytes()
    assert "License-File: LICENSE" in pkg_info and f"Version: {VERSION}" in pkg_info
    assert {"CMakeLists.txt", "pyproject.toml", "README.md", "include/zc.h",
            "python/zerocopy_engine/__init__.py"} <= names
    # left out together: the suite, its harness, the platform test half, the fuzzer and corpora
    assert not [n for n in names if n.startswith(("tests/", "fuzz/")) or n.endswith(("_test.c", "_test.h"))]
    assert sdist.stat().st_size < 400_000, sdist.stat().st_size


def test_asking_an_sdist_for_its_c_tests_says_where_they_are(sdist, tmp_path):
    import cmake

    with tarfile.open(sdist) as tar:
        tar.extractall(tmp_path, filter="data")
    source = tmp_path / f"zerocopy_engine-{VERSION}"
    result = subprocess.run([str(Path(cmake.CMAKE_BIN_DIR) / "cmake"), "-S", str(source), "-B",
                             str(tmp_path / "b"), "-DZC_BUILD_TESTS=ON"], capture_output=True, text=True, timeout=300)
    assert result.returncode != 0
    assert "the C test suite is not here (the sdist leaves it out" in result.stdout + result.stderr


@pytest.mark.slow
@pytest.mark.skipif(not HAS_COMPILER, reason="skipped: no C compiler on this machine")
def test_pip_builds_the_sdist_with_a_compiler_and_the_engine_loads(sdist, tmp_path):
    target = tmp_path / "site"
    result = pip_install(sdist, target, {k: v for k, v in os.environ.items() if k != "ZC_LIBRARY"})
    assert result.returncode == 0, result.stdout + result.stderr
    package = target / "zerocopy_engine"
    lib = ctypes.CDLL(str(package / "libzc.so"))
    lib.zc_version.restype = ctypes.c_char_p
    assert lib.zc_version().decode() == VERSION
    tool = subprocess.run([str(package / "zc"), "--version"], capture_output=True, text=True, timeout=30)
    assert tool.returncode == 0 and tool.stdout.startswith(f"zc {VERSION}")


def test_without_a_compiler_pip_fails_with_one_clear_line(sdist, tmp_path):
    import cmake
    import ninja

    # a PATH with the build tools and the basics, but no cc, gcc, clang
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    tools = {"cmake": Path(cmake.CMAKE_BIN_DIR) / "cmake", "ninja": Path(ninja.BIN_DIR) / "ninja"}
    for name in ("sh", "env", "uname"):
        if shutil.which(name):
            tools[name] = Path(shutil.which(name))
    for name, path in tools.items():
        (bin_dir / name).symlink_to(path)
    env = {k: v for k, v in os.environ.items() if k not in ("CC", "ZC_LIBRARY")}
    env["PATH"] = str(bin_dir)
    result = pip_install(sdist, tmp_path / "site", env)
    output = result.stdout + result.stderr
    assert result.returncode != 0
    lines = [line.strip() for line in output.splitlines() if NO_COMPILER_LINE in line]
    assert len(lines) == 1, output
    assert lines[0].endswith("or set CC, then run pip again") and "build-essential" in lines[0]
    assert not (tmp_path / "site" / "zerocopy_engine").exists()
