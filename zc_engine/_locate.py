"""Where the C engine is and how to say that it is not: the load order and the fix to print.
Standard library only, so that install.py can use it before torch or the pack can be imported.
The library's file name per OS is the engine package's (engine/python/zerocopy_engine/_names.py,
which the pack ships and this module loads by path, so it needs no installed package; without
that file, the installed package's).

Load order:

1. ``ZC_LIBRARY``, when set: that file and nothing else (the explicit override the tests
   use to load the AddressSanitizer build);
2. the installed ``zerocopy_engine`` package (the wheel requirements.txt pins);
3. a developer build in this repository's ``build/`` (``make``, or ``python install.py
   --build``).
"""

from __future__ import annotations

import ctypes
import functools
import importlib.util
import os
import platform
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
ENGINE_VERSION = "0.4.0"  # the zerocopy-engine release this bridge is written against
NAMES_FILE = REPO_ROOT / "engine" / "python" / "zerocopy_engine" / "_names.py"


class EngineMissing(Exception):
    """No engine could be loaded; the message is the one line to log."""


@functools.cache
def _names():
    """The engine package's library_name: from this checkout's _names.py (the pack ships it), else
    from the installed zerocopy_engine (a copy of the pack's Python folders alone)."""
    if NAMES_FILE.is_file():
        spec = importlib.util.spec_from_file_location("zc_engine_library_names", NAMES_FILE)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module.library_name
    try:
        from zerocopy_engine import library_name
    except ImportError:
        raise _failure(f"{NAMES_FILE} is missing and the zerocopy-engine package is not installed, so "
                       f"the engine's file name for {platform_label()} is unknown",
                       f"install it: {pip_command()}, or restore the pack's engine/ folder") from None
    return library_name


def library_name(system: str | None = None) -> str:
    """The engine's file name on an OS (``platform.system()`` spelling), default this one."""
    return _names()(system)


def platform_label() -> str:
    """This platform as messages name it, e.g. "Windows AMD64" or "Linux x86_64"."""
    return f"{platform.system()} {platform.machine()}".strip()


def pip_command() -> str:
    """The command that installs the engine into this Python (ComfyUI's, when it runs)."""
    exe = sys.executable or "python"
    parts = exe.replace("\\", "/").lower().split("/")
    if "python_embeded" in parts:  # the Windows portable build, run from its own folder
        python = r"python_embeded\python.exe"
    else:
        python = f'"{exe}"' if " " in exe else exe
    return f"{python} -m pip install zerocopy-engine=={ENGINE_VERSION}"


def _installed_package_library() -> Path | None:
    try:
        import zerocopy_engine
    except ImportError:
        return None
    return zerocopy_engine.library_path()


def _candidates() -> list[tuple[str, Path]]:
    """(where, path) in load order; with ZC_LIBRARY set, only that."""
    override = os.environ.get("ZC_LIBRARY")
    if override:
        return [("ZC_LIBRARY", Path(override))]
    found = []
    package = _installed_package_library()
    if package is not None:
        found.append(("the zerocopy-engine package", package))
    found.append(("the developer build", REPO_ROOT / "build" / library_name()))
    return found


def _failure(problem: str, fix: str) -> EngineMissing:
    return EngineMissing(f"ZeroCopy-Continuity: {problem}; fix: {fix}")


def _open(where: str, path: Path) -> ctypes.CDLL:
    """Load one candidate, or raise the one-line EngineMissing that says why."""
    fix = {
        "ZC_LIBRARY": f"point ZC_LIBRARY at an engine built for {platform_label()}, or unset it",
        "the zerocopy-engine package": f"reinstall it for this platform: {pip_command()} "
                                       f"--force-reinstall",
    }.get(where, f"rebuild it (make -C {REPO_ROOT}) or install the released one: {pip_command()}")
    try:
        lib = ctypes.CDLL(str(path))
    except OSError as exc:  # another OS's or CPU's file, a broken copy, a missing dependency
        raise _failure(f"the C engine {path} (from {where}) cannot be loaded on {platform_label()}: "
                       f"{exc}", fix) from exc
    lib.zc_version.restype = ctypes.c_char_p
    version = (lib.zc_version() or b"").decode()
    if version.split(".")[:2] != ENGINE_VERSION.split(".")[:2]:
        raise _failure(f"the C engine {path} (from {where}) is version {version or '?'}, but this "
                       f"pack needs {ENGINE_VERSION}", fix)
    return lib


def load() -> tuple[ctypes.CDLL, Path]:
    """The first candidate that exists, loaded and version-checked, and its path; or
    EngineMissing naming the platform, the file expected and the fix."""
    candidates = _candidates()
    for where, path in candidates:
        if path.is_file():
            lib = _open(where, path)
            break
    else:
        looked = ", ".join(str(path) for _, path in candidates)
        if candidates[0][0] == "ZC_LIBRARY":
            raise _failure(f"ZC_LIBRARY names {looked}, which does not exist (expected "
                           f"{library_name()} for {platform_label()})",
                           f"unset ZC_LIBRARY to use the installed engine, or build one: "
                           f"make -C {REPO_ROOT}")
        raise _failure(f"the C engine is not installed for {platform_label()} (expected "
                       f"{library_name()} from the zerocopy-engine {ENGINE_VERSION} package; looked "
                       f"for {looked})", f"install it into ComfyUI's Python: {pip_command()}")
    return lib, path
