"""The disk tier: crash-safe safetensors spill files that ComfyUI and the
safetensors package read, lazy restore with verification, and corrupt files
renamed aside (never deleted) without losing anything else."""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import pytest
import safetensors.torch
import torch
import xxhash

from conftest import run_python, same_bits
from zc_pack.zc_engine import CorruptFile, LatentStore, NotFound
from zc_pack.zc_engine.store import is_bookkeeping_file


def spill_files(directory: Path) -> list[str]:
    """The folder's files, less the engine's bookkeeping for shared folders (.zc-gen-*, ...)."""
    return sorted(p.name for p in directory.iterdir() if not is_bookkeeping_file(p.name))


def test_spill_file_is_a_comfyui_latent_the_safetensors_package_reads(spill_dir):
    latent = torch.randn(1, 16, 21, 30, 52)
    with LatentStore(spill_dir=spill_dir) as store:
        store.put("shot_a", {"latent_tensor": latent}, {"family": "wan21", "fps": "16"}, spill=True)
        store.flush()
    files = spill_files(spill_dir)
    assert files == ["shot_a@00000000000000000001.latent"]
    path = spill_dir / files[0]
    loaded = safetensors.torch.load_file(str(path))
    assert set(loaded) == {"latent_tensor", "latent_format_version_0"}
    assert same_bits(loaded["latent_tensor"], latent)
    # ComfyUI's LoadLatent: multiplier 1.0 only when the version marker exists.
    assert loaded["latent_format_version_0"].dtype == torch.float32
    assert loaded["latent_format_version_0"].shape == (0,)
    with safetensors.safe_open(str(path), "pt") as f:
        meta = f.metadata()
    assert meta["family"] == "wan21" and meta["zc.tag"] == "shot_a" and meta["zc.generation"] == "1"
    assert meta["zc.format"] == "zerocopy-continuity/1"
    assert meta["zc.digest.latent_tensor"] == "xxh3:" + xxhash.xxh3_64(latent.numpy().tobytes()).hexdigest()
    header_len = struct.unpack("<Q", path.read_bytes()[:8])[0]
    assert header_len % 8 == 0
    json.loads(path.read_bytes()[8:8 + header_len])


def test_restart_in_a_new_process_restores_bit_identically(spill_dir):
    latent = torch.randn(1, 16, 5, 12, 20, generator=torch.Generator().manual_seed(5))
    with LatentStore(spill_dir=spill_dir) as store:
        for shot in range(3):
            store.put("chain", {"latent_tensor": latent + shot}, {"shot": str(shot)}, spill=True)
        store.flush()
        digest = store.get("chain").info["latent_tensor"].digest
    code = f"""
import torch
from zc_pack.zc_engine import LatentStore
with LatentStore(spill_dir={str(spill_dir)!r}) as store:
    got = store.get("chain")
    print(got.generation, got.meta["shot"], got.info["latent_tensor"].digest)
    torch.save(got.tensors["latent_tensor"].clone(), {str(spill_dir / 'out.pt')!r})
    print(store.put("chain", {{"latent_tensor": torch.zeros(1)}}))
"""
    proc = run_python(code)
    assert proc.returncode == 0, proc.stderr
    first, second = proc.stdout.split("\n")[:2]
    assert first == f"3 2 {digest}"
    assert second == "4"  # generations continue after a restart
    assert same_bits(torch.load(spill_dir / "out.pt"), latent + 2)


def test_disk_keeps_a_bounded_number_of_files(spill_dir):
    with LatentStore(spill_dir=spill_dir, depth=2) as store:
        for i in range(6):
            store.put("t", {"latent_tensor": torch.full((3,), float(i))}, spill=True)
        store.flush()
    assert spill_files(spill_dir) == ["t@00000000000000000005.latent", "t@00000000000000000006.latent"]
    with LatentStore(spill_dir=spill_dir) as store:
        assert store.get("t", 5).tensors["latent_tensor"][0] == 4.0
        assert store.get("t").generation == 6


def test_corrupt_file_is_renamed_aside_and_others_survive(spill_dir):
    with LatentStore(spill_dir=spill_dir) as store:
        store.put("bad", {"latent_tensor": torch.randn(1000)}, spill=True)
        store.put("good", {"latent_tensor": torch.randn(1000)}, spill=True)
        store.flush()
    bad = spill_dir / "bad@00000000000000000001.latent"
    data = bytearray(bad.read_bytes())
    data[-10] ^= 0x40  # one flipped bit in the tensor bytes
    bad.write_bytes(bytes(data))
    with LatentStore(spill_dir=spill_dir) as store:
        with pytest.raises(CorruptFile) as err:
            store.get("bad")
        message = str(err.value)
        assert "latent_tensor" in message and "records xxh3:" in message and ".rejected" in message
        assert store.get("good").generation == 1
        assert store.stats()["files_rejected"] == 1
    names = spill_files(spill_dir)
    assert "bad@00000000000000000001.latent.rejected" in names  # kept, never deleted
    assert "good@00000000000000000001.latent" in names


