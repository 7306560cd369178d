"""ZeroCopyLatentLoad: a stored shot as a plain LATENT, for the nodes creators already use.

SVI 2.0 Pro (KJNodes' WanImageToVideoSVIPro: ``anchor_samples`` = the film's
first shot, ``prev_samples`` = the previous one), core's
WanSoundImageToVideoExtend (``video_latent``), LatentConcat, LatentCut,
ReplaceVideoLatentFrames: all take LATENTs and lose them at the end of a queue
run. This node serves them from the store: the newest shot, the film's first
(its anchor) or a given generation, whole or its last latents, verified
against the stored digests and bit-identical, as zero-copy views (an
audio-video shot as the NestedTensor ComfyUI's own nodes expect). It
fingerprints like the Handoff, so a newly stored shot re-runs it.
"""

from __future__ import annotations

import math

from .api_version import io

from . import comfy_calls, family_resolution, farm_link, film_view, load_lineage, runtime
from .. import zc_log as log
from .tag_inputs import DEFAULT_TAG, store_state, tag_problem, validate_tag
from ..zc_continuity import bundle_layout, latent_cut
from ..zc_continuity.errors import ContinuityError
from ..zc_engine import NotFound, digest_tensor

SHOTS = ["newest", "first", "generation"]
FRAMES_FROM = ["end", "start"]


def pick(store, tag: str, shot: str, generation: int):
    """(stored bundle, notes) for the choice; raises a clear error when there is no such shot."""
    if shot == "generation" and generation < 1:
        raise ContinuityError(f"shot 'generation' needs generation 1 or more (got {generation}); set "
                              "'generation', or choose shot 'newest' or 'first'")
    if shot != "first":  # the farm's newer shot, the generation asked for, or the newest
        return film_view.continue_from(store, tag, generation if shot == "generation" else 0)
    kept = store.generations(tag)
    if not kept:
        return store.get(tag, 0, verify=True), []  # raises NotFound with the engine's message
    first = min(kept)
    bundle = store.get(tag, first, verify=True)
    return bundle, [f"first: generation {first}, the oldest the store still holds for the tag",
                    *([bundle.record_note] if bundle.record_note else []), *farm_link.origin_notes(bundle.meta)]


