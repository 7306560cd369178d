"""Every install route ends with all nodes working or one exact fix: the order of
requirements.txt under ComfyUI-Manager's stop-at-first-failure rule, the one line install.py
and the running pack (toast, sidebar, GET /zerocopy/engine) show when the engine does not load,
and a pack folder of any name. Standard library and the pack's own files only: no ComfyUI."""

from __future__ import annotations

import ast
import importlib.util
import os
import platform
import re
import subprocess
import sys
from pathlib import Path

from pack_files import copy_install_rules

REPO = Path(__file__).resolve().parents[2]
NODES = ("ZeroCopyLatentStore", "ZeroCopyLatentHandoff", "ZeroCopyLatentLoad", "ZeroCopyFilmAssemble",
         "ZeroCopyFilmRender")
PLATFORM = f"{platform.system()} {platform.machine()}"


def requirement_lines(path: Path) -> list[str]:
    """The lines ComfyUI-Manager turns into one `pip install` each (comments and blanks skipped)."""
    return [line.split("#")[0].strip() for line in path.read_text().splitlines()
            if line.strip() and not line.strip().startswith("#")]


def pack_copy(tmp_path: Path, folder: str) -> Path:
    """install.py and the engine-locating rules in custom_nodes/<folder>, with no build/."""
    return copy_install_rules(tmp_path / "custom_nodes" / folder)


def run_check(root: Path, path: str, **env) -> subprocess.CompletedProcess:
    """`python install.py` from the pack's folder, as the Manager runs it, with the installed
    zerocopy_engine hidden (a Python where the engine's line of requirements.txt failed)."""
    code = ("import sys, runpy; sys.modules['zerocopy_engine'] = None; sys.argv = ['install.py']; "
            "runpy.run_path('install.py', run_name='__main__')")
    environ = {k: v for k, v in os.environ.items() if k not in ("ZC_LIBRARY", "CC")}
    environ.update(PATH=path, **env)
    return subprocess.run([sys.executable, "-c", code], cwd=root, env=environ, capture_output=True,
                          text=True, timeout=60)


def fake_compiler(tmp_path: Path) -> str:
    bin_dir = tmp_path / "cc-bin"
    bin_dir.mkdir()
    cc = bin_dir / "cc"
    cc.write_text("#!/bin/sh\nexit 0\n")
    cc.chmod(0o755)
    return str(bin_dir)


def test_the_engine_is_the_last_requirement_so_the_manager_installs_the_rest_first():
    lines = requirement_lines(REPO / "requirements.txt")
    assert lines[-1].startswith("zerocopy-engine=="), lines
    assert any(line.startswith("redis==") for line in lines[:-1]), lines
    # The Manager (comfyui_manager/glob/manager_core.py, 4.3) runs `res = res and pip install <line>`:
    # every line before the first failure is installed.
    installed, res = [], True
    for line in lines:
        res = res and not line.startswith("zerocopy-engine")  # the engine's line fails here
        if res:
            installed.append(line)
    assert installed == lines[:-1]


def test_install_py_names_the_nodes_the_extension_registers():
    tree = ast.parse((REPO / "zc_nodes" / "extension.py").read_text())
    function = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "continuity_nodes")
    returned = [n for n in ast.walk(function) if isinstance(n, ast.Return) and isinstance(n.value, ast.List)]
    assert [e.id for e in max(returned, key=lambda r: len(r.value.elts)).value.elts] == list(NODES)
    spec = importlib.util.spec_from_file_location("zc_install_under_test", REPO / "install.py")
    install = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(install)
    assert install.ENGINE_NODES == NODES and install.ALWAYS_NODE == "ZeroCopyVRAMPin"


def test_without_the_engine_or_a_compiler_the_line_is_exact_and_gives_the_pip_command(tmp_path):
    root = pack_copy(tmp_path, "zerocopy-continuity")  # the Registry's folder name
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    result = run_check(root, str(empty))
    assert result.returncode == 1, result.stdout + result.stderr
    lines = [line for line in result.stdout.splitlines() if line.strip()]
    assert len(lines) == 1, result.stdout
    expected = (f"[ZeroCopy-Continuity install] ZeroCopy-Continuity: 5 of 6 nodes are not loaded on "
                f"{PLATFORM} ({', '.join(NODES)}): the C engine is not installed for {PLATFORM} (expected "
                f"libzc.so from the zerocopy-engine 0.4.0 package; looked for {root / 'build' / 'libzc.so'}). "
                f"Fix: run {sys.executable} -m pip install zerocopy-engine==0.4.0, then restart ComfyUI. "
                f"ZeroCopyVRAMPin needs no engine and works.")
    assert lines[0] == expected


def test_with_a_compiler_the_fix_is_the_build_of_this_folder_whatever_its_name(tmp_path):
    for folder in ("zerocopy-continuity", "ComfyUI-ZeroCopy-Continuity", "my pack"):
        root = pack_copy(tmp_path / folder.replace(" ", "_"), folder)
        result = run_check(root, fake_compiler(tmp_path / folder.replace(" ", "_")))
        assert result.returncode == 1
        script = str(root / "install.py")
        script = f'"{script}"' if " " in script else script
        assert f"Fix: run {sys.executable} {script} --build, then restart ComfyUI." in result.stdout, result.stdout


def test_a_zc_library_that_does_not_exist_is_named_with_its_own_fix(tmp_path):
    root = pack_copy(tmp_path, "zerocopy-continuity")
    missing = tmp_path / "nowhere" / "libzc.so"
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    result = run_check(root, str(empty), ZC_LIBRARY=str(missing))
    assert result.returncode == 1
    assert f"ZC_LIBRARY names {missing}, which does not exist" in result.stdout
    assert f"Fix: unset ZC_LIBRARY (or point it at an engine built for {PLATFORM})" in result.stdout
    assert re.search(r"5 of 6 nodes are not loaded", result.stdout)


def test_the_web_extension_shows_the_servers_message_as_a_toast_and_in_the_sidebar():
    js = (REPO / "web" / "zerocopy.js").read_text()
    assert 'apiJSON("/zerocopy/engine")' in js
    assert 'toast("error", "ZeroCopy: the C engine is not loaded", state.engine.message' in js
    assert "zc-engine-missing" in js and "checkEngine();" in js
    init = (REPO / "__init__.py").read_text()
    # the engine route is registered before the API, whose catch-all would answer its path
    assert init.index("register_engine_route()") < init.index("_api.register()")
