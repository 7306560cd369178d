"""Rendering a film's line into a video file, one shot at a time.

For each shot on the line, in order: its pieces come from the cache when an entry made from the
same things exists and checks (segment_cache), else the shot is decoded (the caller's ``decode``),
its trim dropped, and its head, body and tail encoded into a new entry; the decoded frames are
then dropped, so memory holds one shot. Each seam's crossfade is made from the raw overlap frames
the two entries keep (c frames each), and cached too. The film file is then joined from the pieces
(remux), the per-shot clips likewise, and the timeline written. Every file appears whole or not at
all, and every entry is in place as soon as its shot is done: a render stopped anywhere resumes
from the shots already made, decoding none of them again.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import film_lock, pieces, plan, remux, timeline
from .errors import RenderError
from .files import remove_stale_parts, size_text
from .formats import Format, check_size
from .segment_cache import Entry, SegmentCache

VERSION = 1  # of the entries' layout: a change makes every entry new


@dataclass
class LineShot:
    """A shot on the film's line, as the render needs it."""

    place: int          # 1-based place on the line
    generation: int
    digest: str         # the stored shot's digest: what its latent is
    trim: int           # frames its start repeats of the shot before
    take: int = 1
    takes: int = 1
    prompt: str = ""


@dataclass
class Decoded:
    """What decoding a shot gives: IMAGE frames [n, H, W, C] (0..1) and, for audio-video films, the
    waveform [channels, samples] at ``sample_rate``."""

    frames: object
    audio: np.ndarray | None = None
    sample_rate: int | None = None


@dataclass
class Job:
    film: str                    # the tag
    shots: list[LineShot]
    fmt: Format
    quality: int
    frame_rate: float
    crossfade: int
    identity: dict               # what else makes a decode: the VAE's identity, decode settings, ...
    output: Path                 # the film file
    cache: SegmentCache
    clips: Path | None = None    # folder of per-shot clips (None: none written)
    timeline: Path | None = None  # the .otio file (None: none written)
    alternates: list[list[dict]] = field(default_factory=list)  # the other takes at each place


@dataclass
class Report:
    frames: int = 0
    width: int = 0
    height: int = 0
    decoded: list[int] = field(default_factory=list)   # places decoded this time
    reused: list[int] = field(default_factory=list)    # places whose pieces came from the cache
    blends_made: int = 0
    bytes: int = 0
    audio_samples: int = 0
    sample_rate: int | None = None
    cuts: list[plan.ShotCut] = field(default_factory=list)
    clips: list[str | None] = field(default_factory=list)
    timeline: str | None = None
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0


def _what(job: Job, index: int, shot: LineShot, fade_in: int, fade_out: int) -> dict:
    return {"kind": "shot", "version": VERSION, "film": job.film, "generation": shot.generation,
            "digest": shot.digest, "trim": 0 if index == 0 else int(shot.trim), "fade_in": fade_in,
            "fade_out": fade_out, "format": job.fmt.name, "quality": job.quality if job.fmt.quality_option else None,
            "rate": str(pieces.rate_of(job.frame_rate)), "identity": job.identity}


def _fit(samples: np.ndarray, count: int) -> np.ndarray:
    """``samples`` [channels, n] cut or padded with silence to ``count`` samples."""
    if samples.shape[-1] >= count:
        return samples[..., :count]
    return np.concatenate([samples, np.zeros(samples.shape[:-1] + (count - samples.shape[-1],), samples.dtype)], -1)


def _make_entry(job: Job, index: int, shot: LineShot, what: dict, decoded: Decoded) -> Entry:
    fade_in, fade_out = what["fade_in"], what["fade_out"]
    frames = pieces.to_rgb8(decoded.frames)
    count, height, width = int(frames.shape[0]), int(frames.shape[1]), int(frames.shape[2])
    trim = what["trim"]
    plan.check_shot(shot.place, shot.generation, count, trim, fade_in, fade_out)
    check_size(job.fmt, width, height)
    kept = frames[trim:]
    del frames
    rate = pieces.rate_of(job.frame_rate)
    facts = {"decoded": count, "kept": int(kept.shape[0]), "width": width, "height": height}
    what_for = f"caching shot {shot.place} of film {job.film!r}"
    with job.cache.stage(what, what_for=what_for) as stage:
        cut = plan.ShotCut(shot.place, shot.generation, count, trim, fade_in, fade_out, 0)
        for name, (first, stop) in cut.pieces().items():
            if stop > first:
                pieces.encode(stage.folder / f"{name}.{job.fmt.extension}", kept[first:stop], job.fmt, rate,
                              job.quality, what=what_for)
        if fade_in:
            np.save(stage.folder / "head.npy", kept[:fade_in])
        if fade_out:
            np.save(stage.folder / "tail.npy", kept[kept.shape[0] - fade_out:])
        if decoded.audio is not None:
            wave = np.asarray(decoded.audio, dtype=np.float32)
            if wave.ndim != 2:
                raise RenderError(f"shot {shot.place} (generation {shot.generation}): audio of shape "
                                  f"{list(wave.shape)} is not [channels, samples]")
            per_frame = decoded.sample_rate / job.frame_rate
            audio = _fit(wave[:, round(trim * per_frame):], round(facts["kept"] * per_frame))
            np.save(stage.folder / "audio.npy", audio)
            facts.update(sample_rate=int(decoded.sample_rate), channels=int(wave.shape[0]))
        stage.facts = facts
    return stage.entry


