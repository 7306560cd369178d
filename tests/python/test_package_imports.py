"""How the pack's Python packages import: no import loop inside a package, product code imports the
pack's packages only relatively (as inside ComfyUI), and tests, the benchmark and the tools import
them only through zc_pack (zc_pack.py at the root: one name per module, so the classes a test
catches are the ones the pack raises). Read with ast, nothing is imported."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("zc_engine", "zc_nodes", "zc_farm", "zc_residency", "zc_continuity", "zc_film", "zc_log")
WITHOUT_LOOPS = ("zc_nodes", "zc_residency", "zc_farm", "zc_engine", "zc_continuity", "zc_film")
# An import statement of a pack package inside a code string (python -c, a subprocess's source):
# at a line's start or after ';', `from zc_x...` or `import ..., zc_x...`.
SNIPPET_IMPORT = re.compile(r"(?:^|;)[ \t]*(?:from[ \t]+(?:{0})\b|import[ \t]+(?:[\w.]+[ \t]*,[ \t]*)*(?:{0})\b)"
                            .format("|".join(PACKAGES)), re.MULTILINE)


def package_modules(package: str) -> dict[str, Path]:
    """The package's modules by dotted name (a package by its own name, not ``.__init__``)."""
    modules = {}
    for path in sorted((REPO / package).rglob("*.py")):
        parts = list(path.relative_to(REPO).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def imported_module(name: str, path: Path, node: ast.ImportFrom) -> str:
    """The absolute name of the module ``node`` imports from, in the module ``name`` at ``path``."""
    if not node.level:
        return node.module or ""
    here = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    base = here[: len(here) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def import_graph(package: str) -> dict[str, set[str]]:
    """Module -> the modules of the same package it imports, anywhere in its body. ``from . import
    x`` with x a submodule is an arrow to x; any other name from a package is an arrow to its
    __init__. A module's implicit import of its own package does not count."""
    modules = package_modules(package)
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets = []
            if isinstance(node, ast.ImportFrom):
                source = imported_module(name, path, node)
                submodules = [f"{source}.{alias.name}" for alias in node.names if f"{source}.{alias.name}" in modules]
                targets += submodules
                if source in modules and len(submodules) < len(node.names):
                    targets.append(source)
            elif isinstance(node, ast.Import):
                targets += [alias.name for alias in node.names if alias.name in modules]
            graph[name].update(target for target in targets if target != name)
    return graph


def loops(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root, arrows in graph.items():
        if root in index:
            continue
        work = [(root, iter(sorted(arrows)))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_loop_finder_finds_a_loop_and_none_where_there_is_none():
    assert loops({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert loops({"a": {"b"}, "b": set(), "c": {"a", "b"}}) == []


@pytest.mark.parametrize("package", WITHOUT_LOOPS)
def test_no_import_loop_inside_a_package(package):
    graph = import_graph(package)
    assert len(graph) > 1 and any(graph.values())  # the graph was read
    assert loops(graph) == [], f"{package} has import loops (each a set of modules importing each other)"


def test_product_code_imports_the_pack_only_relatively():
    found = []
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                names = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                         else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
                found += [f"{path.relative_to(REPO)}:{node.lineno} {name}" for name in names
                          if name.split(".")[0] in PACKAGES]
    assert found == [], "absolute imports of the pack's packages (import them with ..):\n" + "\n".join(found)


def development_files() -> list[Path]:
    return [path for folder in ("tests", "bench", "tools") for path in sorted((REPO / folder).rglob("*.py"))]


def test_tests_bench_and_tools_import_the_pack_through_zc_pack():
    found = []
    for path in development_files():
        where = path.relative_to(REPO)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found += [f"{where}:{node.lineno} import {alias.name}" for alias in node.names
                          if alias.name.split(".")[0] in PACKAGES]
            elif isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] in PACKAGES:
                found.append(f"{where}:{node.lineno} from {node.module} import ...")
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                found += [f"{where}:{node.lineno} in a string: {match.group(0).strip(' ;')!r}"
                          for match in SNIPPET_IMPORT.finditer(node.value)]
    assert found == [], ("the pack's packages imported top-level; import them through zc_pack "
                         "(from zc_pack import zc_engine, from zc_pack.zc_nodes import runtime):\n" + "\n".join(found))


def test_the_snippet_pattern_sees_what_a_subprocess_would_import():
    engine, continuity = PACKAGES[0], PACKAGES[4]  # not spelled out here: this file is checked too
    assert SNIPPET_IMPORT.search(f"import sys, {continuity}; print(1)")
    assert SNIPPET_IMPORT.search(f"x = 1\nfrom {engine} import LatentStore\n")
    assert SNIPPET_IMPORT.search(f"import {engine}._library as L")
    assert not SNIPPET_IMPORT.search(f"from zc_pack.{engine} import LatentStore; from zc_pack import zc_log")
    assert not SNIPPET_IMPORT.search(f"the tests import {engine} through zc_pack")
