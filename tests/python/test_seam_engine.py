"""The seam of a hop in the C engine (zc_store_seam's statistics, and the record it measures after
the put: zc_store_hop_seam_json) against the torch reference (seam_reference): the same numbers
within float tolerance on every family layout the seam tests cover (Wan, LTX-2 AV, MiniMax H3 AV,
FLUX stills), from memory and from a spill file, and the record exactly seam.from_engine's; an
older parent without a summary gives none."""

from __future__ import annotations

import ctypes

import pytest
import seam_reference as seam
import torch
from test_continuity_seam import walk_along

from zc_pack.zc_continuity import families
from zc_pack.zc_continuity.bundle_layout import VIDEO_KEY, stream_key
from zc_pack.zc_engine import LatentStore
from zc_pack.zc_engine._library import SeamStats, check, lib
from zc_pack.zc_engine.store import SEAM_STAT_FIELDS, SeamRequest


AUDIO_KEY = stream_key(1)
RATIOS = ("mean_step", "std_step", "rms_step", "correlation", "within_correlation")


def video_hop(shape: tuple, seed: int, shift: float = 0.0):
    """A parent and a continuation (its first latent repeats the parent's last), ``shift`` added to
    every new frame of the even channels (a colour jump)."""
    v = walk_along(shape[:2] + (2 * shape[2],) + shape[3:], 2, seed=seed)
    p, n = v[:, :, :shape[2]], v[:, :, shape[2]:].clone()
    n[:, 0::2] += shift
    return p, torch.cat([p[:, :, -1:], n], 2)


# family: (parent streams, shot streams, marker)
def layouts() -> dict:
    out = {}
    for name, shape, shift in (("wan21", (1, 16, 6, 60, 104), 0.0), ("wan21_shift", (1, 16, 6, 60, 104), 2.0),
                               ("wan21_720p", (1, 16, 5, 90, 160), 0.0)):
        p, n = video_hop(shape, seed=len(out), shift=shift)
        out[name] = ("wan21", {VIDEO_KEY: p}, {VIDEO_KEY: n}, {"trim": 1, "tail_frames": 1})
    for family, vshape, ashape, axis in (("ltx2", (1, 128, 6, 16, 24), (1, 8, 24, 16), 2),
                                         ("minimax_h3", (1, 24, 6, 24, 40), (1, 32, 2, 24), 3)):
        pv, nv = video_hop(vshape, seed=10 + len(out))
        a = walk_along(ashape[:axis] + (2 * ashape[axis],) + ashape[axis + 1:], axis, seed=20 + len(out))
        pa, na = a.narrow(axis, 0, ashape[axis]), a.narrow(axis, ashape[axis], ashape[axis]) * 2.0
        na = torch.cat([pa.narrow(axis, pa.shape[axis] - 4, 4), na], axis)
        out[family] = (family, {VIDEO_KEY: pv, AUDIO_KEY: pa}, {VIDEO_KEY: nv, AUDIO_KEY: na},
                       {"trim": 1, "tail_frames": 1, "audio_count": 4})
    reference = walk_along((1, 16, 128, 128), 0, seed=40)  # FLUX 1024²: read on a 16 x 16 grid
    g = torch.Generator().manual_seed(41)
    near = walk_along((4, 16, 128, 128), 0, seed=42, start=reference + 0.1 * torch.randn(reference.shape, generator=g))
    out["flux"] = ("flux", {VIDEO_KEY: reference}, {VIDEO_KEY: near}, {"trim": 0})
    return out


LAYOUTS = layouts()


def cut_stats(store: LatentStore, parent_generation: int, shot: dict, wanted: dict) -> dict:
    """The engine's statistics of each planned stream's cut from the parent (zc_store_seam, on a
    bundle of the shot built as the put builds it, not put), by tensor name (None: none)."""
    bundle = ctypes.c_void_p()
    check(lib.zc_store_bundle_create(store.handle, ctypes.byref(bundle)))
    try:
        store._plan_seam(bundle.value, SeamRequest(wanted))
        for name, tensor in shot.items():
            store._add(bundle.value, name, tensor, True, True)
        out = {}
        for name in wanted:
            st = SeamStats()
            ok = lib.zc_store_seam(store.handle, b"film", parent_generation, bundle.value, name.encode(),
                                   ctypes.byref(st)) == 0
            out[name] = {f: getattr(st, f) for f in SEAM_STAT_FIELDS} if ok else None
        return out
    finally:
        lib.zc_bundle_free(bundle.value)