def _blend_piece(job: Job, before: Entry, after: Entry, place: int) -> tuple[Entry, bool]:
    what = {"kind": "blend", "version": VERSION, "out_of": before.key, "into": after.key}
    entry = job.cache.get(what)
    if entry is not None:
        return entry, False
    tail = np.load(before.path("tail.npy")).astype(np.float32)
    head = np.load(after.path("head.npy")).astype(np.float32)
    weights = np.asarray(plan.ramp(head.shape[0]), np.float32).reshape(-1, 1, 1, 1)
    blended = np.clip(np.rint(tail * (1 - weights) + head * weights), 0, 255).astype(np.uint8)
    what_for = f"caching the crossfade into shot {place} of film {job.film!r}"
    with job.cache.stage(what, what_for=what_for) as stage:
        pieces.encode(stage.folder / f"blend.{job.fmt.extension}", blended, job.fmt,
                      pieces.rate_of(job.frame_rate), job.quality, what=what_for)
    return stage.entry, True


def _audio(entry: Entry) -> np.ndarray | None:
    path = entry.path("audio.npy")
    return None if path is None else np.load(path, mmap_mode="r")


def _segments(job: Job, entries: list[Entry], blends: list[Entry | None], cuts: list[plan.ShotCut],
              per_frame: float | None):
    """The film's segments in order, the audio of each cut to keep the sound on its frames."""
    ext = job.fmt.extension
    frames_done = samples_done = 0

    def audio_for(parts: list[np.ndarray], frames: int) -> np.ndarray | None:
        nonlocal frames_done, samples_done
        frames_done += frames
        if per_frame is None:
            return None
        target = round(frames_done * per_frame) - samples_done
        samples_done += target
        joined = parts[0] if len(parts) == 1 else np.concatenate(parts, -1)
        return _fit(np.asarray(joined, np.float32), target)

    for index, (entry, cut) in enumerate(zip(entries, cuts)):
        audio = _audio(entry) if per_frame else None
        if index and cut.fade_in:
            sound = None
            if per_frame:
                before = _audio(entries[index - 1])
                count = round(cut.fade_in * per_frame)
                weights = np.asarray(plan.ramp(count), np.float32)
                sound = before[:, before.shape[-1] - count:] * (1 - weights) + audio[:, :count] * weights
            yield remux.Segment(blends[index].path(f"blend.{ext}"), cut.fade_in,
                                audio_for([sound], cut.fade_in) if per_frame else None)
        body = None
        if per_frame:
            start, stop = round(cut.fade_in * per_frame), audio.shape[-1] - round(cut.fade_out * per_frame)
            body = audio[:, start:stop]
        yield remux.Segment(entry.path(f"body.{ext}"), cut.body, audio_for([body], cut.body) if per_frame else None)


def _clip_name(job: Job, shot: LineShot, entry: Entry) -> str:
    return f"shot_{shot.place:04d}_gen_{shot.generation:06d}_{entry.key[:8]}.{job.fmt.extension}"


CLIP_NAME = re.compile(r"^shot_\d{4,}_gen_\d{6,}_[0-9a-f]{8}\.\w+$")


def _write_clips(job: Job, entries: list[Entry], cuts: list[plan.ShotCut]) -> list[str]:
    """Each shot's kept frames (head, body and tail: no crossfade) as a clip file; a clip already
    there from an earlier render of the same entry is kept, clips of shots no longer on the line go."""
    names, ext = [], job.fmt.extension
    rate = pieces.rate_of(job.frame_rate)
    job.clips.mkdir(parents=True, exist_ok=True)
    remove_stale_parts(job.clips)
    for shot, entry, cut in zip(job.shots, entries, cuts):
        name = _clip_name(job, shot, entry)
        names.append(name)
        if (job.clips / name).is_file():
            continue
        audio = _audio(entry)
        segments = [remux.Segment(entry.path(f"{part}.{ext}"), stop - first)
                    for part, (first, stop) in cut.pieces().items() if stop > first]
        if audio is not None:
            segments[-1].audio = np.asarray(audio)
        remux.join(job.clips / name, segments, job.fmt, rate, film=f"{job.film} shot {shot.place}",
                   sample_rate=entry.facts.get("sample_rate"), channels=entry.facts.get("channels", 0))
    for path in job.clips.iterdir():
        if CLIP_NAME.match(path.name) and path.name not in names:
            path.unlink(missing_ok=True)
    return names


