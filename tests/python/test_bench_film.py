"""The benchmark's film section (bench/sections/film.py): its stand-in film and its rows, and the
section end to end in smoke mode (tiny shots; every child process, the SIGKILL and the resume
real). What the pack must do is asserted (shots decoded, frames in the file, no file after a
kill); no timing and no memory goal is: those are the benchmark's own rows."""

from __future__ import annotations

import signal

import pytest
import torch

pytest.importorskip("av")

from bench.common import FAIL, NOT_MEASURED, PASS, RESULTS, Context  # noqa: E402
from bench.sections import film  # noqa: E402

IDS = ["M1a", "M1b", "M2a", "M2b", "M2c", "M3a", "M3b", "M4", "M5a", "M5b", "M5c"]


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    out = tmp_path_factory.mktemp("film_bench")
    scratch = out / "tmp"
    scratch.mkdir()
    return film.run(Context(mode="smoke", out_dir=out, tmp_dir=scratch, comfyui_path=None))


def by_id(section):
    return {row.id: row for row in section.rows}


def test_the_stand_in_vae_gives_wan_shaped_frames_the_same_every_time():
    latent = film.shot_latent(3, (3, 4, 6))
    frames = film.stand_in_frames(latent)
    assert frames.shape == (9, 32, 48, 3) and frames.dtype == torch.float32  # (T - 1) x 4 + 1 frames, x8
    assert float(frames.min()) >= 0 and float(frames.max()) <= 1
    assert torch.equal(frames, film.stand_in_frames(latent.clone()))
    assert torch.equal(frames[1], frames[4]) and not torch.equal(frames[4], frames[5])  # latent frame 1 -> 1..4
    continued = film.shot_latent(4, (3, 4, 6), head=latent[:, :, -1:])
    # the frame a continuation's trim drops repeats the parent's last (to float rounding: another einsum)
    assert torch.allclose(film.stand_in_frames(continued)[0], frames[-1], atol=1e-6)
    vae = film.StandInVAE()
    vae.decode(latent)
    vae.decode(latent)
    assert vae.calls == 2


def test_the_plan_counts_frames_and_bytes_as_the_film_holds_them():
    plan = film.plan_for(Context(mode="full", out_dir=None, tmp_dir=None, comfyui_path=None))
    assert plan.lengths == (5, 50, 200) and plan.kill_at == 30 and plan.size == (832, 480)
    assert plan.decoded == 9 and plan.film_frames(50) == 50 * 8 + 1
    assert plan.image_bytes(200) == 1601 * 480 * 832 * 3 * 4


def test_a_film_too_large_for_the_memory_is_not_run_and_the_row_says_what_it_would_need():
    assert film.memory_refusal(1 << 20) is None
    refusal = film.memory_refusal(1 << 50)
    assert refusal.startswith("not run: would need 1048576.00 GiB, this machine has ") and "GiB" in refusal


def test_a_child_that_failed_gives_failing_rows_with_its_reason():
    plan = film.plan_for(Context(mode="smoke", out_dir=None, tmp_dir=None, comfyui_path=None))
    renders = {n: {"error": "the child ended (1) without a result: boom"} for n in plan.lengths}
    rows = film.peak_rows(plan, renders, "note")
    assert [r.result for r in rows] == [FAIL, FAIL] and all("boom" in r.measured for r in rows)


def test_the_section_runs_in_smoke_mode_with_every_row(smoke):
    assert [r.id for r in smoke.rows] == IDS
    assert all(r.result in RESULTS and r.measured and r.goal for r in smoke.rows)
    assert not [r.id for r in smoke.rows if "|" in r.figure + r.goal + r.measured]  # a pipe breaks the table
    assert all("CPU timings" in r.measured for r in smoke.rows if r.result != NOT_MEASURED)
    assert by_id(smoke)["M2c"].result == NOT_MEASURED  # the node before the one-shot render: full mode only
    assert "| shots | film frames | peak RSS (VmHWM)" in smoke.details


def test_the_renders_measured_their_peaks_in_child_processes(smoke):
    plan = film.Plan(**{k: tuple(v) if isinstance(v, list) else v for k, v in smoke.data["plan"].items()})
    for shots in plan.lengths:
        render = smoke.data["renders"][shots]
        assert render["returncode"] == 0 and render["render"]["decodes"] == shots
        assert render["peak"] >= render["rss_before"] > 0
        assembled = smoke.data["assembles"]["today"][shots]
        assert assembled["frames"] == plan.film_frames(shots) and assembled["decodes"] == shots
        assert assembled["image_bytes"] == plan.image_bytes(shots)


def test_a_new_take_decodes_one_shot_and_a_killed_render_resumes_where_it_stopped(smoke):
    rows = by_id(smoke)
    assert rows["M3a"].result == PASS and rows["M3a"].measured.startswith("1 decoded")
    assert rows["M3b"].result == PASS
    killed, resumed = smoke.data["resume"]["killed"], smoke.data["resume"]["resumed"]
    assert killed["returncode"] == -signal.SIGKILL and not killed["file_after_kill"]
    plan = film.Plan(**{k: tuple(v) if isinstance(v, list) else v for k, v in smoke.data["plan"].items()})
    assert resumed["render"]["decodes"] == plan.lengths[1] - plan.kill_at + 1
    assert rows["M4"].result == PASS


def test_the_files_play_with_their_frames_and_their_sound(smoke):
    rows = by_id(smoke)
    plays = smoke.data["renders"][film.plan_for(Context(mode="smoke", out_dir=None, tmp_dir=None,
                                                        comfyui_path=None)).lengths[1]]["plays"]
    assert plays["frames"] == plays["planned"] and plays["rate"] == film.RATE and not plays["missing_seam_frames"]
    assert rows["M5a"].result == PASS and rows["M5b"].result == PASS
    lossless = smoke.data["lossless"]
    assert lossless["equal_frames"] == lossless["frames"] == lossless["planned"] and lossless["max_abs"] == 0
    assert rows["M5c"].result == PASS
