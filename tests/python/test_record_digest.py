"""The record digest: a shot's whole record, not only its tensor bytes, is covered.

Each case changes one byte of the header of a real spill file the store wrote (the newest shot of a
three-shot film, the file's size unchanged): its dtype F32 -> I32, its lineage's trim 1 -> 7, its
parent_generation 2 -> 1, a byte of its seam record (``zc.hop_seam``) or of its prompt. Then every
reader of the shot notices and names the shot and the field: ``zc verify`` and ``zc film`` (the
tool), the film read by the engine (verified or not), a store restarted on the folder (get with
verify raises CorruptFile; the Handoff's and Load's ``continue_from`` skips to the newest shot that
verifies, saying why), FilmAssemble (refuses, or leaves it out and says so), and the farm's import.
A file of the previous format (the record's key removed, the rest as written) still reads
everywhere, marked "record not covered".
"""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
import subprocess
from pathlib import Path

import pytest
import torch

from conftest import REPO
from test_film_assemble_memory import PACK, Decoder, mount  # noqa: F401 - PACK: for conftest.assemble_node
from zc_pack.zc_continuity import families, lineage
import seam_reference as seam
from zc_pack.zc_engine import CorruptFile, LatentStore, digest_tensor
from zc_pack.zc_engine import film as engine_film
from zc_pack.zc_engine.store import SeamRequest
from zc_pack.zc_nodes import film_view, runtime

ZC = Path(os.environ.get("ZC_BIN", REPO / "build" / "zc"))
TAG = "rec"
LEAD = "the record (dtype, shape or metadata) changed since it was written: "

pytestmark = pytest.mark.skipif(not (ZC.is_file() and os.access(ZC, os.X_OK)),
                                reason=f"zc binary not found at {ZC}: run 'make build/zc' or set ZC_BIN")


# ---------------------------------------------------------------- a film written by the store


def put(store, seed: int, parent: int | None = None, frames: int = 5) -> int:
    """One shot, with the seam the engine measures for it (so its file holds ``zc.hop_seam``);
    continuing ``parent``'s last latent frame (trim 1, a prompt) when given. Its generation."""
    latent = torch.randn(1, 16, frames, 8, 8, generator=torch.Generator().manual_seed(seed))
    meta, marker = {"family": "wan21"}, None
    if parent is not None:
        tail = digest_tensor(store.get(TAG, parent).tensors["latent_tensor"][:, :, -1:])
        marker = lineage.marker(parent_tag=TAG, parent_generation=parent, tail_frames=1, tail_digest=tail,
                                used_digest=tail, adapter="temporal_inpaint", trim=1,
                                prompt=f"the shot of seed {seed}")
        meta[lineage.LINEAGE_KEY] = lineage.record(marker, seed=seed)
    layouts = seam.hop_layouts({"latent_tensor": latent}, marker, spec=families.family_by_name("wan21"))
    request = SeamRequest(layouts, parent=None if parent is None else (TAG, parent))
    return store.put(TAG, {"latent_tensor": latent}, meta, spill=True, seam=request)


@pytest.fixture
def film(tmp_path, monkeypatch):
    """(spill folder, generations): a film of three shots, each continuing the one before, written
    by a store that is then closed (its files are all there is)."""
    def no_shared_store():
        raise AssertionError("the shared store was used, not the one passed in")

    monkeypatch.setattr(runtime, "store", no_shared_store)
    spill = tmp_path / "spill"
    with LatentStore(spill_dir=spill) as store:
        first = put(store, 1)
        second = put(store, 2, parent=first)
        third = put(store, 3, parent=second)
        store.flush()
        assert store.hop_seam(TAG, third) is not None
    return spill, (first, second, third)


def shot_file(spill: Path, generation: int) -> Path:
    return spill / f"{TAG}@{generation:020d}.latent"


def header_of(data: bytes) -> tuple[int, bytes]:
    (length,) = struct.unpack("<Q", data[:8])
    return length, data[8:8 + length]


def change_header(path: Path, old: bytes, new: bytes, after: bytes = b"") -> None:
    """Replace the first ``old`` (after ``after``, when given) in the file's header by ``new``, of the
    same length: a real byte of a real file, its size unchanged."""
    assert len(old) == len(new)
    data = bytearray(path.read_bytes())
    length, head = header_of(bytes(data))
    start = head.index(after) if after else 0
    at = head.index(old, start)
    data[8 + at:8 + at + len(old)] = new
    size = path.stat().st_size
    path.write_bytes(bytes(data))
    assert path.stat().st_size == size


