"""Build the pack's C engine (build/libzc.so): run by ComfyUI-Manager after it installs
the pack, and by hand after a git clone:

    python install.py            # from ComfyUI/custom_nodes/ComfyUI-ZeroCopy-Continuity

Needs only a C compiler (gcc or clang; no CUDA, no Python headers). Uses `make` when
present, else calls the compiler directly with the same flags. Without a compiler it
stops with one clear message and exit status 1; ComfyUI still starts without the
engine, and its log says how to build it. Warnings never fail a user's build
(the project's own builds use -Werror).
"""

from __future__ import annotations

import argparse
import ctypes
import os
import platform
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent
PREFIX = "[ZeroCopy-Continuity install]"
FLAGS = ["-std=c11", "-O2", "-g", "-fPIC", "-fvisibility=hidden", "-pthread", "-D_GNU_SOURCE",
         "-D_FILE_OFFSET_BITS=64", "-DZC_BUILDING_LIBRARY", "-Wall", "-Wno-unused-parameter"]
HOW_TO_GET_A_COMPILER = {
    "Linux": "Debian/Ubuntu: sudo apt-get install build-essential; Fedora: sudo dnf install gcc make; "
             "Arch: sudo pacman -S base-devel",
    "Darwin": "xcode-select --install",
}


def say(message: str) -> None:
    print(f"{PREFIX} {message}", flush=True)


def find_compiler() -> list[str] | None:
    """The C compiler command: $CC, else cc, gcc or clang on PATH."""
    if os.environ.get("CC"):
        command = shlex.split(os.environ["CC"])
        if command and shutil.which(command[0]):
            return command
    for name in ("cc", "gcc", "clang"):
        if shutil.which(name):
            return [name]
    return None


def sources() -> list[Path]:
    platform = REPO / "engine" / "src" / "platform"
    posix = [p for p in platform.glob("posix_*.c") if not p.stem.endswith(("_test", "_args"))]
    return sorted([*(REPO / "engine" / "src").glob("*.c"), platform / "once.c", *posix])


def up_to_date(library: Path) -> bool:
    if not library.is_file():
        return False
    newest = max(p.stat().st_mtime for p in [*sources(), *(REPO / "engine").glob("*/*.h")])
    return library.stat().st_mtime >= newest


def build(build_dir: Path, compiler: list[str]) -> Path:
    library = build_dir / "libzc.so"
    build_dir.mkdir(parents=True, exist_ok=True)
    if shutil.which("make") and build_dir.resolve() == (REPO / "build").resolve():
        # the Makefile's lib target, without -Werror (a newer compiler's new warning must not fail users)
        command = ["make", "-C", str(REPO), "--no-print-directory", "lib", f"CC={shlex.join(compiler)}",
                   "WARN=-std=c11 -Wall -Wextra -Wno-unused-parameter"]
    else:
        command = [*compiler, *FLAGS, f"-I{REPO / 'engine' / 'include'}", f"-I{REPO / 'engine' / 'src'}",
                   "-shared", "-o", str(library), *map(str, sources())]
    say("building the C engine: " + shlex.join(command))
    result = subprocess.run(command, cwd=REPO, capture_output=True, text=True)
    if result.returncode != 0:
        sys.stdout.write(result.stdout)
        sys.stderr.write(result.stderr)
        raise RuntimeError(f"the compiler failed (exit {result.returncode}); the messages are above")
    return library


def check_loads(library: Path) -> str:
    lib = ctypes.CDLL(str(library))
    lib.zc_version.restype = ctypes.c_char_p
    return lib.zc_version().decode()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Build the ZeroCopy-Continuity C engine.")
    parser.add_argument("--build-dir", type=Path, default=REPO / "build", help="where libzc.so goes")
    parser.add_argument("--force", action="store_true", help="rebuild even when up to date")
    options = parser.parse_args(argv)
    system = platform.system()
    if system == "Windows":
        say("the C engine's Windows platform layer is not written yet; the pack supports Linux "
            "(and other POSIX systems). ComfyUI will start without the ZeroCopy nodes.")
        return 1
    library = options.build_dir / "libzc.so"
    if not options.force and up_to_date(library):
        say(f"the C engine is up to date: {library}")
        return 0
    compiler = find_compiler()
    if compiler is None:
        hint = HOW_TO_GET_A_COMPILER.get(system, "install gcc or clang")
        say(f"no C compiler found (looked for $CC, cc, gcc, clang). Install one ({hint}), then run "
            f"`python {REPO / 'install.py'}` again. Until then ComfyUI starts without the ZeroCopy nodes.")
        return 1
    try:
        library = build(options.build_dir, compiler)
        version = check_loads(library)
    except (RuntimeError, OSError, AttributeError) as exc:
        say(f"the C engine was not built: {exc}")
        return 1
    say(f"built {library} (engine {version}); restart ComfyUI to load the ZeroCopy nodes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
