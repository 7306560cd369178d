"""The continuity package imports only torch and the standard library, never ComfyUI."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "zc_continuity"


def imported_roots(path: Path) -> set[str]:
    roots = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            roots.add(node.module.split(".")[0])
    return roots


def test_only_torch_and_stdlib_are_imported():
    allowed = set(sys.stdlib_module_names) | {"torch"}
    for path in sorted(PACKAGE.glob("*.py")):
        extra = imported_roots(path) - allowed
        assert not extra, f"{path.name} imports {sorted(extra)}"


def test_import_loads_no_comfy_module():
    code = ("import sys; from zc_pack import zc_continuity; "
            "bad = [m for m in sys.modules if m.split('.')[0] in "
            "('comfy', 'nodes', 'folder_paths', 'comfy_extras', 'comfy_api', 'server')]; "
            "print(bad); sys.exit(1 if bad else 0)")
    result = subprocess.run([sys.executable, "-c", code], cwd=PACKAGE.parent, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


def test_node_layer_module_names_resolve():
    # The node layer does `from ..zc_continuity import assemble, blend, families, ...` and
    # calls module functions; a re-exported function must never shadow a module name.
    import types

    from zc_pack import zc_continuity
    from zc_pack.zc_continuity import assemble, blend, families, resample, shapes, tail
    for module in (assemble, blend, families, resample, shapes, tail, zc_continuity.certificate):
        assert isinstance(module, types.ModuleType)
    assert callable(blend.blend) and callable(assemble.overlap_pixel_frames)
    assert assemble.overlap_pixel_frames is shapes.overlap_pixel_frames
    assert callable(families.pixel_frames)
