"""The film render (zc_film) with a stand-in decoder: the file it writes read back with PyAV, the
render cache (reuse, a changed take, a damaged entry, its bound), a render killed by a real
SIGKILL and resumed, a real full disk (a small tmpfs), a second render of the same film from another
process, and the refusals (format, frame sizes). The decoder stands in for a VAE: frames are made
from the shot's generation, so every frame of the film can be checked against its source."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch

av = pytest.importorskip("av")

from zc_pack.zc_continuity import film_join
from zc_pack.zc_film import formats, pieces, plan, render
from zc_pack.zc_film.errors import RenderError
from zc_pack.zc_film.segment_cache import SegmentCache

REPO = Path(__file__).resolve().parents[2]
H, W, N = 48, 64, 17  # frames of each stand-in shot
RATE, SR = 16.0, 16000


def shot_frames(generation: int, count: int = N, height: int = H, width: int = W) -> np.ndarray:
    """A shot's decoded frames (float 0..1): a colour per shot, a ramp in time, texture in space."""
    rng = np.random.default_rng(generation)
    base = rng.uniform(0.1, 0.6, (1, 1, 1, 3)).astype(np.float32)
    ramp = np.linspace(0.0, 0.3, count, dtype=np.float32).reshape(-1, 1, 1, 1)
    texture = rng.uniform(0.0, 0.08, (1, height, width, 3)).astype(np.float32)
    return np.clip(base + ramp + texture, 0, 1)


def shot_audio(generation: int, count: int = N) -> np.ndarray:
    t = np.arange(round(count * SR / RATE), dtype=np.float32) / SR
    return np.stack([0.2 * np.sin(2 * np.pi * (200 + 20 * generation) * t)] * 2).astype(np.float32)


class Decoder:
    """Counts its calls; frames by generation; ``sizes`` overrides a generation's frame size."""

    def __init__(self, audio: bool = False, sizes: dict | None = None):
        self.calls: list[int] = []
        self.audio, self.sizes = audio, sizes or {}

    def __call__(self, shot: render.LineShot) -> render.Decoded:
        self.calls.append(shot.generation)
        height, width = self.sizes.get(shot.generation, (H, W))
        frames = torch.from_numpy(shot_frames(shot.generation, height=height, width=width))
        if self.audio:
            return render.Decoded(frames, shot_audio(shot.generation), SR)
        return render.Decoded(frames)


def line(generations, trims=None) -> list[render.LineShot]:
    trims = trims or [0] + [1] * (len(generations) - 1)
    return [render.LineShot(place, g, f"digest-{g}", t) for place, (g, t) in enumerate(zip(generations, trims), 1)]


def job_for(tmp_path: Path, shots, fmt="ffv1-mkv", crossfade=0, limit=10**10, cache=None, out=None,
            timeline=False) -> render.Job:
    fmt = formats.resolve(fmt)
    out = out or tmp_path / "out"
    return render.Job(film="film", shots=shots, fmt=fmt, quality=18, frame_rate=RATE, crossfade=crossfade,
                      identity={"vae": "stand-in"}, output=out / f"film.{fmt.extension}",
                      cache=SegmentCache(cache or tmp_path / "cache", "film", limit),
                      clips=out / "film_clips" if timeline else None,
                      timeline=out / "film.otio" if timeline else None)


def expected_film(shots, crossfade) -> np.ndarray:
    """The film the IMAGE route would give (film_join), in 8-bit: cuts exact; a crossfade blended
    from the 8-bit frames, as the render blends them."""
    clips = [torch.from_numpy(pieces.to_rgb8(shot_frames(s.generation)).astype(np.float32)) for s in shots]
    trims = [0] + [s.trim for s in shots[1:]]
    joined = film_join.join_frames(clips, trims, crossfade)
    return np.clip(np.rint(joined.numpy()), 0, 255).astype(np.uint8)


@pytest.mark.parametrize("crossfade", [0, 3])
def test_a_lossless_film_holds_every_frame_of_the_decoded_shots_after_their_trims(tmp_path, crossfade):
    shots = line([11, 12, 13, 14, 15])
    job = job_for(tmp_path, shots, crossfade=crossfade)
    report = render.render(job, Decoder())
    film = pieces.read_frames(job.output)
    expected = expected_film(shots, crossfade)
    assert report.frames == len(film) == len(expected) == 5 * N - 4 - 4 * crossfade
    # exact for a cut; within one 8-bit level for a blend (the ramp rounds the same, film_join in float)
    assert int(np.abs(film.astype(int) - expected.astype(int)).max()) <= (0 if crossfade == 0 else 1)
    with av.open(str(job.output)) as container:
        stream = container.streams.video[0]
        assert stream.average_rate == 16 and (stream.width, stream.height) == (W, H)
        assert abs(container.duration / 1e6 - report.frames / RATE) < 1 / RATE
    assert report.decoded == [1, 2, 3, 4, 5] and report.reused == []