def seam_score_digit(path: Path) -> tuple[bytes, bytes]:
    """A digit of the seam record's score in the file's header, and another digit for it."""
    _, head = header_of(path.read_bytes())
    record = head.index(b'"zc.hop_seam":"')
    found = re.compile(rb'\\"score\\":(-?\d)').search(head, record)
    assert found, head[record:record + 300]
    old = found.group(0)
    digit = found.group(1)[-1:]
    return old, old[:-1] + (b"7" if digit != b"7" else b"3")


def drop_record(path: Path) -> None:
    """The file as the previous format wrote it: its "zc.record" entry cut out of the header, the
    header padded with spaces to its length (so the tensors stay where they are), the rest as
    written."""
    data = path.read_bytes()
    length, head = header_of(data)
    entry = re.compile(rb',"zc\.record":"(?:[^"\\]|\\.)*"')
    assert len(entry.findall(head)) == 1
    cut = entry.sub(b"", head)
    cut += b" " * (length - len(cut))
    path.write_bytes(data[:8] + cut + data[8 + length:])


def zc(*args) -> tuple[int, str]:
    done = subprocess.run([str(ZC), *map(str, args)], capture_output=True, text=True, timeout=120)
    assert done.returncode >= 0 and "AddressSanitizer" not in done.stderr, done.stderr
    return done.returncode, done.stdout + done.stderr


# ---------------------------------------------------------------- the record, as documented


def documented_record(path: Path) -> str:
    """The value of ``zc.record`` for the file's header, made in Python from docs/engine.md ("Record
    digest") alone: the canonical serialisation, its XXH3-64, each tensor in clear, each value's
    first 8 hex digits."""
    xxhash = pytest.importorskip("xxhash")
    _, head = header_of(path.read_bytes())
    header = json.loads(head)
    meta = {k: v for k, v in header.pop("__metadata__").items() if k != "zc.record"}
    tensors = {name: f"{t['dtype']} [{','.join(str(d) for d in t['shape'])}]" for name, t in header.items()}

    def utf8(text: str) -> bytes:
        return text.encode("utf-8")

    def by_bytes(items):
        return sorted(items, key=lambda kv: utf8(kv[0]))

    canon = b"zc.record 1\n"
    for name, desc in by_bytes(tensors.items()):
        canon += b"tensor %d:" % len(utf8(name)) + utf8(name) + b" " + utf8(desc) + b"\n"
    for key, value in by_bytes(meta.items()):
        canon += b"meta %d:" % len(utf8(key)) + utf8(key) + b" %d:" % len(utf8(value)) + utf8(value) + b"\n"
    doc = {"version": 1, "digest": "xxh3:%016x" % xxhash.xxh3_64_intdigest(canon),
           "tensors": dict(by_bytes(tensors.items())),
           "meta": {k: "%08x" % (xxhash.xxh3_64_intdigest(utf8(v)) >> 32) for k, v in by_bytes(meta.items())}}
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False)


def test_the_record_is_what_the_documentation_says(film):
    spill, generations = film
    for generation in generations:
        path = shot_file(spill, generation)
        _, head = header_of(path.read_bytes())
        meta = json.loads(head)["__metadata__"]
        assert list(meta)[-1] == "zc.record"  # written last
        assert {"lineage", "zc.hop_seam", "zc.seam.latent_tensor"} <= set(meta) or generation == generations[0]
        assert meta["zc.record"] == documented_record(path)


# ---------------------------------------------------------------- the four cases of the issue

