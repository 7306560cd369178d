"""Moving torch tensors in and out of the C engine through DLPack.

In: a host tensor is *borrowed* (the engine copies it while the capsule is
alive; torch's own capsule destructor then releases it); a tensor held by
reference is *consumed* (the capsule is renamed ``used_dltensor*`` as the
DLPack protocol requires and the engine calls its deleter exactly once). A
consumed tensor's deleter is ours, wrapping torch's: until the engine calls it,
the torch tensor itself stays reachable (``kept_tensor``), so that the device
tier can tell torch's caching allocator which streams read it (``record_stream``
works only on tensors torch allocated, never on one built by ``from_dlpack``).

Out: the engine exports a managed tensor that holds its own reference on the
stored slot; it travels to torch inside a capsule whose destructor calls the
deleter only if torch never consumed it. The tensor torch builds views the
store's memory (host) or the original device memory; no byte is copied.
"""

from __future__ import annotations

import ctypes
import weakref
from contextlib import contextmanager
from typing import Iterator

import torch

from . import device
from ._library import (
    DL_FLOAT8_E4M3FN,
    DL_FLOAT8_E5M2,
    DL_UINT,
    DLManagedTensor,
    DLManagedTensorVersioned,
    DLTensor,
    check,
    lib,
)

VERSIONED = b"dltensor_versioned"
LEGACY = b"dltensor"
USED_VERSIONED = b"used_dltensor_versioned"
USED_LEGACY = b"used_dltensor"

_py = ctypes.pythonapi
# Separate prototypes so that the capsule destructor can call them on a
# dying object without touching its reference count.
_capsule_is_valid = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_IsValid", _py))
_capsule_get_pointer_raw = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", _py))
_capsule_get_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", _py))
_capsule_set_name = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_SetName", _py))
_capsule_get_name = ctypes.PYFUNCTYPE(ctypes.c_char_p, ctypes.py_object)(
    ("PyCapsule_GetName", _py))
_CapsuleDestructor = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_capsule_new = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p,
                                 _CapsuleDestructor)(("PyCapsule_New", _py))
_Deleter = ctypes.CFUNCTYPE(None, ctypes.c_void_p)

# Consumed tensors the engine still holds: managed address -> (torch's deleter, the tensor), and
# the same tensors by data address (weakly: an entry goes when its tensor does).
_kept: dict[int, tuple[int, torch.Tensor]] = {}
_kept_by_data: "weakref.WeakValueDictionary[int, torch.Tensor]" = weakref.WeakValueDictionary()


def _release_kept(managed: int, kept=_kept, deleter_type=_Deleter) -> None:
    # The engine's one call of a consumed tensor's deleter, from whichever thread released the
    # slot (never its writer thread under a lock: spill.c defers those). ctypes takes the GIL.
    # Its globals come as defaults: it may run while the interpreter tears modules down.
    entry = kept.pop(managed, None)
    if entry is None:
        return
    torch_deleter, tensor = entry
    if torch_deleter:
        deleter_type(torch_deleter)(managed)
    del tensor  # the last Python reference: torch frees the storage (after any recorded stream)


_KEPT_DELETER = _Deleter(_release_kept)
ctypes.pythonapi.Py_IncRef(ctypes.py_object(_KEPT_DELETER))  # immortal: a deleter may run at exit
_KEPT_DELETER_ADDRESS = ctypes.cast(_KEPT_DELETER, ctypes.c_void_p).value


def kept_tensor(data: int) -> torch.Tensor | None:
    """The torch tensor the engine holds by reference at data address ``data``, if any."""
    return _kept_by_data.get(data)


VERSIONED_TENSOR_OFFSET = DLManagedTensorVersioned.dl_tensor.offset
LEGACY_TENSOR_OFFSET = DLManagedTensor.dl_tensor.offset


def _call_deleter(managed: int, versioned: bool) -> None:
    cls = DLManagedTensorVersioned if versioned else DLManagedTensor
    deleter = cls.from_address(managed).deleter
    if deleter:
        _Deleter(deleter)(managed)


@_CapsuleDestructor
def _unconsumed_capsule_destructor(capsule: int) -> None:
    # A consumer renames the capsule when it takes ownership; if the name is
    # unchanged nobody did, so the deleter is ours to call.
    for name, versioned in ((VERSIONED, True), (LEGACY, False)):
        if _capsule_is_valid(capsule, name):
            managed = _capsule_get_pointer_raw(capsule, name)
            if managed:
                _call_deleter(managed, versioned)
            return


# DLPack type codes of dtypes that some torch releases cannot exchange through
# DLPack (torch 2.9 refuses float8 both ways). Such tensors travel as a uint8
# view of the same bytes, with the real type code written into the DLTensor.
_BYTE_VIEW_CODES = {torch.float8_e4m3fn: DL_FLOAT8_E4M3FN, torch.float8_e5m2: DL_FLOAT8_E5M2}
_CODE_TO_DTYPE = {code: dtype for dtype, code in _BYTE_VIEW_CODES.items()}


def _dlpack_supports(dtype: torch.dtype) -> bool:
    try:
        torch.zeros(1, dtype=dtype).__dlpack__()
        torch.from_dlpack(torch.zeros(1, dtype=dtype))
        return True
    except (BufferError, RuntimeError, TypeError):
        return False


# Probed on first use, not at import: the probe makes torch raise, which must not
# happen while the pack is being imported (nor under a preloaded AddressSanitizer).
_NEEDS_BYTE_VIEW: set | None = None