@pytest.mark.parametrize("name", ["h264-mp4", "vp9-webm", "prores-mov"])
def test_a_lossy_film_plays_at_its_rate_with_its_sound_in_sync(tmp_path, name):
    shots = line([21, 22, 23])
    job = job_for(tmp_path, shots, fmt=name, crossfade=2)
    report = render.render(job, Decoder(audio=True))
    film = pieces.read_frames(job.output)
    expected = expected_film(shots, 2)
    assert len(film) == report.frames == len(expected)
    # the first and last frame of every seam within the codec's loss of the decoded shots' frames
    for cut in report.cuts:
        for frame in (cut.start, cut.end - 1):
            assert np.abs(film[frame].astype(float) - expected[frame]).mean() < 6, (name, frame)
    with av.open(str(job.output)) as container:
        video, audio = container.streams.video[0], container.streams.audio[0]
        assert video.average_rate == 16
        samples = sum(f.samples for f in container.decode(audio))
        rate = audio.codec_context.sample_rate
    # the sound lasts the film, within one frame (encoders pad to whole audio frames)
    assert abs(samples / rate - report.frames / RATE) <= 1 / RATE + 1024 / rate, (samples, rate)
    assert report.audio_samples == round(report.frames * SR / RATE)


def test_a_second_render_decodes_nothing_and_another_take_decodes_that_shot_alone(tmp_path):
    shots = line(list(range(31, 41)))
    decoder = Decoder()
    first = render.render(job_for(tmp_path, shots, crossfade=2), decoder)
    assert len(decoder.calls) == 10 and first.blends_made == 9
    again = render.render(job_for(tmp_path, shots, crossfade=2), decoder)
    assert len(decoder.calls) == 10 and again.reused == list(range(1, 11)) and again.blends_made == 0
    shots[6] = render.LineShot(7, 99, "digest-99", 1)  # another take of shot 7 chosen
    job = job_for(tmp_path, shots, crossfade=2)
    changed = render.render(job, decoder)
    assert decoder.calls[10:] == [99] and changed.decoded == [7]
    assert changed.blends_made == 2  # the two seams of shot 7, from the overlaps the neighbours keep
    assert np.array_equal(pieces.read_frames(job.output), expected_film(shots, 2)) or \
        int(np.abs(pieces.read_frames(job.output).astype(int) - expected_film(shots, 2)).max()) <= 1


def test_an_entry_is_never_served_for_another_shot_and_a_damaged_one_is_decoded_again(tmp_path):
    shots = line([41, 42, 43])
    decoder = Decoder()
    render.render(job_for(tmp_path, shots), decoder)
    # same generation, other bytes (a digest that differs): decoded, not served from the cache
    shots[1] = render.LineShot(2, 42, "digest-42-rewritten", 1)
    render.render(job_for(tmp_path, shots), decoder)
    assert decoder.calls == [41, 42, 43, 42]
    # one byte of a cached piece flipped on disk: the entry fails its check and is made again
    body = next(p for p in (tmp_path / "cache" / "film").glob("*/body.mkv")
                if '"generation": 43' in (p.parent / "entry.json").read_text())
    data = bytearray(body.read_bytes())
    data[len(data) // 2] ^= 0xFF
    body.write_bytes(bytes(data))
    report = render.render(job_for(tmp_path, shots), decoder)
    assert len(decoder.calls) == 5 and len(report.decoded) == 1
    assert any("changed since it was written" in note for note in report.notes), report.notes
    assert np.array_equal(pieces.read_frames(job_for(tmp_path, shots).output), expected_film(shots, 0))


def test_the_cache_stays_within_its_limit_and_keeps_what_the_render_uses(tmp_path):
    decoder = Decoder()
    render.render(job_for(tmp_path, line([51, 52, 53])), decoder)
    used = SegmentCache(tmp_path / "cache", "film", 0).usage()
    report = render.render(job_for(tmp_path, line([61, 62, 63]), limit=used + 1), decoder)
    cache = SegmentCache(tmp_path / "cache", "film", used + 1)
    assert cache.usage() <= used + 1 and len(cache.entries()) == 3
    assert any("older entries removed" in note for note in report.notes)
    # the film just rendered is whole: a render now decodes nothing
    render.render(job_for(tmp_path, line([61, 62, 63]), limit=used + 1), decoder)
    assert decoder.calls == [51, 52, 53, 61, 62, 63]


KILLED_RENDER = textwrap.dedent("""
    import os, signal, sys
    sys.path[:0] = [{repo!r}, {tests!r}]
    from test_film_render import Decoder, job_for, line
    from zc_pack.zc_film import render
    from pathlib import Path
    class Killing(Decoder):
        def __call__(self, shot):
            if shot.place == {kill_at}:
                os.kill(os.getpid(), signal.SIGKILL)
            return super().__call__(shot)
    render.render(job_for(Path({tmp!r}), line(list(range(100, 100 + {shots}))), crossfade=1), Killing())
""")


def test_a_render_killed_mid_film_resumes_from_the_last_finished_shot(tmp_path):
    code = KILLED_RENDER.format(repo=str(REPO), tests=str(REPO / "tests" / "python"), kill_at=6, shots=8,
                                tmp=str(tmp_path))
    child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert child.returncode == -signal.SIGKILL, child.stderr
    job = job_for(tmp_path, line(list(range(100, 108))), crossfade=1)
    assert not job.output.exists()  # never a half-written film under its name
    decoder = Decoder()
    report = render.render(job, decoder)
    assert decoder.calls == [105, 106, 107] and report.reused == [1, 2, 3, 4, 5]
    assert not [p for p in job.output.parent.iterdir() if p.name.startswith(".zc-part-")]
    assert not [p for p in job.cache.root.iterdir() if p.name.startswith(".zc-part-")]
    assert len(pieces.read_frames(job.output)) == report.frames == 8 * N - 7 - 7


@pytest.fixture
def small_disk(tmp_path):
    """A real tmpfs of 3 MB (root only: mount is a privileged call)."""
    mount_point = tmp_path / "small"
    mount_point.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(mount_point)],
                          capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip(f"skipped: cannot mount a tmpfs here ({made.stderr.strip() or 'not root'})")
    yield mount_point
    subprocess.run(["umount", "-l", str(mount_point)], capture_output=True)


