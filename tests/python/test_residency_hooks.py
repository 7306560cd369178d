"""Installing wrappers once and removing them exactly (identity of the originals)."""

from __future__ import annotations

import types

from zc_pack.zc_residency.hooks import HookSet, is_ours, mark


def make_module():
    def free_memory(memory_required, device, keep_loaded=()):  # ComfyUI uses [] here
        return ("original", memory_required, device, tuple(keep_loaded))
    return types.SimpleNamespace(free_memory=free_memory, __name__="fake_model_management")


class Patcher:
    def partially_unload(self, device_to, memory_to_free=0):
        return memory_to_free


def wrapper_factory(calls):
    def make(original):
        def wrapped(*args, **kwargs):
            calls.append(args)
            return original(*args, **kwargs)
        return mark(wrapped, original)
    return make


def test_install_is_idempotent_and_uninstall_restores_identity():
    module, calls = make_module(), []
    original = module.free_memory
    original_method = Patcher.__dict__["partially_unload"]
    hooks = HookSet()
    assert hooks.install(module, "free_memory", wrapper_factory(calls))
    assert not hooks.install(module, "free_memory", wrapper_factory(calls))  # once
    assert hooks.install(Patcher, "partially_unload", wrapper_factory(calls))
    assert module.free_memory(1, "cpu") == ("original", 1, "cpu", ())
    assert Patcher().partially_unload("cpu", 5) == 5 and len(calls) == 2
    assert module.free_memory.__wrapped__ is original and module.free_memory.__name__ == "free_memory"

    assert hooks.uninstall_all() == []
    assert module.free_memory is original
    assert Patcher.__dict__["partially_unload"] is original_method
    assert len(hooks) == 0


def test_a_second_hookset_does_not_wrap_ours_again():
    module, calls = make_module(), []
    first, second = HookSet(), HookSet()
    first.install(module, "free_memory", wrapper_factory(calls))
    ours = module.free_memory
    assert not second.install(module, "free_memory", wrapper_factory(calls))  # e.g. the pack loaded twice
    assert module.free_memory is ours and is_ours(ours)


def test_another_packs_wrapper_on_top_is_left_in_its_chain():
    module, calls = make_module(), []
    original = module.free_memory
    hooks = HookSet()
    hooks.install(module, "free_memory", wrapper_factory(calls))
    ours = module.free_memory

    def theirs(*args, **kwargs):
        return ours(*args, **kwargs)
    theirs.__wrapped__ = ours
    module.free_memory = theirs

    assert hooks.uninstall_all() == ["fake_model_management.free_memory"]
    assert module.free_memory is theirs  # their wrapper is not cut out
    assert module.free_memory(2, "cpu") == ("original", 2, "cpu", ())  # and the chain still works
    assert is_ours(module.free_memory) and not is_ours(original)
    assert not HookSet().install(module, "free_memory", wrapper_factory(calls))  # ours is still in it


def test_missing_or_non_callable_attributes_are_skipped():
    module = types.SimpleNamespace(flag=True)
    hooks = HookSet()
    assert not hooks.install(module, "absent", wrapper_factory([]))
    assert not hooks.install(module, "flag", wrapper_factory([]))
    assert len(hooks) == 0
