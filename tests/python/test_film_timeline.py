"""The film's OpenTimelineIO timeline, written and read back with the library: the track lasts the
film's frames, each clip plus its handles covers its own film frames, each dissolve the blended ones."""

from __future__ import annotations

import itertools
import os

import pytest

otio = pytest.importorskip("opentimelineio", reason="opentimelineio not installed (requirements-test.txt)")

from zc_pack.zc_film import plan, timeline
from zc_pack.zc_film.errors import RenderError

RATE = 24.0


def frames(count: int):
    return otio.opentime.RationalTime(count, RATE)


def span(first: int, count: int):
    return otio.opentime.TimeRange(frames(first), frames(count))


def clip_path(cut: plan.ShotCut) -> str:
    return f"film_clips/shot_{cut.place:04d}_gen_{cut.generation:04d}.mp4"


def written(tmp_path, cuts, clips=None, takes=None, **kwargs):
    """Build, write and read back the timeline; the read-back timeline and its one track."""
    clips = [clip_path(cut) for cut in cuts] if clips is None else clips
    takes = [[] for _ in cuts] if takes is None else takes
    path = tmp_path / "film.otio"
    timeline.write(timeline.build("my film", cuts, clips, RATE, takes, **kwargs), str(path))
    back = otio.adapters.read_from_file(str(path))
    assert len(back.tracks) == 1 and back.tracks[0].kind == otio.schema.TrackKind.Video
    return back, back.tracks[0]


def clips_of(track):
    return [item for item in track if isinstance(item, otio.schema.Clip)]


def assert_covers_the_film(track, cuts):
    """Through the library: the track's duration, each clip's range plus handles, each dissolve."""
    assert track.duration() == frames(plan.total_frames(cuts))
    items = clips_of(track)
    assert len(items) == len(cuts)
    for item, cut in zip(items, cuts):
        placed = item.range_in_parent()
        head, tail = track.handles_of_child(item)
        first = placed.start_time - (head or frames(0))
        stop = placed.end_time_exclusive() + (tail or frames(0))
        assert (first, stop) == (frames(cut.start), frames(cut.end)), item.name
        # the media the clip uses, handles included, is all of the clip file's kept frames
        used = item.source_range.start_time - (head or frames(0))
        assert used == frames(0)
        assert item.source_range.end_time_exclusive() + (tail or frames(0)) == frames(cut.kept)
        assert item.available_range() == span(0, cut.kept)
    transitions = [item for item in track if isinstance(item, otio.schema.Transition)]
    seams = [(before, after) for before, after in itertools.pairwise(cuts) if after.fade_in]
    assert len(transitions) == len(seams)
    for transition, (before, after) in zip(transitions, seams):
        assert transition.transition_type == otio.schema.TransitionTypes.SMPTE_Dissolve
        assert transition.range_in_parent() == span(after.start, before.end - after.start)  # the blend


def test_a_cut_film_is_clips_end_to_end(tmp_path):
    cuts = plan.cut([1, 2, 3], [10, 11, 12], [17, 21, 9], [0, 5, 1], crossfade=0)
    back, track = written(tmp_path, cuts)
    assert_covers_the_film(track, cuts)
    assert not any(isinstance(item, otio.schema.Transition) for item in track)
    assert [item.name for item in track] == ["shot 1 · take 1/1 · gen 10", "shot 2 · take 1/1 · gen 11",
                                             "shot 3 · take 1/1 · gen 12"]
    assert [item.source_range for item in track] == [span(0, 17), span(0, 16), span(0, 8)]
    assert [item.range_in_parent() for item in track] == [span(0, 17), span(17, 16), span(33, 8)]
    assert [item.media_reference.target_url for item in track] == [clip_path(cut) for cut in cuts]
    facts = track[1].metadata["zerocopy"]
    assert (facts["generation"], facts["decoded"], facts["trim"], facts["kept"]) == (11, 21, 5, 16)
    assert back.global_start_time == frames(0)
    assert back.duration() == frames(41)


def test_a_crossfaded_film_has_centred_dissolves_over_the_blends(tmp_path):
    cuts = plan.cut([1, 2, 3, 4], [3, 5, 8, 9], [25, 33, 17, 29], [0, 5, 1, 9], crossfade=4)
    back, track = written(tmp_path, cuts, film_file="film.mp4", width=832, height=480)
    assert_covers_the_film(track, cuts)
    assert [type(item).__name__ for item in track] == ["Clip", "Transition"] * 3 + ["Clip"]
    for transition in track[1::2]:
        assert (transition.in_offset, transition.out_offset) == (frames(2), frames(2))
    # kept 25, 28, 16, 20; each clip shows its kept frames less 2 at each dissolved end
    ranges = [item.source_range for item in clips_of(track)]
    assert ranges == [span(0, 23), span(2, 24), span(2, 12), span(2, 18)]
    assert plan.total_frames(cuts) == 25 + 28 + 16 + 20 - 3 * 4
    # expanding the dissolves gives back the plan's pieces: each blend is tail k over head k+1
    expanded = otio.algorithms.track_with_expanded_transitions(track)
    for (pre, _dissolve, post), (before, after) in zip(expanded[1::2], itertools.pairwise(cuts)):
        tail, head = before.pieces()["tail"], after.pieces()["head"]
        assert pre.source_range == span(tail[0], tail[1] - tail[0])
        assert post.source_range == span(head[0], head[1] - head[0])
    assert back.metadata["zerocopy"] == {"film": "my film", "rate": RATE, "total_frames": 77,
                                         "film_file": "film.mp4", "width": 832, "height": 480}


