"""The engine as its own distribution (zerocopy-engine): where the pack loads it from, the
one-line message when it cannot, the `zc` entry point, and one version everywhere."""

from __future__ import annotations

import os
import platform
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
zerocopy_engine = pytest.importorskip("zerocopy_engine",
                                      reason="skipped: zerocopy-engine is not installed (./setup.sh)")


def import_engine(env_changes: dict, prelude: str = "") -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "ZC_LIBRARY"}
    env.update(env_changes)
    env["PYTHONPATH"] = str(REPO)
    code = f"{prelude}from zc_pack.zc_engine import _library as L; print(L.LIBRARY_PATH)"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          timeout=120)


def engine_error(result: subprocess.CompletedProcess) -> str:
    assert result.returncode != 0
    lines = [line for line in result.stderr.splitlines() if "EngineNotBuilt:" in line]
    assert len(lines) == 1, result.stderr
    return lines[0].split("EngineNotBuilt: ", 1)[1]


@pytest.mark.skipif("ZC_LIBRARY" in os.environ, reason="skipped: ZC_LIBRARY overrides the package")
def test_the_pack_loads_the_library_of_the_installed_package():
    from zc_pack.zc_engine import _library
    assert _library.LIBRARY_PATH == zerocopy_engine.library_path()
    assert "site-packages" in _library.LIBRARY_PATH.parts


def test_zc_library_comes_first_and_alone():
    result = import_engine({"ZC_LIBRARY": str(REPO / "build" / "libzc.so")})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(REPO / "build" / "libzc.so")
    message = engine_error(import_engine({"ZC_LIBRARY": "/no/such/libzc.so"}))
    assert "ZC_LIBRARY names /no/such/libzc.so" in message and "unset ZC_LIBRARY" in message


def test_without_the_package_the_developer_build_is_next():
    result = import_engine({}, prelude="import sys; sys.modules['zerocopy_engine'] = None; ")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(REPO / "build" / "libzc.so")


def test_a_library_for_another_platform_is_one_line_naming_platform_file_and_fix(tmp_path):
    foreign = tmp_path / "libzc.so"
    foreign.write_bytes(b"MZ\x90\x00" + bytes(508))  # the start of a Windows DLL
    message = engine_error(import_engine({"ZC_LIBRARY": str(foreign)}))
    here = f"{platform.system()} {platform.machine()}"
    assert str(foreign) in message and f"cannot be loaded on {here}" in message
    assert f"fix: point ZC_LIBRARY at an engine built for {here}" in message


def test_an_engine_of_another_version_is_refused(monkeypatch):
    from zc_pack.zc_engine import _locate
    monkeypatch.setattr(_locate, "ENGINE_VERSION", "9.1.0")
    with pytest.raises(_locate.EngineMissing) as caught:
        _locate.load()
    message = str(caught.value)
    assert "is version 0.4.0, but this pack needs 9.1.0" in message and "\n" not in message


def test_the_fix_names_this_python_and_the_portable_build(monkeypatch):
    from zc_pack.zc_engine import _locate
    monkeypatch.setattr(sys, "executable", r"C:\ComfyUI_windows_portable\python_embeded\python.exe")
    assert _locate.pip_command() == r"python_embeded\python.exe -m pip install zerocopy-engine==0.4.0"
    monkeypatch.setattr(sys, "executable", "/opt/Comfy Desktop/.venv/bin/python")
    assert _locate.pip_command() == '"/opt/Comfy Desktop/.venv/bin/python" -m pip install zerocopy-engine==0.4.0'


def test_file_names_per_os_agree_between_pack_and_package():
    from zc_pack.zc_engine import _locate
    for system, name in (("Linux", "libzc.so"), ("Windows", "zc.dll"), ("Darwin", "libzc.dylib")):
        assert _locate.library_name(system) == zerocopy_engine.library_name(system) == name


def test_zc_entry_point_runs_the_bundled_tool_with_its_exit_status(tmp_path):
    zc = Path(sys.executable).parent / "zc"
    version = subprocess.run([str(zc), "--version"], capture_output=True, text=True, timeout=60)
    assert version.returncode == 0 and version.stdout.strip() == "zc 0.4.0"
    direct = subprocess.run([str(zerocopy_engine.tool_path()), "verify", str(tmp_path / "none")],
                            capture_output=True, text=True, timeout=60)
    wrapped = subprocess.run([str(zc), "verify", str(tmp_path / "none")], capture_output=True,
                             text=True, timeout=60)
    assert direct.returncode != 0 and wrapped.returncode == direct.returncode
    assert wrapped.stdout == direct.stdout and wrapped.stderr == direct.stderr


def test_one_engine_version_everywhere():
    from zc_pack.zc_engine import _library, _locate
    version = _locate.ENGINE_VERSION
    header = (REPO / "engine" / "include" / "zc.h").read_text()
    assert f'#define ZC_VERSION_STRING "{version}"' in header
    major, minor, patch = version.split(".")
    for part, value in (("MAJOR", major), ("MINOR", minor), ("PATCH", patch)):
        assert re.search(rf"#define ZC_VERSION_{part} {value}\b", header)
    assert _library.lib.zc_version().decode() == version
    assert zerocopy_engine.__version__ == version
    assert f'version = "{version}"' in (REPO / "engine" / "pyproject.toml").read_text()
    assert f"VERSION {version} " in (REPO / "engine" / "CMakeLists.txt").read_text()
    pin = f"zerocopy-engine=={version}"
    assert pin in (REPO / "requirements.txt").read_text().splitlines()
    assert f'dependencies = ["{pin}"]' in (REPO / "pyproject.toml").read_text()
