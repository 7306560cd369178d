"""FAKES for the residency tests that run without ComfyUI or a GPU.

FakeAimdo stands in for the few comfy-aimdo calls the dynamic-VRAM lock uses. Its
FakeVBAR follows aimdo's documented rules (src/model-vbar.c, read, not copied):
32 MiB pages; ``offset`` = staged bytes; ``fault`` makes pages resident; eviction
takes pages from the top of the lowest-priority VBAR and never goes below its
``watermark_limit``; ``vbars_reset_watermark_limits`` sets every limit to 0. It is
a model of those rules for testing our logic, not a simulation of aimdo.

FakeComfy stands in for the handful of ComfyUI figures the service reads
(total memory, inference reserve, the executing prompt id, the loaded-model list, the
cache mode). The attribute readers (patch set, model identity) are the real ones from
comfy_memory.py, applied to the fakes' attributes named like ComfyUI's.
"""

from __future__ import annotations

import types
import uuid

import torch

from zc_pack.zc_residency import comfy_memory
from zc_pack.zc_residency.causes import CacheMode

PAGE = 32 << 20
GIB = 1 << 30


class FakeVBAR:
    def __init__(self, staged_bytes: int, device="cuda:0"):
        self.offset = staged_bytes
        self.device = device
        self.pages = [False] * (-(-staged_bytes // PAGE))
        self.watermark_limit_pages = 0
        self.limit_calls: list[int] = []

    # -- the calls the lock uses
    def set_watermark_limit(self, size_bytes: int) -> None:
        self.limit_calls.append(int(size_bytes))
        self.watermark_limit_pages = -(-int(size_bytes) // PAGE)

    def get_residency(self) -> list[int]:
        return [1 if resident else 0 for resident in self.pages]

    def loaded_size(self) -> int:
        return sum(self.pages) * PAGE

    # -- what ComfyUI / aimdo do to it in the tests
    def fault_all(self) -> None:
        self.pages = [True] * len(self.pages)

    def evict(self, pages_wanted: int) -> int:
        """Free up to pages_wanted pages from the top, never below the limit."""
        freed = 0
        for index in range(len(self.pages) - 1, self.watermark_limit_pages - 1, -1):
            if freed == pages_wanted:
                break
            if self.pages[index]:
                self.pages[index] = False
                freed += 1
        return freed


class FakeAimdo:
    """The port the service reads VBARs through, plus a fake ``comfy_aimdo.model_vbar``."""

    def __init__(self, enabled: bool = True):
        self._enabled = enabled
        self.vbars: list[FakeVBAR] = []
        self.module = types.SimpleNamespace(vbars_reset_watermark_limits=self._reset_all,
                                            __name__="fake_comfy_aimdo.model_vbar")
        self.resets = 0

    def _reset_all(self) -> None:
        self.resets += 1
        for vbar in self.vbars:
            vbar.watermark_limit_pages = 0

    # -- AimdoPort
    def enabled(self) -> bool:
        return self._enabled

    def vbar_of(self, base, device):
        return base.dynamic_vbars.get(device)

    # -- helpers
    def stage(self, base, device, staged_bytes: int) -> FakeVBAR:
        """What ComfyUI's dynamic load does first: create the model's VBAR."""
        vbar = FakeVBAR(staged_bytes, device)
        base.dynamic_vbars[device] = vbar
        self.vbars.append(vbar)
        return vbar

    def pressure(self, pages_wanted: int) -> int:
        """An allocation elsewhere: evict from every VBAR (in list order) down to its limit."""
        freed = 0
        for vbar in self.vbars:
            freed += vbar.evict(pages_wanted - freed)
        return freed


class FakeModule:
    """A weight module as ComfyUI's dynamic loader leaves it: _v and, after use, _v_signature."""

    def __init__(self, size: int, signature: bytes | None = None):
        self._v = (None, 0, size)
        self._v_signature = signature


class FakeBaseModel:
    """The BaseModel attributes the lock reads, named as ComfyUI names them."""

    def __init__(self, modules: dict | None = None, loaded: int = 0, dtype=torch.float32,
                 manual_cast_dtype=None):
        self.dynamic_vbars = {}
        self.model_loaded_weight_memory = loaded
        self._modules_by_name = modules or {}
        self.current_weight_patches_uuid = None  # the patch set on the weights (ComfyUI's load sets it)
        self.model_lowvram = False
        self._dtype = dtype
        self.manual_cast_dtype = manual_cast_dtype

    def named_modules(self):
        yield "", self
        yield from self._modules_by_name.items()

    def get_dtype(self):
        return self._dtype


class FakePatcher:
    """A ModelPatcher's patch bookkeeping (patches, patches_uuid: new on every add_patches, as in
    ComfyUI) and, for classic tests, a load that does what ComfyUI's does to the counters."""

    def __init__(self, base, size: int, device="cuda:0", dynamic: bool = True, cached_patcher_init=None):
        self.model = base
        self.load_device = device
        self._size = size
        self._dynamic = dynamic
        self.patches: dict = {}
        self.patches_uuid = uuid.uuid4()
        self.object_patches: dict = {}
        self.weight_wrapper_patches: dict = {}
        self.cached_patcher_init = cached_patcher_init

    def add_patches(self, keys) -> None:
        for key in keys:
            self.patches.setdefault(key, []).append(("fake lora", 1.0))
        self.patches_uuid = uuid.uuid4()

    def load(self, device_to=None, lowvram_model_memory=0, force_patch_weights=False, full_load=False):
        """Classic: everything not yet loaded goes onto the device, with this patcher's patches."""
        self.model.model_loaded_weight_memory = self._size
        self.model.current_weight_patches_uuid = self.patches_uuid

    def model_size(self) -> int:
        return self._size

    def is_dynamic(self) -> bool:
        return self._dynamic

    def loaded_size(self) -> int:
        vbar = self.model.dynamic_vbars.get(self.load_device)
        return (vbar.loaded_size() if vbar else 0) + self.model.model_loaded_weight_memory

    def clone(self):
        twin = FakePatcher(self.model, self._size, self.load_device, self._dynamic, self.cached_patcher_init)
        twin.patches = {key: list(value) for key, value in self.patches.items()}
        twin.patches_uuid = self.patches_uuid
        twin.object_patches = dict(self.object_patches)
        return twin


class FakeLoadedModel:
    """ComfyUI's LoadedModel.model_load as far as the counters go: weights that carry another
    patch set are unpatched to the offload device first (partially_load), then patcher.load."""

    def __init__(self, patcher):
        self.model = patcher
        self.device = patcher.load_device

    def model_load(self, lowvram_model_memory=0, force_patch_weights=False):
        patcher, base = self.model, self.model.model
        current = base.current_weight_patches_uuid
        if current is not None and (current != patcher.patches_uuid or force_patch_weights):
            base.model_loaded_weight_memory = 0
            base.current_weight_patches_uuid = None
        if base.model_loaded_weight_memory < patcher.model_size() or base.model_lowvram:
            patcher.load(patcher.load_device)
        return base

    def unload(self) -> None:
        """What ComfyUI's full unload (detach) leaves behind."""
        self.model.model.model_loaded_weight_memory = 0
        self.model.model.current_weight_patches_uuid = None


class FakeComfy:
    """The ComfyUI figures ResidencyService reads, as plain values."""

    patch_state = staticmethod(comfy_memory.patch_state)
    weights_patch_id = staticmethod(comfy_memory.weights_patch_id)
    model_identity = staticmethod(comfy_memory.model_identity)

    def __init__(self, total_bytes: int = 24 * GIB, reserve_bytes: int = int(1.2 * GIB)):
        self.total_bytes = total_bytes
        self.reserve_bytes = reserve_bytes
        self.prompt_id = None
        self.loaded_models: list = []
        self.cache = CacheMode("classic", "classic, --cache-classic (fake)")

    def cache_mode(self) -> CacheMode:
        return self.cache

    @staticmethod
    def is_dynamic_patcher(patcher) -> bool:
        return bool(getattr(patcher, "is_dynamic", lambda: False)())

    def inference_reserve(self) -> int:
        return self.reserve_bytes

    def total_memory(self, device) -> int:
        return self.total_bytes

    def executing_prompt_id(self):
        return self.prompt_id

    def current_loaded_models(self) -> list:
        return self.loaded_models

    @staticmethod
    def is_oom(exc) -> bool:
        return isinstance(exc, MemoryError)
