"""The film's drift (zc_film_describe "drift", `zc film`): per-channel mean and std of each shot's
tail relative to the first shot of the chosen line, from the tail summaries the engine keeps with
each shot. A colour shift of known size gives that mean_delta, a contrast step that std_ratio, on
every layout (Wan, LTX-2 AV and MiniMax H3 AV video streams, FLUX stills); a shot without a summary
(an older engine's file) makes the drift null."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import seam_reference as seam
import torch

from zc_pack.zc_continuity import families, lineage
from zc_pack.zc_continuity.bundle_layout import VIDEO_KEY
from zc_pack.zc_engine import LatentStore
from zc_pack.zc_engine.film import describe_film
from zc_pack.zc_engine.store import SeamRequest

ZC = Path(os.environ.get("ZC_BIN", Path(__file__).resolve().parents[2] / "build" / "zc"))

LAYOUTS = {  # family: the video stream's shape (frames on axis 2; FLUX: a batch of stills)
    "wan21": (1, 16, 6, 60, 104),
    "ltx2": (1, 128, 6, 16, 24),
    "minimax_h3": (1, 24, 6, 24, 40),
    "flux": (6, 16, 32, 32),
}


def tail_moments(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The torch reference's tail: the last WINDOW frames on its grid, per channel pooled."""
    axis = 2 if x.dim() == 5 else 0
    frames = seam._frames(x, axis, x.shape[axis] - seam.WINDOW, seam.WINDOW, seam.MAX_VALUES).double()
    per_channel = frames.transpose(0, 1).reshape(frames.shape[1], -1)
    return per_channel.mean(dim=1), per_channel.std(dim=1, unbiased=False)


def put_film(store: LatentStore, family: str, shots: list[torch.Tensor], *, summarised=None) -> None:
    """Shots of tag "film", each continuing the last (lineage version 2), stored as the Store node
    stores them: summaries requested (except the shots ``summarised`` leaves out)."""
    spec = families.family_by_name(family)
    for index, shot in enumerate(shots):
        meta = {"family": family}
        marker = None
        if index:
            marker = lineage.marker(parent_tag="film", parent_generation=index, tail_frames=1, tail_digest="",
                                    used_digest="", adapter="test", trim=0)
            meta[lineage.LINEAGE_KEY] = lineage.record(marker)
        tensors = {VIDEO_KEY: shot}
        request = SeamRequest(seam.hop_layouts(tensors, marker, spec=spec))
        if summarised is not None and index not in summarised:
            request = None
        store.put("film", tensors, meta, spill=True, seam=request)
    store.flush()


def shifted_film(shape):
    """Three shots: a random walk, the same with each channel's colour shifted by k_c first-tail
    stds, and with its contrast scaled by s around each channel's tail mean."""
    g = torch.Generator().manual_seed(7)
    axis = 2 if len(shape) == 5 else 0
    first = torch.randn(shape, generator=g).cumsum(axis) * 0.1 + torch.randn(shape[1], generator=g).view(
        (1, -1) + (1,) * (len(shape) - 2))
    mean, std = tail_moments(first)
    view = (1, -1) + (1,) * (len(shape) - 2)
    k = torch.linspace(-1.5, 2.0, shape[1], dtype=torch.float64)
    shifted = first + (k * std).float().view(view)
    s = 1.7
    contrast = (first - mean.float().view(view)) * s + mean.float().view(view)
    return [first, shifted, contrast], k, s


@pytest.mark.parametrize("family", sorted(LAYOUTS))
def test_known_colour_and_contrast_drift_give_their_size(tmp_path, family):
    shots, k, s = shifted_film(LAYOUTS[family])
    with LatentStore(spill_dir=tmp_path) as store:
        put_film(store, family, shots)
    drift = describe_film(tmp_path, "film")["drift"]
    channels = LAYOUTS[family][1]
    assert drift["stream"] == "video" and drift["channels"] == channels and drift["reference_generation"] == 1
    assert [(d["index"], d["generation"]) for d in drift["shots"]] == [(0, 1), (1, 2), (2, 3)]
    first, shifted, contrast = drift["shots"]
    assert first["mean_delta"] == [0.0] * channels and first["std_ratio"] == [1.0] * channels
    assert shifted["mean_delta"] == pytest.approx(k.tolist(), abs=1e-4)
    assert shifted["std_ratio"] == pytest.approx([1.0] * channels, abs=1e-4)
    assert contrast["mean_delta"] == pytest.approx([0.0] * channels, abs=1e-4)
    assert contrast["std_ratio"] == pytest.approx([s] * channels, rel=1e-4)


def test_a_shot_without_a_tail_summary_makes_the_drift_null(tmp_path):
    shots, _, _ = shifted_film(LAYOUTS["wan21"])
    with LatentStore(spill_dir=tmp_path) as store:
        put_film(store, "wan21", shots, summarised={0, 2})  # shot 2 as an older engine stored it
    doc = describe_film(tmp_path, "film")
    assert doc["line"] == [1, 2, 3] and doc["drift"] is None


@pytest.mark.skipif(not ZC.is_file(), reason=f"zc binary not found at {ZC}")
def test_zc_film_prints_the_drift_per_shot_and_in_json(tmp_path):
    shots, k, s = shifted_film(LAYOUTS["wan21"])
    with LatentStore(spill_dir=tmp_path) as store:
        put_film(store, "wan21", shots)
    out = subprocess.run([str(ZC), "film", "--no-verify", str(tmp_path), "film"], capture_output=True, text=True, check=True).stdout
    assert "drift of the tails from shot 1 (generation 1), 16 channels:" in out
    lines = [line.strip() for line in out.splitlines() if line.strip()[:7] in ("drift 0", "drift 1", "drift 2")]
    assert len(lines) == 3, out
    worst = int(k.abs().argmax())
    assert lines[1].startswith(f"drift 1 gen 2: mean_delta {k[worst].item():+.3g} (channel {worst})"), lines
    assert lines[2].endswith(f"std_ratio {s:.3g} (channel {lines[2].split('(channel ')[-1][:-1]})")
    data = json.loads(subprocess.run([str(ZC), "film", "--json", "--no-verify", str(tmp_path), "film"], capture_output=True,
                                     text=True, check=True).stdout)
    assert data["drift"] == describe_film(tmp_path, "film")["drift"]
