"""The ctypes boundary, guarded: what the Python binding (zc_engine) restates of the C header is
compared with the C definitions themselves, through a probe program compiled against
engine/include here (the same compiler family that builds the library).

- Every ctypes Structure in zc_engine: its size, and each field's offset and size, equal the C
  struct's (sizeof / offsetof). The C type is named by rule: DLPack's structs keep their names,
  zc_dlpack.h's names (DLTensor → zc_dl_tensor),
  the engine's are zc_ + the class name in snake case (StoreStats → zc_store_stats); a struct
  the binding adds without a C counterpart fails to compile, which fails this test by name.
- Every C struct of zc.h and zc_dlpack.h is either mirrored in the binding or listed here as opaque to it.
- Every constant the binding restates (limits, flags, digest and dtype codes, DLPack codes,
  status codes of its exception classes) equals the header's value.
"""

from __future__ import annotations

import ctypes
import inspect
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import zc_engine._library as library
from zc_engine import errors, film, store

REPO = Path(__file__).resolve().parents[2]
INCLUDE = REPO / "engine" / "include"
# zc.h structs the binding does not mirror, and why.
NOT_MIRRORED = {
    "zc_dl_version": "flattened into DLManagedTensorVersioned as version_major / version_minor",
    "zc_xxh3_state": "streaming hash state; the binding hashes whole buffers (zc_xxh3_64) and holds none",
    "zc_xxh64_state": "streaming hash state; the binding hashes whole buffers (zc_xxh64) and holds none",
}
# DLPack's structs as zc_dlpack.h names them.
DLPACK_STRUCTS = {"DLDevice": "zc_dl_device", "DLDataType": "zc_dl_dtype", "DLTensor": "zc_dl_tensor",
                  "DLManagedTensor": "zc_dl_managed", "DLManagedTensorVersioned": "zc_dl_managed_versioned"}
# A ctypes field that flattens a C sub-struct: its C member designator.
FIELD_DESIGNATORS = {("DLManagedTensorVersioned", "version_major"): "version.major",
                     ("DLManagedTensorVersioned", "version_minor"): "version.minor"}
# Header constant → the binding's restatement.
CONSTANTS = {
    "ZC_MAX_RANK": library.MAX_RANK,
    "ZC_DEFAULT_DEPTH": store.DEFAULT_DEPTH,
    "ZC_PUT_SPILL": store.PUT_SPILL,
    "ZC_PUT_MAY_EVICT_NEWEST": store.PUT_MAY_EVICT_NEWEST,
    "ZC_DROP_DISK": store.DROP_DISK,
    "ZC_MAX_SPILL_DELAY_MS": store.MAX_SPILL_DELAY_MS,
    "ZC_VERIFY_REHASH": store.VERIFY_REHASH,
    "ZC_DIGEST_XXH64": store.DIGEST_XXH64,
    "ZC_DIGEST_XXH3_64": store.DIGEST_XXH3,
    "ZC_FILM_VERIFY": film.FILM_VERIFY,
}
# zc_dtype's names, in the binding's spelling (store.DTYPE_NAMES) → the header's enumerator.
DTYPE_ENUMERATORS = {"F8_E4M3": "ZC_F8_E4M3FN"}
# DLPack type code of each dtype family (zc_dlpack.h's DLDataTypeCode enumerators).
DLPACK_CODE_NAMES = {"F": "ZC_DL_FLOAT", "BF": "ZC_DL_BFLOAT", "I": "ZC_DL_INT", "U": "ZC_DL_UINT",
                     "BOOL": "ZC_DL_BOOL", "F8_E4M3": "ZC_DL_FLOAT8_E4M3FN", "F8_E5M2": "ZC_DL_FLOAT8_E5M2"}


def _structures() -> dict[str, type]:
    found = {}
    for module in (library, store, film):
        for name, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, ctypes.Structure) and cls.__module__.startswith("zc_engine"):
                found[name] = cls
    return found