def engine_hop(store: LatentStore, family: str, parent: dict, shot: dict, marker: dict, *, reopen=None):
    """Put the parent with its summaries, then the shot with a seam request against it: the
    engine's statistics of the cut by tensor name, the record the engine measured after the put,
    the layouts asked for, the store, and the shot's generation."""
    spec = families.family_by_name(family)
    store.put("film", parent, {"family": family}, spill=True,
              seam=SeamRequest(seam.hop_layouts(parent, None, spec=spec)))
    generation = store.generations("film")[0]
    if reopen is not None:
        store.flush()
        store = reopen()
    wanted = seam.hop_layouts(shot, marker, spec=spec)
    got = cut_stats(store, generation, shot, wanted)
    made = store.put("film", shot, {"family": family}, spill=True,
                     seam=SeamRequest(wanted, parent=("film", generation)))
    record = store.hop_seam("film", made)
    assert record == seam.from_engine(got.get(VIDEO_KEY), got.get(AUDIO_KEY), wanted)  # C's = Python's
    return got, record, wanted, store, made


def reference_numbers(parent, shot, layout) -> dict:
    """The torch reference's unrounded numbers of one stream's cut (seam._stream, _video)."""
    axis, skip, window, max_values = layout
    cut = seam._stream(parent, shot, axis, skip, window, max_values or None)
    out = seam._video(cut)
    out["levels"] = (cut.tail_level, cut.head_level)
    out["frames"] = list(cut.frames)
    return out


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_the_engine_gives_the_torch_numbers(tmp_path, name):
    family, parent, shot, marker = LAYOUTS[name]
    with LatentStore(spill_dir=tmp_path) as store:
        got, record, wanted, _, _ = engine_hop(store, family, parent, shot, marker)
    assert set(wanted) == set(parent)  # every stream summarised (audio too on the AV layouts)
    for key, layout in wanted.items():
        stats = got[key]
        assert stats is not None and stats["measured"] == 1, key
        ref = reference_numbers(parent[key], shot[key], layout)
        for field in RATIOS:
            assert stats[field] == pytest.approx(ref[field], rel=1e-4, abs=1e-6), (key, field)
        assert [stats["parent_frames"], stats["shot_frames"]] == ref["frames"]
        assert stats["parent_level"] == pytest.approx(ref["levels"][0], rel=1e-5)
        assert stats["shot_level"] == pytest.approx(ref["levels"][1], rel=1e-5)
    expected = seam.for_hop(parent, shot, marker, spec=families.family_by_name(family))
    assert record["frames"] == expected["frames"] and record["skip"] == expected["skip"]
    for key in RATIOS + ("score",):
        assert record[key] == pytest.approx(expected[key], rel=2e-3, abs=1e-4), key
    if "audio" in expected:
        for key in ("level_db", "rms_step", "correlation", "within_correlation"):
            assert record["audio"][key] == pytest.approx(expected["audio"][key], rel=2e-3, abs=1e-3), key
        assert record["audio"]["skip"] == expected["audio"]["skip"] == 4
    assert seam.verdict(record["score"]) == seam.verdict(expected["score"])


def test_a_colour_jump_is_flagged_by_the_engine_as_by_torch(tmp_path):
    family, parent, shot, marker = LAYOUTS["wan21_shift"]
    with LatentStore(spill_dir=tmp_path) as store:
        _, record, _, _, _ = engine_hop(store, family, parent, shot, marker)
    assert record["mean_step"] > seam.RED_FROM and seam.verdict(record["score"]) == "red"


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float64])
def test_other_float_dtypes_read_as_torch_reads_them(tmp_path, dtype):
    family, parent, shot, marker = LAYOUTS["wan21"]
    parent = {k: v.to(dtype) for k, v in parent.items()}
    shot = {k: v.to(dtype) for k, v in shot.items()}
    with LatentStore(spill_dir=tmp_path) as store:
        got, _, wanted, _, _ = engine_hop(store, family, parent, shot, marker)
    ref = reference_numbers(parent[VIDEO_KEY], shot[VIDEO_KEY], wanted[VIDEO_KEY])
    for field in RATIOS:
        assert got[VIDEO_KEY][field] == pytest.approx(ref[field], rel=1e-3, abs=1e-5), field


