"""The engine's subsystems are layers: each folder of engine/src/ calls and includes only the
folders below it in LAYERS (the order engine/README.md gives), so the subsystem graph has no
cycle; inside a folder the files call one another one way too (no loop); and no file outside
platform/ includes an operating-system header.

Calls are read from the objects: each engine file is compiled on its own (`cc -c`) and `nm`
lists what it defines and what it leaves undefined; an undefined symbol another file defines is
a call (or a use of its data) from one file to the other."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "engine" / "src"
# Lowest first: a folder may use only the folders before it (and itself).
LAYERS = ["platform", "core", "digest", "format", "film", "store"]
# What a file outside platform/ may include with <...>: C11's own headers, and the compiler's
# x86 intrinsics (digest/xxh3_x86.c).
C_HEADERS = {
    "assert.h", "complex.h", "ctype.h", "errno.h", "fenv.h", "float.h", "inttypes.h", "iso646.h",
    "limits.h", "locale.h", "math.h", "setjmp.h", "signal.h", "stdalign.h", "stdarg.h",
    "stdatomic.h", "stdbool.h", "stddef.h", "stdint.h", "stdio.h", "stdlib.h", "stdnoreturn.h",
    "string.h", "tgmath.h", "threads.h", "time.h", "uchar.h", "wchar.h", "wctype.h",
}
COMPILER_HEADERS = {"immintrin.h"}
CC = os.environ.get("CC", "cc")


def subsystem(path: Path) -> str:
    return path.relative_to(SRC).parts[0]


def sources() -> list[Path]:
    """The library's files: every subsystem's, and the POSIX half of platform/ (what this
    machine links; the Windows half implements the same platform.h)."""
    plat = SRC / "platform"
    layer = [p for p in plat.glob("posix_*.c") if not p.stem.endswith(("_test", "_args"))]
    shared = [plat / "once.c", plat / "error_words.c"]
    return sorted([*(p for p in SRC.glob("*/*.c") if p.parent != plat), *shared, *layer])


def test_every_folder_is_a_layer():
    folders = sorted(p.name for p in SRC.iterdir() if p.is_dir())
    assert folders == sorted(LAYERS), f"engine/src/ has {folders}; LAYERS (and engine/README.md) list {LAYERS}"
    loose = sorted(p.name for p in SRC.iterdir() if p.is_file())
    assert loose == [], f"files directly in engine/src/, in no subsystem: {loose}"
    readme = (REPO / "engine" / "README.md").read_text(encoding="utf-8")
    assert " → ".join(f"`{name}/`" for name in LAYERS) in readme, "engine/README.md gives another order"


def symbols(obj: Path) -> tuple[set[str], set[str]]:
    """(defined, undefined) global symbols of an object file."""
    out = subprocess.run(["nm", "-P", str(obj)], capture_output=True, text=True, check=True).stdout
    defined, undefined = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        name, kind = parts[0], parts[1]
        if kind == "U":
            undefined.add(name)
        elif kind in "TDBRCGSV" and kind.isupper():
            defined.add(name)
    return defined, undefined


@pytest.fixture(scope="module")
def calls(tmp_path_factory) -> dict[tuple[str, str], set[str]]:
    """(from file, to file) -> the symbols the first uses of the second, files named relative to
    engine/src/."""
    if shutil.which(CC) is None or shutil.which("nm") is None:
        pytest.skip(f"skipped: needs a C compiler ({CC}) and nm")
    out = tmp_path_factory.mktemp("layers")
    files = sources()

    def compile_one(src: Path) -> Path:
        obj = out / (str(src.relative_to(SRC)).replace("/", "__") + ".o")
        subprocess.run([CC, "-std=c11", "-D_GNU_SOURCE", "-D_FILE_OFFSET_BITS=64", "-O0",
                        f"-I{REPO / 'engine' / 'include'}", f"-I{SRC}", "-c", "-o", str(obj), str(src)],
                       check=True, capture_output=True)
        return obj

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        objs = list(pool.map(compile_one, files))
    owner: dict[str, str] = {}
    wanted: dict[str, set[str]] = {}
    for src, obj in zip(files, objs):
        name = str(src.relative_to(SRC))
        defined, undefined = symbols(obj)
        for sym in defined:
            owner[sym] = name
        wanted[name] = undefined
    edges: dict[tuple[str, str], set[str]] = {}
    for name, undefined in wanted.items():
        for sym in undefined:
            if sym in owner and owner[sym] != name:
                edges.setdefault((name, owner[sym]), set()).add(sym)
    assert edges, "no calls between engine files were found: the objects were not read"
    return edges


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """A cycle of graph as a list of nodes (the first one repeated at the end), or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_the_subsystems_have_no_dependency_cycle(calls):
    graph: dict[str, set[str]] = {}
    for (a, b) in calls:
        if subsystem(SRC / a) != subsystem(SRC / b):
            graph.setdefault(subsystem(SRC / a), set()).add(subsystem(SRC / b))
    cycle = find_cycle(graph)
    if cycle:
        hops = []
        for x, y in zip(cycle, cycle[1:]):
            hops += [f"{a} -> {b}: {', '.join(sorted(s))}" for (a, b), s in sorted(calls.items())
                     if subsystem(SRC / a) == x and subsystem(SRC / b) == y]
        pytest.fail("the engine's subsystems call each other in a cycle " + " -> ".join(cycle) + ":\n"
                    + "\n".join(hops))