def _c_name(cls_name: str) -> str:
    if cls_name in DLPACK_STRUCTS:
        return DLPACK_STRUCTS[cls_name]
    return "zc_" + re.sub(r"(?<!^)(?=[A-Z])", "_", cls_name).lower()


def _dlpack_code_name(dtype: str) -> str:
    if dtype in DLPACK_CODE_NAMES:
        return DLPACK_CODE_NAMES[dtype]
    return DLPACK_CODE_NAMES["BF" if dtype.startswith("BF") else re.match(r"[A-Z]+", dtype).group(0)]


@pytest.fixture(scope="module")
def probe(tmp_path_factory) -> dict:
    compiler = next((c for c in ("cc", "gcc", "clang") if shutil.which(c)), None)
    if compiler is None:
        pytest.skip("skipped: no C compiler for the ABI probe (apt-get install build-essential)")
    lines = []
    for cls_name, cls in sorted(_structures().items()):
        c = _c_name(cls_name)
        lines.append(f'printf("S {cls_name} %zu\\n", sizeof({c}));')
        for field, *_ in cls._fields_:
            member = FIELD_DESIGNATORS.get((cls_name, field), field)
            lines.append(f'printf("F {cls_name} {field} %zu %zu\\n", offsetof({c}, {member}), '
                         f'sizeof((({c} *)0)->{member}));')
    for name in CONSTANTS:
        lines.append(f'printf("C {name} %lld\\n", (long long)({name}));')
    for dtype in store.DTYPE_NAMES:
        enumerator = DTYPE_ENUMERATORS.get(dtype, f"ZC_{dtype}")
        lines.append(f'printf("D {dtype} %d %d\\n", (int)({enumerator}), (int)({_dlpack_code_name(dtype)}));')
    for code, cls in sorted(errors._BY_CODE.items()):
        lines.append(f'printf("E {cls.__name__} %d %s\\n", {code}, zc_status_name_probe({code}));')
    source = tmp_path_factory.mktemp("abi") / "probe.c"
    source.write_text("\n".join([
        "#include <stddef.h>", "#include <stdio.h>", '#include "zc.h"', '#include "zc_dlpack.h"',
        # the status names as the header spells its enumerators, for the binding's exception classes
        "static const char *zc_status_name_probe(int s) { switch (s) {",
        *[f"case {name}: return \"{name}\";" for name in _status_enumerators()],
        "default: return \"?\"; } }",
        "int main(void) {", *lines, "return 0; }", ""]))
    binary = source.with_suffix("")
    built = subprocess.run([compiler, "-std=c11", "-Wall", "-Werror", f"-I{INCLUDE}", "-o", str(binary), str(source)],
                           capture_output=True, text=True, timeout=120, check=False)
    assert built.returncode == 0, f"the ABI probe does not compile (a binding struct or constant the header " \
                                  f"lacks?):\n{built.stderr[-4000:]}"
    out = subprocess.run([str(binary)], capture_output=True, text=True, timeout=60, check=True).stdout
    facts: dict = {"S": {}, "F": {}, "C": {}, "D": {}, "E": {}}
    for line in out.splitlines():
        kind, *rest = line.split()
        if kind == "S":
            facts["S"][rest[0]] = int(rest[1])
        elif kind == "F":
            facts["F"][(rest[0], rest[1])] = (int(rest[2]), int(rest[3]))
        elif kind == "C":
            facts["C"][rest[0]] = int(rest[1])
        elif kind == "D":
            facts["D"][rest[0]] = (int(rest[1]), int(rest[2]))
        else:
            facts["E"][rest[0]] = (int(rest[1]), rest[2])
    return facts


def _status_enumerators() -> list[str]:
    header = (INCLUDE / "zc.h").read_text()
    body = header.split("typedef enum {", 1)[1].split("} zc_status;", 1)[0]
    return re.findall(r"^\s*(ZC_(?:OK|E_\w+))\s*=", body, re.MULTILINE)


