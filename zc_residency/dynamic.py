"""Residency under dynamic VRAM (comfy-aimdo), behind a tiny interface.

With dynamic VRAM, ComfyUI stages a model's weights in a VBAR: a reserved
virtual address range whose 32 MiB pages get VRAM only when a weight is used,
and which aimdo evicts, top page first, whenever something else needs memory.
aimdo's one lever against eviction is a VBAR's *watermark limit*: pages below
it are never evicted. So a lock here is:

- protect: ``vbar.set_watermark_limit(staged bytes)`` once the VBAR exists
  (it is created at the model's first load), and again after every load;
- re-apply after ComfyUI resets every limit (execution.py does so after each
  node, through ``comfy_aimdo.model_vbar.vbars_reset_watermark_limits``);
- correct the free-memory estimate: ComfyUI's ``ModelPatcher.get_free_memory``
  adds every resident VBAR byte as reclaimable; locked pages are not, so they
  are subtracted (else VAE and cond batch sizing plan for memory that cannot
  be had, and OOM);
- unprotect: limit 0.

Only these calls are used, through an AimdoPort: ``enabled()``,
``vbar_of(base, device)``, and on a VBAR ``offset`` (staged bytes),
``set_watermark_limit(n)``, ``get_residency()`` (per page: bit 0 resident) and
``loaded_size()``. Tests drive this module with a fake port.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

VBAR_PAGE_BYTES = 32 << 20  # aimdo's VBAR_PAGE_SIZE


class VBARLike(Protocol):
    offset: int

    def set_watermark_limit(self, size_bytes: int) -> None: ...

    def get_residency(self) -> list[int]: ...

    def loaded_size(self) -> int: ...


class AimdoPort(Protocol):
    def enabled(self) -> bool:
        """Dynamic VRAM is active in this process (aimdo loaded, ComfyUI using it)."""

    def vbar_of(self, base, device) -> VBARLike | None:
        """The VBAR ComfyUI created for base on device, or None (not loaded there yet)."""


def pages_up(size_bytes: int) -> int:
    return -(-int(size_bytes) // VBAR_PAGE_BYTES)


class DynamicResidency:
    def __init__(self, port: AimdoPort):
        self.port = port

    def vbar(self, lock) -> VBARLike | None:
        base = lock.base
        if base is None or not lock.dynamic:
            return None
        try:
            return self.port.vbar_of(base, lock.device)
        except Exception:  # noqa: BLE001 - no VBAR to act on; the next load retries
            return None

    def protect(self, lock) -> int:
        """Apply the lock's watermark limit (all staged bytes); returns the limit set
        (0 when the model has no VBAR yet: the next load applies it)."""
        if lock.yielding:
            return 0
        vbar = self.vbar(lock)
        staged = int(getattr(vbar, "offset", 0) or 0) if vbar is not None else 0
        if staged <= 0:
            return 0
        vbar.set_watermark_limit(staged)
        lock.vbar_limit_bytes = staged
        return staged

    def unprotect(self, lock) -> None:
        vbar = self.vbar(lock)
        if vbar is not None:
            vbar.set_watermark_limit(0)
        lock.vbar_limit_bytes = 0

    def reapply(self, locks: Iterable) -> int:
        """Protect every dynamic lock again (after ComfyUI reset the limits); returns how many."""
        count = 0
        for lock in locks:
            if lock.dynamic and self.protect(lock):
                count += 1
        return count

    def resident(self, lock) -> tuple[int, int, int]:
        """(resident bytes below the limit, resident bytes in all, staged bytes) of lock's VBAR."""
        vbar = self.vbar(lock)
        if vbar is None:
            return 0, 0, 0
        staged = int(getattr(vbar, "offset", 0) or 0)
        limit_pages = pages_up(lock.vbar_limit_bytes)
        try:
            residency = list(vbar.get_residency())
        except Exception:  # noqa: BLE001 - older aimdo without residency maps: assume the limit is all resident
            loaded = int(vbar.loaded_size())
            return min(loaded, limit_pages * VBAR_PAGE_BYTES), loaded, staged
        locked = sum(1 for flags in residency[:limit_pages] if flags & 1) * VBAR_PAGE_BYTES
        everything = sum(1 for flags in residency if flags & 1) * VBAR_PAGE_BYTES
        return locked, everything, staged

    def locked_resident_bytes(self, locks: Iterable, device) -> int:
        """VRAM held by locked pages on device: resident and below their VBAR's limit."""
        total = 0
        for lock in locks:
            if lock.dynamic and not lock.yielding and lock.vbar_limit_bytes and _same_device(lock.device,
                                                                                           device):
                total += self.resident(lock)[0]
        return total


def _same_device(a, b) -> bool:
    if b is None:
        return True
    try:
        return a == b or str(a) == str(b)
    except Exception:  # noqa: BLE001 - incomparable devices are different devices
        return False


class ComfyAimdoPort:
    """The real port: comfy-aimdo's VBARs as ComfyUI keeps them on the BaseModel."""

    def enabled(self) -> bool:
        from . import comfy_memory
        return comfy_memory.dynamic_vram_enabled() and comfy_memory.aimdo_vbar_module() is not None

    def vbar_of(self, base, device):
        vbars = getattr(base, "dynamic_vbars", None)
        return vbars.get(device) if isinstance(vbars, dict) else None