def test_a_full_disk_says_the_film_the_folder_and_the_space_and_keeps_the_finished_shots(tmp_path, small_disk):
    shots = line(list(range(200, 206)))
    decoder = Decoder()
    # the film's folder fills: the shots are cached elsewhere, the film cannot be written
    job = job_for(tmp_path, shots, out=small_disk / "out")
    (small_disk / "ballast").write_bytes(b"\0" * (2_900_000))
    with pytest.raises(RenderError) as caught:
        render.render(job, decoder)
    message = str(caught.value)
    assert "film 'film'" in message and str(small_disk / "out") in message and "is full" in message, message
    assert "free" in message and "the file needs about" in message and "kept" in message
    assert not job.output.exists() and not [p for p in (small_disk / "out").iterdir() if p.is_file()]
    (small_disk / "ballast").unlink()
    report = render.render(job, decoder)
    assert len(decoder.calls) == 6 and report.reused == [1, 2, 3, 4, 5, 6]  # nothing decoded again
    # the cache's disk fills mid-film: the shots finished before stay, the next render resumes
    decoder = Decoder()
    cached = job_for(tmp_path, line(list(range(300, 320))), cache=small_disk / "cache")
    (small_disk / "ballast").write_bytes(b"\0" * 1_500_000)
    with pytest.raises(RenderError) as caught:
        render.render(cached, decoder)
    assert "caching shot" in str(caught.value) and "is full" in str(caught.value), caught.value
    done = len(decoder.calls) - 1
    assert done >= 1
    (small_disk / "ballast").unlink()
    report = render.render(cached, decoder)
    assert report.reused == list(range(1, done + 1))


HOLD_LOCK = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, {repo!r})
    from pathlib import Path
    from zc_pack.zc_film import film_lock
    with film_lock.held(Path({folder!r}), "film"):
        print("held", flush=True)
        time.sleep(60)
""")


def test_a_second_render_of_the_same_film_is_refused_while_one_runs(tmp_path):
    job = job_for(tmp_path, line([71, 72]))
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK.format(repo=str(REPO), folder=str(job.cache.root))],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(RenderError, match="is being rendered right now by another prompt or ComfyUI process"):
            render.render(job, Decoder())
    finally:
        holder.kill()
        holder.wait()
    assert render.render(job, Decoder()).frames == 2 * N - 1  # the lock went with the process


def test_bad_input_is_refused_with_what_to_do(tmp_path):
    with pytest.raises(RenderError, match=r"unknown film format 'avi-xvid'; this PyAV build writes: .*ffv1-mkv"):
        formats.resolve("avi-xvid")
    decoder = Decoder(sizes={82: (32, 64)})
    with pytest.raises(RenderError, match=r"shot 2 \(generation 82\) is 64x32, shot 1 \(generation 81\) 64x48"):
        render.render(job_for(tmp_path, line([81, 82])), decoder)
    with pytest.raises(RenderError, match=r"needs an even width and height"):
        render.render(job_for(tmp_path, line([91]), fmt="h264-mp4"), Decoder(sizes={91: (47, 64)}))
    with pytest.raises(RenderError, match=r"shot 2 \(generation 94\) keeps 16 frames after its trim, fewer than its "
                                          r"crossfades need \(9 in \+ 9 out\); lower crossfade_frames to 8"):
        render.render(job_for(tmp_path, line([93, 94, 95]), crossfade=9), Decoder())
    with pytest.raises(RenderError, match="has no shot on its line"):
        render.render(job_for(tmp_path, []), Decoder())


def test_the_plan_gives_the_image_routes_frame_count():
    cuts = plan.cut([1, 2, 3], [5, 6, 7], [81, 81, 41], [9, 1, 5], 4)
    clips = [torch.zeros(n, 1, 1, 3) for n in (81, 81, 41)]
    assert plan.total_frames(cuts) == len(film_join.join_frames(clips, [0, 1, 5], 4))
    assert [c.pieces()["body"] for c in cuts] == [(0, 77), (4, 76), (4, 36)]
