"""One engine version everywhere (the places that set it, and the docs and tests that name it), and
a release tag that names the pack's version: the release workflow (.github/workflows/release.yml)
runs this file as a script before it builds anything, and the test suite runs it with pytest.
Standard library only (tomllib: Python 3.11+).

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
        "engine/include/zc.h ZC_VERSION_MAJOR.MINOR.PATCH": ".".join(
            _one(rf"^#define ZC_VERSION_{part} (\S+)", "engine/include/zc.h")
            for part in ("MAJOR", "MINOR", "PATCH")),
        "engine/python/zerocopy_engine/__init__.py __version__": _one(
            r'^__version__ = "([^"]+)"', "engine/python/zerocopy_engine/__init__.py"),
        "zc_engine/_locate.py ENGINE_VERSION": _one(r'^ENGINE_VERSION = "([^"]+)"', "zc_engine/_locate.py"),
    }


# How the docs and the tests name the engine's version: the pin and the wheel's or sdist's file
# name, the zc tool's --version answer, a test's VERSION constant, the version a test expects the
# loaded engine to report, and the "this pack needs" of the refusal quoted in the docs.
MENTIONS = re.compile(r"zerocopy[-_]engine(?:==|-|\s+)(\d+\.\d+\.\d+)|\bzc (\d+\.\d+\.\d+)\b"
                      r"|^VERSION = \"(\d+\.\d+\.\d+)\"|== \"(\d+\.\d+\.\d+)\"|is version (\d+\.\d+\.\d+)"
                      r"|pack needs\s+(\d+\.\d+\.\d+)`", re.MULTILINE)


def mentions() -> dict[str, str]:
    """Each place the docs and the tests name the engine's version ("path:line") -> that version."""
    files = [REPO / "README.md", REPO / "engine" / "README.md", *sorted((REPO / "docs").rglob("*.md")),
             *sorted(p for p in (REPO / "tests").rglob("*.py") if p.name != Path(__file__).name)]
    found = {}
    for path in files:
        text = path.read_text(encoding="utf-8")
        for match in MENTIONS.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            found[f"{path.relative_to(REPO)}:{line}"] = next(group for group in match.groups() if group)
    return found


def pack_version() -> str:
    return tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]


def problems(tag: str | None = None) -> list[str]:
    found = engine_versions()
    out = []
    if len(set(found.values())) != 1:
        out.append("the engine's version disagrees: " + "; ".join(f"{k}: {v}" for k, v in found.items()))
    elsewhere = {place: version for place, version in mentions().items() if version not in found.values()}
    if elsewhere:
        out.append(f"the docs or the tests name another engine version than {found['requirements.txt']}: "
                   + "; ".join(f"{k}: {v}" for k, v in elsewhere.items()))
    if tag is not None and tag != f"v{pack_version()}":
        out.append(f"the tag {tag} does not name the pack's version (pyproject.toml version = "
                   f"{pack_version()!r}: tag v{pack_version()})")
    return out


def test_every_place_names_the_same_engine_version():
    assert problems() == []
    named_in = {place.split(":")[0] for place in mentions()}
    assert {"README.md", "docs/install.md", "tests/python/test_install.py",
            "tests/wheel/test_wheel.py"} <= named_in


def test_the_check_catches_a_disagreement_and_a_wrong_tag(monkeypatch):
    real = engine_versions()
    monkeypatch.setattr(sys.modules[__name__], "engine_versions",
                        lambda: {**real, "requirements.txt": "9.9.9"})
    assert "requirements.txt: 9.9.9" in problems()[0]
    monkeypatch.setattr(sys.modules[__name__], "engine_versions", lambda: real)
    assert problems(f"v{pack_version()}") == [] and "does not name" in problems("v0.0.0-bad")[0]
    monkeypatch.setattr(sys.modules[__name__], "mentions", lambda: {"docs/install.md:5": "9.9.9"})
    expected = f"the docs or the tests name another engine version than {real['requirements.txt']}: "
    assert problems() == [expected + "docs/install.md:5: 9.9.9"]


if __name__ == "__main__":
    tag = sys.argv[sys.argv.index("--tag") + 1] if "--tag" in sys.argv else None
    errors = problems(tag)
    for error in errors:
        print(f"release check: {error}", file=sys.stderr)
    if not errors:
        print(f"release check: engine {engine_versions()['requirements.txt']} everywhere; pack {pack_version()}"
              + (f"; tag {tag}" if tag else ""))
    sys.exit(1 if errors else 0)
