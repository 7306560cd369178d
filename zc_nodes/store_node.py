"""ZeroCopyLatentStore: capture a sampler's output latent into the resident store.

The node reads what ComfyUI hands it (the LATENT's streams, the model's facts),
lets ``zc_continuity.shot`` describe the shot in one pure step (family,
metadata, what is not kept, LTX guide latents cropped off), adds the colour
anchor (which needs the store) and puts it. It is an output node: a graph
that ends in a Store (KSampler -> Store, nothing after it) is a valid prompt,
and the Store runs whenever its input is new. The tag may be typed or linked
(a PrimitiveString naming the film once); a linked tag is checked when its
value is known, at execution.
"""

from __future__ import annotations

import math

from .api_version import io

from . import (color_anchor, comfy_calls, durability, farm_link, load_lineage, prompt_graph, runtime,
               ui_events)
from .. import zc_log as log
from .sockets import ContinuityToken
from .tag_inputs import DEFAULT_TAG, tag_problem, validate_tag
from ..zc_continuity import lineage, ltx, seam_plan, shot as shot_description
from ..zc_continuity.bundle_layout import VIDEO_KEY
from ..zc_continuity.errors import ContinuityError
from ..zc_engine.store import SeamRequest

def node_id(cls) -> str | None:
    """The ComfyUI node id of the running node (its hidden UNIQUE_ID), or None when the class is
    called directly (the benchmark, scripts)."""
    return getattr(getattr(cls, "hidden", None), "unique_id", None)