@pytest.mark.parametrize("damage", ["truncate", "garbage_header", "empty", "foreign_metadata"])
def test_damaged_files_give_clear_errors(spill_dir, damage):
    with LatentStore(spill_dir=spill_dir) as store:
        store.put("shot", {"latent_tensor": torch.randn(64)}, spill=True)
        store.flush()
    path = spill_dir / "shot@00000000000000000001.latent"
    raw = path.read_bytes()
    if damage == "truncate":
        path.write_bytes(raw[: len(raw) - 17])
    elif damage == "garbage_header":
        path.write_bytes(struct.pack("<Q", 30) + b"{not json at all!!!!!!!!!!!!}" + raw[38:])
    elif damage == "empty":
        path.write_bytes(b"")
    else:  # a valid safetensors file that is not ours
        safetensors.torch.save_file({"latent_tensor": torch.zeros(64)}, str(path))
    with LatentStore(spill_dir=spill_dir) as store:
        if damage == "empty":  # too small to be a spill file: renamed aside at open, unread
            assert store.stats()["files_rejected"] == 1
            with pytest.raises(NotFound):
                store.get("shot")
        else:
            with pytest.raises(CorruptFile) as err:
                store.get("shot")
            assert "shot@00000000000000000001.latent" in str(err.value)
        # The tag is still usable: new shots go on from the next generation.
        assert store.put("shot", {"latent_tensor": torch.ones(2)}) == 2
    assert (spill_dir / "shot@00000000000000000001.latent.rejected").exists()


def test_foreign_files_and_stale_temporaries(spill_dir):
    spill_dir.mkdir(parents=True)
    (spill_dir / "notes.txt").write_text("mine")
    (spill_dir / "ComfyUI_00001_.latent").write_bytes(b"whatever")
    (spill_dir / ".zc-tmp-123-0-x@00000000000000000001.latent").write_bytes(b"half a file")
    with LatentStore(spill_dir=spill_dir) as store:
        assert store.tags() == []
    assert spill_files(spill_dir) == ["ComfyUI_00001_.latent", "notes.txt"]


def test_save_writes_a_file_on_demand(tmp_path):
    latent = torch.randn(2, 4, 8, 8)
    with LatentStore() as store:
        store.put("still", {"latent_tensor": latent})
        store.save("still", tmp_path / "out.latent")
    loaded = safetensors.torch.load_file(str(tmp_path / "out.latent"))
    assert same_bits(loaded["latent_tensor"], latent)


def test_drop_with_disk_removes_files(spill_dir):
    with LatentStore(spill_dir=spill_dir) as store:
        store.put("gone", {"latent_tensor": torch.zeros(4)}, spill=True)
        store.put("kept", {"latent_tensor": torch.zeros(4)}, spill=True)
        store.drop("gone", disk=True)
    assert spill_files(spill_dir) == ["kept@00000000000000000001.latent"]


def _block_folder(spill_dir):
    """Put a plain file where the spill folder was: nothing can be written there, and the engine
    must not delete what it did not make (a removed folder, by contrast, it creates again)."""
    shutil.rmtree(spill_dir)
    spill_dir.write_bytes(b"not a folder")


def test_spill_error_is_reported_by_every_flush_until_the_shot_is_written(spill_dir):
    from zc_pack.zc_engine import EngineIOError
    with LatentStore(spill_dir=spill_dir) as store:
        _block_folder(spill_dir)
        store.put("x", {"latent_tensor": torch.zeros(4)}, spill=True)
        # first what failed first: the folder could not hand out the generation number
        with pytest.raises(EngineIOError, match='tag "x" generation 1: the spill folder could not'):
            store.flush()
        with pytest.raises(EngineIOError, match='spill of tag "x" generation 1 failed'):
            store.flush()  # retried, failed again, said again: never reported once and forgotten
        assert store.get("x").generation == 1  # the memory tier kept the shot, pinned
        assert store.stats()["memory_only"] == 1
        assert "x" in store.describe()["spill_problem"]
        spill_dir.unlink()
        spill_dir.mkdir()
        store.flush()  # the fault is gone: the pinned shot is written
        assert store.stats()["memory_only"] == 0 and store.describe()["spill_problem"] is None
        assert spill_files(spill_dir) == ["x@00000000000000000001.latent"]


def test_a_spill_folder_removed_under_the_store_is_created_again(spill_dir):
    with LatentStore(spill_dir=spill_dir) as store:
        shutil.rmtree(spill_dir)
        store.put("x", {"latent_tensor": torch.zeros(4)}, spill=True)
        store.flush()
        assert spill_files(spill_dir) == ["x@00000000000000000001.latent"]
        assert store.stats()["spill_folder_recreated"] == 1 and store.stats()["memory_only"] == 0


def test_dropping_a_tag_keeps_other_tags_spill_errors_for_flush(spill_dir):
    from zc_pack.zc_engine import EngineIOError
    with LatentStore(spill_dir=spill_dir) as store:
        store.put("kept", {"latent_tensor": torch.zeros(4)}, spill=True)
        store.flush()
        _block_folder(spill_dir)  # the next spill of any tag fails
        store.put("failing", {"latent_tensor": torch.zeros(4)}, spill=True)
        store.drop("kept", disk=True)
        with pytest.raises(EngineIOError, match='tag "failing"'):
            store.flush()
        spill_dir.unlink()


def test_a_spill_waits_its_delay_and_flush_writes_it_at_once(spill_dir):
    # a minute's delay: the write can only come from the flush, which must not wait it out
    with LatentStore(spill_dir=spill_dir, spill_delay_ms=60_000) as store:
        store.put("later", {"latent_tensor": torch.arange(8.0)}, spill=True)
        assert store.stats()["pending_spills"] == 1
        assert spill_files(spill_dir) == []
        store.flush()
        assert spill_files(spill_dir) == ["later@00000000000000000001.latent"]
        store.put("later", {"latent_tensor": torch.arange(8.0)}, spill=True)
    # closing writes what is pending too
    assert spill_files(spill_dir) == ["later@00000000000000000001.latent", "later@00000000000000000002.latent"]


@pytest.mark.parametrize("bad", [-1, 60_001, 2.5, True])
def test_a_spill_delay_outside_zero_to_a_minute_is_refused_by_value(spill_dir, bad):
    with pytest.raises(ValueError, match=f"spill_delay_ms {bad!r} is not a whole number"):
        LatentStore(spill_dir=spill_dir, spill_delay_ms=bad)
