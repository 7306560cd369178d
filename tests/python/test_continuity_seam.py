"""The seam measure (zc_continuity.seam): known drifts give known numbers, a scaled copy the same
numbers, a freeze and a jump are flagged, the repeated head is dropped, audio is measured too, and
the lineage JSON records it (version 2) while version 1 files still read."""

from __future__ import annotations

import json
import math

import pytest
import torch

from zc_continuity import families, lineage, seam


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
    from zc_continuity.certificate import Certificate

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