class ZeroCopyLatentStore(io.ComfyNode):
    @classmethod
    def define_schema(cls):
        return io.Schema(
            node_id="ZeroCopyLatentStore",
            display_name="ZeroCopy Latent Store",
            category="CineFlux/Continuity",
            is_output_node=True,
            hidden=[io.Hidden.unique_id, io.Hidden.prompt],
            description=(
                "Captures a sampler's output latent into a resident, tagged store (bit-identical, "
                "with a digest) and passes it through untouched. The store keeps the last shots "
                "of each tag in memory and spills them to disk in the background, so the next "
                "queue run, or a restarted ComfyUI, can continue the film with "
                "ZeroCopyLatentHandoff. noise_mask is never kept. Audio-video latents (LTX-2, "
                "MiniMax H3) are kept as one bundle with a tensor per stream; guide latents an "
                "LTX Handoff appended are dropped."),
            inputs=[
                io.Latent.Input("samples", tooltip="The latent to capture, usually a KSampler output: "
                                                   "image, video, or audio-video (both streams)."),
                io.String.Input("buffer_tag", default=DEFAULT_TAG,
                                tooltip="Name of the buffer (letters, digits, '_', '-', '.'; up to 64). "
                                        "The Handoff of the next shot reads the same tag. Type it, or "
                                        "link one String node to every Store and Handoff of a film."),
                io.Model.Input("model", optional=True,
                               tooltip="The diffusion model that made the latent; records its family and "
                                       "latent format so the Handoff can check compatibility."),
            ],
            outputs=[
                io.Latent.Output(display_name="samples", tooltip="The input latent, passed through untouched."),
                ContinuityToken.Output(display_name="continuity",
                                       tooltip="Link to ZeroCopyLatentHandoff's 'continuity' input so it "
                                               "runs after this node and uses exactly this shot."),
            ],
        )

    @classmethod
    def validate_inputs(cls, buffer_tag=DEFAULT_TAG):
        # Only buffer_tag in the signature: ComfyUI attributes the message to these inputs.
        return validate_tag(buffer_tag)

    @classmethod
    def fingerprint_inputs(cls, buffer_tag=DEFAULT_TAG, **kwargs):
        # Re-run only when the buffer lost the shot a Store stored (the tag was dropped or evicted
        # while ComfyUI kept the node's output cached); otherwise the inputs decide. A linked tag
        # is None here (ComfyUI passes constants only): the tag this node stored into last stands
        # in for it. A tag nothing stored into has no cached output to distrust.
        if buffer_tag is not None:  # typed: did a Store of this process store into it?
            stored_into = buffer_tag if runtime.was_stored_into(buffer_tag) else None
        else:
            stored_into = runtime.last_tag_stored_by(node_id(cls))  # None on a ComfyUI without it
        if stored_into is None:
            return 0
        try:
            known = runtime.store().describe_tag(stored_into) is not None
        except Exception:
            known = False
        return 0 if known else math.nan

    @classmethod
    def lineage_marker(cls, samples) -> dict | None:
        """What the shot continued from: the Handoff's marker, else the tail a Load upstream served."""
        if lineage.MARKER in samples:
            return samples[lineage.MARKER]
        return load_lineage.parent_marker(getattr(cls.hidden, "prompt", None), node_id(cls))

    @staticmethod
    def seam_request(shot, marker) -> SeamRequest | None:
        """What the put asks the engine for the seam (zc_engine.SeamRequest): summaries of both
        ends of the shot's streams (kept with the shot, for its children's seams and the film's
        drift) and, for a shot with a parent, the seam of the hop from the parent's stored tail,
        measured by the engine after the put, off its path (LatentStore.hop_seam reads it)."""
        layouts = seam_plan.hop_layouts(shot.tensors, marker, spec=shot.spec)
        if not layouts:
            return None
        if marker is None:
            return SeamRequest(layouts)
        return SeamRequest(layouts, parent=(marker["parent_tag"], int(marker["parent_generation"])))

    @classmethod
    def execute(cls, samples, buffer_tag=DEFAULT_TAG, model=None) -> io.NodeOutput:
        problem = tag_problem(buffer_tag)
        if problem:
            raise ValueError(problem)
        marker = cls.lineage_marker(samples)
        try:
            shot = shot_description.describe_shot(
                comfy_calls.unbind_streams(samples["samples"]), model=comfy_calls.model_facts(model),
                other_keys=[k for k in samples if k != "samples"],
                guide_marker=samples.get(ltx.GUIDE_MARKER), lineage_marker=marker,
                seed=prompt_graph.sampler_seed(getattr(cls.hidden, "prompt", None), node_id(cls)))
        except ContinuityError as exc:
            raise ValueError(f"ZeroCopyLatentStore: {exc}") from None
        store = runtime.store()
        meta = dict(shot.meta, **color_anchor.anchor_for_new_shot(store, buffer_tag, shot.video))
        request = cls.seam_request(shot, marker if lineage.LINEAGE_KEY in meta else None)
        digests: dict[str, str] = {}
        generation = farm_link.put(store, buffer_tag, shot.tensors, meta, digests,  # farm-numbered when configured
                                   seam=request)
        digest = digests.get(VIDEO_KEY)
        runtime.remember_store(node_id(cls), buffer_tag)
        durability.note_stored(buffer_tag, generation, node_id(cls))  # on disk before the prompt ends
        shapes = [list(t.shape) for t in shot.tensors.values()]
        log.info("stored tag %r generation %d: %s %s, %s%s%s", buffer_tag, generation, meta["family"],
                 shapes if len(shapes) > 1 else shapes[0], digest,
                 f" (not kept: {meta['keys_not_kept']})" if "keys_not_kept" in meta else "",
                 f" ({meta['guide_frames_removed']} appended guide latents dropped)"
                 if "guide_frames_removed" in meta else "")
        ui_events.notify_store(buffer_tag, generation)
        # The lineage marker told how this shot started; it must not follow the shot downstream
        # (a later Store would take it for its own). The tensors pass through untouched.
        passed = samples if lineage.MARKER not in samples else {k: v for k, v in samples.items()
                                                                  if k != lineage.MARKER}
        return io.NodeOutput(passed, {"tag": buffer_tag, "generation": generation, "digest": digest})
