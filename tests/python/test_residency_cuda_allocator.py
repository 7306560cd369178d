"""The allocator report and expandable_segments, against FakeTorchCuda (a fake of the
few torch.cuda calls used; a real GPU run is bench/gpu/residency_check.py)."""

from __future__ import annotations

import types

import pytest

from zc_pack.zc_residency.cuda_allocator import (
    expandable_in,
    inspect_and_tune,
    split_conf,
    user_conf,
    with_expandable,
)

MIB = 1 << 20
CUDA = types.SimpleNamespace(type="cuda", index=0)


class FakeTorchCuda:
    """FAKE torch.cuda: a backend name, memory_stats, a snapshot, and the settings call."""

    def __init__(self, backend="native", probe=True, can_set=True, stats=None):
        self._backend, self._probe, self._can_set = backend, probe, can_set
        self.settings: list[str] = []
        self.emptied = 0
        self._stats = stats if stats is not None else {
            "reserved_bytes.all.current": 100 * MIB, "allocated_bytes.all.current": 60 * MIB,
            "inactive_split_bytes.all.current": 10 * MIB, "num_alloc_retries": 2, "num_ooms": 0}

    def available(self):
        return True

    def backend(self):
        return self._backend

    def stats(self, device):
        return dict(self._stats)

    def mem_get_info(self, device):
        return 1000 * MIB, 2000 * MIB

    def snapshot(self):
        if self._backend != "native":
            raise RuntimeError("Calling snapshot with backend:cudaMallocAsync is not meaningful")
        return [{"address": 0, "total_size": 40 * MIB, "is_expandable": False,
                 "blocks": [{"size": 30 * MIB, "state": "active_allocated"},
                            {"size": 8 * MIB, "state": "inactive"}, {"size": 2 * MIB, "state": "inactive"}]}]

    def can_set_settings(self):
        return self._can_set

    def set_settings(self, conf):
        self.settings.append(conf)

    def empty_cache(self):
        self.emptied += 1

    def probe_segment_expandable(self, device, nbytes):
        self.probed = nbytes
        return self._probe


def test_split_conf_keeps_bracketed_lists():
    assert split_conf("max_split_size_mb:512, roundup_power2_divisions:[256:1,512:2],backend:native") == [
        ("max_split_size_mb", "512"), ("roundup_power2_divisions", "[256:1,512:2]"), ("backend", "native")]
    assert split_conf("") == [] and split_conf(None) == []


def test_user_conf_prefers_the_generic_name():
    assert user_conf({"PYTORCH_CUDA_ALLOC_CONF": "a:1", "PYTORCH_ALLOC_CONF": "b:2"}) == ("PYTORCH_ALLOC_CONF", "b:2")
    assert user_conf({"PYTORCH_CUDA_ALLOC_CONF": "a:1"}) == ("PYTORCH_CUDA_ALLOC_CONF", "a:1")
    assert user_conf({}) == (None, "")


def test_with_expandable_keeps_the_users_options_and_drops_the_backend():
    full, kept = with_expandable("backend:native,max_split_size_mb:512,expandable_segments:False,"
                                 "garbage_collection_threshold:0.6")
    assert full == "max_split_size_mb:512,garbage_collection_threshold:0.6,expandable_segments:True"
    assert kept == ["max_split_size_mb", "garbage_collection_threshold"]
    assert expandable_in(full) and not expandable_in("expandable_segments:False")


def test_cuda_malloc_async_changes_nothing_and_names_the_launch_setting():
    cuda = FakeTorchCuda(backend="cudaMallocAsync")
    report = inspect_and_tune(CUDA, tune=True, dynamic_vram=False, cuda=cuda,
                              environ={"PYTORCH_CUDA_ALLOC_CONF": "backend:cudaMallocAsync"})
    text = report.text()
    assert not report.changed and cuda.settings == []
    assert "backend cudaMallocAsync (PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync)" in text
    assert "--disable-cuda-malloc and PYTORCH_ALLOC_CONF=expandable_segments:True" in text
    assert "reserved 100.00 MiB, allocated 60.00 MiB; inactive split, allocation retries and largest free " \
           "block are not provided by cudaMallocAsync" in text
    assert "inactive_split" not in report.stats and "largest_free_block" not in report.stats


def test_native_backend_switches_on_and_verifies():
    cuda = FakeTorchCuda()
    report = inspect_and_tune(CUDA, tune=True, dynamic_vram=False, cuda=cuda,
                              environ={"PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb:256"})
    assert report.changed
    assert cuda.settings == ["max_split_size_mb:256,expandable_segments:True"] and cuda.emptied == 1
    assert cuda.probed == 32 * MIB  # above the largest free cached block (8 MiB)
    assert "switched on at runtime" in report.text() and "verified" in report.text()
    assert report.stats["largest_free_block"] == 8 * MIB and report.stats["alloc_retries"] == 2
    assert "inactive split 10.00 MiB (10.0% of reserved), allocation retries 2, OOMs 0, largest free " \
           "cached block 8.00 MiB" in report.text()


def test_native_backend_that_does_not_honour_it_claims_no_change():
    cuda = FakeTorchCuda(probe=False)
    report = inspect_and_tune(CUDA, tune=True, dynamic_vram=False, cuda=cuda, environ={})
    assert not report.changed and "still not expandable" in report.text()


def test_unverifiable_probe_says_so():
    cuda = FakeTorchCuda(probe=None)
    report = inspect_and_tune(CUDA, tune=True, dynamic_vram=False, cuda=cuda, environ={})
    assert report.changed and "not verified" in report.text()


@pytest.mark.parametrize("env,dynamic,can_set,expected", [
    ({"PYTORCH_ALLOC_CONF": "expandable_segments:True"}, False, True, "already on (from PYTORCH_ALLOC_CONF)"),
    ({}, True, True, "Dynamic VRAM (comfy-aimdo) is active"),
    ({}, False, False, "no runtime allocator-settings call"),
])
def test_native_backend_cases_without_a_change(env, dynamic, can_set, expected):
    cuda = FakeTorchCuda(can_set=can_set)
    report = inspect_and_tune(CUDA, tune=True, dynamic_vram=dynamic, cuda=cuda, environ=env)
    assert not report.changed and cuda.settings == [] and expected in report.text()


def test_report_only_without_tune():
    cuda = FakeTorchCuda()
    report = inspect_and_tune(CUDA, tune=False, dynamic_vram=False, cuda=cuda, environ={})
    assert not report.changed and cuda.settings == [] and report.text().startswith("allocator: backend native")


def test_not_a_cuda_device():
    report = inspect_and_tune(types.SimpleNamespace(type="cpu"), tune=True, dynamic_vram=False,
                              cuda=FakeTorchCuda(), environ={})
    assert report.backend is None and "is not a CUDA device" in report.text()
