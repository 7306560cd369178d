"""The Windows engine wheel, built here as the release builds it and run under a real wine
(./test.sh stage "wheel").

The release's win_amd64 job (.github/workflows/wheels.yml) is cibuildwheel on a Windows runner:
scikit-build-core drives engine/CMakeLists.txt with mingw-w64 gcc. Here the same build backend,
the same CMake project and the same compiler family (mingw-w64 gcc, as a cross compiler) make
the same wheel from the tracked files of engine/, tagged py3-none-win_amd64. Then:

- its contents: the package's __init__.py, zc.dll under the name zerocopy_engine.library_name
  gives Windows, zc.exe under the name tool_path gives it, the zc console entry point; no other
  binary; at most 2 MB (the workflow's own goal);
- zc.dll imports Windows' own DLLs only (no mingw runtime DLL a user's machine lacks) and
  exports every function the ctypes binding (zc_engine/_library.py) declares;
- under wine, a Windows program loads zc.dll from the unpacked wheel with LoadLibrary, and
  zc_version answers the package's version, and zc_abi_describe the same binary interface (struct
  layouts, constants) as the Linux build's; zc.exe --version prints it;
- the job's test command: CMake builds the C test suite for Windows and CTest runs it, each
  program under wine (CMAKE_CROSSCOMPILING_EMULATOR).

What this cannot prove: CPython for Windows loading the DLL through ctypes (no Windows Python
here), the "MinGW Makefiles" generator of the runner, and anything macOS.
"""

from __future__ import annotations

import ctypes
import importlib.util
import json
import os
import re
import shutil
import sys
import zipfile
from pathlib import Path

import pytest
from engine_tree import REPO, copy_tracked_engine, run

MAX_WHEEL_BYTES = 2 * 1024 * 1024
MINGW_CC = "x86_64-w64-mingw32-gcc"
MINGW_OBJDUMP = "x86_64-w64-mingw32-objdump"
# What a Windows DLL may import and find on every Windows 10/11: the system's own DLLs.
WINDOWS_DLLS = re.compile(r"(?i)^(kernel32|msvcrt|user32|advapi32|shell32|ntdll|bcrypt|ws2_32|ucrtbase"
                          r"|api-ms-win-[a-z0-9-]+)\.dll$")
LOADER = r"""
#include <windows.h>
#include <stdio.h>
#include <stdlib.h>
typedef const char *(*version_fn)(void);
typedef int (*describe_fn)(char *buf, size_t cap, size_t *needed);
int wmain(int argc, wchar_t **argv) {
    if (argc != 2) return 2;
    HMODULE lib = LoadLibraryW(argv[1]);
    if (!lib) { printf("LoadLibrary failed: %lu\n", GetLastError()); return 1; }
    version_fn version = (version_fn)(void (*)(void))GetProcAddress(lib, "zc_version");
    if (!version) { printf("no zc_version\n"); return 1; }
    describe_fn describe = (describe_fn)(void (*)(void))GetProcAddress(lib, "zc_abi_describe");
    size_t needed = 0;
    if (describe && describe(NULL, 0, &needed) != 0 && needed) {
        char *text = malloc(needed);
        if (text && describe(text, needed, NULL) == 0) printf("%s\n", text);
        free(text);
    }
    printf("%s\n", version());
    return 0;
}
"""

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="skipped: the Windows wheel is cross-built on Linux")


def _wine() -> str:
    wine = next((w for w in ("/usr/lib/wine/wine64", shutil.which("wine64"), shutil.which("wine")) if w and
                 os.path.exists(w)), None)
    if not shutil.which(MINGW_CC) or not wine:
        pytest.skip("skipped: the Windows wheel needs mingw-w64 and wine "
                    "(apt-get install gcc-mingw-w64-x86-64 wine64)")
    return wine


def _package_module():
    """The repository's zerocopy_engine package, loaded by path as a package (its __init__ imports
    _names.py beside it), whatever zerocopy_engine this Python has installed."""
    folder = REPO / "engine" / "python" / "zerocopy_engine"
    spec = importlib.util.spec_from_file_location("zerocopy_engine_for_test", folder / "__init__.py",
                                                  submodule_search_locations=[str(folder)])
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def windows(tmp_path_factory) -> dict:
    wine = _wine()
    work = tmp_path_factory.mktemp("windows_wheel")
    prefix = work / "wine-prefix"  # a wine prefix of our own, never $HOME's
    env = dict(os.environ, WINEPREFIX=str(prefix), WINEDEBUG="-all")
    return {"wine": wine, "work": work, "env": env, "tree": copy_tracked_engine(work / "tree")}


@pytest.fixture(scope="module")
def wheel(windows) -> Path:
    out = windows["work"] / "dist"
    # scikit-build-core tags the wheel for the platform sysconfig names; _PYTHON_HOST_PLATFORM is
    # CPython's own cross-build switch for that name.
    env = dict(windows["env"], _PYTHON_HOST_PLATFORM="win-amd64")
    run(sys.executable, "-m", "pip", "wheel", "--quiet", "--no-build-isolation", "--no-deps", "-w", out,
        "--config-settings=cmake.args=-DCMAKE_SYSTEM_NAME=Windows;-DCMAKE_C_COMPILER=" + MINGW_CC,
        f"--config-settings=build-dir={windows['work'] / 'build'}", windows["tree"], env=env)
    (built,) = out.glob("zerocopy_engine-*.whl")
    return built


