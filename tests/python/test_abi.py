"""The ctypes boundary, guarded: what the Python side restates of the C headers by hand is compared
with the library it loads, which describes its own binary interface as it was compiled
(``zc_abi_describe``: each struct's size and members' offsets and sizes, every constant of zc.h
and zc_dlpack.h, the engine's spill-folder file names). The library is the authority, not a
compiler this test would have to find, so the check holds for any build the binding loads
(MinGW's zc.dll, MSVC's, the wheel, the developer build).

- The description is whole: every struct of the headers with its members in declared order,
  every numeric and string #define and every enumerator (so no struct or constant can be added to
  the headers without being described, hence compared).
- Every ctypes Structure in zc_engine: its size, and each field's offset and size, equal the C
  struct's, and it names every C member. The C type is named by rule: DLPack's structs as
  zc_dlpack.h names them (DLTensor -> zc_dl_tensor), the engine's zc_ + the class name in snake
  case (StoreStats -> zc_store_stats). Every C struct is mirrored or listed here as opaque.
- Every constant the Python side restates (limits, flags, tier, digest, dtype and DLPack codes,
  status codes of the exception classes and the REST API's table of them, the seam thresholds,
  the tag rule, the spill folder's bookkeeping names) equals the library's value.
- The binding declares only functions Python calls, zc.h's stable core is exactly what the
  bridge calls, and its test-support section exactly what no product code (the bridge, the zc
  tool, the benchmark, the tools) calls.
"""

from __future__ import annotations

import ctypes
import inspect
import json
import re
from pathlib import Path

import pytest
import seam_reference as seam

from zc_pack.zc_engine import _library as library
from zc_pack.zc_engine import errors, film, store
from zc_pack.zc_nodes.api import routes, validation

REPO = Path(__file__).resolve().parents[2]
HEADERS = [REPO / "engine" / "include" / "zc.h", REPO / "engine" / "include" / "zc_dlpack.h"]
# C structs the binding does not mirror, and why.
NOT_MIRRORED = {
    "zc_dl_version": "flattened into DLManagedTensorVersioned as version_major / version_minor",
    "zc_xxh3_state": "streaming hash state; the binding hashes whole buffers (zc_xxh3_64) and holds none",
    "zc_xxh64_state": "streaming hash state; the binding hashes whole buffers (zc_xxh64) and holds none",
}
# DLPack's structs as zc_dlpack.h names them.
DLPACK_STRUCTS = {"DLDevice": "zc_dl_device", "DLDataType": "zc_dl_dtype", "DLTensor": "zc_dl_tensor",
                  "DLManagedTensor": "zc_dl_managed", "DLManagedTensorVersioned": "zc_dl_managed_versioned"}
# A ctypes field that flattens a C sub-struct: (C member, its struct, the sub-member).
FLATTENED = {("DLManagedTensorVersioned", "version_major"): ("version", "zc_dl_version", "major"),
             ("DLManagedTensorVersioned", "version_minor"): ("version", "zc_dl_version", "minor")}
# Library constant -> the Python side's restatement of it.
CONSTANTS = {
    "ZC_MAX_RANK": library.MAX_RANK,
    "ZC_DEFAULT_DEPTH": store.DEFAULT_DEPTH,
    "ZC_PUT_SPILL": store.PUT_SPILL,
    "ZC_PUT_MAY_EVICT_NEWEST": store.PUT_MAY_EVICT_NEWEST,
    "ZC_DROP_DISK": store.DROP_DISK,
    "ZC_MAX_SPILL_DELAY_MS": store.MAX_SPILL_DELAY_MS,
    "ZC_VERIFY_REHASH": store.VERIFY_REHASH,
    "ZC_TIER_HOST": store.TIER_HOST,
    "ZC_TIER_DEVICE": store.TIER_DEVICE,
    "ZC_TIER_DISK": store.TIER_DISK,
    "ZC_DIGEST_XXH64": store.DIGEST_XXH64,
    "ZC_DIGEST_XXH3_64": store.DIGEST_XXH3,
    "ZC_FILM_VERIFY": film.FILM_VERIFY,
    "ZC_RECORD_NOT_COVERED": store.RECORD_NOT_COVERED,
    "ZC_RECORD_OK": store.RECORD_OK,
    "ZC_RECORD_BAD": store.RECORD_BAD,
    "ZC_DL_INT": library.DL_INT,
    "ZC_DL_UINT": library.DL_UINT,
    "ZC_DL_FLOAT": library.DL_FLOAT,
    "ZC_DL_BFLOAT": library.DL_BFLOAT,
    "ZC_DL_BOOL": library.DL_BOOL,
    "ZC_DL_FLOAT8_E4M3FN": library.DL_FLOAT8_E4M3FN,
    "ZC_DL_FLOAT8_E5M2": library.DL_FLOAT8_E5M2,
    "ZC_MAX_GENERATION": validation.MAX_GENERATION,
    "ZC_FILM_SEAM_GREEN_BELOW": seam.GREEN_BELOW,
    "ZC_FILM_SEAM_RED_FROM": seam.RED_FROM,
}
# Each exception class of the binding -> the status enumerator it stands for.
EXCEPTIONS = {"InvalidInput": "ZC_E_INVALID", "OutOfMemory": "ZC_E_NOMEM", "NotFound": "ZC_E_NOT_FOUND",
              "BudgetExceeded": "ZC_E_BUDGET", "LimitExceeded": "ZC_E_LIMIT", "EngineIOError": "ZC_E_IO",
              "CorruptFile": "ZC_E_CORRUPT", "InvalidState": "ZC_E_STATE", "Unsupported": "ZC_E_UNSUPPORTED",
              "GenerationExists": "ZC_E_EXISTS", "AccessDenied": "ZC_E_ACCESS"}
