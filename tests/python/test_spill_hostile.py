"""The spill folder as hostile input, seen from Python: a planted
file name is renamed aside at open and counted in ``stats()["files_rejected"]``;
a spill file whose header promises more than the host budget is refused
with BudgetExceeded, before it is read, and kept; a hard link or a FIFO planted
as a tag's counter is never written (renamed aside, said); a shot of another
folder hard-linked in is never served (CorruptFile, renamed aside), and the
newest verified shot is used instead; another user's private newest shot is
passed over with its owner and mode named (AccessDenied, kept)."""

from __future__ import annotations

import json
import os
import shutil
import stat
import struct
import tempfile
import time
from pathlib import Path

import pytest
import torch

from zc_pack.zc_engine import LatentStore
from zc_pack.zc_engine.errors import BudgetExceeded


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


# ---- hard links, FIFOs and other users' files in the spill folder ----

VICTIM = b'{"victim": "these bytes must never change", "n": 1234567890}\n'


def _victim(root: Path) -> Path:
    victim = root / "victim.json"
    victim.write_bytes(VICTIM)
    return victim


def test_planted_counter_hard_link_is_renamed_aside_and_its_victim_never_written(tmp_path):
    spill = tmp_path / "spill"
    spill.mkdir()
    victim = _victim(tmp_path)
    os.link(victim, spill / ".zc-gen-film")  # a real second name, on the same file system
    with LatentStore(spill_dir=spill) as store:
        # Before: the victim's first 42 bytes became "00000000000000000000 00000000000000000001\n".
        assert store.put("film", {"latent_tensor": torch.randn(64)}, spill=True) == 1
        store.flush()
        assert victim.read_bytes() == VICTIM
        assert (spill / ".zc-gen-film.rejected").samefile(victim)  # renamed aside, kept
        assert not (spill / ".zc-gen-film").samefile(victim)  # a new counter of its own
        assert store.stats()["files_rejected"] == 1
        note = store.describe()["last_rejected"]
        assert ".zc-gen-film" in note and "hard link" in note and "it had 2 names" in note
        assert "renamed to" in note and "a new counter was made" in note
        assert store.put("film", {"latent_tensor": torch.randn(64)}, spill=True) == 2
        store.flush()
    assert victim.read_bytes() == VICTIM


def test_planted_counter_fifo_is_refused_without_blocking(tmp_path):
    if not hasattr(os, "mkfifo"):
        pytest.skip("this system has no FIFO in the file system (Windows)")
    spill = tmp_path / "spill"
    spill.mkdir()
    os.mkfifo(spill / ".zc-gen-film")
    with LatentStore(spill_dir=spill) as store:
        start = time.monotonic()
        assert store.put("film", {"latent_tensor": torch.randn(64)}, spill=True) == 1
        store.flush()
        assert time.monotonic() - start < 10
        assert stat.S_ISFIFO(os.lstat(spill / ".zc-gen-film.rejected").st_mode)
        assert stat.S_ISREG(os.lstat(spill / ".zc-gen-film").st_mode)
        assert "not a regular file" in store.describe()["last_rejected"]


def test_the_pack_says_a_refused_file_once_with_the_engines_words(tmp_path, monkeypatch):
    from zc_pack.zc_nodes import durability, ui_events
    said = []
    monkeypatch.setattr(ui_events, "warn", lambda title, message, **kw: said.append((title, message)))
    spill = tmp_path / "spill"
    spill.mkdir()
    with LatentStore(spill_dir=spill) as store:
        assert durability.report_rejected(store) == 0
        os.link(_victim(tmp_path), spill / ".zc-gen-film")
        store.put("film", {"latent_tensor": torch.randn(64)}, spill=True)
        store.flush()
        assert durability.report_rejected(store) == 1
        assert durability.report_rejected(store) == 0  # once
    (title, message), = said
    assert "renamed aside" in title and ".zc-gen-film" in message and "hard link" in message


def _secret_shot(other: Path, generation: int = 1) -> Path:
    """A valid shot of another folder: the spill file of secret@generation there."""
    with LatentStore(spill_dir=other) as store:
        for _ in range(generation):
            store.put("secret", {"latent_tensor": torch.arange(64, dtype=torch.float32)}, spill=True)
        store.flush()
    return other / f"secret@{generation:020d}.latent"


def test_a_hard_linked_shot_of_another_folder_is_not_served(tmp_path):
    from zc_pack.zc_engine import film
    from zc_pack.zc_engine.errors import CorruptFile
    theirs = _secret_shot(tmp_path / "other")
    before = theirs.read_bytes()
    spill = tmp_path / "spill"
    spill.mkdir()
    ours = spill / theirs.name
    os.link(theirs, ours)
    doc = film.describe_film(spill, "secret", verify=True)  # before: verify ok
    assert doc["ok"] is False and doc["shots"][0]["state"] == "broken"
    assert "hard link" in doc["shots"][0]["problem"]
    with LatentStore(spill_dir=spill) as store:
        with pytest.raises(CorruptFile) as err:  # before: served (the preview answered 200)
            store.get("secret", 1)
        assert "is not served" in str(err.value) and "it has 2 names" in str(err.value)
        assert "a copy, not a link" in str(err.value)
        assert store.stats()["files_rejected"] == 1
    assert not ours.exists() and (spill / (theirs.name + ".rejected")).samefile(theirs)
    assert theirs.read_bytes() == before


