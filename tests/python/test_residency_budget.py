"""The budget guard: figures in, a decision and a message that names them out."""

from __future__ import annotations

import pytest

from zc_pack.zc_residency.budget import check

GIB = 1 << 30


def test_fits_exactly_at_the_total():
    c = check(weight_bytes=14 * GIB, reserve_bytes=2 * GIB, headroom_bytes=8 * GIB, other_locked_bytes=0,
              total_bytes=24 * GIB, device="cuda:0")
    assert c.fits and c.needed_bytes == 24 * GIB
    assert c.arithmetic() == ("14.00 GiB weights + 2.00 GiB inference reserve + 8.00 GiB headroom = "
                              "24.00 GiB <= 24.00 GiB total on cuda:0")


def test_refusal_names_every_figure_and_the_ways_out():
    c = check(weight_bytes=14 * GIB, reserve_bytes=int(1.2 * GIB), headroom_bytes=4 * GIB,
              other_locked_bytes=2 * GIB, total_bytes=16 * GIB, device="cuda:0")
    assert not c.fits
    text = c.refusal()
    assert text.startswith("not locked: 14.00 GiB weights + 1.20 GiB inference reserve + 4.00 GiB headroom "
                           "+ 2.00 GiB other locks = 21.20 GiB > 16.00 GiB total on cuda:0 (5.20 GiB short)")
    assert "lower vram_headroom_gb (now 4)" in text and "release the other locks" in text
    assert "leave it unlocked" in text


def test_no_headroom_no_headroom_advice():
    c = check(weight_bytes=30 * GIB, reserve_bytes=GIB, headroom_bytes=0, other_locked_bytes=0,
              total_bytes=24 * GIB, device="cuda:0")
    assert "vram_headroom_gb" not in c.refusal() and "other locks" not in c.refusal()


def test_negative_figures_are_rejected():
    with pytest.raises(ValueError, match="headroom_bytes is -1; expected a byte count >= 0"):
        check(weight_bytes=1, reserve_bytes=1, headroom_bytes=-1, other_locked_bytes=0, total_bytes=10,
              device="cpu")
