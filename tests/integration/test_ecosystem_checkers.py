"""The ecosystem's own checkers, run on this pack as a user would run them (both pinned in
requirements-test.txt):

- comfy-import-guard (``check --offline``): on a ComfyUI install whose custom_nodes holds a copy
  of this pack's tracked files, resolved against a local git clone of ComfyUI. The clone is named
  by COMFYUI_GIT_PATH (any clone of ComfyUI with an ``origin/master``; its working tree need not be
  checked out, the checker reads the objects); without it the test is skipped, saying so. The
  checker must call the pack safe: no reference to a ``comfy.*`` name that ComfyUI lacks.
- comfy-lint: every shipped example workflow, in the API form the frontend queues, against the
  /object_info of a real ComfyUI server (main.py --cpu) with this pack loaded, and with the model,
  image and audio files the examples name present (empty files: the server only lists them).
  An example whose node types this ComfyUI lacks is skipped with their names.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from comfy_server import Server, get

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))

IMPORT_GUARD = Path(sys.executable).with_name("comfy-import-guard")
LINT = Path(sys.executable).with_name("comfy-lint")
PACK_NAME = "ComfyUI-ZeroCopy-Continuity"
KJNODES_PATH = os.environ.get("KJNODES_PATH")

def file_inputs() -> dict:
    """The files the examples load, by the loader input that names them: the folder (under the
    server's base directory) a user puts them in; the models as tools/build_examples.py lists them."""
    import build_examples

    return {**{key: f"models/{folder}" for key, folder in build_examples.MODEL_INPUTS.items()},
            ("LTXAVTextEncoderLoader", "ckpt_name"): "models/checkpoints",
            ("LoadImage", "image"): "input", ("LoadAudio", "audio"): "input"}


def tracked_copy(destination: Path) -> None:
    """This repository's git-tracked files (as in the working tree), as a user's clone holds them."""
    listed = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z"], capture_output=True, check=True)
    for name in listed.stdout.decode().split("\0"):
        source = REPO / name
        if name and source.is_file():
            (destination / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, destination / name)


# ------------------------------------------------------------------------ comfy-import-guard


def test_comfy_import_guard_calls_the_pack_safe(tmp_path):
    clone = os.environ.get("COMFYUI_GIT_PATH")
    if not clone:
        pytest.skip("skipped: COMFYUI_GIT_PATH not set (a git clone of ComfyUI for comfy-import-guard)")
    if not (Path(clone) / ".git").exists():
        pytest.skip(f"skipped: COMFYUI_GIT_PATH={clone} is not a git clone of ComfyUI")
    if not IMPORT_GUARD.is_file():
        pytest.skip("skipped: comfy-import-guard is not installed (pip install -r requirements-test.txt)")
    if shutil.which("git") is None:
        pytest.skip("skipped: no git")
    cache = tmp_path / "cache"  # the checker reads its clone at <cache-dir>/ComfyUI
    cache.mkdir()
    (cache / "ComfyUI").symlink_to(Path(clone).resolve())
    install = tmp_path / "ComfyUI"
    tracked_copy(install / "custom_nodes" / PACK_NAME)

    result = subprocess.run([str(IMPORT_GUARD), "check", "--offline", "--quiet", "--json",
                             "--cache-dir", str(cache), "--comfy-dir", str(install), "--pack", PACK_NAME],
                            check=False, capture_output=True, text=True, timeout=600)
    assert result.returncode in (0, 1), f"comfy-import-guard failed ({result.returncode}):\n{result.stderr}"
    report = json.loads(result.stdout)
    [pack] = report["packs"]
    breaking = [f"{hit['dotted']}  {hit['file']}:{hit['line']} ({hit['kind']}) {hit.get('detail', '')}"
                for hit in pack["breaking"]]
    assert pack["verdict"] == "SAFE" and not breaking and result.returncode == 0, (
        f"comfy-import-guard: {pack['verdict']}, {len(breaking)} breaking reference(s):\n"
        + "\n".join(breaking) + f"\n{result.stderr}")


# ------------------------------------------------------------------------------- comfy-lint


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A real ComfyUI (main.py --cpu) with this pack (and KJNodes where KJNODES_PATH is set) in its
    custom_nodes; its /object_info, the examples' API prompts, and the files those prompts name
    put in place, in its base directory."""
    if not LINT.is_file():
        pytest.skip("skipped: comfy-lint is not installed (pip install -r requirements-test.txt)")
    base = tmp_path_factory.mktemp("lint_base")
    (base / "custom_nodes").mkdir()
    os.symlink(REPO, base / "custom_nodes" / PACK_NAME)
    for folder in set(file_inputs().values()):  # there from the start: ComfyUI then sees what is added
        (base / folder).mkdir(parents=True, exist_ok=True)
    if KJNODES_PATH:
        os.symlink(Path(KJNODES_PATH).resolve(), base / "custom_nodes" / "ComfyUI-KJNodes")
    srv = Server(base, base / "server.log", spill=base / "spill")
    try:
        srv.wait_ready()
        status, _, body = get(srv.url + "/object_info", 120)
        assert status == 200, srv.tail()
        srv.object_info = json.loads(body)
        srv.base = base
        yield srv
    finally:
        srv.stop()


def server_schemas(object_info: dict):
    """comfy_workflows.Schemas read from a server's /object_info instead of in-process nodes."""
    from comfy_workflows import Schemas

    class FromObjectInfo(Schemas):
        def __init__(self):
            self._cache = {}

        def __contains__(self, name: str) -> bool:
            return name in object_info

        def info(self, name: str) -> dict:
            return object_info[name]

    return FromObjectInfo()


def example_files():
    return sorted((REPO / "example_workflows").glob("*.json"))


@pytest.mark.parametrize("path", example_files(), ids=lambda p: p.stem)
def test_comfy_lint_passes_every_example(server, path, tmp_path):
    from comfy_workflows import FRONTEND_ONLY, to_api_prompt

    workflow = json.loads(path.read_text())
    types = {node["type"] for node in workflow["nodes"]} - set(FRONTEND_ONLY)
    missing = sorted(types - set(server.object_info))
    if missing:
        pytest.skip(f"skipped: this ComfyUI lacks {', '.join(missing)}"
                    + ("" if KJNODES_PATH else " (KJNODES_PATH not set)"))
    prompt = to_api_prompt(workflow, server_schemas(server.object_info))
    folders = file_inputs()
    for node in prompt.values():  # the files a user has downloaded for this example
        for name, value in node["inputs"].items():
            folder = folders.get((node["class_type"], name))
            if folder and isinstance(value, str):
                (server.base / folder / value).touch()
    api = tmp_path / f"{path.stem}.api.json"
    api.write_text(json.dumps(prompt, indent=1))

    result = subprocess.run([str(LINT), "--server", server.url, "--strict", "--color", "never", str(api)],
                            check=False, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"comfy-lint on {path.name} ({result.returncode}):\n{result.stdout}{result.stderr}"
