"""Loading the C engine with ctypes and declaring its functions.

Which file is loaded, in what order, and the one-line message when none loads are
_locate.py's (install.py uses it too).
"""

from __future__ import annotations

import ctypes

from . import _locate
from .errors import EngineNotBuilt, LimitExceeded, error_for

REPO_ROOT = _locate.REPO_ROOT
ENGINE_VERSION = _locate.ENGINE_VERSION
MAX_RANK = 8  # ZC_MAX_RANK
# DLPack data type codes (zc_dlpack.h, DLDataTypeCode) the bridge writes or compares.
DL_INT, DL_UINT, DL_FLOAT, DL_BFLOAT, DL_BOOL = 0, 1, 2, 4, 6
DL_FLOAT8_E4M3FN, DL_FLOAT8_E5M2 = 10, 12

c_int, c_uint32, c_uint64, c_size_t = ctypes.c_int, ctypes.c_uint32, ctypes.c_uint64, ctypes.c_size_t
c_char_p, c_void_p, POINTER = ctypes.c_char_p, ctypes.c_void_p, ctypes.POINTER


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", POINTER(ctypes.c_int64)),
        ("strides", POINTER(ctypes.c_int64)),
        ("byte_offset", c_uint64),
    ]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [
        ("version_major", c_uint32),
        ("version_minor", c_uint32),
        ("manager_ctx", c_void_p),
        ("deleter", c_void_p),
        ("flags", c_uint64),
        ("dl_tensor", DLTensor),
    ]


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", c_void_p), ("deleter", c_void_p)]


class StoreConfig(ctypes.Structure):
    _fields_ = [
        ("default_depth", c_uint32),
        ("host_budget_bytes", c_uint64),
        ("device_budget_bytes", c_uint64),
        ("spill_dir", c_char_p),
        ("disk_keep", c_uint32),
        ("spill_delay_ms", c_uint32),
    ]


class StoreStats(ctypes.Structure):
    _fields_ = [(name, c_uint64) for name in (
        "tags", "slots", "host_bytes", "device_bytes", "retained_bytes", "evictions",
        "spills_written", "spill_errors", "restores", "files_rejected", "pending_spills",
        "pooled_bytes", "verify_hashed_bytes", "verify_skipped_bytes", "memory_only",
        "spill_folder_recreated")]


class TensorInfo(ctypes.Structure):
    _fields_ = [
        ("name", c_char_p),
        ("dtype", c_int),
        ("ndim", ctypes.c_int32),
        ("shape", ctypes.c_int64 * MAX_RANK),
        ("byte_strides", ctypes.c_int64 * MAX_RANK),
        ("device_type", ctypes.c_int32),
        ("device_id", ctypes.c_int32),
        ("tier", c_int),
        ("nbytes", c_uint64),
        ("digest", c_uint64),
        ("has_digest", c_int),
        ("digest_algo", c_int),
        ("data", c_void_p),
    ]


class FileTensor(ctypes.Structure):
    _fields_ = [
        ("name", c_char_p),
        ("dtype", c_int),
        ("ndim", ctypes.c_int32),
        ("shape", ctypes.c_int64 * MAX_RANK),
        ("nbytes", c_uint64),
        ("offset", c_uint64),
        ("has_digest", c_int),
        ("digest_algo", c_int),
        ("recorded_digest", c_uint64),
    ]


class VerifyReport(ctypes.Structure):
    """zc_verify_report: bit i of each mask is tensor index i."""
    _fields_ = [
        ("hashed", c_uint32),
        ("unchanged", c_uint32),
        ("unchecked", c_uint32),
        ("device", c_uint32),
        ("hashed_bytes", c_uint64),
    ]


class SeamLayout(ctypes.Structure):
    """zc_seam_layout: what zc_bundle_seam_summarize reads of a tensor."""
    _fields_ = [
        ("time_axis", ctypes.c_int32),
        ("head_skip", c_uint32),
        ("window", c_uint32),
        ("max_values", c_uint32),
    ]


class SeamStats(ctypes.Structure):
    """zc_seam_stats: the statistics of one cut (zc_store_seam)."""
    _fields_ = [
        ("measured", c_int),
        ("parent_start_image", c_int),
        ("parent_frames", c_uint32),
        ("shot_frames", c_uint32),
        ("mean_step", ctypes.c_double),
        ("std_step", ctypes.c_double),
        ("rms_step", ctypes.c_double),
        ("correlation", ctypes.c_double),
        ("within_correlation", ctypes.c_double),
        ("parent_level", ctypes.c_double),
        ("shot_level", ctypes.c_double),
    ]


