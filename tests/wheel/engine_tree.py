"""What the wheel tests share: a command that must succeed, and engine/ as git tracks it (a clean
tree: no build/, nothing untracked), which is what cibuildwheel builds from."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def run(*command, **kwargs) -> subprocess.CompletedProcess:
    result = subprocess.run([str(c) for c in command], capture_output=True, text=True, timeout=600, check=False,
                            **kwargs)
    assert result.returncode == 0, f"{command}: {result.stdout}\n{result.stderr}"
    return result


def copy_tracked_engine(dest: Path) -> Path:
    """engine/ as git tracks it (the working tree's contents of tracked files), copied under dest."""
    files = run("git", "ls-files", "-z", "engine", cwd=REPO).stdout.split("\0")
    for name in filter(None, files):
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, target)
    return dest / "engine"
