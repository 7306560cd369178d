"""The spill folder as hostile input, seen from Python: a planted
file name is renamed aside at open and counted in ``stats()["files_rejected"]``,
and a spill file whose header promises more than the host budget is refused
with BudgetExceeded, before it is read, and kept."""

from __future__ import annotations

import json
import struct
import time
from pathlib import Path

import pytest
import torch

from zc_engine import LatentStore
from zc_engine.errors import BudgetExceeded


def test_planted_name_is_rejected_at_open_and_counted(spill_dir: Path):
    spill_dir.mkdir(parents=True)
    (spill_dir / "film@18446744073709551615.latent").write_bytes(b"")
    with LatentStore(spill_dir=spill_dir) as store:
        assert store.stats()["files_rejected"] == 1
        assert [store.put("film", {"latent_tensor": torch.randn(64)}, spill=True) for _ in range(3)] == [1, 2, 3]
        store.flush()
    assert (spill_dir / "film@18446744073709551615.latent.rejected").exists()


def test_sparse_file_over_the_host_budget_is_refused_and_kept(spill_dir: Path):
    spill_dir.mkdir(parents=True)
    promised = 1 << 30
    header = json.dumps({
        "__metadata__": {"zc.format": "zerocopy-continuity/1", "zc.tag": "big", "zc.generation": "1",
                         "zc.digest.latent_tensor": "xxh3:0123456789abcdef"},
        "latent_tensor": {"dtype": "F32", "shape": [promised // 4], "data_offsets": [0, promised]},
    }, separators=(",", ":")).encode()
    header += b" " * (-len(header) % 8)
    path = spill_dir / "big@00000000000000000001.latent"
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(header)) + header)
        f.truncate(8 + len(header) + promised)  # sparse: no disk
    with LatentStore(spill_dir=spill_dir, host_budget_bytes=1 << 20) as store:
        start = time.monotonic()
        with pytest.raises(BudgetExceeded) as err:
            store.get("big", 1)
        assert time.monotonic() - start < 2.0
        assert "host_budget_bytes" in str(err.value) and "1073741824" in str(err.value)
        assert store.stats()["files_rejected"] == 0
    assert path.exists()
