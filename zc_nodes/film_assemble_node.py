"""ZeroCopyFilmAssemble: the film under a tag as one clip.

The engine reads the film from the spill files (film_view): the chosen line of shots, each with
the pixel frames its start repeats of the shot before (its lineage's ``trim``). This node decodes
every shot on the line from the store (verified against its digests first), drops each seam's
overlap, optionally crossfades a few frames there, and joins the clips in order (film_join).
Audio-video shots (LTX-2) decode their audio stream too, joined at the same seams.

Memory: the film's IMAGE batch is allocated once, at the size projected from the first shot
(its pixel frames per latent frame, film_join.pixel_frames), and each shot's kept frames are
written into it as soon as the shot is decoded; the clip is then dropped. The peak is the film
plus one decoded shot, not the film twice. Every shot is checked against the projection (a shot
that decodes to other frames regrows the batch once, never gives wrong frames), and a film that
cannot fit in the memory there is (``memory_available``, with a margin) is refused after its first
shot, before any more are decoded: long films go to a video file with ZeroCopyFilmRender.

The film is read verified (film_view.describe with verify: every file against its tensors' and
its record digest, every hop against its parent's tail), as ZeroCopyFilmRender reads it. A film
with a shot the engine cannot place (its parent has no spill file: pruned, deleted, or a farm
worker that never received the film's first shots; or a header that no longer matches its record
digest, so its lineage cannot be trusted) is refused, naming the shot, why and what to do: the
node never returns fewer shots than the film has without saying so, and a hop that fails its
check is noted in ``info``. The
``assemble_incomplete`` input (off by default) joins only the line that verifies instead, and
lists what it left out in ``info``. On a farm the film's missing ancestors are first fetched
from Redis when it still holds them (farm_link.complete_film).
"""

from __future__ import annotations

import math

import torch

from .api_version import io

from . import comfy_calls, film_line, runtime
from .. import zc_log as log
from .tag_inputs import DEFAULT_TAG, tag_problem, validate_tag
from ..zc_continuity import film_join
from ..zc_continuity.errors import ContinuityError


MARGIN = 0.9  # a film may use at most this share of the free memory: the rest is the system's and ComfyUI's


def frames_of(image) -> int:
    return int(image.shape[0])


def latent_frames(latent) -> int:
    """A shot's latent frames, as the engine's film counts them: axis 2 of a 5-D video latent, the
    batch of a 4-D image one."""
    return int(latent.shape[2] if latent.ndim == 5 else latent.shape[0])


def memory_available(device=None) -> int | None:
    """Bytes that can still be allocated where the film's frames go: the RAM free now (psutil) for
    a batch on the CPU, the free memory of the device (and torch's cached blocks) for a CUDA one;
    None when unknown (no psutil: the check is skipped, logged at debug level)."""
    try:
        if getattr(device, "type", "cpu") == "cuda":
            free, _ = torch.cuda.mem_get_info(device)
            return int(free + torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device))
        import psutil
        return int(psutil.virtual_memory().available)
    except Exception as exc:  # noqa: BLE001 - unknown: assemble without the check rather than refuse
        log.debug("no figure of free memory (%s): the film's size is not checked against it", exc)
        return None


def size_text(count: float) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if count >= scale:
            return f"{count / scale:.1f} {unit}"
    return f"{int(count)} bytes"


def check_fits(tag: str, frames: int, clip, shot_frames: int) -> None:
    """Refuse, before decoding more shots, a film whose IMAGE batch (``frames`` frames of the
    decoded ``clip``'s size) and one shot of ``shot_frames`` frames beside it (while decoding) need
    more than MARGIN of the memory there is: what memory_available says plus the clip, which is
    already held and is freed as the film fills."""
    if not isinstance(clip, torch.Tensor) or clip.ndim != 4:
        return  # not an IMAGE batch: the join names it
    free = memory_available(clip.device)
    if free is None:
        return
    frame = math.prod(clip.shape[1:]) * clip.element_size()
    film, shot, have = frames * frame, shot_frames * frame, free + frames_of(clip) * frame
    if film + shot <= MARGIN * have:
        return
    where = "this machine" if clip.device.type == "cpu" else f"device {clip.device}"
    raise ContinuityError(
        f"film {tag!r} needs {size_text(film)} as an IMAGE batch ({frames} frames of "
        f"{clip.shape[2]}x{clip.shape[1]}; one shot {size_text(shot)} more while decoding) and {where} has "
        f"{size_text(have)} free (the node uses at most {MARGIN:.0%} of it): render it to a video file with "
        "ZeroCopyFilmRender (memory of one shot), or assemble fewer shots with first_shot/last_shot")


