"""The frame arithmetic of a film: where each shot's frames land, what each seam drops and blends.

Shot k decodes to ``decoded`` pixel frames; its first ``trim`` repeat the end of the shot before
(its lineage says how many) and are dropped, leaving ``kept`` frames. With a crossfade of ``c``
frames, the last ``c`` kept frames of shot k and the first ``c`` of shot k+1 are blended into ``c``
film frames, so each seam shortens the film by ``c``. The same arithmetic as the IMAGE route
(zc_continuity/film_join.py), which the tests hold this to.

The kept frames of a shot fall into three pieces, in the shot's own frame numbers:
``head`` [0, fade_in) (blended with the shot before), ``body`` [fade_in, kept - fade_out) (in the
film as they are) and ``tail`` [kept - fade_out, kept) (blended with the shot after). The film is
body 1, blend 2, body 2, ..., blend N, body N; blend k is tail k-1 over head k.
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import RenderError


@dataclass(frozen=True)
class ShotCut:
    """One shot's place in the film."""

    place: int       # 1-based place on the film's line
    generation: int  # the stored shot
    decoded: int     # pixel frames its decode gives
    trim: int        # frames dropped at its start (repeats of the shot before)
    fade_in: int     # frames blended with the end of the shot before (0: the first shot, or a cut)
    fade_out: int    # frames blended with the start of the shot after (0: the last shot, or a cut)
    start: int       # the film frame its first kept frame becomes (the first of its fade in)

    @property
    def kept(self) -> int:
        return self.decoded - self.trim

    @property
    def body(self) -> int:
        return self.kept - self.fade_in - self.fade_out

    @property
    def end(self) -> int:
        """The film frame after its last kept frame (the end of its fade out)."""
        return self.start + self.kept

    def pieces(self) -> dict[str, tuple[int, int]]:
        """Frame ranges [first, stop) of its kept frames: head, body, tail."""
        return {"head": (0, self.fade_in), "body": (self.fade_in, self.kept - self.fade_out),
                "tail": (self.kept - self.fade_out, self.kept)}


def fades(count: int, crossfade: int) -> list[tuple[int, int]]:
    """(fade_in, fade_out) of each of ``count`` shots: none before the first or after the last."""
    if crossfade < 0:
        raise RenderError(f"crossfade_frames {crossfade} is negative; use 0 (a cut) or more")
    return [(crossfade if k else 0, crossfade if k < count - 1 else 0) for k in range(count)]


def check_shot(place: int, generation: int, decoded: int, trim: int, fade_in: int, fade_out: int) -> None:
    """Refuse a shot whose frames cannot fill its place (the message names the shot and the fix)."""
    if trim < 0:
        raise RenderError(f"shot {place} (generation {generation}) has trim {trim}; a trim is 0 or more frames")
    if decoded - trim <= 0:
        raise RenderError(f"shot {place} (generation {generation}) decodes to {decoded} frames but its trim is "
                          f"{trim}: nothing would be left; check the shot's lineage (it names the trim) or set "
                          "seam_trim")
    if decoded - trim < fade_in + fade_out:
        raise RenderError(f"shot {place} (generation {generation}) keeps {decoded - trim} frames after its trim, "
                          f"fewer than its crossfades need ({fade_in} in + {fade_out} out); lower crossfade_frames "
                          f"to {max(0, (decoded - trim) // 2)} or less")


def cut(places: list[int], generations: list[int], decoded: list[int], trims: list[int],
        crossfade: int) -> list[ShotCut]:
    """Every shot's place in the film, from its decoded frame count and trim (the first shot's trim
    is not dropped: the film starts with it whole)."""
    if not (len(places) == len(generations) == len(decoded) == len(trims)):
        raise RenderError("one place, generation, frame count and trim per shot are needed")
    cuts, start = [], 0
    for index, ((fade_in, fade_out), place, generation, count, trim) in enumerate(
            zip(fades(len(places), crossfade), places, generations, decoded, trims)):
        trim = 0 if index == 0 else trim
        check_shot(place, generation, count, trim, fade_in, fade_out)
        shot = ShotCut(place, generation, count, trim, fade_in, fade_out, start - fade_in)
        cuts.append(shot)
        start = shot.end
    return cuts


def total_frames(cuts: list[ShotCut]) -> int:
    return cuts[-1].end if cuts else 0


def ramp(count: int) -> list[float]:
    """The incoming shot's weight at each of ``count`` crossfade frames: 1/(c+1) .. c/(c+1), as
    film_join's ramp."""
    return [(i + 1) / (count + 1) for i in range(count)]
