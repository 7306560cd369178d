"""The ZeroCopy-Continuity C engine as a Python package: the shared library (loaded by the
node pack with ctypes) and the ``zc`` tool, both inside this package's folder.

``library_path()`` is the library's file (``library_name()``, from _names.py, names it per OS);
``main()`` is the ``zc`` console command, which
runs the bundled executable with the same arguments and exit status.
"""

from __future__ import annotations

import platform
import subprocess
import sys
from pathlib import Path

__version__ = "0.4.0"

from ._names import library_name

_HERE = Path(__file__).resolve().parent


def library_path() -> Path:
    """The engine library inside this installed package."""
    return _HERE / library_name()


def tool_path() -> Path:
    """The bundled ``zc`` executable."""
    return _HERE / ("zc.exe" if platform.system() == "Windows" else "zc")


def main(argv: list[str] | None = None) -> int:
    """The ``zc`` console command: the bundled tool with these arguments and its exit status."""
    tool = tool_path()
    if not tool.is_file():
        sys.stderr.write(f"zc: the bundled tool {tool} is missing; reinstall the package: "
                         f"pip install --force-reinstall zerocopy-engine=={__version__}\n")
        return 127
    code = subprocess.call([str(tool), *(sys.argv[1:] if argv is None else argv)])
    return 128 - code if code < 0 else code  # killed by signal N: 128 + N, as a shell says