def _needs_byte_view(dtype) -> bool:
    global _NEEDS_BYTE_VIEW
    if dtype not in _BYTE_VIEW_CODES:
        return False
    if _NEEDS_BYTE_VIEW is None:
        _NEEDS_BYTE_VIEW = {d for d in _BYTE_VIEW_CODES if not _dlpack_supports(d)}
    return dtype in _NEEDS_BYTE_VIEW


def _dltensor_at(managed: int, versioned: bool):
    cls = DLManagedTensorVersioned if versioned else DLManagedTensor
    return cls.from_address(managed).dl_tensor


def _export_capsule(tensor: torch.Tensor):
    """torch's capsule for tensor, versioned when torch offers it. Returns
    (capsule, versioned, real_code): real_code is the DLPack type code to write
    over the uint8 view's when the dtype had to travel as bytes, else None."""
    real_code = None
    if _needs_byte_view(tensor.dtype):
        real_code = _BYTE_VIEW_CODES[tensor.dtype]
        tensor = tensor.view(torch.uint8)  # same shape and strides: one byte per element
    try:
        return tensor.__dlpack__(max_version=(1, 0)), True, real_code
    except TypeError:  # torch without DLPack 1.0 support
        return torch.utils.dlpack.to_dlpack(tensor), False, real_code


def _capsule_pointer(capsule, versioned: bool) -> int:
    name = VERSIONED if versioned else LEGACY
    if _capsule_get_name(capsule) != name:
        raise RuntimeError(f"DLPack capsule is named {_capsule_get_name(capsule)!r}, expected "
                           f"{name!r}; it was already consumed")
    return _capsule_get_pointer(capsule, name)


@contextmanager
def borrowed_dltensor(tensor: torch.Tensor) -> Iterator[int]:
    """Address of a DLTensor describing tensor, valid inside the block."""
    capsule, versioned, real_code = _export_capsule(tensor.detach())
    managed = _capsule_pointer(capsule, versioned)
    try:
        if real_code is None:
            offset = VERSIONED_TENSOR_OFFSET if versioned else LEGACY_TENSOR_OFFSET
            yield managed + offset
        else:  # describe the bytes with their real type in our own copy of the struct
            described = DLTensor.from_buffer_copy(_dltensor_at(managed, versioned))
            described.dtype.code = real_code
            yield ctypes.addressof(described)
    finally:
        del capsule  # torch's destructor calls the deleter: the capsule was never consumed


def consume(tensor: torch.Tensor) -> tuple[int, bool]:
    """Take ownership of tensor's managed DLPack tensor; returns (pointer, versioned).

    The caller must hand the pointer to an engine call that consumes it (which
    calls the deleter exactly once, even when it fails)."""
    if tensor.requires_grad:
        tensor = tensor.detach()
    capsule, versioned, real_code = _export_capsule(tensor)
    managed = _capsule_pointer(capsule, versioned)
    struct = (DLManagedTensorVersioned if versioned else DLManagedTensor).from_address(managed)
    # Registered before the deleter is swapped: if either line raises, torch's capsule
    # destructor still calls torch's own deleter, and the weak entry holds nothing alive.
    _kept_by_data.setdefault(tensor.data_ptr(), tensor)  # the first holder: torch's own storage
    _kept[managed] = (struct.deleter or 0, tensor)
    struct.deleter = _KEPT_DELETER_ADDRESS
    _capsule_set_name(capsule, USED_VERSIONED if versioned else USED_LEGACY)
    if real_code is not None:  # the struct is ours now: give it the real type
        _dltensor_at(managed, versioned).dtype.code = real_code
    return managed, versioned


class _SlotExport:
    """A DLPack producer for one tensor of a view (the protocol's __dlpack__)."""

    __slots__ = ("_view", "_index", "_device")

    def __init__(self, view: int, index: int, device: tuple[int, int]):
        self._view = view
        self._index = index
        self._device = device

    def __dlpack_device__(self) -> tuple[int, int]:
        return self._device

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        if copy:
            raise BufferError("the store exports views only; copy the tensor afterwards")
        versioned = max_version is not None and tuple(max_version)[0] >= 1
        out = ctypes.c_void_p()
        check(lib.zc_view_export_dlpack(self._view, self._index, int(versioned), ctypes.byref(out)))
        if self._device[0] != 1:  # a device tensor: the consumer's stream waits until it is complete
            try:
                described = _dltensor_at(out.value, versioned)
                data = (described.data or 0) + described.byte_offset
                device.wait_ready(data, stream, kept_tensor(data))
            except BaseException:
                _call_deleter(out.value, versioned)
                raise
        described = _dltensor_at(out.value, versioned).dtype
        if _needs_byte_view(_CODE_TO_DTYPE.get(described.code)):
            described.code = DL_UINT  # torch reads the bytes, view_tensor restores the type
        name = VERSIONED if versioned else LEGACY
        try:
            return _capsule_new(out.value, name, _unconsumed_capsule_destructor)
        except BaseException:
            _call_deleter(out.value, versioned)
            raise


def view_tensor(view: int, index: int, device: tuple[int, int], dtype_code: int | None = None
                ) -> torch.Tensor:
    """A torch tensor over tensor index of a view, without a copy. dtype_code is
    the stored DLPack type code, needed to restore a dtype that travelled as bytes."""
    tensor = torch.from_dlpack(_SlotExport(view, index, device))
    real = _CODE_TO_DTYPE.get(dtype_code)
    if _needs_byte_view(real):
        tensor = tensor.view(real)
    return tensor
