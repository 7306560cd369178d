"""Verification re-hashes only when something could have written the stored bytes: a tensor
``get`` returned (a writable DLPack export) that is alive, or was released since the last
check. Counted by the store's ``verify_hashed_bytes`` statistic. Also: spill files of engine
0.2, with XXH64 digests, still restore and verify."""

from __future__ import annotations

import gc

import pytest
import safetensors.torch
import torch
import xxhash

from zc_pack.zc_engine import CorruptFile, LatentStore

LATENT = (1, 16, 3, 8, 8)
NBYTES = 16 * 3 * 8 * 8 * 4


def hashed(store: LatentStore) -> int:
    return store.stats()["verify_hashed_bytes"]


def test_verify_after_put_without_export_does_not_hash():
    with LatentStore() as store:
        store.put("a", {"latent_tensor": torch.randn(LATENT)})
        result = store.verify("a")
        assert result.hashed == () and result.unchanged == ("latent_tensor",)
        assert hashed(store) == 0 and store.stats()["verify_skipped_bytes"] == NBYTES
        assert store.verify("a", rehash=True).hashed == ("latent_tensor",)
        assert hashed(store) == NBYTES


def test_a_live_tensor_from_get_is_a_possible_writer_and_its_write_is_found():
    with LatentStore() as store:
        store.put("a", {"latent_tensor": torch.randn(LATENT), "extra": torch.zeros(4)})
        got = store.get("a", verify=True)  # verified before any export: nothing to hash
        assert hashed(store) == 0
        assert store.verify("a").hashed == ("latent_tensor", "extra")
        assert hashed(store) == NBYTES + 16
        got.tensors["latent_tensor"][0, 0, 0, 0, 0] += 1.0
        with pytest.raises(CorruptFile, match='tensor "latent_tensor" changed since it was stored'):
            store.verify("a")
        del got
        gc.collect()
        with pytest.raises(CorruptFile):  # still found once the writer is gone
            store.get("a", verify=True)


def test_a_released_export_is_hashed_once_then_skipped():
    with LatentStore() as store:
        store.put("a", {"latent_tensor": torch.randn(LATENT)})
        got = store.get("a")
        view = got.tensors["latent_tensor"][:, :, -1:]  # keeps the export alive too
        del got
        assert store.verify("a").hashed == ("latent_tensor",)
        del view
        gc.collect()
        assert store.verify("a").hashed == ("latent_tensor",)  # released since the last check
        before = hashed(store)
        result = store.verify("a")
        assert result.hashed == () and result.unchanged == ("latent_tensor",)
        assert hashed(store) == before
        store.get("a", verify=True)  # the verify inside get skips too
        assert hashed(store) == before


def test_device_tier_tensors_are_reported_as_not_covered():
    with LatentStore() as store:
        store.put_by_reference("d", {"x": torch.randn(8)}, host_copy=True)
        result = store.verify("d")
        assert result.device == ("x",) and result.unchanged == ("x",)


def legacy_file(path, latent):
    """A spill file exactly as engine 0.2 wrote it: XXH64 digests."""
    digest = "xxh64:" + xxhash.xxh64(latent.numpy().tobytes()).hexdigest()
    meta = {"zc.format": "zerocopy-continuity/1", "zc.tag": "old", "zc.generation": "4",
            "family": "wan21", "zc.digest.latent_tensor": digest}
    safetensors.torch.save_file({"latent_tensor": latent, "latent_format_version_0": torch.tensor([])},
                                str(path), metadata=meta)
    return digest


def test_legacy_xxh64_spill_file_restores_and_verifies(tmp_path):
    latent = torch.randn(LATENT)
    digest = legacy_file(tmp_path / "old@00000000000000000004.latent", latent)
    with LatentStore(spill_dir=tmp_path) as store:
        got = store.get("old")
        assert got.generation == 4 and got.meta == {"family": "wan21"}
        assert torch.equal(got.tensors["latent_tensor"], latent)
        assert got.info["latent_tensor"].digest == digest
        del got
        gc.collect()
        assert store.verify("old", rehash=True).hashed == ("latent_tensor",)
        # the next shot of the tag is digested with XXH3
        store.put("old", {"latent_tensor": latent})
        assert store.tensor_info("old")[1]["latent_tensor"].digest.startswith("xxh3:")


def test_legacy_xxh64_spill_file_with_a_flipped_bit_is_rejected(tmp_path):
    latent = torch.randn(LATENT)
    path = tmp_path / "old@00000000000000000004.latent"
    legacy_file(path, latent)
    data = bytearray(path.read_bytes())
    data[-7] ^= 0x02
    path.write_bytes(bytes(data))
    with LatentStore(spill_dir=tmp_path) as store:
        with pytest.raises(CorruptFile, match="records xxh64:"):
            store.get("old")
        assert store.stats()["files_rejected"] == 1
