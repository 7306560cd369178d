"""DLPack ownership is exact. These tests also run against the AddressSanitizer
build of the engine (test.sh, marker ``asan``), where a use after free, a double
deleter call or a leak of a slot would be reported."""

from __future__ import annotations

import gc

import pytest
import torch

from zc_pack.zc_engine import LatentStore
from zc_pack.zc_engine import dlpack as zdl
from zc_pack.zc_engine._library import lib

pytestmark = pytest.mark.asan


def kept_count() -> int:
    """How many consumed tensors the engine has not yet released (the binding's ledger)."""
    return len(zdl._kept)


def test_view_outlives_eviction_then_reads_fine():
    with LatentStore(depth=1) as store:
        x = torch.arange(100000, dtype=torch.float32)
        store.put("a", {"latent_tensor": x})
        view = store.get("a").tensors["latent_tensor"]
        store.put("a", {"latent_tensor": torch.zeros(100000)})  # evicts generation 1
        store.drop("a")
        assert store.stats()["retained_bytes"] == 400000
        assert torch.equal(view, x)  # reads memory the store no longer lists
        assert float(view.sum()) == float(x.sum())
        del view
        gc.collect()
        assert store.stats()["retained_bytes"] == 0


def test_view_outlives_the_store_itself():
    store = LatentStore()
    store.put("a", {"latent_tensor": torch.full((5000,), 3.0)})
    view = store.get("a").tensors["latent_tensor"]
    store.close()
    assert torch.all(view == 3.0)


def test_versioned_and_legacy_capsules_release_once():
    with LatentStore() as store:
        store.put("a", {"latent_tensor": torch.arange(10.0)})
        view = ctypes_view(store, "a")
        try:
            exporter = zdl._SlotExport(view, 0, (1, 0))
            legacy_capsule = exporter.__dlpack__()  # no max_version: the legacy struct
            legacy = torch.utils.dlpack.from_dlpack(legacy_capsule)
            versioned = torch.from_dlpack(zdl._SlotExport(view, 0, (1, 0)))
            unconsumed = zdl._SlotExport(view, 0, (1, 0)).__dlpack__(max_version=(1, 0))
        finally:
            lib.zc_view_release(view)
        store.drop("a")
        assert store.stats()["retained_bytes"] == 40
        del unconsumed  # our capsule destructor calls the deleter: nobody consumed it
        gc.collect()
        assert store.stats()["retained_bytes"] == 40  # two torch tensors still hold it
        assert torch.equal(legacy, torch.arange(10.0)) and torch.equal(versioned, legacy)
        assert legacy.data_ptr() == versioned.data_ptr()
        del legacy
        gc.collect()
        assert store.stats()["retained_bytes"] == 40
        del versioned
        gc.collect()
        assert store.stats()["retained_bytes"] == 0


def test_consumed_capsule_cannot_be_used_twice():
    t = torch.arange(4.0)
    capsule, versioned, _ = zdl._export_capsule(t)
    zdl._capsule_set_name(capsule, zdl.USED_VERSIONED if versioned else zdl.USED_LEGACY)
    with pytest.raises(RuntimeError, match="already consumed"):
        zdl._capsule_pointer(capsule, versioned)
    # Renamed means consumed: hand the deleter call back by hand, exactly once.
    managed = zdl._capsule_get_pointer(capsule, zdl.USED_VERSIONED if versioned else zdl.USED_LEGACY)
    zdl._call_deleter(managed, versioned)


def test_by_reference_keeps_producer_memory_alive_and_releases_it_once():
    with LatentStore(depth=1) as store:
        x = torch.arange(50000, dtype=torch.float32)
        expected = x.clone()
        store.put_by_reference("ref", {"latent_tensor": x})
        ptr = x.data_ptr()
        del x
        gc.collect()
        got = store.get("ref")
        view = got.tensors["latent_tensor"]
        assert view.data_ptr() == ptr  # the very memory torch allocated: no copy at all
        assert got.info["latent_tensor"].tier == "device" and got.info["latent_tensor"].digest is None
        store.put_by_reference("ref", {"latent_tensor": torch.zeros(3)})  # evicts it
        assert torch.equal(view, expected)
        del view, got
        gc.collect()
        assert store.stats()["retained_bytes"] == 0


