"""zc_nodes.runtime on any OS: RAM through psutil, with clean fallbacks where psutil (dev
environments) or os.sysconf (Windows) is missing."""

from __future__ import annotations

import builtins
import os
import sys

from zc_pack.zc_nodes import runtime


def block_psutil(monkeypatch):
    real_import = builtins.__import__

    def fake_import(name, *args, **kwargs):
        if name == "psutil":
            raise ImportError("no psutil here")
        return real_import(name, *args, **kwargs)

    monkeypatch.delitem(sys.modules, "psutil", raising=False)
    monkeypatch.setattr(builtins, "__import__", fake_import)


def test_memory_comes_from_psutil_when_it_is_there(monkeypatch):
    class FakeMemory:
        total = 64 << 30

    class FakePsutil:
        @staticmethod
        def virtual_memory():
            return FakeMemory()

    monkeypatch.setitem(sys.modules, "psutil", FakePsutil)
    monkeypatch.delenv("ZEROCOPY_HOST_BUDGET_MB", raising=False)
    assert runtime.physical_memory_bytes() == 64 << 30
    assert runtime.default_host_budget() == 16 << 30  # a quarter of 64 GiB, at the 16 GiB cap


def test_without_psutil_posix_falls_back_to_sysconf(monkeypatch):
    block_psutil(monkeypatch)
    monkeypatch.setattr(os, "sysconf", lambda name: {"SC_PAGE_SIZE": 4096, "SC_PHYS_PAGES": 1 << 20}[name],
                        raising=False)
    assert runtime.physical_memory_bytes() == 4 << 30
    monkeypatch.delenv("ZEROCOPY_HOST_BUDGET_MB", raising=False)
    assert runtime.default_host_budget() == 1 << 30


def test_without_psutil_or_sysconf_as_on_windows_it_still_has_a_budget(monkeypatch):
    block_psutil(monkeypatch)
    monkeypatch.delattr(os, "sysconf", raising=False)
    monkeypatch.delenv("ZEROCOPY_HOST_BUDGET_MB", raising=False)
    assert runtime.physical_memory_bytes() is None
    assert runtime.default_host_budget() == 4 << 30  # a quarter of an assumed 16 GiB


def test_the_budget_variable_wins(monkeypatch):
    monkeypatch.setenv("ZEROCOPY_HOST_BUDGET_MB", "512")
    assert runtime.default_host_budget() == 512 << 20