# Where Python calls the engine: the bridge (the pack's runtime), then the tests and the benchmark.
BRIDGE = ["zc_engine", "zc_nodes", "zc_farm", "zc_continuity", "zc_residency", "install.py"]
CALLERS = BRIDGE + ["tests", "bench", "tools"]


@pytest.fixture(scope="module")
def abi() -> dict:
    buffer, _ = library.call_growing(lambda buf, cap, needed: library.lib.zc_abi_describe(buf, cap, needed), 0)
    return json.loads(buffer.value)


def _without_comments(text: str) -> str:
    return re.sub(r"/\*.*?\*/", " ", text, flags=re.DOTALL)


def header_structs() -> dict[str, list[str]]:
    """Every struct typedef of the headers -> its member names in declared order."""
    found = {}
    for header in HEADERS:
        text = _without_comments(header.read_text())
        for body, name in re.findall(r"typedef struct(?:\s+\w+)?\s*\{(.*?)\}\s*(zc_\w+)\s*;", text, re.DOTALL):
            members = []
            for declaration in filter(str.strip, body.split(";")):
                pointer = re.search(r"\(\s*\*\s*(\w+)\s*\)", declaration)  # a function pointer
                members.append(pointer.group(1) if pointer else
                               re.search(r"(\w+)\s*(?:\[[^\]]*\]\s*)*$", declaration.strip()).group(1))
            found[name] = members
    return found


def header_constants() -> tuple[set[str], set[str]]:
    """(numeric #defines and enumerators, string #defines) of the headers, by name."""
    numbers, strings = set(), set()
    for header in HEADERS:
        text = _without_comments(header.read_text())
        for name, value in re.findall(r"^#define (ZC_\w+)[ \t]+(\S.*)$", text, re.MULTILINE):
            if name != "ZC_API" and not re.match(r"ZC_\w+\(", value):
                (strings if value.lstrip().startswith('"') else numbers).add(name)
        for body in re.findall(r"enum\s*\{(.*?)\}", text, re.DOTALL):
            numbers |= set(re.findall(r"^\s*(ZC_\w+)\s*(?:=|,|$)", body, re.MULTILINE))
    return numbers, strings


def structures() -> dict[str, type]:
    """Every ctypes Structure class zc_engine defines, by class name."""
    found = {}
    for module in (library, store, film):
        for name, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, ctypes.Structure) and cls.__module__.startswith("zc_pack.zc_engine"):
                found[name] = cls
    return found


def c_name(cls_name: str) -> str:
    if cls_name in DLPACK_STRUCTS:
        return DLPACK_STRUCTS[cls_name]
    return "zc_" + re.sub(r"(?<!^)(?=[A-Z])", "_", cls_name).lower()