def test_by_reference_with_host_copy_has_digest():
    with LatentStore() as store:
        x = torch.randn(33)
        store.put_by_reference("ref", {"latent_tensor": x}, host_copy=True)
        from zc_pack.zc_engine import digest_tensor
        assert store.get("ref").info["latent_tensor"].digest == digest_tensor(x)


def test_failed_put_releases_consumed_references():
    before = kept_count()
    with LatentStore(depth=1, device_budget_bytes=16) as store:
        from zc_pack.zc_engine import BudgetExceeded
        with pytest.raises(BudgetExceeded):
            store.put_by_reference("ref", {"latent_tensor": torch.zeros(100)})
        assert store.stats()["device_bytes"] == 0
        assert kept_count() == before  # the engine called the wrapped deleter at once


def test_a_consumed_tensor_stays_reachable_until_the_engine_releases_it():
    """The torch tensor behind a by-reference slot (the one record_stream works on) is found by
    its data address while the slot or an export of it lives, and let go exactly when the last goes."""
    before = kept_count()
    with LatentStore(depth=1) as store:
        x = torch.arange(1000, dtype=torch.float32)
        ptr = x.data_ptr()
        store.put_by_reference("ref", {"latent_tensor": x})
        assert zdl.kept_tensor(ptr) is x and kept_count() == before + 1
        del x
        gc.collect()
        held = zdl.kept_tensor(ptr)
        assert held is not None and held.data_ptr() == ptr  # reachable with no caller reference
        del held
        view = store.get("ref").tensors["latent_tensor"]
        store.drop("ref")
        gc.collect()
        assert zdl.kept_tensor(ptr) is not None  # the export still holds the slot
        del view
        gc.collect()
        assert zdl.kept_tensor(ptr) is None and kept_count() == before


def test_a_view_exported_again_by_reference_keeps_the_first_holder():
    before = kept_count()
    with LatentStore(depth=2) as store:
        x = torch.arange(10.0)
        store.put_by_reference("a", {"latent_tensor": x})
        view = store.get("a").tensors["latent_tensor"]
        store.put_by_reference("b", {"latent_tensor": view})  # the same memory, a from_dlpack tensor
        assert zdl.kept_tensor(x.data_ptr()) is x  # torch's own storage: record_stream works on it
        del view
        store.drop("a")
        store.drop("b")
    gc.collect()
    assert kept_count() == before  # both deleters ran (x itself is still the test's)


def test_slots_released_at_interpreter_exit_run_their_deleters_without_a_crash(tmp_path):
    """A store never closed and an export still alive when Python exits: the wrapped deleters run
    while modules are torn down (or never), and the process exits cleanly."""
    import subprocess
    import sys
    from pathlib import Path
    script = (
        "import torch\n"
        "from zc_pack.zc_engine import LatentStore\n"
        "store = LatentStore(depth=2)\n"
        "store.put_by_reference('a', {'latent_tensor': torch.arange(100.0)})\n"
        "store.put_by_reference('b', {'latent_tensor': torch.arange(50.0)}, host_copy=True)\n"
        "kept = store.get('a').tensors['latent_tensor']\n"
        "print('ok', float(kept.sum()))\n")
    repo = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", script], cwd=repo, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok 4950.0" and "Exception ignored" not in done.stderr


def ctypes_view(store, tag):
    import ctypes
    view = ctypes.c_void_p()
    assert lib.zc_store_get(store.handle, tag.encode(), 0, ctypes.byref(view)) == 0
    return view.value


@pytest.mark.parametrize("dtype", [torch.float8_e4m3fn, torch.float8_e5m2])
def test_float8_travels_as_bytes_where_torch_dlpack_refuses_it(monkeypatch, dtype):
    # torch 2.9 cannot exchange float8 through DLPack; force that path on any torch.
    monkeypatch.setattr(zdl, "_NEEDS_BYTE_VIEW", {torch.float8_e4m3fn, torch.float8_e5m2})
    x = torch.randn(3, 5).to(dtype)
    with LatentStore() as store:
        store.put("f8", {"latent_tensor": x})
        store.put_by_reference("f8ref", {"latent_tensor": x.clone()})
        for tag in ("f8", "f8ref"):
            got = store.get(tag)
            assert got.tensors["latent_tensor"].dtype == dtype
            assert got.info["latent_tensor"].dtype == ("F8_E4M3" if dtype == torch.float8_e4m3fn
                                                       else "F8_E5M2")
            assert torch.equal(got.tensors["latent_tensor"].view(torch.uint8), x.view(torch.uint8))