def _linux_abi() -> dict:
    """zc_abi_describe of the Linux library the Python tests load (ZC_LIBRARY, else build/)."""
    lib = ctypes.CDLL(os.environ.get("ZC_LIBRARY") or str(REPO / "build" / "libzc.so"))
    needed = ctypes.c_size_t(0)
    lib.zc_abi_describe(None, ctypes.c_size_t(0), ctypes.byref(needed))
    text = ctypes.create_string_buffer(needed.value)
    assert lib.zc_abi_describe(text, needed, None) == 0
    return json.loads(text.value)


def _exports_and_imports(dll: Path) -> tuple[set[str], set[str]]:
    dump = run(MINGW_OBJDUMP, "-p", dll).stdout
    imports = set(re.findall(r"DLL Name: (\S+)", dump))
    parts = dump.split("[Ordinal/Name Pointer] Table", 1)  # an .exe exports nothing: no table
    table = parts[1].split("\n\n", 1)[0] if len(parts) == 2 else ""
    exports = set(re.findall(r"\]\s+(\w+)\s*$", table, re.MULTILINE))
    return exports, imports


def _binding_functions() -> set[str]:
    source = (REPO / "zc_engine" / "_library.py").read_text()
    required = source.split("_PROTOTYPES = {", 1)[1].split("\n}", 1)[0]
    return set(re.findall(r'^\s+"(zc_\w+)":', required, re.MULTILINE))


def test_the_wheel_is_py3_none_win_amd64_small_and_holds_what_the_package_loads(wheel):
    package = _package_module()
    assert wheel.name == f"zerocopy_engine-{package.__version__}-py3-none-win_amd64.whl", wheel.name
    assert wheel.stat().st_size <= MAX_WHEEL_BYTES, wheel.stat().st_size
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        entry_points = z.read(f"zerocopy_engine-{package.__version__}.dist-info/entry_points.txt").decode()
    assert f"zerocopy_engine/{package.library_name('Windows')}" in names  # zc.dll, where library_path looks
    assert "zerocopy_engine/zc.exe" in names and "zerocopy_engine/__init__.py" in names
    binaries = {n for n in names if n.endswith((".dll", ".exe", ".so", ".dylib", ".pyd"))}
    assert binaries == {"zerocopy_engine/zc.dll", "zerocopy_engine/zc.exe"}, binaries
    assert re.search(r"^zc\s*=\s*zerocopy_engine:main\s*$", entry_points, re.MULTILINE), entry_points
    print(f"wheel {wheel.name}: {wheel.stat().st_size} bytes")


def test_zc_dll_needs_only_windows_and_exports_what_the_binding_declares(wheel, windows):
    unpacked = windows["work"] / "unpacked"
    with zipfile.ZipFile(wheel) as z:
        z.extractall(unpacked)
    for binary in ("zc.dll", "zc.exe"):
        _, imports = _exports_and_imports(unpacked / "zerocopy_engine" / binary)
        foreign = {d for d in imports if not WINDOWS_DLLS.match(d)}
        assert imports and not foreign, f"{binary} imports DLLs a Windows machine lacks: {sorted(foreign)}"
    exports, _ = _exports_and_imports(unpacked / "zerocopy_engine" / "zc.dll")
    declared = _binding_functions()
    assert len(declared) > 20, declared  # the parse found the binding's table
    assert declared <= exports, f"declared by zc_engine but not exported by zc.dll: {sorted(declared - exports)}"


def test_under_wine_zc_dll_loads_from_the_wheel_and_answers_its_version_and_zc_exe_runs(wheel, windows):
    package = _package_module()
    unpacked = windows["work"] / "run"
    with zipfile.ZipFile(wheel) as z:
        z.extractall(unpacked)
    source = windows["work"] / "load_check.c"
    source.write_text(LOADER)
    loader = windows["work"] / "load_check.exe"
    run(MINGW_CC, "-municode", "-static", "-O1", "-o", loader, source)
    dll = unpacked / "zerocopy_engine" / "zc.dll"
    loaded = run(windows["wine"], loader, dll, env=windows["env"]).stdout.strip().splitlines()
    assert loaded[-1:] == [package.__version__], loaded
    # zc.dll's binary interface as MinGW compiled it: the same structs, offsets and constants as the
    # Linux build, which tests/python/test_abi.py holds equal to the ctypes binding.
    assert len(loaded) == 2 and json.loads(loaded[0]) == _linux_abi(), loaded[:1]
    shown = run(windows["wine"], unpacked / "zerocopy_engine" / "zc.exe", "--version", env=windows["env"])
    assert shown.stdout.strip() == f"zc {package.__version__}", shown.stdout


def test_the_wheel_jobs_ctest_passes_for_windows_under_wine(windows):
    """wheels.yml's CIBW_TEST_COMMAND after the import check: cmake -DZC_BUILD_TESTS=ON, build,
    ctest, here with every test program run by wine."""
    build = windows["work"] / "ctest"
    run("cmake", "-S", windows["tree"], "-B", build, "-DZC_BUILD_TESTS=ON", "-DCMAKE_SYSTEM_NAME=Windows",
        f"-DCMAKE_C_COMPILER={MINGW_CC}", f"-DCMAKE_CROSSCOMPILING_EMULATOR={windows['wine']}",
        env=windows["env"])
    run("cmake", "--build", build, "--parallel", "2", env=windows["env"])
    result = run("ctest", "--test-dir", build, "--output-on-failure", "--timeout", "300", env=windows["env"],
                 cwd=windows["tree"].parent)
    assert re.search(r"100% tests passed(?:, 0 tests failed)? out of [1-9]\d*", result.stdout), result.stdout
    print(result.stdout.strip().splitlines()[-3])
