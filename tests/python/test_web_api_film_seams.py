"""GET /zerocopy/film/{tag} carries the seam of every hop (the engine's film description, from the
lineage the Store wrote with the engine's seam record), the worst seam of the line and the thresholds."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("aiohttp", reason="skipped: aiohttp not installed (ComfyUI's web server)")

import seam_reference as seam
from test_web_api_film import TAG, Harness

from zc_pack.zc_continuity import lineage
from zc_pack.zc_engine import digest_tensor


def put(api, latent, parent=None):
    meta = {"family": "wan21"}
    if parent is not None:
        before = api.store.get(TAG, parent).tensors["latent_tensor"]
        tail = before[:, :, -1:]
        text = lineage.record(lineage.marker(
            parent_tag=TAG, parent_generation=parent, tail_frames=1, tail_digest=digest_tensor(tail),
            used_digest=digest_tensor(tail), adapter="temporal_inpaint", trim=0))
        meta["lineage"] = lineage.with_seam(text, seam.measure(before, latent))
    return api.store.put(TAG, {"latent_tensor": latent}, meta, spill=True)


def test_the_film_route_carries_each_seam_and_the_worst(tmp_path):
    api = Harness(tmp_path)
    try:
        g = torch.Generator().manual_seed(1)
        frames = [torch.randn(1, 16, 4, 4, generator=g)]
        for _ in range(14):
            frames.append(frames[-1] + 0.1 * torch.randn(1, 16, 4, 4, generator=g))
        video = torch.stack(frames, 2)  # one smooth walk cut in three shots; the third shifted
        one = put(api, video[:, :, :5].contiguous())
        two = put(api, video[:, :, 5:10].contiguous(), one)
        three = put(api, video[:, :, 10:].contiguous() + 1.0, two)
        status, doc = api.client.json("GET", f"/zerocopy/film/{TAG}")
        assert status == 200, doc
        shots = {s["generation"]: s for s in doc["shots"]}
        assert shots[one]["seam"] is None
        assert shots[two]["seam"]["verdict"] == "green" and shots[three]["seam"]["verdict"] == "red"
        assert set(shots[two]["seam"]) == {"score", "verdict", "mean_step", "std_step", "rms_step",
                                          "correlation", "within_correlation", "audio"}
        assert doc["worst_seam"] == {"score": shots[three]["seam"]["score"], "verdict": "red",
                                     "generation": three, "shot": 3}
        assert doc["seam_thresholds"] == {"green_below": seam.GREEN_BELOW, "red_from": seam.RED_FROM}
    finally:
        api.close()