def test_the_newest_shot_hard_linked_from_elsewhere_falls_back_to_ours(tmp_path):
    theirs = _secret_shot(tmp_path / "other", 2)  # says it is secret@2: only its names give it away
    spill = tmp_path / "spill"
    with LatentStore(spill_dir=spill) as store:
        store.put("secret", {"latent_tensor": torch.zeros(64)}, spill=True)
        store.flush()
    os.link(theirs, spill / theirs.name)
    with LatentStore(spill_dir=spill) as store:
        bundle, skipped = store.get_newest_verified("secret")
        assert bundle.generation == 1 and torch.equal(bundle.tensors["latent_tensor"], torch.zeros(64))
        assert [s.generation for s in skipped] == [2] and "hard link" in skipped[0].reason


def _as_user(uid: int, work, timeout: float = 120.0):
    """Run work() in a forked child whose uid and gid are uid (really another user: root's
    permission override is gone); its JSON-able result, or raise what it raised."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 0
        try:
            os.close(read_end)
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            out = {"ok": work()}
        except BaseException as exc:  # noqa: BLE001 - handed to the parent
            out = {"error": f"{type(exc).__name__}: {exc}"}
            code = 1
        with os.fdopen(write_end, "w") as f:
            f.write(json.dumps(out))
        os._exit(code)
    os.close(write_end)
    deadline = time.monotonic() + timeout
    while os.waitpid(pid, os.WNOHANG) == (0, 0):
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            pytest.fail("the child running as another user did not finish")
        time.sleep(0.05)
    with os.fdopen(read_end) as f:
        out = json.loads(f.read() or '{"error": "no answer"}')
    if "error" in out:
        pytest.fail(out["error"])
    return out["ok"]


@pytest.mark.skipif(not hasattr(os, "fork") or not hasattr(os, "geteuid") or os.geteuid() != 0,
                    reason="needs root to give a file to another uid and to run a child as a third one "
                           "(os.chown, os.setuid); as an ordinary user no second uid is at hand")
def test_another_users_private_newest_shot_falls_back_with_its_owner_and_mode():
    from zc_pack.zc_engine.errors import AccessDenied
    from zc_pack.zc_nodes import film_view
    worker, owner = 54321, 54322  # the user ComfyUI runs as, and another user
    # Not under pytest's tmp_path: its parents are root's alone, and the worker must reach it.
    base = Path(tempfile.mkdtemp(prefix="zc-perm-", dir="/tmp"))
    try:
        os.chmod(base, 0o755)
        spill = base / "spill"
        with LatentStore(spill_dir=spill) as store:
            for value in (1.0, 2.0, 3.0):
                store.put("film", {"latent_tensor": torch.full((64,), value)}, spill=True)
            store.flush()
        for path in [spill, *spill.iterdir()]:
            os.chown(path, worker, worker)
        private = spill / "film@00000000000000000003.latent"
        os.chown(private, owner, owner)
        os.chmod(private, 0o600)

        def can_read():
            try:
                with open(private, "rb"):
                    return True
            except PermissionError:
                return False
        assert _as_user(worker, can_read) is False  # the child really cannot read it

        def handoff():
            with LatentStore(spill_dir=spill) as store:
                bundle, notes = film_view.newest(store, "film")  # what a Handoff and a Load use
                try:
                    store.get("film", 3)
                    direct = None
                except AccessDenied as exc:
                    direct = str(exc)
                return {"generation": bundle.generation, "value": float(bundle.tensors["latent_tensor"][0]),
                        "notes": notes, "direct": direct, "rejected": store.stats()["files_rejected"]}
        got = _as_user(worker, handoff)
        # Before: Permission denied, and neither the Handoff nor the Load could go on.
        assert got["generation"] == 2 and got["value"] == 2.0
        skip = got["notes"][0]
        assert skip.startswith("generation 3 skipped: ") and "film@00000000000000000003.latent" in skip
        assert f"cannot be read: permission denied (owner uid {owner}, mode 0600)" in skip
        assert "chown or chmod" in skip
        assert got["notes"][1] == "used generation 2, the newest that verifies"
        assert got["direct"] and "permission denied" in got["direct"]
        assert got["rejected"] == 0 and private.exists()  # kept where it is: not ours to move
    finally:
        shutil.rmtree(base, ignore_errors=True)
