"""The seam measure (the torch reference, seam_reference): known drifts give known numbers, a
scaled copy the same numbers, a freeze and a jump are flagged, the repeated head is dropped, audio
is measured too, and the lineage JSON records it (version 2) while version 1 files still read."""

from __future__ import annotations

import json
import math

import pytest
import seam_reference as seam
import torch

from zc_pack.zc_continuity import families, lineage


def walk(frames: int, *, channels: int = 16, seed: int = 0, start=None, step: float = 0.1,
         size: int = 8) -> torch.Tensor:
    """A smooth video latent [1, C, T, H, W]: each frame the last plus a small random step."""
    g = torch.Generator().manual_seed(seed)
    x = [start if start is not None else torch.randn(1, channels, size, size, generator=g)]
    for _ in range(frames - 1):
        x.append(x[-1] + step * torch.randn(1, channels, size, size, generator=g))
    return torch.stack(x, 2)


def continuation(parent: torch.Tensor, frames: int = 6, seed: int = 1) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed + 100)
    start = parent[:, :, -1] + 0.1 * torch.randn(parent[:, :, -1].shape, generator=g)
    return walk(frames, channels=parent.shape[1], seed=seed, start=start, size=parent.shape[-1])


def ramp(frames: int, first: int, d: torch.Tensor, base: torch.Tensor, extra=0.0) -> torch.Tensor:
    """Frames base + (first + t) * d (+ extra): every step a known per-channel offset d."""
    t = torch.arange(first, first + frames, dtype=torch.float64).view(1, 1, frames, 1, 1)
    return base.unsqueeze(2) + t * d.view(1, -1, 1, 1, 1) + extra


def test_a_smooth_continuation_is_green():
    parent = walk(6)
    s = seam.measure(parent, continuation(parent))
    assert s["score"] < seam.GREEN_BELOW and seam.verdict(s["score"]) == "green", s
    assert 0.5 < s["rms_step"] < 2 and s["correlation"] > 0.95 and s["frames"] == [4, 4]
    assert abs(s["correlation"] - s["within_correlation"]) < 0.02


