"""Copies of the pack's files that the install tests set up beside a bare install.py."""

from __future__ import annotations

import shutil
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def copy_install_rules(root: Path) -> Path:
    """install.py and the engine-locating rules (zc_engine/_locate.py and the library's file
    names it reads, engine/python/zerocopy_engine/_names.py) into ``root``, with no build/."""
    (root / "zc_engine").mkdir(parents=True)
    shutil.copy(REPO / "install.py", root / "install.py")
    shutil.copy(REPO / "zc_engine" / "_locate.py", root / "zc_engine" / "_locate.py")
    names = root / "engine" / "python" / "zerocopy_engine"
    names.mkdir(parents=True)
    shutil.copy(REPO / "engine" / "python" / "zerocopy_engine" / "_names.py", names / "_names.py")
    return root
