"""The record a Handoff gives users: what was continued, and whether it was bit-identical.

"Bit-identical" is a claim users rely on when they chain many shots, so it is
derived, never set: it holds only when nothing touched the tail (no resample,
no blend, no colour-anchor adjustment, no pixel bridge) and the digest of
every stream actually used (video, and audio for audio-video latents) equals
the digest taken when the tail was stored. A pixel bridge is counted: how
many VAE decodes and encodes it made. The certificate covers the handoff's input; the
sampler then re-applies the kept frames through the latent format's
process_in/process_out, which may change their last bits.

It also says how the conditioning compares with core's own node for the same
request (``core_node``): equal except for the tail latents standing in for an
encoded start image, and the one-line ``core_differences`` it lists, which the
adapters write (docs/families.md, "As core builds it", has them all). For Wan I2V
they say which padding was used: gray encoded without the start image's causal
context (a continuing hop; cached), none (a first shot: gray encoded after its
start image, as core does), or the latent format's empty value (no VAE, or a VAE
whose encode raised: the notes then carry a WARNING, also shown in the UI).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from .seam_plan import summary as seam_summary


@dataclass
class Certificate:
    """What one handoff used and did. Digests are the engine's text form (``xxh3:...``) or None."""

    tag: str
    generation: int
    stored_digest: str | None
    used_digest: str | None
    adapter: str
    family: str
    tail_frames: int
    resampled: bool = False
    blended: bool = False
    blend_ratio: float = 0.0
    overlap_pixel_frames: int = 0
    notes: list[str] = field(default_factory=list)
    adjusted: bool = False
    adjustment: str = ""
    bridge_decodes: int = 0
    bridge_encodes: int = 0
    streams: dict[str, tuple[str | None, str | None]] = field(default_factory=dict)
    """Other streams handed off with the video (name -> (stored digest, used digest)), e.g. audio."""
    core_node: str = ""
    """The core node whose conditioning and LATENT the adapter reproduces (e.g. WanImageToVideo)."""
    core_differences: list[str] = field(default_factory=list)
    """Where the output differs from ``core_node``'s for the same request, one line each."""
    seam: dict | None = None
    """The seam of the hop that made the continued shot (its lineage's, the engine's seam record), or None."""

    @property
    def bridged(self) -> bool:
        return bool(self.bridge_decodes or self.bridge_encodes)

    @property
    def digests_match(self) -> bool:
        pairs = [(self.stored_digest, self.used_digest)] + list(self.streams.values())
        return all(stored is not None and stored == used for stored, used in pairs)

    @property
    def bit_identical(self) -> bool:
        return (not self.resampled and not self.blended and not self.adjusted and not self.bridged
                and self.digests_match)

    def reasons(self) -> list[str]:
        """Why the handoff is not bit-identical (empty when it is)."""
        why = []
        if self.resampled:
            why.append("the tail was resampled in latent space to the new canvas")
        if self.blended:
            why.append(f"the tail was blended with the fallback (blend_ratio {self.blend_ratio:g})")
        if self.adjusted:
            why.append(f"the tail was adjusted: {self.adjustment or 'colour anchor'}")
        if self.bridged:
            why.append(f"the tail went through pixels: {self.bridge_decodes} VAE decode(s) and "
                       f"{self.bridge_encodes} VAE encode(s) (pixel bridge)")
        pairs = [("video" if self.streams else "tail", self.stored_digest, self.used_digest)]
        pairs += [(name, stored, used) for name, (stored, used) in self.streams.items()]
        for name, stored, used in pairs:
            if stored is None or used is None:
                why.append(f"the {name}'s digest is missing, so identity cannot be certified")
            elif stored != used:
                why.append(f"the used {name}'s digest differs from the stored one")
        return why

    def to_text(self) -> str:
        """A short multi-line summary for the node's info output."""
        lines = [
            f"ZeroCopy handoff: tag {self.tag!r}, generation {self.generation}",
            f"family {self.family}, adapter {self.adapter}, tail_frames {self.tail_frames}",
            f"stored digest {self.stored_digest or 'none'}",
            f"used digest   {self.used_digest or 'none'}",
        ]
        for name, (stored, used) in self.streams.items():
            lines += [f"{name} stored digest {stored or 'none'}",
                      f"{name} used digest   {used or 'none'}"]
        if self.bridged:
            lines.append(f"pixel bridge: {self.bridge_decodes} decode(s), {self.bridge_encodes} "
                         "encode(s) (opt-in, lossy)")
        lines.append(f"bit-identical: {'yes' if self.bit_identical else 'no'}")
        lines += [f"  because {reason}" for reason in self.reasons()]
        if self.overlap_pixel_frames:
            lines.append(f"trim: the first {self.overlap_pixel_frames} pixel frames of this shot "
                         "repeat the end of the previous one; drop them when joining the clips")
        else:
            lines.append("trim: nothing to trim")
        if self.seam is not None:
            lines.append(f"seam of the hop that made generation {self.generation}: {seam_summary(self.seam)}")
        lines += self.core_lines()
        lines += [f"note: {note}" for note in self.notes]
        return "\n".join(lines)

    def core_lines(self) -> list[str]:
        """How the conditioning compares with the core node's for the same request."""
        return self.core_summary(self.core_node, self.core_differences)

    @staticmethod
    def core_summary(core_node: str, differences, start: str = "the tail") -> list[str]:
        """The lines ``core_lines`` gives; also for a handoff without a certificate (a film's first
        shot, whose ``start`` is the encoded fallback frame)."""
        if not core_node:
            return []
        head = f"as core's {core_node} builds it, with {start} in place of an encoded start image"
        if not differences:
            return [head]
        return [head + ", except:"] + [f"  - {line}" for line in differences]

    def to_dict(self) -> dict:
        """Plain JSON-ready values, with the derived bit_identical flag included."""
        data = dataclasses.asdict(self)
        data["streams"] = {name: list(pair) for name, pair in self.streams.items()}
        data["bit_identical"] = self.bit_identical
        return data