class ZeroCopyFilmAssemble(io.ComfyNode):
    @classmethod
    def define_schema(cls):
        return io.Schema(
            node_id="ZeroCopyFilmAssemble",
            display_name="ZeroCopy Film Assemble",
            category="CineFlux/Continuity",
            description=(
                "Joins the film stored under a tag into one clip: the shots of its chosen line in "
                "order (takes you chose in the sidebar's storyboard are followed), each decoded "
                "after its digests verify, the frames each shot repeats of the one before dropped, "
                "with an optional crossfade at the seams. Audio-video shots give their audio too. A film "
                "with a shot that cannot be placed (a missing parent) fails with its name, unless "
                "assemble_incomplete is on (off by default). The whole film is held in memory as "
                "one IMAGE batch (a film too large for it is refused after its first shot): render "
                "long films to a video file with ZeroCopyFilmRender, which holds one shot at a time."),
            inputs=[
                io.String.Input("buffer_tag", default=DEFAULT_TAG,
                                tooltip="The film's tag (typed, or linked from the String node that names it)."),
                io.Vae.Input("vae", tooltip="The VAE the film's shots were made with."),
                *film_line.range_inputs("join"),
                io.Vae.Input("audio_vae", optional=True,
                             tooltip="LTX-2 films: the audio VAE, to decode and join the audio too."),
                io.Float.Input("frame_rate", default=25.0, min=1.0, max=240.0, optional=True,
                               tooltip="Frames per second of the film (audio only: converts the seams' "
                                       "frames to audio samples)."),
                io.Boolean.Input("assemble_incomplete", default=False, optional=True,
                                 tooltip="Off (default, strict): the node fails, naming the shot and why, when "
                                         "the film has a shot it cannot place (its parent is missing, e.g. on a "
                                         "farm worker that never received the film's first shots). On: joins "
                                         "only the shots of the line that verify and lists the ones left out "
                                         "in info."),
            ],
            outputs=[
                io.Image.Output(display_name="images", tooltip="The film's frames, in order."),
                io.Audio.Output(display_name="audio",
                                tooltip="The film's sound (audio-video films with an audio_vae; else None)."),
                io.String.Output(display_name="info", tooltip="Which shots, trims and frame counts."),
            ],
        )

    @classmethod
    def validate_inputs(cls, buffer_tag=DEFAULT_TAG):
        return validate_tag(buffer_tag)

    @classmethod
    def fingerprint_inputs(cls, buffer_tag=DEFAULT_TAG, **kwargs):
        return film_line.fingerprint(buffer_tag)

    @classmethod
    def execute(cls, buffer_tag=DEFAULT_TAG, vae=None, crossfade_frames=0, first_shot=1, last_shot=0,
                seam_trim=-1, audio_vae=None, frame_rate=25.0, assemble_incomplete=False) -> io.NodeOutput:
        problem = tag_problem(buffer_tag)
        if problem:
            raise ValueError(problem)
        # verified: every file of the film against its digests and its record digest, every hop
        # against its parent's tail, so a shot whose lineage was rewritten (another parent, another
        # trim) is refused here, or left out and said with assemble_incomplete, never joined silently
        line = film_line.read(buffer_tag, first_shot, last_shot, seam_trim, assemble_incomplete, verify=True,
                              verb="assembled")
        doc, shots, trims, missing = line.doc, line.shots, line.trims, line.missing
        store = runtime.store()
        progress = comfy_calls.progress_bar(len(shots))
        # The film's latent frames per shot (the engine's film doc); pixel frames are projected
        # from the shots decoded so far and checked as each shot decodes.
        planned = [int(shot.get("frames") or 0) for shot in shots]
        known, projected, joiner, decoded, mismatches = [], [], None, 0, []
        waves, sample_rate, lines = [], None, []
        for index, (shot, trim) in enumerate(zip(shots, trims)):
            place, generation = first_shot + index, shot["generation"]
            streams = film_line.shot_streams(store, buffer_tag, place, generation, "joins")
            clip = comfy_calls.vae_decode(vae, streams[0])
            count = frames_of(clip)
            if joiner is None or count != projected[index]:
                if joiner is not None:
                    mismatches.append(f"shot {place} decoded to {count} frames where {projected[index]} were "
                                      f"projected from its {latent_frames(streams[0])} latent frames")
                known.append((latent_frames(streams[0]), count))
                projected[index:] = [count] + [film_join.pixel_frames(t, known) for t in planned[index + 1:]]
                total = film_join.joined_length(projected, trims, crossfade_frames)
                if joiner is None or total > joiner.capacity:
                    check_fits(buffer_tag, total, clip, max(projected[index:]))
                if joiner is None:
                    joiner = film_join.FrameJoiner(total, trims, crossfade_frames)
                else:
                    joiner.expect(total)
            joiner.add(clip)
            del clip  # its frames are in the film now: one decoded shot in memory at a time
            decoded += count
            if audio_vae is not None:
                wave, rate = comfy_calls.audio_vae_decode(
                    audio_vae, film_line.audio_stream(streams, place, generation, "assemble"))
                if sample_rate not in (None, rate):
                    raise ContinuityError(f"shot {place} decodes at {rate} Hz, the shots before at "
                                          f"{sample_rate} Hz; use one audio VAE for the whole film")
                waves.append(wave)
                sample_rate = rate
            lines.append(f"shot {place}: generation {generation}, take {shot.get('take', 1)}/"
                         f"{shot.get('takes', 1)}, {count} frames, trim {trim}"
                         f", {count - trim} kept")
            progress.update(1)
        images = joiner.result()
        audio = None
        if waves:
            joined = film_join.join_audio(waves, trims, sample_rate / float(frame_rate), crossfade_frames)
            audio = {"waveform": joined, "sample_rate": int(sample_rate)}
        seams = len(shots) - 1
        head = (f"ZeroCopy film {buffer_tag!r}: {len(shots)} shots"
                + (f" (INCOMPLETE: {len(missing)} shot(s) could not be placed)" if missing else "")
                + f", {frames_of(images)} frames = "
                f"{decoded} decoded - {sum(trims)} trimmed"
                + (f" - {seams} x {crossfade_frames} crossfaded" if crossfade_frames and seams else ""))
        notes = [f"note: {p}" for p in doc.get("problems", []) if p not in missing]
        notes += [f"LEFT OUT (assemble_incomplete is on): {p}" for p in missing]
        if mismatches:
            notes.append(f"note: {'; '.join(mismatches)}: the film's batch was projected again"
                         + (f" and reallocated {joiner.grown} time(s) (the film twice in memory for a "
                            "moment)" if joiner.grown else ""))
        info = "\n".join([head, *lines, *notes])
        log.info(info.replace("\n", " | "))
        return io.NodeOutput(images, audio, info)
