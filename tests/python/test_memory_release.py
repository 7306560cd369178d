"""The store gives memory back when ComfyUI makes room (the wrappers, against stand-ins of
ComfyUI's two release points; the store is real)."""

from __future__ import annotations

import types

import torch

from zc_pack.zc_engine import LatentStore
from zc_pack.zc_nodes import memory_release


def shots(store, count):
    for i in range(count):
        store.put("film", {"latent_tensor": torch.full((256, 256), float(i))}, spill=True)
    store.flush()


def test_ram_release_frees_spilled_shots_only_when_ram_is_short(tmp_path, monkeypatch):
    with LatentStore(spill_dir=tmp_path, depth=4) as store:
        shots(store, 3)
        calls = []
        fake_comfy_release = types.SimpleNamespace(  # stands in for comfy.memory_management
            extra_ram_release=lambda target, free_active=False: calls.append(target) or 0)
        wrapped = memory_release.wrap_extra_ram_release(lambda: store, fake_comfy_release.extra_ram_release)
        monkeypatch.setattr(memory_release, "_available_ram", lambda: 10 << 30)
        wrapped(1 << 30)  # plenty of RAM: nothing leaves
        assert store.stats()["slots"] == 3 and calls == [1 << 30]
        monkeypatch.setattr(memory_release, "_available_ram", lambda: 0)
        wrapped(300 << 10)  # short by 300 KiB: two 256 KiB shots leave, least recently used first
        assert store.stats()["slots"] == 1 and calls[-1] == 300 << 10
        assert store.get("film", 1).tensors["latent_tensor"].eq(0).all()  # restored from its file
        assert store.stats()["restores"] == 1


def test_free_memory_on_a_device_releases_device_shots_and_ignores_the_cpu(tmp_path):
    released = []

    class Store:  # records what the wrapper asks; the engine's trim is tested in C
        def trim(self, nbytes, *, device=False):
            released.append((nbytes, device))
            return nbytes

    original_calls = []
    wrapped = memory_release.wrap_free_memory(lambda: Store(), lambda device: 100,
                                              lambda req, dev, *a, **k: original_calls.append((req, dev)))
    wrapped(1000, torch.device("cpu"))
    wrapped(50, types.SimpleNamespace(type="cuda"))
    wrapped(400, types.SimpleNamespace(type="cuda"))
    assert released == [(300, True)] and len(original_calls) == 3
    memory_release.wrap_free_memory(lambda: None, lambda d: 0, lambda *a: None)(1, types.SimpleNamespace(type="cuda"))