def test_an_odd_crossfade_puts_the_extra_frame_after_the_cut(tmp_path):
    cuts = plan.cut([1, 2], [1, 2], [12, 14], [0, 3], crossfade=3)
    _, track = written(tmp_path, cuts)
    assert_covers_the_film(track, cuts)
    assert (track[1].in_offset, track[1].out_offset) == (frames(1), frames(2))
    assert track.range_of_child_at_index(1) == span(9, 3)


def test_a_one_shot_film(tmp_path):
    cuts = plan.cut([1], [7], [33], [6], crossfade=4)  # the first shot's trim is not dropped
    back, track = written(tmp_path, cuts, film_file="one.mkv")
    assert_covers_the_film(track, cuts)
    assert len(track) == 1 and track[0].source_range == span(0, 33)
    assert back.metadata["zerocopy"]["total_frames"] == 33
    assert back.metadata["zerocopy"]["film_file"] == "one.mkv"


def test_a_shot_without_a_clip_file_is_a_missing_reference(tmp_path):
    cuts = plan.cut([1, 2], [1, 2], [12, 14], [0, 3], crossfade=2)
    _, track = written(tmp_path, cuts, clips=[clip_path(cuts[0]), None])
    assert isinstance(track[0].media_reference, otio.schema.ExternalReference)
    assert track[2].media_reference.is_missing_reference
    assert track[2].available_range() == span(0, 11)
    assert_covers_the_film(track, cuts)


def test_other_takes_are_a_marker_and_metadata(tmp_path):
    cuts = plan.cut([1, 2, 3], [4, 12, 20], [17, 21, 9], [0, 5, 1], crossfade=2)
    others = [{"generation": 14, "take": 2, "takes": 3, "prompt": "a red fox", "state": "alternative",
               "clip": "film_clips/alternates/gen_0014.mp4"},
              {"generation": 19, "take": 3, "takes": 3, "prompt": "", "state": "stale"}]
    _, track = written(tmp_path, cuts, takes=[[], others, []])
    plain, chosen, last = clips_of(track)
    assert chosen.name == "shot 2 · take 1/3 · gen 12"  # the take number the others leave free
    assert [dict(other) for other in chosen.metadata["zerocopy"]["alternates"]] == others
    assert (chosen.metadata["zerocopy"]["take"], chosen.metadata["zerocopy"]["takes"]) == (1, 3)
    (marker,) = chosen.markers
    assert marker.name == "2 other takes: gen 14 (take 2/3), gen 19 (take 3/3, stale)"
    assert marker.comment.splitlines() == [
        "gen 14 (take 2/3): a red fox [film_clips/alternates/gen_0014.mp4]",
        "gen 19 (take 3/3, stale): (no prompt)"]
    assert chosen.source_range.contains(marker.marked_range.start_time)
    assert len(plain.markers) == len(last.markers) == 0 and len(plain.metadata["zerocopy"]["alternates"]) == 0


def test_the_write_is_atomic_and_replaces_the_old_file(tmp_path):
    cuts = plan.cut([1, 2], [1, 2], [12, 14], [0, 3], crossfade=0)
    path = tmp_path / "film.otio"
    path.write_text("an older timeline")
    timeline.write(timeline.build("my film", cuts, [None, None], RATE, [[], []]), str(path))
    assert os.listdir(tmp_path) == ["film.otio"]  # no temporary file left behind
    assert otio.adapters.read_from_file(str(path)).tracks[0].duration() == frames(23)


def test_a_write_that_fails_leaves_nothing_and_names_the_path(tmp_path):
    cuts = plan.cut([1], [1], [12], [0], crossfade=0)
    built = timeline.build("my film", cuts, [None], RATE, [[]])
    with pytest.raises(RenderError, match="could not write the timeline .*missing.*writable output folder"):
        timeline.write(built, str(tmp_path / "missing" / "film.otio"))
    assert os.listdir(tmp_path) == []


def test_bad_input_is_named():
    cuts = plan.cut([1, 2], [1, 2], [12, 14], [0, 3], crossfade=2)
    with pytest.raises(RenderError, match="no shots to put on the timeline"):
        timeline.build("f", [], [], RATE, [])
    with pytest.raises(RenderError, match="1 clip paths for 2 shots; pass one per shot"):
        timeline.build("f", cuts, [None], RATE, [[], []])
    with pytest.raises(RenderError, match="3 lists of other takes for 2 shots"):
        timeline.build("f", cuts, [None, None], RATE, [[], [], []])
    for rate in (0, -24.0, float("nan")):
        with pytest.raises(RenderError, match=f"frame rate {rate!r} is not a positive number"):
            timeline.build("f", cuts, [None, None], rate, [[], []])
    with pytest.raises(RenderError, match="lacks take, takes, state"):
        timeline.build("f", cuts, [None, None], RATE, [[], [{"generation": 3}]])
    stray = plan.cut([1, 2], [1, 2], [12, 14], [0, 3], crossfade=0)
    with pytest.raises(RenderError, match="shots 1 and 2 do not meet"):
        timeline.build("f", [cuts[0], stray[1]], [None, None], RATE, [[], []])


def test_available_names_the_fix_when_the_library_is_missing(monkeypatch):
    assert timeline.available() is None
    import builtins
    real_import = builtins.__import__

    def no_otio(name, *args, **kwargs):
        if name == "opentimelineio":
            raise ImportError("No module named 'opentimelineio'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_otio)
    reason = timeline.available()
    assert "pip install opentimelineio==0.18.1" in reason and "ComfyUI's Python" in reason
    with pytest.raises(RenderError, match="opentimelineio does not import"):
        timeline.build("f", plan.cut([1], [1], [12], [0], crossfade=0), [None], RATE, [[]])
