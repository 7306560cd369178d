"""pytest at the repository's root: the root folder is a folder of tests, not a Python package.

The root holds the pack's __init__.py (ComfyUI imports the folder as a package), so pytest
would make the root a Package and import that __init__.py before any test, under the folder's
name. A clone whose folder name is no Python identifier (ComfyUI-ZeroCopy-Continuity, as git
names it) then failed every test: the pack was imported as a module called "__init__", whose
relative imports have no parent package. The pack is imported by the tests that mean to, the
way ComfyUI does (tests/integration), never as a side effect of collection."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent


class RootIsAFolder:
    """Collects the root as a plain folder. Registered as a plugin, not as this conftest's own
    hook: pytest asks the hooks of the root's parent folder how to collect the root."""

    @pytest.hookimpl(tryfirst=True)
    def pytest_collect_directory(self, path: Path, parent):
        if path == ROOT:
            return pytest.Dir.from_parent(parent, path=path)
        return None


def pytest_configure(config):
    config.pluginmanager.register(RootIsAFolder(), "zc-root-is-a-folder")