_PROTOTYPES = {
    # name: (restype, argtypes)
    "zc_version": (c_char_p, []),
    "zc_last_error": (c_char_p, []),
    "zc_status_name": (c_char_p, [c_int]),
    "zc_host_prefer_huge_pages": (None, [c_void_p, c_size_t]),
    "zc_xxh3_64": (c_uint64, [c_void_p, c_size_t, c_uint64]),
    "zc_digest_tensor": (c_int, [c_void_p, POINTER(c_uint64)]),
    "zc_tag_check": (c_int, [c_char_p]),
    "zc_bundle_free": (None, [c_void_p]),
    "zc_store_bundle_create": (c_int, [c_void_p, POINTER(c_void_p)]),
    "zc_bundle_add_copy": (c_int, [c_void_p, c_char_p, c_void_p]),
    "zc_bundle_set_meta_packed": (c_int, [c_void_p, c_char_p, c_size_t]),
    "zc_bundle_tensor_digest": (c_int, [c_void_p, c_uint32, POINTER(c_int), POINTER(c_uint64)]),
    "zc_digest_host_tensor": (c_int, [c_void_p, c_int, ctypes.c_int32, c_char_p, POINTER(c_uint64)]),
    "zc_bundle_add_host_copy": (c_int, [c_void_p, c_char_p, c_void_p, c_int, ctypes.c_int32, c_char_p]),
    "zc_store_put_host_copy": (c_int, [c_void_p, c_char_p, c_char_p, c_void_p, c_int, ctypes.c_int32,
                                       c_char_p, c_uint32, c_void_p]),
    "zc_bundle_add_reference": (c_int, [c_void_p, c_char_p, c_void_p, c_int, c_void_p]),
    "zc_store_config_init": (None, [POINTER(StoreConfig)]),
    "zc_store_open": (c_int, [POINTER(StoreConfig), POINTER(c_void_p)]),
    "zc_store_close": (None, [c_void_p]),
    "zc_store_set_depth": (c_int, [c_void_p, c_char_p, c_uint32]),
    "zc_store_put": (c_int, [c_void_p, c_char_p, c_void_p, c_uint32, POINTER(c_uint64)]),
    "zc_store_put_generation": (c_int, [c_void_p, c_char_p, c_void_p, c_uint32, c_uint64]),
    "zc_store_import": (c_int, [c_void_p, c_char_p, c_uint64, c_void_p, c_size_t]),
    "zc_store_get": (c_int, [c_void_p, c_char_p, c_uint64, POINTER(c_void_p)]),
    "zc_store_get_known": (c_int, [c_void_p, c_char_p, c_uint64, POINTER(c_void_p)]),
    "zc_store_drop": (c_int, [c_void_p, c_char_p, c_uint32]),
    "zc_store_generations": (c_int, [c_void_p, c_char_p, POINTER(c_uint64), c_size_t, POINTER(c_size_t)]),
    "zc_store_flush": (c_int, [c_void_p]),
    "zc_store_stats_get": (c_int, [c_void_p, POINTER(StoreStats)]),
    "zc_store_describe_json": (c_int, [c_void_p, c_char_p, c_size_t, POINTER(c_size_t)]),
    "zc_store_describe_tag_json": (c_int, [c_void_p, c_char_p, c_char_p, c_size_t, POINTER(c_size_t)]),
    "zc_view_tag": (c_char_p, [c_void_p]),
    "zc_view_generation": (c_uint64, [c_void_p]),
    "zc_view_count": (c_uint32, [c_void_p]),
    "zc_view_tensor": (c_int, [c_void_p, c_uint32, POINTER(TensorInfo)]),
    "zc_view_meta": (c_char_p, [c_void_p, c_char_p]),
    "zc_view_meta_packed": (c_int, [c_void_p, c_void_p, c_size_t, POINTER(c_size_t)]),
    "zc_view_export_dlpack": (c_int, [c_void_p, c_uint32, c_int, POINTER(c_void_p)]),
    "zc_view_verify_ex": (c_int, [c_void_p, c_uint32, POINTER(VerifyReport)]),
    "zc_view_save": (c_int, [c_void_p, c_char_p]),
    "zc_view_serialize": (c_int, [c_void_p, c_void_p, c_size_t, POINTER(c_size_t)]),
    "zc_view_release": (None, [c_void_p]),
    "zc_view_record": (c_int, [c_void_p]),
    "zc_bundle_seam_plan": (c_int, [c_void_p, c_char_p, POINTER(SeamLayout)]),
    "zc_bundle_seam_parent": (c_int, [c_void_p, c_char_p, c_uint64]),
    "zc_store_hop_seam_json": (c_int, [c_void_p, c_char_p, c_uint64, c_char_p, c_size_t, POINTER(c_size_t)]),
    "zc_store_trim": (c_int, [c_void_p, c_int, c_uint64, POINTER(c_uint64)]),
    "zc_store_changes": (c_int, [c_void_p, POINTER(c_uint64)]),
    "zc_store_flush_tag": (c_int, [c_void_p, c_char_p, POINTER(c_uint64), c_size_t, POINTER(c_size_t),
                                   POINTER(c_uint64), c_size_t, POINTER(c_size_t)]),
    "zc_film_describe": (c_int, [c_char_p, c_char_p, c_uint32, POINTER(c_void_p)]),
    "zc_film_choose": (c_int, [c_char_p, c_char_p, c_uint64]),
    "zc_film_has_choices": (c_int, [c_char_p, c_char_p]),
    "zc_free": (None, [c_void_p]),
    # zc.h's advanced section: called only by the benchmark (bench/sections/engine.py); declared
    # here so that it shares these types.
    "zc_bundle_create": (c_int, [POINTER(c_void_p)]),
    "zc_file_open": (c_int, [c_char_p, POINTER(c_void_p)]),
    "zc_file_close": (None, [c_void_p]),
    "zc_file_tensor_at": (c_int, [c_void_p, c_uint32, POINTER(FileTensor)]),
    "zc_file_read": (c_int, [c_void_p, c_uint32, c_void_p, c_size_t, POINTER(c_uint64)]),
    # Test support (zc.h's test-support section): functions the engine's tests use; no product
    # code calls them. tests/python/test_digest.py, test_seam_engine.py, test_abi.py and the
    # Windows wheel's test.
    "zc_xxh64": (c_uint64, [c_void_p, c_size_t, c_uint64]),
    "zc_xxh3_kernel": (c_char_p, []),
    "zc_store_seam": (c_int, [c_void_p, c_char_p, c_uint64, c_void_p, c_char_p, POINTER(SeamStats)]),
    "zc_abi_describe": (c_int, [c_char_p, c_size_t, POINTER(c_size_t)]),
}


