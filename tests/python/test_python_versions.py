"""Every Python that ComfyUI users run: the portable build embeds Python 3.13,
the Desktop app uses 3.12, and 3.10 is the oldest the pack supports (pyproject requires-python).
Under each of them, found under pyenv:

- the engine wheel from dist/ (py3-none, ./setup.sh builds it) installs into a fresh virtual
  environment that has no torch and no pip of its own (pip runs from this environment with
  ``--python``, so nothing is downloaded), the ``zc`` console command runs, and the library
  loads through the wheel's own module (``zerocopy_engine.library_path()``, with ctypes) and
  answers ``zc_version``;
- every Python file of the pack compiles (syntax only: nothing is imported).

A missing interpreter or a missing wheel is a skip that says so; CI machines are of the same
kind as this one and have all three.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
VERSION = "0.4.0"
PYTHONS = ("3.10", "3.12", "3.13")
PYENV = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions"
# Not the pack: environments, build outputs, caches and the GPU carry (all git-ignored).
SKIP_DIRS = {".git", ".venv", "dist", "__pycache__", ".pytest_cache", ".hypothesis", ".ruff_cache",
             "node_modules"}


def interpreter(minor: str) -> Path | None:
    """The newest pyenv CPython x.y (x.y.z, not x.y-dev or a variant), or None."""
    if not PYENV.is_dir():
        return None
    found = []
    for entry in PYENV.iterdir():
        match = re.fullmatch(re.escape(minor) + r"\.(\d+)", entry.name)
        if match and (entry / "bin" / "python").is_file():
            found.append((int(match.group(1)), entry / "bin" / "python"))
    return max(found)[1] if found else None


def need_interpreter(minor: str) -> Path:
    python = interpreter(minor)
    if python is None:
        pytest.skip(f"skipped: no Python {minor} under {PYENV} (pyenv install {minor})")
    return python


def engine_wheel() -> Path:
    wheels = sorted((REPO / "dist").glob(f"zerocopy_engine-{VERSION}-py3-none-*.whl"))
    if not wheels:
        pytest.skip(f"skipped: no zerocopy_engine-{VERSION}-py3-none-*.whl in dist/ (./setup.sh builds it)")
    return wheels[-1]


def pack_python_files() -> list[Path]:
    files = []
    for root, dirs, names in os.walk(REPO):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith(("build", ".gpu-carry")))
        files.extend(Path(root) / n for n in sorted(names) if n.endswith(".py"))
    return files


def run(*command, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([str(c) for c in command], check=False, capture_output=True, text=True, timeout=120,
                          **kwargs)


@pytest.fixture(scope="module", params=PYTHONS)
def fresh(request, tmp_path_factory) -> dict:
    """A fresh venv of one Python with only the engine wheel installed."""
    python = need_interpreter(request.param)
    wheel = engine_wheel()
    venv = tmp_path_factory.mktemp(f"py{request.param.replace('.', '')}") / "venv"
    made = run(python, "-m", "venv", "--without-pip", venv)
    assert made.returncode == 0, made.stdout + made.stderr
    vpython = venv / "bin" / "python"
    # pip of this environment, acting on the fresh one (pip >= 22.3): no network, no dependencies
    installed = run(sys.executable, "-m", "pip", "--python", vpython, "install", "--quiet", "--no-index",
                    "--no-deps", "--disable-pip-version-check", wheel)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    env = {"PATH": str(venv / "bin"), "HOME": str(venv.parent), "PYTHONNOUSERSITE": "1",
           "TMPDIR": str(venv.parent), "LANG": "C.UTF-8"}
    return {"minor": request.param, "venv": venv, "python": vpython, "env": env, "wheel": wheel}


def test_the_wheel_installs_and_zc_runs(fresh):
    zc = fresh["venv"] / "bin" / "zc"
    assert zc.is_file()
    assert zc.read_text(errors="replace").splitlines()[0] == f"#!{fresh['python']}"  # this Python's command
    result = run("zc", "--version", env=fresh["env"], cwd=fresh["venv"].parent)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip() == f"zc {VERSION}"


LOAD_CHECK = textwrap.dedent("""
    import ctypes, importlib.util, json, sys, sysconfig
    import zerocopy_engine
    lib = ctypes.CDLL(str(zerocopy_engine.library_path()))
    lib.zc_version.restype = ctypes.c_char_p
    lib.zc_version.argtypes = []
    print(json.dumps({"python": "%d.%d" % sys.version_info[:2], "zc_version": lib.zc_version().decode(),
                      "module": zerocopy_engine.__file__, "library": str(zerocopy_engine.library_path()),
                      "package_version": zerocopy_engine.__version__,
                      "site": sysconfig.get_paths()["purelib"],
                      "torch": importlib.util.find_spec("torch") is not None,
                      "pip": importlib.util.find_spec("pip") is not None}))
""")


def test_the_library_loads_through_the_wheels_module_and_answers_zc_version(fresh):
    result = run(fresh["python"], "-c", LOAD_CHECK, env=fresh["env"], cwd=fresh["venv"].parent)
    assert result.returncode == 0, result.stdout + result.stderr
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert out["python"] == fresh["minor"]
    assert out["zc_version"] == out["package_version"] == VERSION
    # the fresh environment's own copy, in a Python with no torch and no pip
    assert out["module"].startswith(out["site"]) and out["library"].startswith(out["site"]), out
    assert out["site"].startswith(str(fresh["venv"])), out
    assert out["torch"] is False and out["pip"] is False, out


COMPILE_CHECK = textwrap.dedent("""
    import json, sys, warnings
    failed = []
    for path in sys.stdin.read().splitlines():
        with open(path, "rb") as f:
            source = f.read()
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a SyntaxWarning (e.g. an invalid escape) fails too
            try:
                compile(source, path, "exec", dont_inherit=True)
            except (SyntaxError, SyntaxWarning, ValueError) as e:
                failed.append("%s: %s: %s" % (path, type(e).__name__, e))
    print(json.dumps({"python": "%d.%d" % sys.version_info[:2], "failed": failed}))
""")


@pytest.mark.parametrize("minor", PYTHONS)
def test_every_python_file_of_the_pack_compiles(minor):
    python = need_interpreter(minor)
    files = pack_python_files()
    assert len(files) > 100 and REPO / "__init__.py" in files and REPO / "install.py" in files
    # -I: isolated (no user site, no PYTHONPATH, no cwd on sys.path); compile() writes no .pyc
    result = subprocess.run([str(python), "-I", "-c", COMPILE_CHECK], check=False,
                            input="\n".join(map(str, files)), capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert out["python"] == minor
    assert out["failed"] == [], "\n".join(out["failed"])
    print(f"Python {minor}: {len(files)} files compile")