def loops(graph: dict[str, set[str]]) -> list[list[str]]:
    """The call loops of graph: each largest set of two or more nodes that all reach one another
    (a strongly connected component), each sorted."""
    nodes = sorted(set(graph) | {b for targets in graph.values() for b in targets})

    def reach(start: str) -> set[str]:
        seen, todo = {start}, [start]
        while todo:
            for nxt in graph.get(todo.pop(), ()):
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return seen

    reaches = {n: reach(n) for n in nodes}
    found: list[list[str]] = []
    done: set[str] = set()
    for n in nodes:
        group = sorted(m for m in reaches[n] if n in reaches[m])
        if n not in done and len(group) > 1:
            found.append(group)
        done.update(group)
    return found


def test_no_call_loop_between_the_files_of_a_folder(calls):
    """Inside a folder the calls between files run one way too: a file calls only files that do
    not call it back, directly or round a loop, so each file can be read (and replaced) knowing
    only those below it."""
    report = []
    for folder in LAYERS:
        graph: dict[str, set[str]] = {}
        for (a, b) in calls:
            if subsystem(SRC / a) == folder == subsystem(SRC / b):
                graph.setdefault(a, set()).add(b)
        for group in loops(graph):
            inside = {a: {b for b in graph.get(a, ()) if b in group} for a in group}
            cycle = find_cycle(inside)
            assert cycle, group
            hops = [f"  {x} -> {y}: {', '.join(sorted(calls[(x, y)]))}"
                    for x in group for y in sorted(inside[x])]
            report.append(f"{folder}/: {len(group)} files call one another ({', '.join(group)}), e.g. "
                          + " -> ".join(cycle) + "; the calls between them:\n" + "\n".join(hops))
    assert not report, ("files of one engine folder call each other in a loop; move the helper the "
                        "lower file needs down (into it or a small file of its own) so calls run one "
                        "way:\n" + "\n".join(report))


def test_each_subsystem_calls_only_those_below_it(calls):
    rank = {name: i for i, name in enumerate(LAYERS)}
    upward = [f"{a} ({subsystem(SRC / a)}) -> {b} ({subsystem(SRC / b)}): {', '.join(sorted(s))}"
              for (a, b), s in sorted(calls.items())
              if rank[subsystem(SRC / a)] < rank[subsystem(SRC / b)]]
    assert not upward, ("a lower layer calls a higher one (order: " + " < ".join(LAYERS) + "):\n"
                        + "\n".join(upward))


INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)


def test_includes_go_down_the_layers():
    rank = {name: i for i, name in enumerate(LAYERS)}
    wrong = []
    for path in sorted([*SRC.glob("*/*.c"), *SRC.glob("*/*.h")]):
        here = subsystem(path)
        for kind, name in INCLUDE.findall(path.read_text(encoding="utf-8")):
            if kind != '"' or "/" not in name:
                continue
            there = name.split("/")[0]
            if there in rank and rank[there] > rank[here]:
                wrong.append(f"{path.relative_to(SRC)} includes {name}")
    assert not wrong, "a lower layer includes a higher one's header:\n" + "\n".join(wrong)


def test_only_platform_includes_os_headers():
    files = [p for p in [*SRC.rglob("*.[ch]"), *(REPO / "engine" / "cli").glob("*.[ch]")]
             if "platform" not in p.relative_to(REPO / "engine").parts]
    assert files
    wrong = [f"{p.relative_to(REPO)} includes <{name}>"
             for p in files for kind, name in INCLUDE.findall(p.read_text(encoding="utf-8"))
             if kind == "<" and name not in C_HEADERS | COMPILER_HEADERS]
    assert not wrong, ("only engine/src/platform/ may include an operating-system header (the rest "
                       "is C11 over platform.h):\n" + "\n".join(wrong))
