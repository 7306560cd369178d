"""Crash safety: a process that is spilling is killed with SIGKILL at random
moments, 100 times. Afterwards every spill file is a complete version (old or
new, never torn), and a restore never fails and never returns a torn tensor."""

from __future__ import annotations

import random
import signal
import subprocess
import time
from pathlib import Path

import pytest
import safetensors.torch
import torch

from conftest import BUILD
from zc_pack.zc_engine import LatentStore

CHILD = BUILD / "crash_child"


@pytest.mark.skipif(not CHILD.exists(), reason="build/crash_child is not built (make test-helpers)")
def test_sigkill_during_spill_never_leaves_a_torn_file(tmp_path):
    spill = tmp_path / "spill"
    rng = random.Random(2026)
    restores = 0
    last_generation = 0
    for attempt in range(100):
        child = subprocess.Popen([str(CHILD), str(spill), "4"], stdout=subprocess.DEVNULL,
                                 stderr=subprocess.PIPE)
        time.sleep(rng.uniform(0.0, 0.08))
        child.send_signal(signal.SIGKILL)
        child.wait()
        assert child.returncode == -signal.SIGKILL, child.stderr.read()
        # Every file that carries the final name is whole and self-consistent.
        finals = [p for p in spill.glob("*.latent") if not p.name.startswith(".")] if spill.exists() else []
        for path in sorted(finals):
            tensors = safetensors.torch.load_file(str(path))
            values = tensors["latent_tensor"]
            assert values.numel() == 1024 * 1024 and torch.all(values == values[0]), path.name
        with LatentStore(spill_dir=spill) as store:
            if not store.tags():
                continue
            got = store.get("crash")  # verifies every digest
            values = got.tensors["latent_tensor"]
            assert torch.all(values == float(got.meta["fill"]))
            assert got.generation >= last_generation
            last_generation = got.generation
            restores += 1
        # Opening the store cleared any temporary file the kill left behind.
        assert not [p for p in spill.iterdir() if p.name.startswith(".zc-tmp-")]
        assert not [p for p in spill.iterdir() if p.name.endswith(".rejected")]
    assert restores >= 50, f"only {restores} of 100 kills happened after a first complete spill"