CASES = {
    # name: (how to change the newest shot's header, the field the readers must name)
    "dtype": (lambda path: change_header(path, b'"latent_tensor":{"dtype":"F32"', b'"latent_tensor":{"dtype":"I32"'),
              'tensor "latent_tensor" dtype is I32, was F32'),
    "trim": (lambda path: change_header(path, b'\\"trim\\":1', b'\\"trim\\":7'), 'metadata "lineage" changed'),
    "parent_generation": (lambda path: change_header(path, b'\\"parent_generation\\":2',
                                                     b'\\"parent_generation\\":1'),
                          'metadata "lineage" changed'),
    "seam": (lambda path: change_header(path, *seam_score_digit(path), after=b'"zc.hop_seam":"'),
             'metadata "zc.hop_seam" changed'),
    "prompt": (lambda path: change_header(path, b"the shot of seed 3", b"the shot of seed 4"),
               'metadata "lineage" changed'),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_changed_byte_of_the_record_is_found_and_named_by_every_reader(film, tmp_path, case):
    spill, (first, second, third) = film
    tamper, field = CASES[case]
    path = shot_file(spill, third)
    tamper(path)
    copies = {name: shutil.copytree(spill, tmp_path / name) for name in ("get", "continue")}

    # zc verify: the file fails, its line names the field
    rc, out = zc("verify", path)
    assert rc == 1 and out.startswith(f"FAIL {path}: {LEAD}{field}"), out
    # zc film: the shot is broken (its lineage cannot be trusted), named with the field; the line
    # ends at the shot before
    rc, out = zc("film", spill, TAG)
    assert rc == 1, out
    assert f"generation {third} (not on the line): {LEAD}{field}" in out, out
    assert f"film {TAG}: 2 shots on the line, verification FAILED: generation {third} (not on the line): {LEAD}{field}" in out, out
    assert re.search(rf"gen {third} .*broken.*file bad  hop unchecked  record bad", out), out
    rc, out = zc("film", "--json", spill, TAG)
    listed = json.loads(out)
    assert rc == 1 and listed["line"] == [first, second] and not listed["ok"]

    # the film read by the engine, verified and not: marked, with the field
    for verify in (True, False):
        doc = engine_film.describe_film(spill, TAG, verify=verify)
        shots = {s["generation"]: s for s in doc["shots"]}
        assert (shots[third]["record"], shots[third]["state"], shots[third]["file"]) == ("bad", "broken", "bad")
        assert f"{LEAD}{field}" in shots[third]["problem"]
        assert doc["line"] == [first, second] and doc["ok"] is False
        assert shots[first]["record"] == shots[second]["record"] == "ok"

    # a store restarted on the folder: get with verify raises CorruptFile naming the field (and
    # the file is renamed aside, as a file whose bytes changed is)
    with LatentStore(spill_dir=copies["get"]) as store:
        with pytest.raises(CorruptFile) as caught:
            store.get(TAG, third, verify=True)
        assert field in str(caught.value) and path.name in str(caught.value), caught.value
        assert (copies["get"] / f"{path.name}.rejected").exists()
        assert store.get(TAG, second, verify=True).record == "ok"

    # the Handoff's and the Load's "newest": the newest shot that verifies, and why the newer one
    # was skipped
    with LatentStore(spill_dir=copies["continue"]) as store:
        bundle, notes = film_view.continue_from(store, TAG)
        assert bundle.generation == second, notes
        assert notes[0].startswith(f"generation {third} skipped: ") and field in notes[0], notes
        assert notes[-1] == f"used generation {second}, the newest that verifies"


def test_with_chosen_takes_a_shot_whose_record_changed_is_left_out_and_said(film, tmp_path):
    spill, (first, second, third) = film
    engine_film.choose_take(spill, TAG, second)  # a pin on the line: the film reads its files
    CASES["parent_generation"][0](shot_file(spill, third))
    with LatentStore(spill_dir=spill) as store:
        bundle, notes = film_view.continue_from(store, TAG)
    assert bundle.generation == second, notes
    assert any(n.startswith(f"generation {third} left out: generation {third} (not on the line): {LEAD}metadata \"lineage\" changed")
               for n in notes), notes


def test_an_asked_generation_whose_record_changed_is_refused_naming_the_field(film):
    spill, (first, second, third) = film
    CASES["dtype"][0](shot_file(spill, third))
    with LatentStore(spill_dir=spill) as store:
        with pytest.raises(CorruptFile, match=re.escape('tensor "latent_tensor" dtype is I32, was F32')):
            film_view.continue_from(store, TAG, third)


# ---------------------------------------------------------------- the previous format


def test_a_file_of_the_previous_format_still_reads_marked_record_not_covered(film):
    spill, (first, second, third) = film
    path = shot_file(spill, third)
    drop_record(path)

    rc, out = zc("verify", path)
    assert rc == 0 and out.strip() == f"OK {path} (1 tensor, all digests match; record not covered)", out
    rc, out = zc("verify", shot_file(spill, second))
    assert rc == 0 and out.strip().endswith("(1 tensor, all digests match, record matches)"), out
    rc, out = zc("film", spill, TAG)
    assert rc == 0, out
    assert re.search(rf"gen {third} .*file ok  hop ok  record not covered", out), out
    assert "record not covered: 1 file of the film records no digest of its dtype, shape and metadata" in out
    assert out.splitlines()[-1] == f"film {TAG}: 3 shots on the line, all hops verified"
    doc = engine_film.describe_film(spill, TAG, verify=True)
    shots = {s["generation"]: s for s in doc["shots"]}
    assert doc["ok"] and doc["line"] == [first, second, third]
    assert [shots[g]["record"] for g in (first, second, third)] == ["ok", "ok", "not_covered"]

    with LatentStore(spill_dir=spill) as store:
        old = store.get(TAG, third, verify=True)
        assert old.record == "not_covered" and json.loads(old.meta["lineage"])["trim"] == 1
        assert store.get(TAG, second).record == "ok"
        bundle, notes = film_view.continue_from(store, TAG)
        assert bundle.generation == third
        assert notes == [f"generation {third}: record not covered (its file was written before record digests, "
                         "so its dtype, shape and metadata are not checked; its tensors' digests are)"]
        # a shot put now is covered, and so are the bytes it is exported as
        made = put(store, 4, parent=third)
        assert store.get(TAG, made).record == "ok"
        data = store.export_shot(TAG, made)
        assert b'"zc.record":"{' in data
        # exported again, the old shot's bytes get a record: they cover its header from now on
        assert b'"zc.record":"{' in store.export_shot(TAG, third)


# ---------------------------------------------------------------- FilmAssemble


def test_film_assemble_refuses_a_hop_whose_record_changed_or_leaves_it_out_and_says_so(
        assemble_node, monkeypatch, tmp_path):
    with LatentStore(spill_dir=tmp_path / "spill") as store:
        generations = [put(store, 1, frames=3)]
        generations.append(put(store, 2, parent=generations[-1], frames=3))
        generations.append(put(store, 3, parent=generations[-1], frames=3))
        store.flush()
        decoder = Decoder()
        node = mount(assemble_node, monkeypatch, store, decoder)
        whole, _, info = node.ZeroCopyFilmAssemble.execute(buffer_tag=TAG, vae=object())
        assert whole.shape[0] == 3 * 9 - 2 and "3 shots" in info
        # the newest shot's lineage says trim 7 (the memory copy is the store's own; the file is the
        # film's record): without the record digest the film would be 6 frames shorter, unsaid
        CASES["trim"][0](shot_file(store.spill_dir, generations[2]))
        with pytest.raises(Exception) as caught:
            node.ZeroCopyFilmAssemble.execute(buffer_tag=TAG, vae=object())
        message = str(caught.value)
        assert type(caught.value).__name__ == "ContinuityError"
        assert f"generation {generations[2]} (not on the line): {LEAD}metadata \"lineage\" changed" in message and "not whole" in message
        images, _, info = node.ZeroCopyFilmAssemble.execute(buffer_tag=TAG, vae=object(), assemble_incomplete=True)
        assert images.shape[0] == 2 * 9 - 1 and "INCOMPLETE" in info
        assert f"LEFT OUT (assemble_incomplete is on): generation {generations[2]} (not on the line): {LEAD}metadata \"lineage\" changed" \
            in info


def test_film_assemble_reads_the_film_verified_and_notes_a_hop_that_fails(assemble_node, monkeypatch, tmp_path):
    """A parent rewritten with another last frame, its own digest made to match and its record
    digest dropped (a tool that edits shots and knows the tensor digests only): its file verifies,
    not covered; the hop of the shot that continued from it does not, and the info says so."""
    from safetensors.torch import load_file, save_file
    from safetensors import safe_open

    spill = tmp_path / "spill"
    with LatentStore(spill_dir=spill) as store:
        generations = [put(store, 1, frames=3)]
        generations.append(put(store, 2, parent=generations[-1], frames=3))
        generations.append(put(store, 3, parent=generations[-1], frames=3))
    path = shot_file(spill, generations[1])
    with safe_open(str(path), "pt") as f:
        meta = dict(f.metadata())
    tensors = load_file(str(path))
    tensors["latent_tensor"][:, :, -1:] *= -1.0
    meta["zc.digest.latent_tensor"] = digest_tensor(tensors["latent_tensor"])
    del meta["zc.record"]
    save_file(tensors, str(path), metadata=meta)
    with LatentStore(spill_dir=spill) as store:  # a restart: the shots are read from their files
        decoder = Decoder()
        node = mount(assemble_node, monkeypatch, store, decoder)
        images, _, info = node.ZeroCopyFilmAssemble.execute(buffer_tag=TAG, vae=object())
        assert images.shape[0] == 3 * 9 - 2
        assert f"(generation {generations[2]}): the hop from generation {generations[1]}: tail digest" in info, info


# ---------------------------------------------------------------- the farm's import


def test_an_import_of_bytes_whose_record_changed_is_refused_naming_the_field(film, tmp_path):
    spill, (first, second, third) = film
    with LatentStore(spill_dir=spill) as store:
        data = bytearray(store.export_shot(TAG, third))
    length, head = header_of(bytes(data))
    at = head.index(b'\\"trim\\":1')
    data[8 + at:8 + at + 10] = b'\\"trim\\":7'
    with LatentStore(spill_dir=tmp_path / "other") as other:
        with pytest.raises(CorruptFile) as caught:
            other.import_shot(TAG, third, bytes(data))
        message = str(caught.value)
        assert 'metadata "lineage" changed' in message and "nothing written" in message, message
        assert other.generations(TAG) == []
