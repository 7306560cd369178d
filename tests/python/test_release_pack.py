"""The Comfy Registry package, made by the real client: comfy-cli's `comfy node validate` and
`comfy node pack` (pinned in requirements-dev.txt) run on a copy of the git-tracked tree, and the
zip must hold what runs in ComfyUI and nothing else (.comfyignore):

- no absolute machine path, no binary file but the templates' JPEG thumbnails, at most ZIP_LIMIT bytes;
- only the runtime's top-level entries, every relative import of its Python resolving inside it;
- the engine's C sources that `python install.py --build` compiles, and that build loads;
- the metadata comfy-cli sends (the Issues link).
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
COMFY = Path(sys.executable).with_name("comfy")
HAS_COMPILER = bool(shutil.which("cc") or shutil.which("gcc") or shutil.which("clang"))
# The zip was 467 KB (185 files) when this limit was set: the runtime Python (~200 KB zipped), the
# engine's C sources (~140 KB), the templates (~24 KB). 600 KB leaves about 28% for growth, and is
# exceeded by any one of the development folders it must not carry coming back (bench/ alone is
# ~350 KB zipped, tests/ ~230 KB, the engine's tests and corpora ~100 KB); the issue's 1.28 MB
# zip (483 files) was 76% such bytes. Raised to 800 KB when the templates got their thumbnails
# (nine JPEGs, ~86 KB, that ComfyUI's template browser shows) and the runtime had grown to ~595 KB:
# still exceeded by bench/ or tests/ coming back.
ZIP_LIMIT = 800_000
TOP_LEVEL = {"__init__.py", "install.py", "requirements.txt", "pyproject.toml", "README.md", "LICENSE",
             "zc_nodes", "zc_residency", "zc_log", "zc_continuity", "zc_engine", "zc_farm", "zc_film", "web",
             "example_workflows", "examples", "docs", "engine"}
REQUIRED = {"__init__.py", "install.py", "requirements.txt", "pyproject.toml", "README.md", "LICENSE",
            "web/zerocopy.js", "zc_nodes/extension.py", "zc_engine/_locate.py", "engine/include/zc.h",
            "engine/src/platform/platform.h", "engine/python/zerocopy_engine/_names.py", "docs/install.md"}
# A developer's machine: home folders, this project's build machine, a Windows profile, a temporary
# venv. Test fixtures that fake such paths live in tests/, which never ships.
MACHINE_PATH = re.compile(rb"(/work/|/root/|/home/[A-Za-z_]|/Users/[A-Za-z_]|[A-Za-z]:\\\\?Users\\\\?|/tmp/\w*venv)")


def comfy(*args: str, cwd: Path, home: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), "DO_NOT_TRACK": "1"}
    return subprocess.run([str(COMFY), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def packed(tmp_path_factory):
    """(the pack's working copy, the zip comfy-cli made of it, validate's output). The copy holds
    what the next commit would: tracked files and new ones git does not ignore."""
    if not COMFY.is_file():
        pytest.skip("skipped: comfy-cli is not installed (pip install -r requirements-dev.txt)")
    if shutil.which("git") is None:
        pytest.skip("skipped: no git (comfy node pack zips the git-tracked files)")
    work = tmp_path_factory.mktemp("pack")
    tree, home = work / "zerocopy-continuity", work / "home"
    home.mkdir()
    tracked = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z", "--cached", "--others", "--exclude-standard"], capture_output=True, check=True).stdout
    for name in filter(None, tracked.decode().split("\0")):
        source = REPO / name
        if source.is_file():  # a tracked file deleted in the working tree is not packed
            (tree / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, tree / name)
    git = ["git", "-c", "user.name=pack", "-c", "user.email=pack@localhost", "-C", str(tree)]
    for step in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "pack"]):
        subprocess.run(git + step, check=True, capture_output=True)
    validate = comfy("node", "validate", cwd=tree, home=home)
    pack = comfy("node", "pack", cwd=tree, home=home)
    assert pack.returncode == 0, pack.stdout + pack.stderr
    zip_path = tree / "node.zip"
    with zipfile.ZipFile(zip_path) as z:
        print(f"\nnode.zip: {len(z.namelist())} files, {zip_path.stat().st_size} bytes "
              f"({sum(i.file_size for i in z.infolist())} unpacked)")
    return tree, zip_path, validate


def test_comfy_node_validate_passes(packed):
    _, _, validate = packed
    output = validate.stdout + validate.stderr
    assert validate.returncode == 0 and "All validation checks passed" in output, output


def test_the_zip_is_small_and_holds_only_the_runtime(packed):
    _, zip_path, _ = packed
    assert zip_path.stat().st_size <= ZIP_LIMIT, f"{zip_path.stat().st_size} bytes > {ZIP_LIMIT}"
    with zipfile.ZipFile(zip_path) as z:
        names = set(z.namelist())
        templates = [n for n in names if n.startswith("example_workflows/") and n.endswith(".json")]
        missing = [t for t in templates if t[:-len(".json")] + ".jpg" not in names]
        assert templates and not missing, f"templates shipped without their thumbnail: {missing}"
    assert {n.split("/")[0] for n in names} <= TOP_LEVEL, sorted({n.split("/")[0] for n in names} - TOP_LEVEL)
    assert REQUIRED <= names, sorted(REQUIRED - names)
    for name in names:
        assert not re.search(r"(^|/)(tests?|corpus|malformed|fuzz|bench|results)/|_test\.[ch]$|__pycache__", name), name
    assert {n for n in names if n.startswith("docs/")} == {"docs/install.md"}


def _is_template_thumbnail(name: str, names: set[str]) -> bool:
    """example_workflows/<t>.jpg beside the template example_workflows/<t>.json."""
    return (name.startswith("example_workflows/") and name.endswith(".jpg") and name.count("/") == 1
            and name[:-len(".jpg")] + ".json" in names)


def test_no_binary_and_no_machine_path_in_the_zip(packed):
    _, zip_path, _ = packed
    with zipfile.ZipFile(zip_path) as z:
        names = set(z.namelist())
        for info in z.infolist():
            data = z.read(info)
            if _is_template_thumbnail(info.filename, names):  # ComfyUI shows it beside its template
                assert data.startswith(b"\xff\xd8\xff"), f"{info.filename} is not a JPEG"
                continue
            assert b"\0" not in data, f"{info.filename} is binary"
            try:
                data.decode("utf-8")
            except UnicodeDecodeError:
                pytest.fail(f"{info.filename} is not UTF-8 text")
            found = MACHINE_PATH.search(data)
            assert found is None, f"{info.filename} holds a machine path: {found.group().decode()!r}"


def test_every_relative_import_resolves_inside_the_zip(packed):
    _, zip_path, _ = packed
    with zipfile.ZipFile(zip_path) as z:
        names = set(z.namelist())
        sources = {n: z.read(n).decode() for n in names if n.endswith(".py")}
    unresolved = []
    for name, text in sources.items():
        package = name.split("/")[:-1]
        for node in ast.walk(ast.parse(text, name)):
            if not isinstance(node, ast.ImportFrom) or not node.level:
                continue
            base = package[: len(package) - node.level + 1] if node.level > 1 else package
            target = [*base, *(node.module.split(".") if node.module else [])]
            stem = "/".join(target)
            candidates = [f"{stem}.py", f"{stem}/__init__.py"] if stem else ["__init__.py"]
            candidates += [f"{stem}/{alias.name}.py" for alias in node.names] if stem else []
            if not any(c in names for c in candidates):
                unresolved.append(f"{name}:{node.lineno} from {'.' * node.level}{node.module or ''}")
    assert not unresolved, unresolved


def test_pyproject_sends_the_issues_link():
    pytest.importorskip("comfy_cli", reason="skipped: comfy-cli is not installed (pip install -r requirements-dev.txt)")
    from comfy_cli.registry.config_parser import extract_node_configuration

    config = extract_node_configuration(str(REPO / "pyproject.toml"))
    assert config.project.urls.issues == "https://github.com/cineflux/ComfyUI-ZeroCopy-Continuity/issues"
    assert config.project.urls.repository and config.project.urls.homepage


@pytest.mark.slow
@pytest.mark.skipif(not HAS_COMPILER, reason="skipped: no C compiler on this machine")
def test_the_engine_builds_from_the_zip_with_install_py_and_loads(packed, tmp_path):
    _, zip_path, _ = packed
    pack = tmp_path / "custom_nodes" / "zerocopy-continuity"
    with zipfile.ZipFile(zip_path) as z:
        z.extractall(pack)
    env = {k: v for k, v in os.environ.items() if k not in ("ZC_LIBRARY", "CC")}
    hide = "import sys, runpy; sys.modules['zerocopy_engine'] = None; "
    build = subprocess.run([sys.executable, "-c", hide + "sys.argv = ['install.py', '--build']; "
                            "runpy.run_path('install.py', run_name='__main__')"],
                           cwd=pack, env=env, capture_output=True, text=True, timeout=600)
    assert build.returncode == 0, build.stdout + build.stderr
    assert "make" not in build.stdout.split("building the C engine: ", 1)[1].split()[0]  # no Makefile shipped
    check = subprocess.run([sys.executable, "-c", hide + "sys.argv = ['install.py']; "
                            "runpy.run_path('install.py', run_name='__main__')"],
                           cwd=pack, env=env, capture_output=True, text=True, timeout=60)
    assert check.returncode == 0 and f"loads from {pack / 'build' / 'libzc.so'}" in check.stdout, check.stdout
