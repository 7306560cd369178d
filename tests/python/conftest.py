"""Shared fixtures for the engine's Python tests (no ComfyUI needed)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[2]
BUILD = REPO / "build"

ALL_DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.float8_e4m3fn,
              torch.float8_e5m2, torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8,
              torch.bool]


def random_tensor(shape, dtype, generator=None) -> torch.Tensor:
    """Random values of any dtype, built from random bytes so every bit pattern can occur."""
    numel = 1
    for d in shape:
        numel *= d
    nbytes = numel * torch.empty((), dtype=dtype).element_size()
    raw = torch.randint(0, 256, (nbytes,), dtype=torch.uint8, generator=generator)
    if dtype == torch.bool:
        return (raw % 2).to(torch.bool).reshape(shape)
    return raw.view(dtype).reshape(shape)


def same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Bit-for-bit equality (NaNs included), dtype and shape too."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.numel() == 0:
        return True
    return torch.equal(canonical_bytes(a), canonical_bytes(b))


def canonical_bytes(t: torch.Tensor) -> torch.Tensor:
    """The tensor's canonical contiguous bytes as a flat uint8 tensor."""
    flat = t.reshape(-1)
    dense = flat.new_empty(flat.shape).copy_(flat)  # standard strides whatever the input had
    return dense.view(torch.uint8)


def run_python(code: str, *, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run code in a fresh interpreter (a "new process" for restart tests)."""
    full_env = dict(os.environ)
    full_env["PYTHONPATH"] = str(REPO) + os.pathsep + full_env.get("PYTHONPATH", "")
    if env:
        full_env.update(env)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=full_env, timeout=timeout)


@pytest.fixture
def spill_dir(tmp_path) -> Path:
    path = tmp_path / "spill"
    return path


@pytest.fixture
def assemble_node(monkeypatch, request):
    """(node module, runtime, comfy_calls): the pack's ZeroCopyFilmAssemble loaded as the package
    the test module's PACK names, with a stand-in for ComfyUI's comfy_api (no ComfyUI here);
    progress bars are mocks and the farm is off."""
    import importlib
    from unittest import mock

    import comfy_api_standin

    pack = request.module.PACK
    for name, module in comfy_api_standin.modules(pack).items():
        monkeypatch.setitem(sys.modules, name, module)
    node = importlib.import_module(f"{pack}.zc_nodes.film_assemble_node")
    calls = sys.modules[f"{pack}.zc_nodes.comfy_calls"]
    monkeypatch.setattr(calls, "progress_bar", lambda total: mock.MagicMock())
    monkeypatch.setattr(sys.modules[f"{pack}.zc_nodes.farm_link"], "complete_film", lambda tag: None)
    yield node, sys.modules[f"{pack}.zc_nodes.runtime"], calls
    comfy_api_standin.forget(pack)


@pytest.fixture
def server(tmp_path):
    """The farm tests' Redis: a redis-server of its own on a free 127.0.0.1 port
    (tools/standins/redis_server.py), stopped at the end."""
    from redis_server import RedisServer

    srv = RedisServer(tmp_path / "redis").start()
    yield srv
    srv.stop()


@pytest.fixture
def new_farm(tmp_path):
    """new_farm(url, name, store_dir=None, on_event=None, on_warning=None, **config) -> a Farm, worker
    ``name`` on the Redis at ``url`` (retry_s 0.2 unless given), on its own LatentStore in
    ``store_dir`` (default: the test's spill-<name>); every one closed, then its store, at the end."""
    from zc_pack.zc_engine import LatentStore
    from zc_pack.zc_farm import Farm, FarmConfig

    made = []

    def make(url, name, store_dir=None, on_event=None, on_warning=None, **options):
        options.setdefault("retry_s", 0.2)
        store = LatentStore(spill_dir=store_dir or tmp_path / f"spill-{name}")
        farm = Farm(store, FarmConfig(url=url, worker_id=name, **options), on_event=on_event, on_warning=on_warning)
        made.append((farm, store))
        return farm

    yield make
    for farm, store in made:
        farm.close(timeout=1)
        store.close()


def install_held_store(monkeypatch, spill_dir):
    """A LatentStore on ``spill_dir`` whose spills wait a minute unless something flushes (so what
    is on disk was flushed), installed as the pack's store with durability's lists fresh; the
    caller closes it after setting runtime's store back to None."""
    from zc_pack.zc_engine import LatentStore
    from zc_pack.zc_nodes import durability, runtime

    store = LatentStore(spill_dir=spill_dir, spill_delay_ms=60000)
    monkeypatch.setattr(runtime, "_store", store)
    monkeypatch.setattr(durability, "_unflushed", [])
    monkeypatch.setattr(durability, "_reported", set())
    return store


@pytest.fixture
def held_store(tmp_path, monkeypatch):
    """install_held_store on tmp_path/spill, closed after the test."""
    from zc_pack.zc_nodes import runtime

    store = install_held_store(monkeypatch, tmp_path / "spill")
    yield store
    monkeypatch.setattr(runtime, "_store", None)
    store.close()