class ZeroCopyLatentLoad(io.ComfyNode):
    @classmethod
    def define_schema(cls):
        return io.Schema(
            node_id="ZeroCopyLatentLoad",
            display_name="ZeroCopy Latent Load",
            category="CineFlux/Continuity",
            hidden=[io.Hidden.unique_id],
            description=(
                "Loads a stored shot as a plain LATENT for any node that takes one (SVI 2.0 Pro's "
                "anchor_samples / prev_samples, WanSoundImageToVideoExtend's video_latent, "
                "LatentConcat, ...): the newest shot, the film's first, or a generation; whole, or "
                "its last latent frames. Verified against its digests and bit-identical, without a "
                "copy; an audio-video shot comes as the nested latent ComfyUI's own nodes use. Re-runs "
                "whenever a new shot is stored under the tag. The info output says what was loaded."),
            inputs=[
                io.String.Input("buffer_tag", default=DEFAULT_TAG,
                                tooltip="The tag the Store wrote (typed, or linked from the String node "
                                        "that names the film)."),
                io.Combo.Input("shot", options=SHOTS, default="newest",
                               tooltip="newest: the newest shot that verifies (a corrupt newest file is "
                                       "skipped and said so). first: the film's first shot, its anchor "
                                       "(SVI's anchor_samples). generation: the one set below."),
                io.Int.Input("generation", default=0, min=0, max=2**62,
                             tooltip="shot 'generation' only: which stored generation to load."),
                io.Int.Input("frames", default=0, min=0, max=16384,
                             tooltip="0: the whole shot. k: k of its latent frames (video; each after "
                                     "the first stands for 4 pixel frames on Wan) or images, with the "
                                     "audio that plays during them for audio-video shots."),
                io.Combo.Input("frames_from", options=FRAMES_FROM, default="end",
                               tooltip="end: the last k (SVI's prev_samples, a tail). start: the first k; "
                                       "the first latent of a video shot is encoded from one pixel frame, "
                                       "so shot 'first' + frames 1 + start is the film's start-image "
                                       "latent (SVI's anchor_samples)."),
            ],
            outputs=[
                io.Latent.Output(display_name="latent", tooltip="The stored shot (a view of the store)."),
                io.String.Output(display_name="info", tooltip="What was loaded and its digests."),
            ],
        )

    @classmethod
    def validate_inputs(cls, buffer_tag=DEFAULT_TAG):
        return validate_tag(buffer_tag)

    @classmethod
    def fingerprint_inputs(cls, buffer_tag=DEFAULT_TAG, shot="newest", generation=0, **kwargs):
        # Like the Handoff: what the store holds now for the tag (every tag's newest when linked).
        try:
            if buffer_tag is None:
                return store_state()
            entry = runtime.store().describe_tag(buffer_tag)
            farm = farm_link.newer_published(buffer_tag, entry["last_generation"] if entry else 0)
        except Exception:
            return math.nan
        if farm is not None and shot != "first":  # another worker stored a newer shot
            return f"{farm[0]}:{shot}:{generation}:{farm[1]}"
        if entry is None:
            return "empty"
        kept = sorted({s["generation"] for s in entry["slots"]} | set(entry["disk_generations"]))
        want = {"newest": entry["last_generation"], "first": kept[0] if kept else 0}.get(shot, generation)
        slot = next((s for s in entry["slots"] if s["generation"] == want), None)
        digest = slot["tensors"][0]["digest"] if slot else "on-disk"
        return f"{entry['last_generation']}:{shot}:{want}:{digest}:{film_view.choices_state(buffer_tag)}"

    @classmethod
    def execute(cls, buffer_tag=DEFAULT_TAG, shot="newest", generation=0, frames=0,
                frames_from="end") -> io.NodeOutput:
        problem = tag_problem(buffer_tag)
        if problem:
            raise ValueError(problem)
        if shot not in SHOTS:
            raise ValueError(f"shot {shot!r} is not one of {', '.join(SHOTS)}")
        store = runtime.store()
        try:
            stored, notes = pick(store, buffer_tag, shot, generation)
        except NotFound as exc:
            raise ContinuityError(f"{exc}; run a ZeroCopyLatentStore with tag {buffer_tag!r} first, or "
                                  "check the tag and the generation") from None
        stream_list = bundle_layout.streams_of(stored)
        spec = family_resolution.stored_family(stored.meta, [s.shape for s in stream_list])
        from_start = frames_from == "start"
        cut = latent_cut.cut_latents(stream_list, frames, spec, from_start=from_start, tag=stored.tag,
                                     generation=stored.generation)
        names = ["video", "audio"] if len(cut) == 2 else [f"stream {i}" for i in range(len(cut))]
        lines = [f"ZeroCopy load: tag {stored.tag!r}, generation {stored.generation} ({shot})",
                 "stored digests verified before use: " + ", ".join(
                     f"{stored.info[bundle_layout.stream_key(i)].digest}" for i in range(len(stream_list))),
                 "shape " + " + ".join(str(list(t.shape)) for t in cut)
                 + ("" if frames == 0 else
                    f" (the {'first' if from_start else 'last'} {frames} of {list(stream_list[0].shape)})")]
        handed = [digest_tensor(t) for t in cut] if frames else [
            stored.info[bundle_layout.stream_key(i)].digest for i in range(len(cut))]
        if frames:
            lines += [f"{name} digest of what is handed out: {d}" for name, d in zip(names, handed)]
        # a tail (the end, or the whole shot) is the parent of the shot a Store keeps from it
        axis = 2 if cut[0].ndim == 5 else 0
        load_lineage.note(getattr(cls.hidden, "unique_id", None), None if from_start and frames else
                          load_lineage.ServedTail(stored.tag, stored.generation, cut[0].shape[axis], handed[0]))
        lines.append("bit-identical: yes (the stored bytes, as views; no copy)")
        lines += [f"note: {n}" for n in notes]
        info = "\n".join(lines)
        log.info(info.replace("\n", " | "))
        return io.NodeOutput({"samples": comfy_calls.nested(cut)}, info)