def mismatches(cls_name: str, cls: type, abi: dict) -> list[str]:
    """What differs between a ctypes Structure and the library's struct of that name."""
    c = c_name(cls_name)
    if c not in abi["structs"]:
        return [f"{cls_name}: the library has no struct {c}"]
    described = abi["structs"][c]
    members = {name: (offset, size) for name, offset, size in described["fields"]}
    found = []
    if ctypes.sizeof(cls) != described["size"]:
        found.append(f"{cls_name}: ctypes {ctypes.sizeof(cls)} B, C {described['size']} B")
    covered = set()
    for field, *_ in cls._fields_:
        if (cls_name, field) in FLATTENED:
            member, sub_struct, sub = FLATTENED[cls_name, field]
            sub_members = {n: (o, s) for n, o, s in abi["structs"][sub_struct]["fields"]}
            expected = (members[member][0] + sub_members[sub][0], sub_members[sub][1])
        elif field in members:
            member, expected = field, members[field]
        else:
            found.append(f"{cls_name}.{field}: {c} has no member {field}")
            continue
        covered.add(member)
        descriptor = getattr(cls, field)
        if (descriptor.offset, descriptor.size) != expected:
            found.append(f"{cls_name}.{field}: ctypes offset {descriptor.offset} size {descriptor.size}, "
                         f"C offset {expected[0]} size {expected[1]}")
    found += [f"{cls_name}: no field for {c}.{m}" for m in members if m not in covered]
    return found


def test_the_description_holds_every_struct_member_and_constant_of_the_headers(abi):
    assert abi["version"] == library.ENGINE_VERSION and abi["pointer_size"] == ctypes.sizeof(ctypes.c_void_p)
    described = {name: [f[0] for f in entry["fields"]] for name, entry in abi["structs"].items()}
    assert described == header_structs()
    numbers, strings = header_constants()
    assert numbers - set(abi["numbers"]) == set(), "zc_abi_describe (engine/src/store/abi.c) leaves these out"
    assert strings - set(abi["strings"]) == set(), "zc_abi_describe (engine/src/store/abi.c) leaves these out"


def test_every_ctypes_structure_has_the_c_size_and_field_offsets(abi):
    found = structures()
    assert len(found) >= 11, sorted(found)  # the scan found the binding's structs
    assert [m for name, cls in sorted(found.items()) for m in mismatches(name, cls, abi)] == []


def test_every_c_struct_is_mirrored_or_named_opaque(abi):
    mirrored = {c_name(name) for name in structures()}
    assert set(abi["structs"]) - mirrored - set(NOT_MIRRORED) == set()
    assert set(NOT_MIRRORED) <= set(abi["structs"])


def test_a_field_of_the_wrong_width_or_place_is_caught(abi):
    """The comparison bites: DLTensor with ndim widened to 64 bits moves every later field, and
    StoreConfig with two fields of one size swapped keeps its size but not their offsets."""
    fields = [(f, ctypes.c_int64 if f == "ndim" else t) for f, t in library.DLTensor._fields_]
    wrong = type("DLTensor", (ctypes.Structure,), {"_fields_": fields})
    found = mismatches("DLTensor", wrong, abi)
    assert any(m.startswith("DLTensor.ndim:") for m in found) and any("DLTensor.dtype:" in m for m in found), found
    fields = list(library.StoreConfig._fields_)
    fields[-2], fields[-1] = fields[-1], fields[-2]  # disk_keep <-> spill_delay_ms
    swapped = type("StoreConfig", (ctypes.Structure,), {"_fields_": fields})
    assert ctypes.sizeof(swapped) == ctypes.sizeof(library.StoreConfig)
    assert {m.split(":")[0] for m in mismatches("StoreConfig", swapped, abi)} == \
        {"StoreConfig.disk_keep", "StoreConfig.spill_delay_ms"}


def test_every_restated_constant_equals_the_library(abi):
    numbers = abi["numbers"]
    assert {name: numbers[name] for name in CONSTANTS} == CONSTANTS


def test_dtype_and_dlpack_codes_follow_the_library(abi):
    dtypes = abi["dtypes"]
    assert len(dtypes) == abi["numbers"]["ZC_DTYPE_COUNT"] == len(store.DTYPE_NAMES) == len(store.DLPACK_CODES)
    assert [d["code"] for d in dtypes] == list(range(len(dtypes)))
    assert store.DTYPE_NAMES == [d["name"] for d in dtypes]
    assert store.DLPACK_CODES == [d["dlpack_code"] for d in dtypes]
    torch_by_code = {code: dtype for dtype, code in store._ZC_DTYPE_CODES.items()}
    assert sorted(torch_by_code) == [d["code"] for d in dtypes]
    for d in dtypes:
        dtype = torch_by_code[d["code"]]
        assert dtype.itemsize == d["size"] and 8 * dtype.itemsize == d["dlpack_bits"], (dtype, d)
        assert dtype.is_floating_point == (d["dlpack_code"] in (library.DL_FLOAT, library.DL_BFLOAT,
                                                                library.DL_FLOAT8_E4M3FN, library.DL_FLOAT8_E5M2))
    assert store.DIGEST_ALGO_NAMES == {int(code): name for code, name in abi["digest_algos"].items()}


