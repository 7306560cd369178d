"""One spill folder shared by several processes, through the Python bridge:
two interpreters storing under one tag (the issue's measurement: both used to hand out 1..50 and
overwrite each other's files), a store that sees what another process spilled, and the two entry
points of the farm tier: a caller's own generation, and shots moved as bytes."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import safetensors
import safetensors.torch
import torch

from conftest import REPO, same_bits
from zc_pack.zc_engine import CorruptFile, GenerationExists, LatentStore, NotFound, Unsupported
from zc_pack.zc_engine.store import is_bookkeeping_file

WRITER = """
import sys, torch
from zc_pack.zc_engine import LatentStore
spill, writer, shots = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
with LatentStore(spill_dir=spill) as store:
    for index in range(1, shots + 1):
        value = float(writer * 1000 + index)
        gen = store.put("film", {"latent_tensor": torch.full((256,), value)},
                        {"writer": str(writer), "index": str(index)}, spill=True)
        store.flush()
        print(gen, value, flush=True)
"""


def shot_files(spill) -> list:
    return sorted(p for p in spill.iterdir() if p.name.endswith(".latent") and not p.name.startswith("."))


def test_two_processes_on_one_tag_never_share_a_generation(spill_dir):
    spill_dir.mkdir()
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    with LatentStore(spill_dir=spill_dir) as watcher:  # open before them: sees what they spill
        procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(spill_dir), str(w), "50"],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
                 for w in (1, 2)]
        given: dict[int, float] = {}
        newest: dict[int, int] = {}
        for w, proc in zip((1, 2), procs):
            out, err = proc.communicate(timeout=300)
            assert proc.returncode == 0, err
            for gen, value in (line.split() for line in out.strip().splitlines()):
                assert int(gen) not in given, f"generation {gen} handed out twice"
                given[int(gen)] = float(value)
                newest[w] = max(newest.get(w, 0), int(gen))
        assert sorted(given) == list(range(1, 101))
        files = shot_files(spill_dir)
        assert 2 <= len(files) <= 8  # each process keeps its own newest 4 (the default depth)
        for path in files:
            gen = int(path.name.split("@")[1].split(".")[0])
            tensors = safetensors.torch.load_file(str(path))
            with safetensors.safe_open(str(path), "pt") as f:
                meta = f.metadata()
            assert meta["zc.generation"] == str(gen)
            assert torch.all(tensors["latent_tensor"] == given[gen]), path.name
            assert float(meta["writer"]) * 1000 + float(meta["index"]) == given[gen]
        for w in (1, 2):  # each process's newest shot is on disk
            assert (spill_dir / f"film@{newest[w]:020d}.latent").exists()
        got = watcher.get("film")  # the newest of all, spilled by another process
        assert got.generation == max(newest.values())
        assert torch.all(got.tensors["latent_tensor"] == given[got.generation])
        assert watcher.describe_tag("film")["last_generation"] == 100
        assert set(watcher.generations("film")) == {int(p.name.split("@")[1][:20]) for p in files}
    assert not [p for p in spill_dir.iterdir() if p.name.startswith(".zc-tmp-")]
    assert not [p for p in spill_dir.iterdir() if p.name.startswith(".zc-owner-")]


def test_bookkeeping_files_are_named_apart(spill_dir):
    with LatentStore(spill_dir=spill_dir) as store:
        store.put("t", {"latent_tensor": torch.zeros(2)}, spill=True)
        store.flush()
        names = sorted(p.name for p in spill_dir.iterdir())
        assert [n for n in names if not is_bookkeeping_file(n)] == ["t@00000000000000000001.latent"]
        assert ".zc-gen-t" in names and ".zc-lock" in names
        assert any(n.startswith(".zc-owner-") for n in names)
        assert store.describe()["spill_locks"] is True
        from zc_pack.zc_engine import film
        film.choose_take(spill_dir, "t", 1)  # a film's chosen takes live beside the shots
        assert film.choices_file(spill_dir, "t").exists()
        assert [n for n in sorted(p.name for p in spill_dir.iterdir()) if not is_bookkeeping_file(n)] == [
            "t@00000000000000000001.latent"]


def test_put_with_a_chosen_generation(spill_dir):
    with LatentStore(spill_dir=spill_dir) as a, LatentStore(spill_dir=spill_dir) as b:
        assert a.put("farm", {"latent_tensor": torch.ones(4)}, spill=True, generation=41) == 41
        a.flush()
        with pytest.raises(GenerationExists, match="41"):
            a.put("farm", {"latent_tensor": torch.zeros(4)}, generation=41)
        with pytest.raises(GenerationExists):
            b.put("farm", {"latent_tensor": torch.zeros(4)}, generation=41)  # on disk
        with pytest.raises(TypeError):
            b.put("farm", {"latent_tensor": torch.zeros(4)}, generation=0)
        assert b.put("farm", {"latent_tensor": torch.zeros(4)}) == 42  # numbering goes on above
        assert torch.all(b.get("farm", 41).tensors["latent_tensor"] == 1)


def test_shot_bytes_move_between_stores(tmp_path):
    latent = torch.randn(1, 16, 3, 8, 8, generator=torch.Generator().manual_seed(14))
    with LatentStore(spill_dir=tmp_path / "here") as here, \
            LatentStore(spill_dir=tmp_path / "there", depth=1) as there:
        gen = here.put("shot", {"latent_tensor": latent}, {"family": "wan21"}, spill=True)
        here.flush()
        data = here.export_shot("shot")
        assert data == (tmp_path / "here" / f"shot@{gen:020d}.latent").read_bytes()
        assert same_bits(safetensors.torch.load(data)["latent_tensor"], latent)
        # bad bytes: refused with the reason, nothing written
        assert b'"zc.tag":"shot"' in data
        for bad in (data[:-7],                                              # truncated
                    data[:-1] + bytes([data[-1] ^ 0x40]),                   # a tensor byte changed
                    data.replace(b'"zc.tag":"shot"', b'"zc.tag":"shoe"'),   # another tag's
                    b"\0" * 64):                                            # not safetensors at all
            with pytest.raises(CorruptFile):
                there.import_shot("shot", gen, bad)
        with pytest.raises(CorruptFile, match="generation"):
            there.import_shot("shot", gen + 1, data)  # the bytes say another generation
        assert [p for p in (tmp_path / "there").iterdir() if not is_bookkeeping_file(p.name)] == []
        there.import_shot("shot", gen, data)
        with pytest.raises(GenerationExists):
            there.import_shot("shot", gen, data)
        got = there.get("shot")
        assert got.generation == gen and got.meta["family"] == "wan21"
        assert same_bits(got.tensors["latent_tensor"], latent)
        assert there.put("shot", {"latent_tensor": torch.zeros(2)}) == gen + 1
    with LatentStore() as memory_only:
        memory_only.put("m", {"latent_tensor": torch.zeros(3)})
        assert safetensors.torch.load(memory_only.export_shot("m"))["latent_tensor"].shape == (3,)
        with pytest.raises(Unsupported):
            memory_only.import_shot("m", 7, data)


def test_meta_without_a_look_reads_what_this_store_knows(spill_dir):
    """``meta(look=False)`` (the colour anchor's read) costs no counter-file read: it sees what
    this store knows, never a newer shot another store spilled since; ``meta()`` looks."""
    with LatentStore(spill_dir=spill_dir) as mine, LatentStore(spill_dir=spill_dir) as other:
        mine.put("t", {"latent_tensor": torch.zeros(2)}, {"who": "mine"}, spill=True)
        mine.flush()
        other.put("t", {"latent_tensor": torch.ones(2)}, {"who": "other"}, spill=True)
        other.flush()
        assert mine.meta("t", look=False) == (1, {"who": "mine"})
        assert mine.meta("t") == (2, {"who": "other"})
        assert mine.meta("t", look=False) == (2, {"who": "other"})  # known since the look
        with pytest.raises(NotFound, match='no latent is stored under tag "never"'):
            mine.meta("never", look=False)


def test_metadata_larger_than_the_read_buffer_is_read_whole():
    from zc_pack.zc_engine.store import META_READ_BYTES
    big = {f"k{i:03d}": "é" * 200 for i in range(2 * META_READ_BYTES // 400)}
    with LatentStore() as store:
        store.put("t", {"latent_tensor": torch.zeros(2)}, big)
        assert sum(len(k) + len(v.encode()) + 2 for k, v in big.items()) > META_READ_BYTES
        assert store.get("t").meta == big and store.meta("t")[1] == big
        store.put("u", {"latent_tensor": torch.zeros(2)})
        assert store.get("u").meta == {}