def test_the_parents_tail_is_read_from_its_spill_file(tmp_path):
    """A parent only on disk (another store, or after a restart): its summary comes from the
    file's header, and gives the same numbers as from memory."""
    family, parent, shot, marker = LAYOUTS["ltx2"]
    with LatentStore(spill_dir=tmp_path / "a") as store:
        in_memory, memory_record, _, _, _ = engine_hop(store, family, parent, shot, marker)
    opened = []

    def reopen():
        opened.append(LatentStore(spill_dir=tmp_path / "b"))
        return opened[0]

    with LatentStore(spill_dir=tmp_path / "b") as first:
        from_file, from_file_record, _, _, _ = engine_hop(first, family, parent, shot, marker, reopen=reopen)
    opened[0].close()
    for key in (VIDEO_KEY, AUDIO_KEY):
        for field in RATIOS:
            assert from_file[key][field] == pytest.approx(in_memory[key][field], rel=1e-12), (key, field)
    assert from_file_record == memory_record
    with LatentStore(spill_dir=tmp_path / "b") as restored:  # a restore keeps the summary too
        restored.get("film", 1)
        got, _, _, _, _ = engine_hop(restored, family, parent, shot, marker)
        assert got[VIDEO_KEY]["measured"] == 1


def test_the_hops_record_is_written_into_the_shots_file(tmp_path):
    """The spill writer measures the hop before it writes the shot's file, and the file keeps the
    record ("zc.hop_seam"): a store that never held the shot in memory reads the same record,
    from the file's header, as does one that restored the shot."""
    family, parent, shot, marker = LAYOUTS["wan21"]
    with LatentStore(spill_dir=tmp_path) as store:
        _, record, _, _, made = engine_hop(store, family, parent, shot, marker)
        store.flush()
    assert record is not None and record["score"] > 0
    with LatentStore(spill_dir=tmp_path) as other:
        assert other.hop_seam("film", made) == record  # from the file, nothing restored
        other.get("film", made)
        assert other.hop_seam("film", made) == record  # from the restored slot
        assert other.hop_seam("film", 1) is None  # the root has no hop


def test_a_parent_without_a_summary_gives_none(tmp_path):
    """A parent stored without summaries (an older engine's file, a put without a seam request):
    no statistics and no record; the shot is stored all the same."""
    _, parent, shot, marker = LAYOUTS["wan21"]
    with LatentStore(spill_dir=tmp_path) as store:
        store.put("film", parent, {"family": "wan21"}, spill=True)
        wanted = seam.hop_layouts(shot, marker)
        assert cut_stats(store, 1, shot, wanted) == {VIDEO_KEY: None}
        made = store.put("film", shot, {"family": "wan21"}, spill=True,
                         seam=SeamRequest(wanted, parent=("film", 1)))
        assert store.hop_seam("film", made) is None
        assert store.get("film", made).meta == {"family": "wan21"}  # a seam is a report, the shot is stored


def test_a_start_image_parent_is_said(tmp_path):
    still = walk_along((1, 16, 1, 8, 8), 2, seed=50)
    shot = walk_along((1, 16, 5, 8, 8), 2, seed=51)
    with LatentStore(spill_dir=tmp_path) as store:
        store.put("film", {VIDEO_KEY: still}, {"kind": "start_image"}, spill=True,
                  seam=SeamRequest(seam.hop_layouts({VIDEO_KEY: still}, None)))
        wanted = seam.hop_layouts({VIDEO_KEY: shot}, None)
        got = cut_stats(store, 1, {VIDEO_KEY: shot}, wanted)
        made = store.put("film", {VIDEO_KEY: shot}, {"family": "wan21"}, spill=True,
                         seam=SeamRequest(wanted, parent=("film", 1)))
        assert store.hop_seam("film", made) is None  # the first shot: no cut of the film
    assert got[VIDEO_KEY]["parent_start_image"] == 1
