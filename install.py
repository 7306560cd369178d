"""Check that the pack's C engine loads: run by ComfyUI-Manager after it has installed
requirements.txt (which brings the engine as the prebuilt zerocopy-engine wheel), and by
hand after a git clone:

    python install.py            # with ComfyUI's Python, from the pack's folder

It compiles nothing and downloads nothing. When the engine is missing or built for another
platform it prints one line naming the nodes that will be missing, the platform, and the
one command that fixes it here (``engine_report``; the running pack shows the same line in
ComfyUI's UI), and exits with status 1; ComfyUI still starts, with ZeroCopyVRAMPin only.

Developers, and platforms without a wheel, can build the engine from source into build/:

    python install.py --build    # needs a C compiler (gcc or clang; mingw-w64 gcc on Windows)

which uses `make` when present (with the Makefile of a git clone), else calls the compiler
directly with the same flags: the Registry's zip carries only the engine's library sources.
Warnings never fail that build (the project's own builds use -Werror).

The pack's folder may have any name (custom_nodes/zerocopy-continuity from the Registry,
custom_nodes/ComfyUI-ZeroCopy-Continuity from git): every path here is this file's own folder.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent
PREFIX = "[ZeroCopy-Continuity install]"
COMMON_FLAGS = ["-std=c11", "-O2", "-DZC_BUILDING_LIBRARY", "-Wall", "-Wno-unused-parameter"]
POSIX_FLAGS = ["-g", "-fPIC", "-fvisibility=hidden", "-pthread", "-D_GNU_SOURCE",
               "-D_FILE_OFFSET_BITS=64"]
WINDOWS_FLAGS = ["-D__USE_MINGW_ANSI_STDIO=1", "-static"]
# The nodes that need the engine, as zc_nodes/extension.py registers them (a test holds the two
# lists equal); ZeroCopyVRAMPin needs no engine and is always registered.
ENGINE_NODES = ("ZeroCopyLatentStore", "ZeroCopyLatentHandoff", "ZeroCopyLatentLoad", "ZeroCopyFilmAssemble",
                "ZeroCopyFilmRender")
ALWAYS_NODE = "ZeroCopyVRAMPin"
HOW_TO_GET_A_COMPILER = {
    "Linux": "Debian/Ubuntu: sudo apt-get install build-essential; Fedora: sudo dnf install gcc make; "
             "Arch: sudo pacman -S base-devel",
    "Darwin": "xcode-select --install",
    "Windows": "MSYS2's mingw-w64 gcc, on PATH",
}


def say(message: str) -> None:
    print(f"{PREFIX} {message}", flush=True)


def locate():
    """zc_engine/_locate.py, loaded by path: the pack's own rules for finding the engine,
    without importing the pack (and torch)."""
    spec = importlib.util.spec_from_file_location("zc_locate", REPO / "zc_engine" / "_locate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def fix_command(loc=None) -> str:
    """The one command that gives this Python a working engine now: with a C compiler on PATH,
    building it from this folder's sources (works whether or not the wheel is published);
    without one, the prebuilt wheel for exactly the version this pack needs."""
    loc = loc or locate()
    pip = loc.pip_command()
    python = pip.split(" -m pip ", 1)[0]
    bad_file = "ZC_LIBRARY" not in os.environ and (REPO / "build" / loc.library_name()).is_file()
    if find_compiler() is not None:
        script = REPO / "install.py"
        script_arg = f'"{script}"' if " " in str(script) else str(script)
        return f"{python} {script_arg} --build" + (" --force" if bad_file else "")
    installed = importlib.util.find_spec("zerocopy_engine") is not None
    return pip + (" --force-reinstall" if installed else "")


def engine_report(problem: str, loc=None) -> dict:
    """What the user is told when the engine does not load: the missing nodes, the platform,
    the fix, and the one-line message (log, install.py, the UI's toast and sidebar) made of
    them. problem: why it does not load (an EngineMissing text, "ZeroCopy-Continuity: "
    prefix and "; fix: ..." tail allowed)."""
    loc = loc or locate()
    problem = problem.removeprefix("ZeroCopy-Continuity: ").split("; fix: ", 1)[0].strip().rstrip(".")
    command = fix_command(loc)
    if "ZC_LIBRARY" in os.environ:
        fix = (f"unset ZC_LIBRARY (or point it at an engine built for {loc.platform_label()}); if no engine "
               f"loads then, run {command}")
    else:
        fix = f"run {command}"
    message = (f"ZeroCopy-Continuity: {len(ENGINE_NODES)} of {len(ENGINE_NODES) + 1} nodes are not "
               f"loaded on {loc.platform_label()} ({', '.join(ENGINE_NODES)}): {problem}. Fix: {fix}, then "
               f"restart ComfyUI. {ALWAYS_NODE} needs no engine and works.")
    return {"ok": False, "missing_nodes": list(ENGINE_NODES), "platform": loc.platform_label(),
            "problem": problem, "command": command, "message": message}


def check() -> int:
    """Load the engine the way the pack will; say where it is, or what to do."""
    loc = locate()
    try:
        lib, path = loc.load()
    except loc.EngineMissing as exc:
        say(engine_report(str(exc), loc)["message"])
        return 1
    say(f"the C engine {lib.zc_version().decode()} loads from {path}")
    return 0


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


def sources(system: str) -> list[Path]:
    """The library's sources for an OS: the engine, then its platform layer."""
    platform_dir = REPO / "engine" / "src" / "platform"
    prefix = "win32" if system == "Windows" else "posix"
    layer = [p for p in platform_dir.glob(f"{prefix}_*.c") if not p.stem.endswith(("_test", "_args"))]
    engine = [p for p in (REPO / "engine" / "src").glob("*/*.c") if p.parent != platform_dir]
    return sorted([*engine, platform_dir / "once.c", platform_dir / "error_words.c", *layer])


def up_to_date(library: Path, system: str) -> bool:
    if not library.is_file():
        return False
    headers = [*(REPO / "engine").glob("*/*.h"), *(REPO / "engine" / "src").glob("*/*.h")]
    newest = max(p.stat().st_mtime for p in [*sources(system), *headers])
    return library.stat().st_mtime >= newest


def build(build_dir: Path, compiler: list[str], system: str, name: str) -> Path:
    library = build_dir / name
    build_dir.mkdir(parents=True, exist_ok=True)
    # The Makefile is a developer file: a git clone has it, the Registry's zip does not (.comfyignore).
    # It drives CMake (engine/CMakeLists.txt), so it needs cmake too.
    has_cmake = shutil.which("cmake") or (REPO / ".venv" / "bin" / "cmake").is_file()
    if (system != "Windows" and shutil.which("make") and has_cmake and (REPO / "Makefile").is_file()
            and build_dir.resolve() == (REPO / "build").resolve()):
        # the Makefile's lib target, without -Werror (a newer compiler's new warning must not fail users)
        command = ["make", "-C", str(REPO), "--no-print-directory", "lib", f"CC={shlex.join(compiler)}",
                   "WERROR=OFF"]
    else:
        flags = [*COMMON_FLAGS, *(WINDOWS_FLAGS if system == "Windows" else POSIX_FLAGS)]
        command = [*compiler, *flags, f"-I{REPO / 'engine' / 'include'}", f"-I{REPO / 'engine' / 'src'}",
                   "-shared", "-o", str(library), *map(str, sources(system))]
    say("building the C engine: " + shlex.join(command))
    result = subprocess.run(command, cwd=REPO, capture_output=True, text=True)
    if result.returncode != 0:
        sys.stdout.write(result.stdout)
        sys.stderr.write(result.stderr)
        raise RuntimeError(f"the compiler failed (exit {result.returncode}); the messages are above")
    return library


def build_from_source(build_dir: Path, force: bool) -> int:
    system = platform.system()
    loc = locate()
    library = build_dir / loc.library_name()
    if not force and up_to_date(library, system):
        say(f"the C engine is up to date: {library}")
        return 0
    compiler = find_compiler()
    if compiler is None:
        hint = HOW_TO_GET_A_COMPILER.get(system, "install gcc or clang")
        say(f"no C compiler found (looked for $CC, cc, gcc, clang). Install one ({hint}), then run "
            f"`python {REPO / 'install.py'} --build` again, or install the prebuilt engine instead: "
            f"{loc.pip_command()}")
        return 1
    try:
        library = build(build_dir, compiler, system, loc.library_name())
        os.environ["ZC_LIBRARY"] = str(library)  # check exactly this file
        lib, _ = loc.load()
        version = lib.zc_version().decode()
    except (RuntimeError, loc.EngineMissing) as exc:
        say(f"the C engine was not built: {exc}")
        return 1
    say(f"built {library} (engine {version}); restart ComfyUI to load the ZeroCopy nodes")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Check (or, with --build, build) the ZeroCopy-Continuity "
                                                 "C engine.")
    parser.add_argument("--build", action="store_true",
                        help="build the engine from source with a C compiler (developers)")
    parser.add_argument("--build-dir", type=Path, default=REPO / "build", help="where --build puts it")
    parser.add_argument("--force", action="store_true", help="with --build: rebuild even when up to date")
    options = parser.parse_args(argv)
    if options.build:
        return build_from_source(options.build_dir, options.force)
    return check()


if __name__ == "__main__":
    sys.exit(main())
