"""ZeroCopyFilmRender: the film under a tag rendered to a video file, one shot at a time.

The IMAGE route (ZeroCopyFilmAssemble) holds the whole decoded film in memory, which a minute of
720p does not fit. This node decodes the chosen line one shot at a time (verified against its
digests first), encodes each shot's trimmed frames into pieces kept in a bounded on-disk cache, and
joins the pieces into one file in ComfyUI's output folder without encoding again (zc_film). Memory
is bounded by one shot; a render after choosing another take decodes that shot only; a stopped
render resumes from the shots already made. Beside the film: per-shot clips and an OpenTimelineIO
timeline for the editor. Its VIDEO output is core's file-backed VideoFromFile.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from .api_version import FOLDED, io

from . import comfy_calls, film_line, runtime, ui_events
from .. import zc_log as log
from .sockets import ContinuityToken
from .tag_inputs import DEFAULT_TAG, tag_problem, validate_tag
from ..zc_continuity.errors import ContinuityError
from ..zc_film import formats, render as film_render
from ..zc_film.errors import RenderError
from ..zc_film.segment_cache import SegmentCache

DECODES = ["auto", "tiled"]
DEFAULT_CACHE_GB = 50.0
_PREFIX = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\- ]{0,63}(/[A-Za-z0-9_][A-Za-z0-9_.\- ]{0,63}){0,3}$")


def cache_base() -> Path:
    """Where the render cache lives: ZEROCOPY_RENDER_CACHE, else beside the spill folder (kept across
    restarts, unlike ComfyUI's temp folder, which it empties at start)."""
    env = os.environ.get("ZEROCOPY_RENDER_CACHE")
    return Path(env) if env else Path(runtime.store().spill_dir).parent / "render_cache"


def cache_limit() -> int:
    env = os.environ.get("ZEROCOPY_RENDER_CACHE_GB")
    try:
        gigabytes = float(env) if env else DEFAULT_CACHE_GB
    except ValueError:
        log.warning("ZEROCOPY_RENDER_CACHE_GB=%r is not a number; using %s", env, DEFAULT_CACHE_GB)
        gigabytes = DEFAULT_CACHE_GB
    return int(gigabytes * 1e9)


def prefix_problem(prefix: str) -> str | None:
    if not isinstance(prefix, str) or not _PREFIX.match(prefix) or ".." in prefix:
        return (f"folder {prefix!r} is not a folder inside the output folder; use up to 4 names of letters, digits, "
                "'_', '-', '.' or spaces joined by '/', such as zerocopy or films/my_film")
    return None


def alternates(doc: dict, shots: list[dict]) -> list[list[dict]]:
    """The other takes at each shot's place (for the timeline's alternates)."""
    by_place: dict[int, list[dict]] = {}
    for shot in doc.get("shots", []):
        by_place.setdefault(shot.get("shot"), []).append(shot)
    out = []
    for shot in shots:
        others = [s for s in by_place.get(shot.get("shot"), []) if s["generation"] != shot["generation"]]
        out.append([{"generation": s["generation"], "take": s.get("take", 1), "takes": s.get("takes", 1),
                     "prompt": s.get("prompt") or "", "state": s.get("state", "alternative")} for s in others])
    return out


class ZeroCopyFilmRender(io.ComfyNode):
    @classmethod
    def define_schema(cls):
        return io.Schema(
            node_id="ZeroCopyFilmRender",
            display_name="ZeroCopy Film Render",
            category="CineFlux/Continuity",
            description=(
                "Renders the film stored under a tag to a video file in the output folder, one shot at a "
                "time: memory holds one shot, however long the film. Each shot of the chosen line is "
                "decoded after its digests verify, its repeated frames dropped, optionally crossfaded, and "
                "encoded; the shots are kept in a render cache, so a render after choosing another take "
                "decodes only that shot, and a stopped render resumes where it stopped. Writes per-shot "
                "clips and an OpenTimelineIO timeline (.otio) for an editor beside the film. Outputs "
                "ComfyUI's VIDEO (for Save Video and any video node)."),
            inputs=[
                io.String.Input("buffer_tag", default=DEFAULT_TAG,
                                tooltip="The film's tag (typed, or linked from the String node that names it)."),
                io.Vae.Input("vae", tooltip="The VAE the film's shots were made with."),
                io.Combo.Input("format", options=list(formats.FORMATS), default=formats.DEFAULT,
                               tooltip="; ".join(f"{f.name}: {f.use}" for f in formats.FORMATS.values())),
                io.Float.Input("frame_rate", default=16.0, min=1.0, max=240.0, step=0.001,
                               tooltip="Frames per second (Wan 16, HunyuanVideo 24, LTX-Video 24 or 25)."),
                io.Int.Input("quality", default=19, min=0, max=63,
                             tooltip="CRF of h264-mp4 and vp9-webm (lower: better and larger); unused by the "
                                     "others."),
                io.String.Input("folder", default="zerocopy",
                                tooltip="Folder inside ComfyUI's output folder; the film is <tag>.<ext> there, "
                                        "its clips in <tag>_clips/, its timeline <tag>.otio."),
                *film_line.range_inputs("render"),
                io.Boolean.Input("timeline", default=True,
                                 tooltip="Also write each shot as a clip and an OpenTimelineIO timeline "
                                         "(<tag>.otio: DaVinci Resolve and other editors open it)."),
                io.Vae.Input("audio_vae", optional=True,
                             tooltip="Audio-video films (LTX-2, MiniMax H3): the audio VAE, to decode the sound and mux it in sync."),
                io.Boolean.Input("assemble_incomplete", default=False, optional=True,
                                 tooltip="Off (default, strict): fails, naming the shot and why, when the film "
                                         "has a shot it cannot place. On: renders the shots of the line that "
                                         "verify and lists the ones left out in info."),
                ContinuityToken.Input("continuity", optional=True,
                                      tooltip="Link from ZeroCopyLatentStore (or from End Loop, carrying it) "
                                              "so the render runs after the film's last shot is stored; its "
                                              "tag is the film rendered."),
                io.Combo.Input("decode", options=DECODES, default="auto", optional=True, **FOLDED,
                               tooltip="auto: core's VAE decode (it tiles by itself when memory runs short). "
                                       "tiled: core's tiled decode with the sizes below, for shots too large "
                                       "to decode whole."),
                io.Int.Input("tile_size", default=512, min=64, max=4096, step=32, optional=True, **FOLDED,
                             tooltip="Tiled decode: tile size in pixels."),
                io.Int.Input("tile_overlap", default=64, min=0, max=4096, step=32, optional=True, **FOLDED,
                             tooltip="Tiled decode: overlap of the tiles in pixels."),
                io.Int.Input("temporal_size", default=64, min=8, max=4096, step=4, optional=True, **FOLDED,
                             tooltip="Tiled decode, video VAEs: frames decoded at a time."),
                io.Int.Input("temporal_overlap", default=8, min=4, max=4096, step=4, optional=True, **FOLDED,
                             tooltip="Tiled decode, video VAEs: frames of overlap."),
            ],
            outputs=[
                io.Video.Output(display_name="video", tooltip="The film file, as ComfyUI's VIDEO."),
                io.String.Output(display_name="info",
                                 tooltip="The file, then each shot: generation, take, frames, trim, and "
                                         "whether it was decoded or reused."),
            ],
            is_output_node=True,
        )

    @classmethod
    def validate_inputs(cls, buffer_tag=DEFAULT_TAG, folder="zerocopy"):
        # no **kwargs: ComfyUI repeats a refusal once per input it passed here, under each name
        tag = validate_tag(buffer_tag)
        if tag is not True:
            return tag
        return (prefix_problem(folder) if folder is not None else None) or True

    @classmethod
    def fingerprint_inputs(cls, buffer_tag=DEFAULT_TAG, **kwargs):
        return film_line.fingerprint(buffer_tag)

    @classmethod
    def execute(cls, buffer_tag=DEFAULT_TAG, vae=None, format=formats.DEFAULT, frame_rate=16.0, quality=19,
                folder="zerocopy", crossfade_frames=0, first_shot=1, last_shot=0, seam_trim=-1, timeline=True,
                audio_vae=None, assemble_incomplete=False, continuity=None, decode="auto", tile_size=512,
                tile_overlap=64, temporal_size=64, temporal_overlap=8) -> io.NodeOutput:
        if continuity is not None:
            buffer_tag = continuity["tag"]
        problem = tag_problem(buffer_tag) or prefix_problem(folder)
        if problem:
            raise ValueError(problem)
        if decode not in DECODES:
            raise ValueError(f"decode {decode!r} is not one of {', '.join(DECODES)}")
        try:
            fmt = formats.resolve(format)
        except RenderError as exc:
            raise ContinuityError(str(exc)) from None
        chosen = film_line.read(buffer_tag, first_shot, last_shot, seam_trim, assemble_incomplete, verify=True,
                                verb="rendered")
        doc, shots, missing = chosen.doc, chosen.shots, chosen.missing
        line = [film_render.LineShot(place, s["generation"], f"{s.get('digest')}:{s.get('shape')}", trim,
                                     s.get("take", 1), s.get("takes", 1), s.get("prompt") or "")
                for place, (s, trim) in enumerate(zip(shots, chosen.trims), start=first_shot)]
        settings = {"decode": decode}
        if decode == "tiled":
            settings.update(tile=tile_size, overlap=tile_overlap, temporal=temporal_size,
                            temporal_overlap=temporal_overlap)
        identity = {"vae": comfy_calls.vae_identity(vae), "settings": settings,
                    "audio_vae": comfy_calls.vae_identity(audio_vae) if audio_vae is not None else None}
        out_dir = Path(comfy_calls.output_directory()) / folder
        store = runtime.store()

        def decode_shot(shot: film_render.LineShot) -> film_render.Decoded:
            streams = film_line.shot_streams(store, buffer_tag, shot.place, shot.generation, "renders")
            if decode == "tiled":
                frames = comfy_calls.vae_decode_tiled(vae, streams[0], tile_size, tile_overlap, temporal_size,
                                                      temporal_overlap)
            else:
                frames = comfy_calls.vae_decode(vae, streams[0])
            if audio_vae is None:
                return film_render.Decoded(frames)
            wave, rate = comfy_calls.audio_vae_decode(
                audio_vae, film_line.audio_stream(streams, shot.place, shot.generation, "render"))
            return film_render.Decoded(frames, wave[0].float().cpu().numpy(), rate)

        job = film_render.Job(
            film=buffer_tag, shots=line, fmt=fmt, quality=int(quality), frame_rate=float(frame_rate),
            crossfade=int(crossfade_frames), identity=identity, output=out_dir / f"{buffer_tag}.{fmt.extension}",
            cache=SegmentCache(cache_base(), buffer_tag, cache_limit()),
            clips=out_dir / f"{buffer_tag}_clips" if timeline else None,
            timeline=out_dir / f"{buffer_tag}.otio" if timeline else None,
            alternates=alternates(doc, shots))
        progress = comfy_calls.progress_bar(len(line))
        try:
            report = film_render.render(job, decode_shot, lambda done: progress.update(1))
        except RenderError as exc:
            raise ContinuityError(str(exc)) from None
        info = _info(job, report, missing, doc)
        log.info(info.replace("\n", " | "))
        if report.notes:  # a damaged cache entry made again, no timeline, the cache trimmed: said where users look
            log.warning("film %r: %s", buffer_tag, "; ".join(report.notes))
            ui_events.warn(f"ZeroCopy film {buffer_tag!r} rendered, with notes", "; ".join(report.notes))
        subfolder = folder.strip("/")
        return io.NodeOutput(comfy_calls.video_from_file(str(job.output)), info,
                             ui=comfy_calls.preview_video(job.output.name, subfolder))


def _info(job, report, missing: list[str], doc: dict) -> str:
    seconds = report.frames / job.frame_rate
    head = (f"ZeroCopy film {job.film!r}: {len(job.shots)} shots"
            + (f" (INCOMPLETE: {len(missing)} shot(s) could not be placed)" if missing else "")
            + f", {report.frames} frames ({seconds:.2f} s at {job.frame_rate:g} fps), {report.width}x{report.height}, "
            f"{job.fmt.name}, {report.bytes / 1e6:.1f} MB -> {job.output.parent.name}/{job.output.name}; "
            f"{len(report.decoded)} shot(s) decoded, {len(report.reused)} reused from the render cache, "
            f"in {report.seconds:.1f} s")
    decoded = set(report.decoded)
    lines = [f"shot {c.place}: generation {c.generation}, take {s.take}/{s.takes}, {c.decoded} frames, trim {c.trim}, "
             f"{c.kept} kept, film frames {c.start}-{c.end - 1}, {'decoded' if c.place in decoded else 'reused'}"
             for c, s in zip(report.cuts, job.shots)]
    extra = []
    if report.timeline:
        extra.append(f"timeline: {job.timeline.name} with {len(report.clips)} clips in {job.clips.name}/")
    if report.sample_rate:
        extra.append(f"audio: {report.audio_samples} samples at {report.sample_rate} Hz")
    notes = [f"note: {p}" for p in doc.get("problems", []) if p not in missing] + [f"note: {n}" for n in report.notes]
    notes += [f"LEFT OUT (assemble_incomplete is on): {p}" for p in missing]
    return "\n".join([head, *lines, *extra, *notes])
