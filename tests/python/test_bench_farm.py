"""bench/sections/farm.py in smoke mode (a real redis-server; no timing is asserted): its three
rows are measured, name their sides, and say how many shots were published."""

from __future__ import annotations

import pytest

from bench.common import INFO, Context
from redis_server import skip_reason

pytestmark = pytest.mark.skipif(skip_reason() is not None, reason=skip_reason() or "")


def test_the_farm_section_measures_its_rows(tmp_path):
    from bench.sections import farm

    section = farm.run(Context(mode="smoke", out_dir=tmp_path, tmp_dir=tmp_path, comfyui_path=None))
    rows = {row.id: row for row in section.rows}
    assert sorted(rows) == ["F1", "F2", "F3"] and all(row.result == INFO for row in rows.values())
    assert "19.35 MB" in rows["F1"].figure
    for row in rows.values():
        assert "farm " in row.measured and "local " in row.measured
    assert "8 of 8 published" in rows["F3"].measured  # 4 workers x 2 shots in smoke mode
    data = section.data["single_shot"]
    assert data["bytes"] > 19_350_000 and min(data["publish_s"].values()) > 0
