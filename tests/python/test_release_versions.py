"""One engine version everywhere, and a release tag that names the pack's version: the release
workflow (.github/workflows/release.yml) runs this file as a script before it builds anything,
and the test suite runs it with pytest. Standard library only (tomllib: Python 3.11+).

    python tests/python/test_release_versions.py [--tag v0.1.0]
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import tomllib

REPO = Path(__file__).resolve().parents[2]


def _one(pattern: str, path: str) -> str:
    found = re.findall(pattern, (REPO / path).read_text(), flags=re.MULTILINE)
    if len(found) != 1:
        raise AssertionError(f"{path}: expected one match of {pattern!r}, found {found}")
    return found[0]


def engine_versions() -> dict[str, str]:
    """Where the engine's version is written -> the version written there."""
    pack = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    pins = [d for d in pack["dependencies"] if d.startswith("zerocopy-engine")]
    return {
        "pyproject.toml dependencies (the pack's pin)": pins[0].split("==", 1)[1] if len(pins) == 1 and "==" in pins[0]
        else f"not one exact pin: {pins}",
        "requirements.txt": _one(r"^zerocopy-engine==(\S+)\s*$", "requirements.txt"),
        "engine/pyproject.toml [project] version": tomllib.loads(
            (REPO / "engine" / "pyproject.toml").read_text())["project"]["version"],
        "engine/CMakeLists.txt project(VERSION)": _one(r"^project\(zerocopy_engine VERSION (\S+)", "engine/CMakeLists.txt"),
        "engine/include/zc.h ZC_VERSION_STRING": _one(r'^#define ZC_VERSION_STRING "([^"]+)"', "engine/include/zc.h"),
        "engine/python/zerocopy_engine/__init__.py __version__": _one(
            r'^__version__ = "([^"]+)"', "engine/python/zerocopy_engine/__init__.py"),
        "zc_engine/_locate.py ENGINE_VERSION": _one(r'^ENGINE_VERSION = "([^"]+)"', "zc_engine/_locate.py"),
    }


def pack_version() -> str:
    return tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]


def problems(tag: str | None = None) -> list[str]:
    found = engine_versions()
    out = []
    if len(set(found.values())) != 1:
        out.append("the engine's version disagrees: " + "; ".join(f"{k}: {v}" for k, v in found.items()))
    if tag is not None and tag != f"v{pack_version()}":
        out.append(f"the tag {tag} does not name the pack's version (pyproject.toml version = "
                   f"{pack_version()!r}: tag v{pack_version()})")
    return out


def test_every_place_names_the_same_engine_version():
    assert problems() == []


def test_the_check_catches_a_disagreement_and_a_wrong_tag(monkeypatch):
    real = engine_versions()
    monkeypatch.setattr(sys.modules[__name__], "engine_versions",
                        lambda: {**real, "requirements.txt": "9.9.9"})
    assert "requirements.txt: 9.9.9" in problems()[0]
    monkeypatch.setattr(sys.modules[__name__], "engine_versions", lambda: real)
    assert problems(f"v{pack_version()}") == [] and "does not name" in problems("v0.0.0-bad")[0]


if __name__ == "__main__":
    tag = sys.argv[sys.argv.index("--tag") + 1] if "--tag" in sys.argv else None
    errors = problems(tag)
    for error in errors:
        print(f"release check: {error}", file=sys.stderr)
    if not errors:
        print(f"release check: engine {engine_versions()['requirements.txt']} everywhere; pack {pack_version()}"
              + (f"; tag {tag}" if tag else ""))
    sys.exit(1 if errors else 0)
