"""The newcomer's path: on a machine with only what ./setup.sh installs (no
redis-server, no mingw-w64, no wine), ./test.sh skips what needs them, with the reason and the
command that installs them, and never fails for it; its closing summary names every skipped stage.

The tools are really hidden: the child processes get a PATH of symlinks to every program but
those (hidden_tools.py), and where the kernel allows it /usr/lib/wine is masked too. The stage
selection is checked with `./test.sh --plan` (no build, no test: seconds).
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hidden_tools import NEWCOMER_LACKS, can_mask_wine_dir, path_without, without_wine_dir

REPO = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("summarize", REPO / "tests" / "summarize.py")
summarize = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(summarize)

STAGES = ["c-engine", "c-strict-posix", "c-windows", "wheel", "python", "python-asan", "integration"]
CLOSING = re.compile(r"^tests: \d+ passed, \d+ failed, \d+ skipped$")


@pytest.fixture(scope="module")
def newcomer_path(tmp_path_factory) -> str:
    return path_without(NEWCOMER_LACKS + ("chromium*", "chromedriver"), tmp_path_factory.mktemp("bin"))


def plan(path: str, *, comfyui: str | None = None, mask_wine: bool = False) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "COMFYUI_PATH"}
    env["PATH"] = path
    if comfyui:
        env["COMFYUI_PATH"] = comfyui
    command = ["bash", str(REPO / "test.sh"), "--plan"]
    proc = subprocess.run(without_wine_dir(command) if mask_wine else command, capture_output=True,
                          text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert lines and all(line.startswith("plan: ") for line in lines), proc.stdout
    out = {}
    for line in lines:
        head, _, rest = line.removeprefix("plan: ").partition(" ")
        out[head] = rest
    return out


def test_the_newcomer_path_really_lacks_the_tools(newcomer_path):
    for tool in ("redis-server", "x86_64-w64-mingw32-gcc", "wine", "wine64", "chromium", "chromedriver"):
        assert shutil.which(tool, path=newcomer_path) is None, tool
    for tool in ("bash", "make", "sh"):  # and keeps everything else
        assert shutil.which(tool, path=newcomer_path), tool


def test_without_redis_mingw_and_wine_the_plan_skips_the_windows_stage_and_says_how_to_enable_it(
        newcomer_path):
    masked = can_mask_wine_dir()
    stages = plan(newcomer_path, mask_wine=masked)
    assert [s for s in stages if s != "to"] == STAGES, stages
    if masked or not Path("/usr/lib/wine/wine64").exists():
        assert stages["c-windows"] == ("skipped: no x86_64-w64-mingw32-gcc/wine "
                                       "(apt-get install gcc-mingw-w64-x86-64 wine64)")
    else:  # Debian's wine64 loader stays in /usr/lib/wine where no mount namespace can hide it
        assert stages["c-windows"] == ("skipped: no x86_64-w64-mingw32-gcc "
                                       "(apt-get install gcc-mingw-w64-x86-64)")
    assert stages["python"] == "runs; its farm tests skip: no redis-server (apt-get install redis-server)"
    assert stages["integration"].startswith("skipped: COMFYUI_PATH not set (")
    for name in ("c-engine", "c-strict-posix", "wheel", "python-asan"):
        assert stages[name] == "runs", (name, stages[name])
    enable = stages["to"]
    assert enable.startswith("run what is skipped here: apt-get install ")
    assert "gcc-mingw-w64-x86-64" in enable
    assert "redis-server" in enable and ("wine64" in enable) == ("wine64" in stages["c-windows"])


def test_with_comfyui_but_no_chromium_or_redis_the_integration_stage_runs_and_says_what_it_skips(
        newcomer_path, tmp_path):
    stages = plan(newcomer_path, comfyui=str(tmp_path))
    assert stages["integration"] == (
        "runs; its farm-workers test skips: no redis-server (apt-get install redis-server); "
        "its browser test skips: no chromium/chromedriver (apt-get install chromium chromium-driver)")
    assert "chromium chromium-driver" in stages["to"]


@pytest.mark.skipif(not (shutil.which("x86_64-w64-mingw32-gcc") and shutil.which("redis-server")
                         and (shutil.which("wine64") or Path("/usr/lib/wine/wine64").exists())),
                    reason="skipped: no mingw-w64, wine or redis-server here "
                           "(apt-get install gcc-mingw-w64-x86-64 wine64 redis-server; "
                           ".ci/run installs them)")
def test_with_the_tools_every_stage_runs_but_integration_without_comfyui():
    stages = plan(os.environ["PATH"])
    assert stages == {**{name: "runs" for name in STAGES},
                      "integration": stages["integration"]}, stages
    assert stages["integration"].startswith("skipped: COMFYUI_PATH not set (")


def test_without_redis_server_the_farm_tests_skip_with_the_reason_and_none_fails(newcomer_path, tmp_path):
    env = {**os.environ, "PATH": newcomer_path}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
                           "tests/python/test_farm.py", "tests/python/test_farm_api.py",
                           "tests/python/test_bench_farm.py"], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    log = proc.stdout
    passed, failed, skipped = summarize.count(log)
    assert (passed, failed) == (0, 0) and skipped > 0, log[-2000:]
    stage_reason, tests = summarize.skips(log)
    assert stage_reason is None
    assert tests == {"no redis-server (Debian: apt-get install redis-server; .ci/run installs it)": skipped}


def test_the_summary_names_every_skipped_stage_and_test_reason_just_before_the_closing_line():
    logs = {
        "c-engine": "skipped test_rlimit: this OS has no per-process file size limit\n"
                    "120 passed, 0 failed, 1 skipped\n",
        "c-windows": "skipped: no x86_64-w64-mingw32-gcc/wine "
                     "(apt-get install gcc-mingw-w64-x86-64 wine64)\n",
        "integration": "skipped: COMFYUI_PATH not set (point it at a ComfyUI checkout)\n",
        "python": ".....s..s\n"
                  "SKIPPED [2] tests/python/test_farm.py:23: skipped: no redis-server "
                  "(apt-get install redis-server)\n"
                  "SKIPPED [1] tests/python/test_farm_api.py:85: skipped: no redis-server "
                  "(apt-get install redis-server)\n"
                  "SKIPPED [1] tests/python/test_bench_gpu_tools.py:104: this machine has CUDA\n"
                  "1 failed, 500 passed, 4 skipped in 12.00s\n",
    }
    lines = summarize.summary(logs)
    assert lines == [
        "  c-engine: 120 passed, 0 failed, 1 skipped",
        "  c-windows: 0 passed, 0 failed, 1 skipped",
        "  integration: 0 passed, 0 failed, 1 skipped",
        "  python: 500 passed, 1 failed, 4 skipped",
        "c-engine: 1 test skipped: this OS has no per-process file size limit",
        "python: 3 tests skipped: no redis-server (apt-get install redis-server)",
        "python: 1 test skipped: this machine has CUDA",
        "c-windows skipped: no x86_64-w64-mingw32-gcc/wine (apt-get install gcc-mingw-w64-x86-64 wine64)",
        "integration skipped: COMFYUI_PATH not set (point it at a ComfyUI checkout)",
        "tests: 620 passed, 1 failed, 7 skipped",
    ]
    assert CLOSING.match(lines[-1])


def test_the_summary_of_a_run_where_everything_ran_names_nothing_skipped():
    lines = summarize.summary({"c-engine": "3 passed, 0 failed, 0 skipped\n",
                               "python": "7 passed in 1.00s\n"})
    assert lines == ["  c-engine: 3 passed, 0 failed, 0 skipped", "  python: 7 passed, 0 failed, 0 skipped",
                     "tests: 10 passed, 0 failed, 0 skipped"]


def test_a_clone_in_a_folder_named_as_git_names_it_runs_the_tests(tmp_path):
    """`git clone .../ComfyUI-ZeroCopy-Continuity` makes a folder whose name is no Python
    identifier. The root's __init__.py (the pack, for ComfyUI) must not turn the root into a
    package pytest imports: it did, under the name "__init__", and every test errored at setup
    ("attempted relative import with no known parent package"). The tracked files are copied
    into such a folder and a test file runs there."""
    clone = tmp_path / "ComfyUI-ZeroCopy-Continuity"
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout
    for name in filter(None, tracked.decode().split("\0")):
        source = REPO / name
        if source.is_file():
            (clone / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, clone / name)
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          "tests/python/test_continuity_shapes.py"],
                         cwd=clone, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert re.search(r"\d+ passed", run.stdout), run.stdout[-2000:]