def test_each_exception_class_carries_the_status_the_library_gives_it(abi):
    numbers = abi["numbers"]
    assert {cls.__name__: code for code, cls in errors._BY_CODE.items()} == \
        {name: numbers[status] for name, status in EXCEPTIONS.items()}
    statuses, _ = header_constants()
    every = {name for name in statuses if name.startswith("ZC_E_")}
    assert every == set(EXCEPTIONS.values()), f"statuses without an exception class: {sorted(every - set(EXCEPTIONS.values()))}"


def test_the_rest_apis_status_table_names_exception_classes_of_the_binding():
    assert set(routes._ENGINE_STATUS) <= set(EXCEPTIONS), sorted(set(routes._ENGINE_STATUS) - set(EXCEPTIONS))


def test_the_tag_rule_and_the_spill_folders_names_follow_the_library(abi):
    longest = abi["numbers"]["ZC_MAX_TAG_LEN"]
    assert validation.TAG_RE.fullmatch("a" * longest) and not validation.TAG_RE.fullmatch("a" * (longest + 1))
    strings = abi["strings"]
    assert store.BOOKKEEPING_PREFIXES == (strings["ZC_GEN_PREFIX"], strings["ZC_OWNER_PREFIX"],
                                          strings["ZC_FOLDER_LOCK"], strings["ZC_FILM_PREFIX"])
    assert film.choices_file("d", "shot").name == strings["ZC_FILM_PREFIX"] + "shot" + strings["ZC_FILM_SUFFIX"]


def _python_files(places: list[str]) -> list[Path]:
    files = []
    for place in places:
        path = REPO / place
        files += [path] if path.is_file() else sorted(path.rglob("*.py"))
    return files


def _called(places: list[str]) -> set[str]:
    """The engine functions called as ``lib.<name>`` (or ``lib.<name>.restype`` set) in these places."""
    return {name for path in _python_files(places) for name in re.findall(r"\blib\.(zc_\w+)", path.read_text())}


def test_the_binding_declares_only_functions_python_calls():
    declared = set(library._PROTOTYPES)
    assert declared - _called(CALLERS) == set()


def header_sections() -> tuple[set[str], set[str], set[str]]:
    """The functions of zc.h's stable core, its advanced section and its test-support section."""
    text = (REPO / "engine" / "include" / "zc.h").read_text()
    core, rest = text.split("ADVANCED API", 1)
    advanced, test_support = rest.split("TEST SUPPORT", 1)
    declared = r"ZC_API [^;]*?\b(zc_\w+)\s*\("
    return tuple(set(re.findall(declared, part)) for part in (core, advanced, test_support))


def _called_by_the_zc_tool() -> set[str]:
    """The engine functions the zc tool's C sources (engine/cli) call."""
    return {name for path in sorted((REPO / "engine" / "cli").glob("*.c"))
            for name in re.findall(r"\b(zc_\w+)\s*\(", _without_comments(path.read_text()))}


def test_the_headers_stable_core_is_what_the_bridge_calls():
    core_functions, advanced_functions, test_functions = header_sections()
    bridge = _called(BRIDGE)
    assert core_functions - bridge == set(), "in zc.h's core but called only by tests, tools or the benchmark"
    assert bridge & (advanced_functions | test_functions) == set(), "called by the bridge, not in zc.h's core"


def test_the_headers_test_support_section_is_what_no_product_code_calls():
    """Product code: the bridge, the benchmark, the tools and the zc tool. The test-support section
    holds exactly the exported functions none of them calls (only engine/tests and tests/python)."""
    _, advanced_functions, test_functions = header_sections()
    product = _called(BRIDGE + ["bench", "tools"]) | _called_by_the_zc_tool()
    assert test_functions & product == set(), "called by product code but in zc.h's test-support section"
    assert advanced_functions - product == set(), "in zc.h's advanced section but called only by tests"
