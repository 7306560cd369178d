"""The release workflows, checked as far as they can be without GitHub.

- Both workflow files are valid GitHub Actions workflows: check-jsonschema (pinned in
  requirements-dev.txt) with the GitHub-workflow schema it vendors (SchemaStore's; offline). A
  copy with a misspelt key must fail, so the check is known to bite.
- release.yml runs in the promised order: check → wheels and sdist → pypi → wait → registry,
  each job reachable only through the one before; the pypi job expects as many wheels as
  wheels.yml's matrix builds; the Registry step is comfy-cli at the version requirements-release.txt
  pins.
- The wait job's own script, taken from release.yml and run by bash: against a local package
  index (http.server over a PEP 503 folder) that holds the engine wheel from dist/, it installs
  that exact version into a fresh venv, runs zc, and succeeds on the first attempt; against an
  index without it, it gives up after its bounded attempts with one line, exit 1.
"""

from __future__ import annotations

import functools
import http.server
import os
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
WORKFLOWS = REPO / ".github" / "workflows"
BIN = Path(sys.executable).parent


def _yaml():
    try:
        from ruamel.yaml import YAML
    except ImportError:
        pytest.skip("skipped: ruamel.yaml (with check-jsonschema) not installed (pip install -r requirements-dev.txt)")
    return YAML(typ="safe")


def _workflow(name: str) -> dict:
    return _yaml().load((WORKFLOWS / name).read_text())


def _check_jsonschema(*files: Path) -> subprocess.CompletedProcess:
    tool = BIN / "check-jsonschema"
    if not tool.is_file():
        pytest.skip("skipped: check-jsonschema not installed (pip install -r requirements-dev.txt)")
    return subprocess.run([str(tool), "--builtin-schema", "vendor.github-workflows", *map(str, files)],
                          capture_output=True, text=True, timeout=120, check=False)


def test_both_workflows_are_valid_github_workflows_and_a_misspelt_key_is_caught(tmp_path):
    files = sorted(WORKFLOWS.glob("*.yml"))
    assert {f.name for f in files} == {"release.yml", "wheels.yml"}
    result = _check_jsonschema(*files)
    assert result.returncode == 0, result.stdout + result.stderr
    broken = tmp_path / "release.yml"
    broken.write_text((WORKFLOWS / "release.yml").read_text().replace("    runs-on: ubuntu-24.04", "    runs_on: ubuntu-24.04", 1))
    result = _check_jsonschema(broken)
    assert result.returncode != 0 and "runs_on" in result.stdout + result.stderr, result.stdout


def _needs(job: dict) -> set[str]:
    needs = job.get("needs", [])
    return {needs} if isinstance(needs, str) else set(needs)


def _before(jobs: dict, name: str) -> set[str]:
    """Every job that must finish before ``name`` (transitively)."""
    seen: set[str] = set()
    todo = list(_needs(jobs[name]))
    while todo:
        job = todo.pop()
        if job not in seen:
            seen.add(job)
            todo.extend(_needs(jobs[job]))
    return seen


