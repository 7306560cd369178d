"""Spill trouble belongs to its tag and its shot, and is told where the user looks.

- A real read-only spill folder (a read-only bind mount of it as root, else chmod 0555) while one
  tag stores: another, intact film still opens (film_view and the REST film route), assembles and
  continues; the failing tag still reports its own failure, and the store's flush still says it.
- A spill file deleted by hand: the shot still in memory is written again when the film is read
  and at the prompt's end, with a warning and a toast; one no longer in memory is named lost, and
  the finishing node refuses the film shorter by it instead of assembling it in silence.
- The toast of a failed spill for a real read-only folder and a real full disk (a 1 MiB tmpfs,
  root only): the folder as the user set it, the cause, that a restart loses the shots, and the fix
  that fits the cause, without the engine's temporary file names.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
import torch
from conftest import install_held_store
from test_film_assemble_memory import TAG, Decoder, film_of, mount

from zc_pack.zc_engine import EngineIOError, LatentStore
from zc_pack.zc_nodes import durability, film_view, runtime

RO_TAG = "ro_film"
PACK = "zc_spill_trouble_pack"  # the package name conftest.assemble_node loads the pack under


def _latent(seed: int) -> dict:
    return {"latent_tensor": torch.randn(1, 16, 3, 4, 6, generator=torch.Generator().manual_seed(seed))}


@pytest.fixture
def store(held_store):
    """conftest's held store (spills wait until flushed, installed as the pack's store)."""
    return held_store


@pytest.fixture
def told(monkeypatch):
    """What reached the user: the events sent (toasts among them) and the log's warnings, from this
    package and from the node tests' copy of the pack (zc_assemble_memory_pack, when loaded)."""
    sent, warnings = [], []
    for name, module in list(sys.modules.items()):
        if name.endswith("zc_nodes.ui_events"):
            monkeypatch.setattr(module, "send", lambda event, data: sent.append((event, data)) or True)
        elif name.endswith("zc_nodes.film_view"):
            monkeypatch.setattr(module.log, "warning", lambda fmt, *args: warnings.append(fmt % args))
    return sent, warnings


def _writable(folder) -> bool:
    try:
        (folder / ".probe").touch()
    except OSError:
        return False
    (folder / ".probe").unlink()
    return True


@pytest.fixture
def read_only():
    """read_only(folder): make the folder really read-only for this process, undone at the end."""
    undo = []

    def make(folder):
        if os.geteuid() == 0 and shutil.which("mount"):  # root ignores modes: a read-only bind mount
            for args in (["--bind", str(folder), str(folder)], ["-o", "remount,bind,ro", str(folder)]):
                proc = subprocess.run(["mount", *args], capture_output=True, text=True, check=False)
                if proc.returncode != 0:
                    subprocess.run(["umount", str(folder)], capture_output=True, check=False)
                    pytest.skip(f"skipped: cannot make a read-only bind mount here ({proc.stderr.strip()})")
            undo.append(lambda: subprocess.run(["umount", str(folder)], capture_output=True, check=False))
        else:
            folder.chmod(0o555)
            undo.append(lambda: folder.chmod(0o755))
        if _writable(folder):
            pytest.skip("skipped: the folder stays writable for this process")

    yield make
    for step in reversed(undo):
        step()


def test_another_tags_failed_spill_never_fails_this_film(assemble_node, monkeypatch, store, read_only, told):
    film_of(store, [3, 3, 3])  # the intact film, on disk
    read_only(store.spill_dir)
    generation = store.put(RO_TAG, _latent(9), spill=True)
    with pytest.raises(EngineIOError):
        store.flush()  # the store's own flush still says it

    doc = film_view.describe(TAG, store=store)
    assert len(film_view.line(doc)) == 3 and doc["lost"] == []

    aiohttp = pytest.importorskip("aiohttp", reason="skipped: aiohttp not installed (ComfyUI's web server)")
    from web_api_helpers import SyncClient

    from zc_pack.zc_nodes.api import routes
    app = aiohttp.web.Application()
    routes.add_to_app(app, routes.Services(store=lambda: store, projection_for=lambda meta, channels: None,
                                           residency_report=lambda: {"available": False}, notify=None,
                                           film=film_view))
    client = SyncClient(app)
    try:
        status, answer = client.json("GET", f"/zerocopy/film/{TAG}")
        assert status == 200 and answer["line"] == doc["line"], answer
        assert RO_TAG not in str(answer)
        status, answer = client.json("GET", f"/zerocopy/film/{RO_TAG}")
        assert status == 503 and f'tag "{RO_TAG}" generation {generation}' in answer["message"], answer
        assert str(store.spill_dir) not in answer["message"]  # the REST answer stays redacted
    finally:
        client.close()

    node = mount(assemble_node, monkeypatch, store, Decoder())
    _, _, info = node.ZeroCopyFilmAssemble.execute(buffer_tag=TAG, vae=object())
    assert info.splitlines()[0].startswith(f"ZeroCopy film {TAG!r}: 3 shots"), info
    bundle, _ = film_view.continue_from(store, TAG)  # a Handoff continuing the intact film
    assert bundle.generation == doc["line"][-1]

    with pytest.raises(EngineIOError) as caught:  # the failing tag still says its own failure
        film_view.describe(RO_TAG, store=store)
    assert f'the spill of tag "{RO_TAG}" generation {generation} failed' in str(caught.value)
    entry = store.describe_tag(RO_TAG)
    assert entry["slots"][0]["spill"] == "failed" and RO_TAG in entry["slots"][0]["spill_problem"]


