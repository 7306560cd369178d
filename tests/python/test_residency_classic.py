"""The classic-mode wrappers' argument handling, without ComfyUI (the behaviour on real
ComfyUI is in tests/integration/test_vram_pin.py)."""

from __future__ import annotations

import pytest

from zc_pack.zc_residency import classic


class FakeService:
    """FAKE of the few ResidencyService calls the wrappers make."""

    def __init__(self, locked=(), protected_entries=()):
        self.registry = list(locked)  # truthy when something is locked
        self.protected = list(protected_entries)
        self.devices_asked = []
        self.kept = []
        self.refused = []

    def protected_loaded_models(self, device):
        self.devices_asked.append(device)
        return list(self.protected)

    def note_kept(self, entries):
        self.kept.extend(entries)

    def protecting(self, base):
        return "lock" if base in self.registry else None

    def note_refused(self, lock, what):
        self.refused.append(what)


def comfy_free_memory(memory_required, device, keep_loaded=[], for_dynamic=False, pins_required=0):  # noqa: B006
    return {"memory_required": memory_required, "device": device, "keep_loaded": list(keep_loaded),
            "for_dynamic": for_dynamic}


def other_pack_wrapper(*args, **kwargs):  # wraps without functools.wraps: no signature to read
    return comfy_free_memory(*args, **kwargs)


LOCKED_ENTRY, CALLERS_ENTRY = object(), object()


@pytest.mark.parametrize("original", [comfy_free_memory, other_pack_wrapper], ids=["comfy", "wrapped"])
@pytest.mark.parametrize("call", ["positional", "keyword", "no-keep"])
def test_free_memory_adds_locked_entries_and_keeps_the_callers(original, call):
    service = FakeService(locked=["base"], protected_entries=[LOCKED_ENTRY])
    wrapped = classic.wrap_free_memory(service, original)
    callers = [CALLERS_ENTRY]
    if call == "positional":
        result = wrapped(100, "cuda:0", callers, True)
    elif call == "keyword":
        result = wrapped(100, device="cuda:0", keep_loaded=callers, for_dynamic=True)
    else:
        result = wrapped(100, "cuda:0", for_dynamic=True)
    expected_keep = [LOCKED_ENTRY] if call == "no-keep" else [CALLERS_ENTRY, LOCKED_ENTRY]
    assert result == {"memory_required": 100, "device": "cuda:0", "keep_loaded": expected_keep,
                      "for_dynamic": True}
    assert callers == [CALLERS_ENTRY]  # the caller's list is never mutated
    assert service.devices_asked == ["cuda:0"] and service.kept == [LOCKED_ENTRY]


def test_free_memory_does_not_add_an_entry_twice():
    service = FakeService(locked=["base"], protected_entries=[LOCKED_ENTRY])
    wrapped = classic.wrap_free_memory(service, comfy_free_memory)
    assert wrapped(1, "cpu", [LOCKED_ENTRY])["keep_loaded"] == [LOCKED_ENTRY] and service.kept == []


def test_free_memory_is_a_pure_pass_through_when_nothing_is_locked():
    service = FakeService()
    calls = []

    def original(*args, **kwargs):
        calls.append((args, kwargs))
    classic.wrap_free_memory(service, original)(5, "cuda:1", keep_loaded=[1], pins_required=3)
    assert calls == [((5, "cuda:1"), {"keep_loaded": [1], "pins_required": 3})] and service.devices_asked == []


def test_partially_unload_and_model_unload_refuse_only_for_protected_models():
    class Patcher:
        def __init__(self, model):
            self.model = model

        def partially_unload(self, device_to, memory_to_free=0):
            return memory_to_free

    class Loaded:
        def __init__(self, patcher):
            self.model = patcher

        def model_unload(self, memory_to_free=None, unpatch_weights=True):
            return True

    service = FakeService(locked=["locked-base"])
    partially_unload = classic.wrap_partially_unload(service, Patcher.partially_unload)
    model_unload = classic.wrap_model_unload(service, Loaded.model_unload)
    locked, other = Patcher("locked-base"), Patcher("other-base")
    assert partially_unload(locked, "cpu", 123) == 0 and partially_unload(other, "cpu", 123) == 123
    assert model_unload(Loaded(locked), 10) is False and model_unload(Loaded(other), 10) is True
    assert service.refused == ["Patcher.partially_unload", "LoadedModel.model_unload"]
