"""Residency locks: keep a chosen model's weights in VRAM across queue runs,
through ComfyUI's own memory manager (classic and dynamic VRAM).

"Residency", not "pin": inside ComfyUI "pin" means page-locked host memory.

  registry.py       locks keyed by the model object (held weakly), with owners
  policy.py         what a lock does when ComfyUI unloads everything, by caller
  budget.py         lock only what fits beside the inference reserve and headroom
  hooks.py          install wrappers once, remove them restoring the originals
  classic.py        the wrappers on ComfyUI's eviction paths (+ load evidence)
  dynamic.py        dynamic VRAM: VBAR watermark limits behind a tiny port
  dynamic_hooks.py  the two aimdo-era wrappers (limit reset, free-memory figure)
  load_evidence.py  per-run load time and bytes moved
  cuda_allocator.py CUDA allocator report and expandable_segments
  comfy_memory.py   every comfy.* lookup, feature-detected
  service.py        ties them together; one per process: get_service()
  report.py         the node's report text, and report() for the web API
  units.py          bytes and times as people read them

See docs/residency.md.
"""

from __future__ import annotations

import threading

_lock = threading.Lock()
_service = None


def get_service():
    """The process-wide ResidencyService (created on first use)."""
    global _service
    with _lock:
        if _service is None:
            from .service import ResidencyService
            _service = ResidencyService()
        return _service