def test_a_vanished_file_still_in_memory_is_written_again_when_the_film_is_read(assemble_node, monkeypatch,
                                                                                 store, told):
    film_of(store, [3, 3, 3, 3, 3])
    newest = store.generations(TAG)[0]
    path = store.spill_dir / f"{TAG}@{newest:020d}.latent"
    path.unlink()
    node = mount(assemble_node, monkeypatch, store, Decoder())
    _, _, info = node.ZeroCopyFilmAssemble.execute(buffer_tag=TAG, vae=object())
    assert info.splitlines()[0].startswith(f"ZeroCopy film {TAG!r}: 5 shots"), info
    assert path.is_file()
    sent, warnings = told
    toasts = [data for event, data in sent if event == "zerocopy.warning"]
    assert len(toasts) == 1 and f"generation {newest} vanished" in toasts[0]["message"], toasts
    assert "written again" in toasts[0]["message"] and str(store.spill_dir) in toasts[0]["message"]
    assert any(f"generation {newest} vanished" in w for w in warnings), warnings
    fresh = LatentStore(spill_dir=store.spill_dir)  # a restart finds it
    try:
        assert newest in fresh.generations(TAG)
        fresh.get(TAG, newest, verify=True)
    finally:
        fresh.close()


def test_the_prompt_end_writes_again_a_vanished_file_of_a_tag_it_stored(store, told):
    first = store.put("film", _latent(1), spill=True)
    store.flush()
    (store.spill_dir / f"film@{first:020d}.latent").unlink()
    second = store.put("film", _latent(2), spill=True)
    durability.note_stored("film", second, "4")
    assert durability.make_durable() is True
    assert sorted(p.name for p in store.spill_dir.glob("film@*.latent")) == [
        f"film@{first:020d}.latent", f"film@{second:020d}.latent"]
    sent, warnings = told
    assert any(f"'film' generation {first} vanished" in w for w in warnings), warnings
    assert any(data.get("title") == "ZeroCopy: a spill file was written again" for _, data in sent), sent


def test_a_vanished_file_no_longer_in_memory_is_named_by_the_finishing_node(assemble_node, monkeypatch, store,
                                                                           told):
    film_of(store, [3, 3, 3, 3])
    store.trim(1 << 40)  # every written shot leaves memory
    newest = store.generations(TAG)[0]
    (store.spill_dir / f"{TAG}@{newest:020d}.latent").unlink()
    node = mount(assemble_node, monkeypatch, store, Decoder())
    with pytest.raises(Exception) as caught:
        node.ZeroCopyFilmAssemble.execute(buffer_tag=TAG, vae=object())
    message = str(caught.value)
    assert f"generation {newest} of film {TAG!r} is lost" in message and "3 shot(s)" in message, message
    toasts = [data for event, data in told[0] if event == "zerocopy.warning"]
    assert toasts and toasts[0]["severity"] == "error" and f"generation {newest}" in toasts[0]["message"]
    assert newest not in store.generations(TAG)  # the sidebar no longer counts it on disk


def _toast(sent) -> str:
    toasts = [data for event, data in sent if event == "zerocopy.warning"]
    assert len(toasts) == 1, sent
    assert toasts[0]["severity"] == "error" and "NOT saved to disk" in toasts[0]["title"]
    return toasts[0]["message"]


def test_the_toast_of_a_read_only_folder_says_the_folder_the_consequence_and_its_fix(store, read_only, told):
    store.put("kept", _latent(1), spill=True)
    store.flush()
    read_only(store.spill_dir)
    generation = store.put(RO_TAG, _latent(2), spill=True)
    durability.note_stored(RO_TAG, generation, "5")
    assert durability.make_durable() is False
    text = _toast(told[0])
    assert f"spill folder {store.spill_dir}:" in text, text
    assert f"tag {RO_TAG!r} generation {generation}" in text and "'kept'" not in text
    assert ("Read-only file system" in text and "read-only drive or mount" in text) or \
           ("Permission denied" in text and "write permission" in text), text
    assert "a restart of ComfyUI loses them" in text
    assert "free space" not in text and ".zc-tmp-" not in text


@pytest.fixture
def full_disk(tmp_path):
    disk = tmp_path / "disk"
    disk.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("skipped: mounting a small tmpfs needs root")
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(disk)],
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        pytest.skip(f"skipped: this machine may not mount a tmpfs ({proc.stderr.strip()})")
    yield disk
    subprocess.run(["umount", "-l", str(disk)], capture_output=True, check=False)


def test_the_toast_of_a_full_disk_says_the_folder_the_consequence_and_its_fix(full_disk, monkeypatch, told):
    store = install_held_store(monkeypatch, full_disk / "spill")
    try:
        with open(full_disk / "someone_elses_file.bin", "wb") as junk:
            junk.write(b"\0" * (shutil.disk_usage(full_disk).free - 8192))
        generation = store.put("big", {"latent_tensor": torch.randn(1, 16, 3, 32, 32)}, spill=True)
        durability.note_stored("big", generation, None)
        assert durability.make_durable() is False
        text = _toast(told[0])
        assert f"spill folder {store.spill_dir}:" in text and "No space left on device" in text, text
        assert "a restart of ComfyUI loses them" in text and "free space" in text
        assert "read-only" not in text and ".zc-tmp-" not in text
    finally:
        monkeypatch.setattr(runtime, "_store", None)
        store.close()