def _load() -> tuple[ctypes.CDLL, object]:
    try:
        lib, path = _locate.load()
    except _locate.EngineMissing as exc:
        raise EngineNotBuilt(str(exc)) from exc
    for name, (restype, argtypes) in _PROTOTYPES.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes
    return lib, path


lib, LIBRARY_PATH = _load()


def check(status: int) -> int:
    """Raise the engine's error for a failing status, else return it."""
    if status < 0:
        message = (lib.zc_last_error() or b"").decode("utf-8", "replace")
        raise error_for(status, message or lib.zc_status_name(status).decode())
    return status


def call_growing(call, size: int, make=ctypes.create_string_buffer):
    """Run one of the engine's buffer-filling calls, ``call(buffer, size, byref(needed))``, which
    answers ZC_E_LIMIT with the size it needs when the buffer is short: grown to that and called
    again. ``make(n)`` makes a buffer of n units (size 0: no buffer, a call that asks the size).
    Returns (buffer, needed)."""
    needed = ctypes.c_size_t(0)
    while True:
        buffer = make(size) if size else None
        status = call(buffer, size, ctypes.byref(needed))
        if status == LimitExceeded.code and needed.value > size:
            size = needed.value
            continue
        check(status)
        return buffer, needed.value


def encode(text: str, what: str) -> bytes:
    """UTF-8 bytes for a C string argument; refuses embedded NULs."""
    if not isinstance(text, str):
        raise TypeError(f"{what} must be a str, not {type(text).__name__}")
    if "\0" in text:
        raise error_for(-1, f"{what} {text!r} contains a NUL character; remove it")
    return text.encode("utf-8")