def _mismatches(name: str, cls: type, probe: dict) -> list[str]:
    found = []
    if ctypes.sizeof(cls) != probe["S"][name]:
        found.append(f"{name}: ctypes {ctypes.sizeof(cls)} B, C {probe['S'][name]} B")
    for field, *_ in cls._fields_:
        descriptor = getattr(cls, field)
        c_offset, c_size = probe["F"][(name, field)]
        if (descriptor.offset, descriptor.size) != (c_offset, c_size):
            found.append(f"{name}.{field}: ctypes offset {descriptor.offset} size {descriptor.size}, "
                         f"C offset {c_offset} size {c_size}")
    return found


def test_every_ctypes_structure_has_the_c_size_and_field_offsets(probe):
    structures = _structures()
    assert len(structures) >= 8, sorted(structures)  # the scan found the binding's structs
    assert [m for name, cls in structures.items() for m in _mismatches(name, cls, probe)] == []


def test_a_field_of_the_wrong_width_is_caught(probe):
    """The comparison bites: DLTensor with ndim widened to 64 bits moves every later field."""
    fields = [(f, ctypes.c_int64 if f == "ndim" else t) for f, t in library.DLTensor._fields_]
    wrong = type("DLTensor", (ctypes.Structure,), {"_fields_": fields})
    found = _mismatches("DLTensor", wrong, probe)
    assert any(m.startswith("DLTensor.ndim:") for m in found) and any("DLTensor.dtype:" in m for m in found), found


def test_every_c_struct_of_the_header_is_mirrored_or_named_opaque():
    header = (INCLUDE / "zc.h").read_text() + (INCLUDE / "zc_dlpack.h").read_text()
    declared = set(re.findall(r"^\}\s*(zc_\w+)\s*;", header, re.MULTILINE))
    enums = set(re.findall(r"typedef enum \{[^}]*\}\s*(zc_\w+)\s*;", header))
    structs = declared - enums
    mirrored = {_c_name(n) for n in _structures()}
    assert structs - mirrored - set(NOT_MIRRORED) == set(), \
        f"zc.h structs neither mirrored by zc_engine nor listed as opaque: {sorted(structs - mirrored)}"


def test_every_restated_constant_equals_the_header(probe):
    assert {name: probe["C"][name] for name in CONSTANTS} == CONSTANTS


def test_dtype_codes_and_dlpack_codes_follow_the_header(probe):
    for index, dtype in enumerate(store.DTYPE_NAMES):
        zc_code, dlpack_code = probe["D"][dtype]
        assert zc_code == index, f"{dtype}: binding code {index}, zc_dtype {zc_code}"
        assert store.DLPACK_CODES[index] == dlpack_code, f"{dtype}: binding DLPack code {store.DLPACK_CODES[index]}, " \
                                                          f"dlpack.h {dlpack_code}"
    assert len(store.DTYPE_NAMES) == len(store.DLPACK_CODES) == len(store._ZC_DTYPE_CODES)


def test_each_exception_class_carries_the_status_the_header_gives_it(probe):
    expected = {"InvalidInput": "ZC_E_INVALID", "OutOfMemory": "ZC_E_NOMEM", "NotFound": "ZC_E_NOT_FOUND",
                "BudgetExceeded": "ZC_E_BUDGET", "LimitExceeded": "ZC_E_LIMIT", "EngineIOError": "ZC_E_IO",
                "CorruptFile": "ZC_E_CORRUPT", "InvalidState": "ZC_E_STATE", "Unsupported": "ZC_E_UNSUPPORTED",
                "GenerationExists": "ZC_E_EXISTS"}
    assert {name: status for name, (_, status) in probe["E"].items()} == expected
    every = set(_status_enumerators()) - {"ZC_OK"}
    assert every == set(expected.values()), f"statuses without an exception class: {sorted(every - set(expected.values()))}"
