"""`zc film` prints the seam of every hop on the chosen line and the worst one, from the record the
engine measures after each put (the file's zc.hop_seam) and from lineage version 2 with a seam (the
version before); `--seams-fail-above X` exits 1 when the worst scores above X (ZC_BIN, default
<repo>/build/zc)."""

from __future__ import annotations

import json

import pytest
from test_cli import ZC, digest, run, save_zc

torch = pytest.importorskip("torch")
import seam_reference as seam

from zc_pack.zc_continuity import lineage

pytestmark = pytest.mark.skipif(not ZC.is_file(), reason=f"zc binary not found at {ZC}")


def walk(frames, seed, start=None):
    g = torch.Generator().manual_seed(seed)
    x = [start if start is not None else torch.randn(1, 16, 4, 4, generator=g)]
    for _ in range(frames - 1):
        x.append(x[-1] + 0.1 * torch.randn(1, 16, 4, 4, generator=g))
    return torch.stack(x, 2)


def shots(drift_at=3):
    """Four shots: each continues the last; shot ``drift_at`` shifts colour at its cut (the shot
    after it continues the shifted frames smoothly)."""
    latents = {}
    for gen in range(1, 5):
        noise = 0.1 * torch.randn(1, 16, 4, 4, generator=torch.Generator().manual_seed(100 + gen))
        start = None if gen == 1 else latents[gen - 1][:, :, -1] + noise
        latents[gen] = walk(5, gen, start) + (0.8 if gen == drift_at else 0.0)
    return latents


def engine_film(folder, drift_at=3):
    """The four shots of tag "seams" put through the engine as the Store puts them: the seam of each
    hop measured by the engine after the put and kept in the shot's file."""
    from zc_pack.zc_engine import LatentStore
    from zc_pack.zc_engine.store import SeamRequest
    latents = shots(drift_at)
    with LatentStore(spill_dir=str(folder)) as store:
        for gen, latent in latents.items():
            tail = None if gen == 1 else digest(latents[gen - 1][:, :, -1:])
            marker = None if gen == 1 else lineage.marker(
                parent_tag="seams", parent_generation=gen - 1, tail_frames=1, tail_digest=tail,
                used_digest=tail, adapter="temporal_inpaint", trim=0)
            tensors = {"latent_tensor": latent}
            request = SeamRequest(seam.hop_layouts(tensors, marker),
                                  parent=None if marker is None else ("seams", gen - 1))
            assert store.put("seams", tensors, {"lineage": lineage.record(marker)} if marker else {},
                             spill=True, seam=request) == gen
        store.flush()
    return latents


def film(folder, drift_at=3):
    """The four shots of tag "seams" as files of the version before: the seam in the lineage."""
    latents, parent = shots(drift_at), None
    for gen, latent in latents.items():
        extra = {}
        if parent is not None:
            tail = digest(latents[parent][:, :, -1:])
            text = lineage.record(lineage.marker(
                parent_tag="seams", parent_generation=parent, tail_frames=1, tail_digest=tail,
                used_digest=tail, adapter="temporal_inpaint", trim=0))
            extra["lineage"] = lineage.with_seam(text, seam.measure(latents[parent], latent))
        save_zc(folder / f"seams@{gen:020d}.latent", {"latent_tensor": latent}, "seams", gen, extra)
        parent = gen
    return latents


def test_film_prints_every_seam_and_the_worst(tmp_path):
    film(tmp_path)
    out = run("film", tmp_path, "seams", expect=0).stdout
    lines = [line for line in out.splitlines() if line.startswith("seam hop")]
    assert [line.split(":")[0] for line in lines] == ["seam hop 2 <- 1 (shot 2)", "seam hop 3 <- 2 (shot 3)",
                                                      "seam hop 4 <- 3 (shot 4)"], out
    assert [line.split()[9] for line in lines] == ["green", "red", "green"], lines
    worst = next(line for line in out.splitlines() if line.startswith("worst seam: "))
    assert worst.startswith("worst seam: hop 3 <- 2 (shot 3), score ") and worst.endswith("(red)")
    data = json.loads(run("film", "--json", tmp_path, "seams", expect=0).stdout)
    shots = {s["generation"]: s for s in data["shots"]}
    assert shots[1]["seam"] is None and shots[2]["seam"]["verdict"] == "green"
    assert data["worst_seam"]["generation"] == 3 and data["worst_seam"]["verdict"] == "red"
    assert data["seam_thresholds"] == {"green_below": seam.GREEN_BELOW, "red_from": seam.RED_FROM}


def test_film_prints_the_seams_the_engine_measured_after_each_put(tmp_path):
    latents = engine_film(tmp_path)
    out = run("film", tmp_path, "seams", expect=0).stdout
    lines = [line for line in out.splitlines() if line.startswith("seam hop")]
    assert [line.split()[9] for line in lines] == ["green", "red", "green"], out
    data = json.loads(run("film", "--json", tmp_path, "seams", expect=0).stdout)
    got = {s["generation"]: s["seam"] for s in data["shots"]}
    assert got[1] is None and data["worst_seam"]["generation"] == 3
    for gen in (2, 3, 4):  # the engine's record against the torch reference
        expected = seam.measure(latents[gen - 1], latents[gen])
        assert got[gen]["score"] == pytest.approx(expected["score"], rel=2e-3), gen


def test_seams_fail_above_exit_codes(tmp_path):
    film(tmp_path)
    worst = json.loads(run("film", "--json", tmp_path, "seams").stdout)["worst_seam"]["score"]
    proc = run("film", "--seams-fail-above", "4", tmp_path, "seams", expect=1)
    assert f"seams FAILED: the worst seam, hop 3 (shot 3), scores {worst:.4g}, above 4" in proc.stderr
    assert proc.stdout.splitlines()[-1] == "film seams: 4 shots on the line, all hops verified"
    run("film", f"--seams-fail-above={worst}", tmp_path, "seams", expect=0)  # not above: equal passes
    run("film", "--json", "--seams-fail-above", str(worst * 2), tmp_path, "seams", expect=0)
    run("film", "--json", "--seams-fail-above", "1", tmp_path, "seams", expect=1)
    for bad in ("-1", "x", "nan", "inf", ""):
        proc = run("film", "--seams-fail-above", bad, tmp_path, "seams", expect=2)
        assert "is not a seam score" in proc.stderr
    assert "needs a number" in run("film", tmp_path, "seams", "--seams-fail-above", expect=2).stderr


def test_a_smooth_film_passes_and_a_film_without_seams_passes(tmp_path):
    (tmp_path / "smooth").mkdir()
    film(tmp_path / "smooth", drift_at=0)
    run("film", "--seams-fail-above", "4", tmp_path / "smooth", "seams", expect=0)
    (tmp_path / "old").mkdir()
    save_zc(tmp_path / "old" / f"seams@{1:020d}.latent", {"latent_tensor": walk(3, 1)}, "seams", 1)
    out = run("film", "--seams-fail-above", "0", tmp_path / "old", "seams", expect=0).stdout
    assert "worst seam" not in out  # a root only: no hop to measure