def render(job: Job, decode: Callable[[LineShot], Decoded], progress: Callable[[int], None] = lambda done: None
           ) -> Report:
    """Render ``job``; ``decode`` is called only for shots the cache cannot serve, one at a time;
    ``progress(n)`` after each shot (n shots done). RenderError for anything the user can fix."""
    if not job.shots:
        raise RenderError(f"film {job.film!r} has no shot on its line to render")
    started = time.monotonic()
    report = Report()
    with film_lock.held(job.cache.root, job.film):
        job.cache.remove_stale_stages()
        remove_stale_parts(job.output.parent)
        entries: list[Entry] = []
        size = rate = None
        for index, (shot, (fade_in, fade_out)) in enumerate(zip(job.shots, plan.fades(len(job.shots),
                                                                                      job.crossfade))):
            what = _what(job, index, shot, fade_in, fade_out)
            entry = job.cache.get(what)
            if entry is None:
                entry = _make_entry(job, index, shot, what, decode(shot))
                report.decoded.append(shot.place)
            else:
                report.reused.append(shot.place)
            facts = entry.facts
            if size is None:
                size, rate, first = (facts["width"], facts["height"]), facts.get("sample_rate"), shot
            elif (facts["width"], facts["height"]) != size:
                raise RenderError(f"film {job.film!r}: shot {shot.place} (generation {shot.generation}) is "
                                  f"{facts['width']}x{facts['height']}, shot {first.place} (generation "
                                  f"{first.generation}) {size[0]}x{size[1]}; a film's shots must share one size: "
                                  "render the line in parts (first_shot/last_shot) or the odd shot again")
            elif facts.get("sample_rate") != rate:
                raise RenderError(f"film {job.film!r}: shot {shot.place} has audio at {facts.get('sample_rate')} "
                                  f"Hz, shot {first.place} at {rate} Hz; decode every shot with one audio VAE")
            entries.append(entry)
            progress(index + 1)
        cuts = plan.cut([s.place for s in job.shots], [s.generation for s in job.shots],
                        [e.facts["decoded"] for e in entries],
                        [0] + [s.trim for s in job.shots[1:]], job.crossfade)
        blends: list[Entry | None] = [None]
        for index in range(1, len(entries)):
            if cuts[index].fade_in:
                entry, made = _blend_piece(job, entries[index - 1], entries[index], job.shots[index].place)
                blends.append(entry)
                report.blends_made += made
            else:
                blends.append(None)
        per_frame = rate / job.frame_rate if rate else None
        channels = entries[0].facts.get("channels", 0)
        needed = sum(e.size for e in entries) + sum(b.size for b in blends if b is not None)
        joined = remux.join(job.output, _segments(job, entries, blends, cuts, per_frame), job.fmt,
                            pieces.rate_of(job.frame_rate), film=job.film, sample_rate=rate, channels=channels,
                            needed=needed)
        report.frames, report.bytes, report.audio_samples = joined["frames"], joined["bytes"], joined["audio_samples"]
        report.width, report.height = size
        report.sample_rate, report.cuts = rate, cuts
        if report.frames != plan.total_frames(cuts):
            raise RenderError(f"film {job.film!r}: {report.frames} frames were written where the plan has "
                              f"{plan.total_frames(cuts)}; clear the film's render cache and render again")
        names = _write_clips(job, entries, cuts) if job.clips is not None else []
        if job.timeline is not None:
            report.timeline = _write_timeline(job, cuts, names, report)
        report.clips = names
        keep = {e.key for e in entries} | {b.key for b in blends if b is not None}
        removed, freed = job.cache.trim(keep)
        if removed:
            report.notes.append(f"render cache: {removed} older entries removed ({size_text(freed)}) to stay within "
                                f"{size_text(job.cache.limit)}")
        report.notes += job.cache.notes
    report.seconds = time.monotonic() - started
    return report


def _write_timeline(job: Job, cuts: list[plan.ShotCut], names: list[str], report: Report) -> str | None:
    missing = timeline.available()
    if missing:
        report.notes.append(missing)
        return None
    folder = job.timeline.parent
    clips = [str((job.clips / n).relative_to(folder)) if job.clips is not None else None for n in names] or \
        [None] * len(cuts)
    built = timeline.build(job.film, cuts, clips, job.frame_rate, job.alternates or [[] for _ in cuts],
                           film_file=str(job.output.relative_to(folder)) if job.output.parent == folder else None,
                           width=report.width, height=report.height)
    timeline.write(built, str(job.timeline))
    return str(job.timeline)