def test_known_colour_drift_gives_known_numbers():
    base = torch.randn(1, 4, 8, 8, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    d = torch.tensor([0.1, -0.2, 0.05, 0.3], dtype=torch.float64)
    parent = ramp(5, 0, d, base)
    smooth = ramp(5, 5, d, base)
    s = seam.measure(parent, smooth)
    assert (s["mean_step"], s["rms_step"], s["score"]) == (1.0, 1.0, 1.0) and s["std_step"] < 1e-9
    for k in (1.0, 3.0):  # a colour shift of k within-shot steps: the cut steps 1 + k times as far
        drifted = ramp(5, 5, d, base, extra=(k * d).view(1, -1, 1, 1, 1))
        s = seam.measure(parent, drifted)
        assert s["mean_step"] == pytest.approx(1 + k) and s["rms_step"] == pytest.approx(1 + k)
        assert s["score"] == pytest.approx(1 + k)
    assert seam.verdict(seam.measure(parent, ramp(5, 5, d, base, extra=(3 * d).view(1, -1, 1, 1, 1)))["score"]) == "red"


def test_known_contrast_step_gives_std_step():
    parent = walk(6, seed=3)
    shot = continuation(parent, seed=4)
    mean = shot.mean(dim=(3, 4), keepdim=True)
    flat = seam.measure(parent, shot)
    loud = seam.measure(parent, (shot - mean) * 1.5 + mean)
    assert loud["std_step"] > 10 * flat["std_step"] and seam.verdict(loud["score"]) == "red"
    assert loud["mean_step"] == pytest.approx(flat["mean_step"], rel=1e-3)


@pytest.mark.parametrize("factor", [8.0, 0.001, 37.5])
def test_a_scaled_copy_gives_the_same_numbers(factor):
    parent = walk(6, seed=5)
    shot = continuation(parent, seed=6) + 0.3
    plain, scaled = seam.measure(parent, shot), seam.measure(parent * factor, shot * factor)
    for key in ("mean_step", "std_step", "rms_step", "correlation", "within_correlation", "score"):
        assert scaled[key] == pytest.approx(plain[key], rel=2e-3), key


def test_a_freeze_and_a_jump_are_red():
    parent = walk(6, seed=7)
    frozen = continuation(parent, seed=8)
    frozen[:, :, 0] = parent[:, :, -1]
    f = seam.measure(parent, frozen)
    assert f["rms_step"] == 0.0 and f["score"] == seam.CAP and seam.verdict(f["score"]) == "red"
    jump = seam.measure(parent, walk(6, seed=9))
    assert jump["rms_step"] > seam.RED_FROM and abs(jump["correlation"]) < 0.2 and jump["within_correlation"] > 0.95
    assert seam.verdict(jump["score"]) == "red"


def test_the_repeated_head_is_dropped():
    parent = walk(6, seed=10)
    shot = torch.cat([parent[:, :, -1:], continuation(parent, seed=11)], 2)  # slot 0 repeats the tail
    assert seam.measure(parent, shot)["score"] == seam.CAP  # read as is: a freeze
    s = seam.measure(parent, shot, video_skip=1)
    assert seam.verdict(s["score"]) == "green" and s["skip"] == 1
    wan = families.causal_length_rule(4)
    assert [seam.video_skip(t, 1, wan) for t in (0, 1, 5, 9)] == [0, 1, 2, 3]
    assert seam.video_skip(8, 1, families.causal_length_rule(8)) == 2  # pixel 8 is in latent 1
    assert seam.video_skip(1, 1, None) == 1 and seam.video_skip(0, 3, None) == 0
    assert seam.audio_skip(1, 4, 1, 5, 40) == 4 and seam.audio_skip(1, None, 1, 5, 40) == 8


def test_audio_level_step_and_correlation():
    g = torch.Generator().manual_seed(12)
    parent = walk(6, seed=12)
    shot = continuation(parent, seed=13)
    a = [torch.randn(1, 8, 16, generator=g)]
    for _ in range(23):
        a.append(a[-1] + 0.1 * torch.randn(1, 8, 16, generator=g))
    audio = torch.stack(a, 2)  # [1, 8, 24, 16]: time on axis 2
    parent_audio, shot_audio = audio[:, :, :12], audio[:, :, 12:]
    smooth = seam.measure(parent, shot, parent_audio=parent_audio, shot_audio=shot_audio, audio_axis=2)
    assert seam.verdict(smooth["score"]) == "green" and abs(smooth["audio"]["level_db"]) < 1
    assert smooth["audio"]["correlation"] > 0.9
    loud = seam.measure(parent, shot, parent_audio=parent_audio, shot_audio=shot_audio * 4, audio_axis=2)
    assert loud["audio"]["level_db"] - smooth["audio"]["level_db"] == pytest.approx(20 * math.log10(4), abs=0.01)
    assert loud["score"] >= 1 + loud["audio"]["level_db"] / seam.DB_PER_STEP > seam.RED_FROM
    assert loud["audio"]["rms_step"] > seam.RED_FROM  # the level jump is a jump of the stream too
    assert seam.verdict(loud["score"]) == "red"
    assert loud["mean_step"] == smooth["mean_step"]  # the picture did not change


def test_no_seam_without_motion_to_compare_or_matching_shapes():
    still = torch.randn(1, 16, 8, 8)
    assert seam.measure(still, still + 1) is None  # one image each side: nothing moves inside
    assert seam.measure(walk(4), walk(4, channels=8)) is None
    assert seam.measure(walk(4), walk(2), video_skip=2) is None  # nothing left after the trim
    assert seam.summary(None) == "no seam measured"


def test_for_hop_reads_the_bundles_and_the_marker():
    parent = walk(6, seed=14)
    shot = torch.cat([parent[:, :, -1:], continuation(parent, seed=15)], 2)
    marker = {"trim": 1, "tail_frames": 1}
    wan = families.family_by_name("wan21")
    s = seam.for_hop({"latent_tensor": parent}, {"latent_tensor": shot}, marker, spec=wan)
    assert s["skip"] == 1 and seam.verdict(s["score"]) == "green"
    assert "latent statistics, not a perceptual score" in seam.summary(s)


def test_lineage_records_the_seam_as_version_2_and_reads_version_1():
    mark = lineage.marker(parent_tag="film", parent_generation=3, tail_frames=1, tail_digest="xxh3:01",
                          used_digest="xxh3:01", adapter="temporal_inpaint", trim=1)
    plain = lineage.record(mark, seed=5)
    s = seam.measure(walk(5), continuation(walk(5)))
    text = lineage.with_seam(plain, s)
    value = json.loads(text)
    assert value["version"] == 2 and value["seed"] == 5 and value["seam"] == s
    assert lineage.seam_of(lineage.parse(text)) == s and lineage.seam_of(lineage.parse(plain)) is None
    old = json.loads(plain)
    old["version"] = 1
    assert lineage.parse(json.dumps(old))["parent_generation"] == 3  # a version 1 file still reads
    assert "seam" not in json.loads(lineage.record(dict(mark, seam={"score": 1})))  # never from a marker
    assert lineage.with_seam(plain, None) == plain


def test_the_certificate_carries_the_seam_of_the_hop_that_made_the_continued_shot():
    from zc_pack.zc_continuity.certificate import Certificate

    s = seam.measure(walk(5), walk(5, seed=3))
    cert = Certificate(tag="film", generation=3, stored_digest="xxh3:01", used_digest="xxh3:01",
                       adapter="temporal_inpaint", family="wan21", tail_frames=1, seam=s)
    assert f"seam of the hop that made generation 3: score {s['score']:.3g} (red)" in cert.to_text()
    assert cert.to_dict()["seam"] == s
    plain = Certificate(tag="film", generation=1, stored_digest=None, used_digest=None, adapter="a",
                        family="wan21", tail_frames=1)
    assert "seam of the hop" not in plain.to_text() and plain.to_dict()["seam"] is None
    meta = {lineage.LINEAGE_KEY: lineage.with_seam(lineage.record(lineage.marker(
        parent_tag="film", parent_generation=2, tail_frames=1, tail_digest="", used_digest="",
        adapter="a", trim=1)), s)}
    assert lineage.seam_of_meta(meta) == s and lineage.seam_of_meta({}) is None


# --------------------------------------------------------------------------- per family layout


def walk_along(shape: tuple, axis: int, *, seed: int, step: float = 0.1, start=None) -> torch.Tensor:
    """A smooth random walk of ``shape`` along ``axis`` (each step the last plus a small random one)."""
    g = torch.Generator().manual_seed(seed)
    frame = list(shape)
    frame[axis] = 1
    x = [start if start is not None else torch.randn(frame, generator=g)]
    for _ in range(shape[axis] - 1):
        x.append(x[-1] + step * torch.randn(frame, generator=g))
    return torch.cat(x, axis)


AV_LAYOUTS = {  # family: (video shape, audio shape, audio time axis), as bundle_layout stores them
    "ltx2": ((1, 128, 6, 16, 24), (1, 8, 24, 16), 2),  # audio [B, C, T, F]
    "minimax_h3": ((1, 24, 6, 24, 40), (1, 32, 2, 24), 3),  # audio [B, 32, 2, T]
}


def av_hop(family: str, *, seed: int, video=None, audio=None):
    """A parent and a continued shot of an audio-video family, as the Handoff builds the shot: its
    first video latent and first 4 audio steps repeat the parent's end (trim 1, audio_count 4), then
    a continuation (smooth unless ``video``/``audio`` rewrite it: fn(parent stream, new stream))."""
    vshape, ashape, axis = AV_LAYOUTS[family]
    v = walk_along((vshape[0], vshape[1], 2 * vshape[2]) + vshape[3:], 2, seed=seed)
    a = walk_along(ashape[:axis] + (2 * ashape[axis],) + ashape[axis + 1:], axis, seed=seed + 1)
    pv, nv = v[:, :, :vshape[2]], v[:, :, vshape[2]:]
    pa, na = a.narrow(axis, 0, ashape[axis]), a.narrow(axis, ashape[axis], ashape[axis])
    if video is not None:
        nv = video(pv, nv)
    if audio is not None:
        na = audio(pa, na)
    shot = {"latent_tensor": torch.cat([pv[:, :, -1:], nv], 2),
            "latent_tensor_1": torch.cat([pa.narrow(axis, pa.shape[axis] - 4, 4), na], axis)}
    marker = {"trim": 1, "tail_frames": 1, "audio_count": 4}
    return seam.for_hop({"latent_tensor": pv, "latent_tensor_1": pa}, shot, marker,
                        spec=families.family_by_name(family))


def colour_shift(k: float):
    """Every new frame offset per channel by ``k`` times the parent's own mean step (a colour jump)."""
    def fn(parent, new):
        d = (parent[:, :, 1:] - parent[:, :, :-1]).mean(dim=(2, 3, 4)).abs().mean() + 0.02
        sign = torch.where(torch.arange(new.shape[1]) % 2 == 0, 1.0, -1.0).view(1, -1, 1, 1, 1)
        return new + k * d * sign
    return fn


def freeze(parent, new):
    new = new.clone()
    new[:, :, 0] = parent[:, :, -1]
    return new


@pytest.mark.parametrize("family", sorted(AV_LAYOUTS))
def test_av_families_rank_and_flag_each_kind_of_cut(family):
    """LTX-2 AV and MiniMax H3 AV bundles (video + audio with the family's audio time axis) through
    for_hop: the smooth hop is green on both streams, a hard cut, a colour shift, a freeze and an
    audio level step are red, each on the number the docs name for it, and every one out-scores
    the smooth hop."""
    _, _, axis = AV_LAYOUTS[family]
    smooth = av_hop(family, seed=20)
    assert seam.verdict(smooth["score"]) == "green", smooth
    assert smooth["skip"] == 1 and smooth["audio"]["skip"] == 4
    assert abs(smooth["audio"]["level_db"]) < 1 and 0.5 < smooth["audio"]["rms_step"] < 2
    assert smooth["correlation"] > 0.9 and smooth["audio"]["correlation"] > 0.9

    cut = av_hop(family, seed=20, video=lambda p, n: walk_along(n.shape, 2, seed=99),
                 audio=lambda p, n: walk_along(n.shape, axis, seed=98))
    assert cut["rms_step"] > seam.RED_FROM and abs(cut["correlation"]) < 0.3
    assert cut["audio"]["rms_step"] > seam.RED_FROM and abs(cut["audio"]["correlation"]) < 0.3

    shifted = av_hop(family, seed=20, video=colour_shift(40.0))
    assert shifted["mean_step"] > seam.RED_FROM and shifted["mean_step"] == max(
        shifted["mean_step"], shifted["std_step"])
    frozen = av_hop(family, seed=20, video=freeze)
    assert frozen["rms_step"] == 0.0 and frozen["score"] == seam.CAP
    loud = av_hop(family, seed=20, audio=lambda p, n: n * 4)
    assert loud["audio"]["level_db"] == pytest.approx(20 * math.log10(4), abs=0.5)
    assert loud["mean_step"] == smooth["mean_step"]  # the picture did not change

    for s in (cut, shifted, frozen, loud):
        assert seam.verdict(s["score"]) == "red" and s["score"] > smooth["score"], s
    small = av_hop(family, seed=20, video=colour_shift(2.0))
    assert smooth["score"] < small["score"] < shifted["score"]  # a larger shift scores higher


def test_the_grid_read_of_a_large_frame_gives_the_full_frame_numbers():
    """Frames beyond MAX_VALUES are read on a strided grid: the seam of a large shot is close to the
    one of every position, the known drift exact, and a freeze still a freeze."""
    parent = walk(6, seed=30, size=64)  # 16 x 64 x 64 values a frame: read on a 16 x 16 grid
    shot = continuation(parent, seed=31)
    grid, full = seam.measure(parent, shot), seam.measure(parent, shot, max_values=None)
    for key in ("mean_step", "std_step", "rms_step", "correlation", "score"):
        assert grid[key] == pytest.approx(full[key], rel=0.25, abs=0.05), key
    base = torch.randn(1, 16, 64, 64, generator=torch.Generator().manual_seed(32), dtype=torch.float64)
    d = torch.linspace(-0.3, 0.3, 16, dtype=torch.float64)
    drifted = seam.measure(ramp(5, 0, d, base), ramp(5, 5, d, base, extra=(2 * d).view(1, -1, 1, 1, 1)))
    assert drifted["mean_step"] == pytest.approx(3.0) and drifted["rms_step"] == pytest.approx(3.0)
    frozen = freeze(parent, shot)
    assert seam.measure(parent, frozen)["score"] == seam.CAP


def stills(count: int, *, seed: int, start=None, step: float = 0.1) -> torch.Tensor:
    """FLUX latents [N, 16, H, W]: a batch of stills, each a small step from the last."""
    return walk_along((count, 16, 32, 32), 0, seed=seed, step=step, start=start)


def test_flux_stills_measure_the_step_from_the_reference_still():
    """FLUX (4-D, each image a frame): the seam is the step from the reference still (the parent's
    image) to the first new one, against the steps between the new stills. One still each side has
    nothing to compare the step with: no seam."""
    reference = stills(1, seed=40)
    g = torch.Generator().manual_seed(41)
    near = stills(4, seed=42, start=reference + 0.1 * torch.randn(reference.shape, generator=g))
    flux = families.family_by_name("flux")
    smooth = seam.for_hop({"latent_tensor": reference}, {"latent_tensor": near}, {"trim": 0}, spec=flux)
    assert seam.verdict(smooth["score"]) == "green" and smooth["frames"] == [1, 4], smooth
    unrelated = seam.measure(reference, stills(4, seed=43))
    assert unrelated["rms_step"] > seam.RED_FROM and seam.verdict(unrelated["score"]) == "red"
    tint = torch.where(torch.arange(16) % 2 == 0, 1.0, -1.0).view(1, -1, 1, 1)
    tinted = seam.measure(reference, near + 0.5 * tint)
    assert tinted["mean_step"] > seam.RED_FROM and seam.verdict(tinted["score"]) == "red"
    same = torch.cat([reference, near[1:]])  # the first new still is the reference unchanged
    assert seam.measure(reference, same)["score"] == seam.CAP
    assert smooth["score"] < min(unrelated["score"], tinted["score"])
    assert seam.for_hop({"latent_tensor": reference}, {"latent_tensor": near[:1]}, {"trim": 0}, spec=flux) is None
