"""The CUDA caching allocator: an honest report, and expandable_segments where
it can really be switched on.

Facts this module works from (PyTorch source; see docs/residency.md):
- The backend (``native`` or ``cudaMallocAsync``) is chosen once, when PyTorch
  loads, from PYTORCH_ALLOC_CONF / PYTORCH_CUDA_ALLOC_CONF. ComfyUI sets
  ``backend:cudaMallocAsync`` on NVIDIA before any custom node loads, and
  PyTorch cannot switch backends at runtime.
- ``expandable_segments`` is a native-backend option. With the native backend
  it can be set at runtime (``torch.cuda.memory._set_allocator_settings``); it
  applies to segments created afterwards, and the call resets every option it
  does not name, so the user's other options are passed along with it.
- cudaMallocAsync reports only reserved/allocated bytes (and peaks); the
  fragmentation figures (inactive split, allocation retries, largest free
  block) exist only for the native backend.

The module never claims a change it did not make: after setting the option,
it allocates a probe block and checks that the new segment is expandable.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from .units import MIB, fmt_bytes

ENV_NAMES = ("PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_HIP_ALLOC_CONF")
EXPANDABLE = "expandable_segments"
LAUNCH_HINT = ("start ComfyUI with --disable-cuda-malloc and PYTORCH_ALLOC_CONF=expandable_segments:True "
               "(set PYTORCH_CUDA_ALLOC_CONF to the same value too: PyTorch versions differ in which "
               "name they read)")
PROBE_MAX_BYTES = 256 * MIB


def split_conf(conf: str | None) -> list[tuple[str, str]]:
    """'a:1,b:[2:3,4:5]' -> [('a', '1'), ('b', '[2:3,4:5]')] (commas inside [] kept)."""
    items, depth, current = [], 0, ""
    for ch in conf or "":
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth = max(0, depth - 1)
        if ch == "," and depth == 0:
            items.append(current)
            current = ""
        else:
            current += ch
    items.append(current)
    pairs = []
    for item in items:
        item = item.strip()
        if not item:
            continue
        key, _, value = item.partition(":")
        pairs.append((key.strip(), value.strip()))
    return pairs


def join_conf(pairs: list[tuple[str, str]]) -> str:
    return ",".join(f"{k}:{v}" for k, v in pairs)


def user_conf(environ: Mapping[str, str]) -> tuple[str | None, str]:
    """(name, value) of the allocator setting this process started with (first set of ENV_NAMES)."""
    for name in ENV_NAMES:
        value = environ.get(name)
        if value:
            return name, value
    return None, ""


def with_expandable(conf: str) -> tuple[str, list[str]]:
    """The full setting string to apply at runtime: the user's options (backend removed:
    it cannot change at runtime) with expandable_segments:True. Also returns the kept option names."""
    pairs = [(k, v) for k, v in split_conf(conf) if k not in ("backend", EXPANDABLE)]
    return join_conf(pairs + [(EXPANDABLE, "True")]), [k for k, _ in pairs]


def expandable_in(conf: str) -> bool:
    return any(k == EXPANDABLE and v.lower() == "true" for k, v in split_conf(conf))


class TorchCuda:
    """The few torch.cuda calls used here (a fake replaces it in tests)."""

    def __init__(self):
        import torch
        self.torch = torch

    def available(self) -> bool:
        return bool(self.torch.cuda.is_available())

    def backend(self) -> str:
        return str(self.torch.cuda.get_allocator_backend())

    def stats(self, device) -> dict:
        return dict(self.torch.cuda.memory_stats(device))

    def mem_get_info(self, device) -> tuple[int, int]:
        return tuple(int(x) for x in self.torch.cuda.mem_get_info(device))

    def snapshot(self) -> list:
        return self.torch.cuda.memory_snapshot()

    def can_set_settings(self) -> bool:
        return hasattr(self.torch.cuda.memory, "_set_allocator_settings")

    def set_settings(self, conf: str) -> None:
        self.torch.cuda.memory._set_allocator_settings(conf)

    def empty_cache(self) -> None:
        self.torch.cuda.empty_cache()

    def probe_segment_expandable(self, device, nbytes: int) -> bool | None:
        """Allocate nbytes on device; is the segment that holds it expandable? None if unknown."""
        probe = self.torch.empty(int(nbytes), dtype=self.torch.uint8, device=device)
        try:
            address = probe.data_ptr()
            for segment in self.snapshot():
                start = segment.get("address", 0)
                if start <= address < start + segment.get("total_size", 0):
                    return bool(segment.get("is_expandable", False))
            return None
        finally:
            del probe


@dataclass
class AllocatorReport:
    backend: str | None
    changed: bool = False
    lines: list[str] = field(default_factory=list)
    stats: dict = field(default_factory=dict)

    def text(self) -> str:
        return "\n".join(self.lines)


def _largest_free_block(cuda: TorchCuda) -> int | None:
    try:
        snapshot = cuda.snapshot()
    except Exception:  # noqa: BLE001 - cudaMallocAsync refuses snapshots: "not provided"
        return None
    sizes = [block.get("size", 0) for segment in snapshot for block in segment.get("blocks", [])
             if block.get("state") == "inactive"]
    return max(sizes) if sizes else 0


def fragmentation(cuda: TorchCuda, device, backend: str) -> dict:
    """The figures this backend really provides (missing keys: not provided)."""
    stats = cuda.stats(device)
    figures = {}
    if stats:
        figures["reserved"] = int(stats.get("reserved_bytes.all.current", 0))
        figures["allocated"] = int(stats.get("allocated_bytes.all.current", 0))
        if backend == "native":
            figures["inactive_split"] = int(stats.get("inactive_split_bytes.all.current", 0))
            figures["alloc_retries"] = int(stats.get("num_alloc_retries", 0))
            figures["ooms"] = int(stats.get("num_ooms", 0))
            largest = _largest_free_block(cuda)
            if largest is not None:
                figures["largest_free_block"] = largest
    try:
        figures["device_free"], figures["device_total"] = cuda.mem_get_info(device)
    except Exception:  # noqa: BLE001, S110 - a figure that cannot be read is left out, never invented
        pass
    return figures


def describe_figures(figures: dict, backend: str) -> str:
    if "reserved" not in figures:
        text = "no allocations yet (CUDA allocator statistics are empty)"
    else:
        text = f"reserved {fmt_bytes(figures['reserved'])}, allocated {fmt_bytes(figures['allocated'])}"
        if backend == "native":
            reserved = figures["reserved"] or 1
            text += (f", inactive split {fmt_bytes(figures['inactive_split'])} "
                     f"({100.0 * figures['inactive_split'] / reserved:.1f}% of reserved), "
                     f"allocation retries {figures['alloc_retries']}, OOMs {figures['ooms']}")
            if "largest_free_block" in figures:
                text += f", largest free cached block {fmt_bytes(figures['largest_free_block'])}"
        else:
            text += ("; inactive split, allocation retries and largest free block are not provided by "
                     f"{backend}")
    if "device_free" in figures:
        text += f"; device free {fmt_bytes(figures['device_free'])} of {fmt_bytes(figures['device_total'])}"
    return text


def inspect_and_tune(device, *, tune: bool, dynamic_vram: bool, cuda: TorchCuda | None = None,
                     environ: Mapping[str, str] | None = None) -> AllocatorReport:
    """Report the allocator of device; with tune, switch expandable_segments on where possible."""
    environ = os.environ if environ is None else environ
    device_type = getattr(device, "type", str(device))
    if device_type != "cuda":
        line = f"allocator: {device} is not a CUDA device; the CUDA allocator has nothing to report or tune here"
        return AllocatorReport(None, lines=[line])
    cuda = cuda or TorchCuda()
    if not cuda.available():
        return AllocatorReport(None, lines=["allocator: CUDA is not available in this process"])
    backend = cuda.backend()
    env_name, conf = user_conf(environ)
    report = AllocatorReport(backend)
    origin = f"{env_name}={conf}" if env_name else "no allocator setting in the environment"
    report.lines.append(f"allocator: backend {backend} ({origin})")
    if not tune:
        pass
    elif backend != "native":
        report.lines.append(
            f"allocator: no change. {backend} was chosen when PyTorch loaded (ComfyUI sets it before custom "
            "nodes load) and cannot be switched at runtime; expandable_segments is an option of the native "
            f"backend. To use it, {LAUNCH_HINT}.")
    elif expandable_in(conf):
        report.lines.append(f"allocator: expandable_segments already on (from {env_name}); no change")
    elif dynamic_vram:
        report.lines.append(
            "allocator: no change. Dynamic VRAM (comfy-aimdo) is active: aimdo sees cudaMalloc-family "
            "allocations but not the cuMemCreate/cuMemMap calls expandable segments use, so their VRAM "
            "would not make aimdo evict weights first (not verified on a GPU; left off to avoid OOMs). "
            "To try it anyway, start ComfyUI with PYTORCH_ALLOC_CONF=expandable_segments:True "
            "(and PYTORCH_CUDA_ALLOC_CONF, same value).")
    elif not cuda.can_set_settings():
        report.lines.append("allocator: no change. This PyTorch has no runtime allocator-settings call "
                            f"(torch.cuda.memory._set_allocator_settings). To use expandable segments, {LAUNCH_HINT}.")
    else:
        report.changed, line = _enable_expandable(cuda, device, conf)
        report.lines.append(line)
    report.stats = fragmentation(cuda, device, backend)
    report.lines.append("allocator figures: " + describe_figures(report.stats, backend))
    if dynamic_vram:
        report.lines.append("allocator note: dynamic VRAM weight pages (VBARs) are not PyTorch allocations "
                            "and are not in these figures; see the residency lines")
    return report


def _enable_expandable(cuda: TorchCuda, device, conf: str) -> tuple[bool, str]:
    full, kept = with_expandable(conf)
    try:
        cuda.set_settings(full)
    except Exception as exc:  # noqa: BLE001 - whatever PyTorch raises is reported as a refusal
        return False, (f"allocator: no change. PyTorch refused the setting {full!r}: {exc}. "
                       f"To use expandable segments, {LAUNCH_HINT}.")
    cuda.empty_cache()  # unused old segments go back, new ones are created with the new option
    kept_text = f"; kept {', '.join(kept)}" if kept else ""
    largest = _largest_free_block(cuda) or 0
    probe_bytes = max(32 * MIB, largest + 2 * MIB)
    verdict = None
    if probe_bytes <= PROBE_MAX_BYTES:
        try:
            verdict = cuda.probe_segment_expandable(device, probe_bytes)
        except Exception:  # noqa: BLE001 - the probe failing means "not verified"
            verdict = None
    if verdict is True:
        return True, (f"allocator: expandable_segments switched on at runtime ({full!r}{kept_text}); "
                      f"verified: a new {fmt_bytes(probe_bytes)} segment is expandable. Existing segments "
                      "stay as they are until freed.")
    if verdict is False:
        return False, (f"allocator: PyTorch accepted {full!r}, but a new segment is still not expandable: "
                       "this PyTorch build does not support expandable segments (e.g. Windows wheels). "
                       "No effective change.")
    return True, (f"allocator: expandable_segments set at runtime ({full!r}{kept_text}); not verified: the "
                  "probe allocation could not be traced to a new segment. It applies to segments created "
                  "from now on.")