def test_release_runs_check_then_builds_then_pypi_then_wait_then_registry():
    release = _workflow("release.yml")
    jobs = release["jobs"]
    assert list(jobs) == ["check", "wheels", "sdist", "pypi", "wait", "registry"]
    assert release["on"] == {"push": {"tags": ["v*"]}}
    assert _before(jobs, "check") == set()
    assert _before(jobs, "wheels") == _before(jobs, "sdist") == {"check"}
    assert _before(jobs, "pypi") == {"check", "wheels", "sdist"}
    assert _before(jobs, "wait") == {"check", "wheels", "sdist", "pypi"}
    assert _before(jobs, "registry") == {"check", "wheels", "sdist", "pypi", "wait"}
    assert jobs["wheels"]["uses"] == "./.github/workflows/wheels.yml"
    # trusted publishing: the OIDC permission, no password anywhere
    assert jobs["pypi"]["permissions"] == {"id-token": "write"}
    publish = next(s for s in jobs["pypi"]["steps"] if s.get("uses", "").startswith("pypa/gh-action-pypi-publish"))
    assert "password" not in publish.get("with", {})
    # the pypi job counts the wheels wheels.yml builds
    matrix = _workflow("wheels.yml")["jobs"]["wheel"]["strategy"]["matrix"]["include"]
    counted = " ".join(s.get("run", "") for s in jobs["pypi"]["steps"])
    assert f'ls dist/*.whl | wc -l)" -eq {len(matrix)}' in counted, counted
    # the Registry step is comfy-cli at the version the release tests use
    pinned = re.search(r"^comfy-cli==(\S+)$", (REPO / "requirements-release.txt").read_text(), re.MULTILINE).group(1)
    registry = " ".join(s.get("run", "") for s in jobs["registry"]["steps"])
    assert f"pip install comfy-cli=={pinned}" in registry and "comfy --skip-prompt node publish" in registry


def _wait_step() -> dict:
    steps = _workflow("release.yml")["jobs"]["wait"]["steps"]
    return next(s for s in steps if "run" in s and "zerocopy-engine" in s["run"])


@pytest.fixture
def local_index(tmp_path):
    """A PEP 503 index on 127.0.0.1 (http.server's directory listings are the project pages);
    ``put(wheel)`` adds a file."""
    root = tmp_path / "index"
    (root / "zerocopy-engine").mkdir(parents=True)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield {"url": f"http://127.0.0.1:{server.server_address[1]}/",
               "put": lambda wheel: shutil.copy2(wheel, root / "zerocopy-engine" / wheel.name)}
    finally:
        server.shutdown()
        server.server_close()


def _run_wait(tmp_path, index_url: str, engine: str, attempts: int) -> subprocess.CompletedProcess:
    step = _wait_step()
    env = {**{k: str(v) for k, v in step["env"].items()}, "ENGINE": engine, "INDEX_URL": index_url,
           "ATTEMPTS": str(attempts), "PAUSE_S": "0", "PATH": f"{BIN}{os.pathsep}/usr/bin:/bin",
           "HOME": str(tmp_path), "PIP_CONFIG_FILE": os.devnull, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    work = tmp_path / "runner"
    work.mkdir()
    return subprocess.run(["bash", "-e", "-c", step["run"]], cwd=work, env=env, capture_output=True,
                          text=True, timeout=300, check=False)


def _engine_wheel() -> tuple[Path, str]:
    version = re.search(r"^zerocopy-engine==(\S+)$", (REPO / "requirements.txt").read_text(), re.MULTILINE).group(1)
    wheels = sorted((REPO / "dist").glob(f"zerocopy_engine-{version}-py3-none-*.whl"))
    if not wheels:
        pytest.skip(f"skipped: no zerocopy_engine-{version}-py3-none-*.whl in dist/ (./setup.sh builds it)")
    return wheels[-1], version


def test_the_wait_script_passes_once_the_exact_version_installs_and_runs(tmp_path, local_index):
    wheel, version = _engine_wheel()
    local_index["put"](wheel)
    assert _wait_step()["env"]["INDEX_URL"] == "https://pypi.org/simple"  # the real default
    result = _run_wait(tmp_path, local_index["url"], version, attempts=3)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"zerocopy-engine {version} installs from {local_index['url']} (attempt 1)" in result.stdout


def test_the_wait_script_gives_up_after_its_attempts_with_one_line(tmp_path, local_index):
    _, version = _engine_wheel()  # the index stays empty: the version is not published yet
    result = _run_wait(tmp_path, local_index["url"], version, attempts=2)
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stderr.strip().splitlines()[-1] == (
        f"zerocopy-engine {version} is still not installable from {local_index['url']} after 2 attempts "
        "0 s apart; the node is not published")
    assert len(re.findall(r"No matching distribution found for zerocopy-engine==", result.stderr)) == 2
