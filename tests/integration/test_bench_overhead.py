"""The overhead benchmark section (bench/sections/overhead.py) on real ComfyUI, CPU, in smoke
mode: 'ours' runs the real ZeroCopyLatentStore and ZeroCopyLatentHandoff node code (it raises
unless every handoff certificate says bit-identical), the file route runs ComfyUI's own
SaveLatent/LoadLatent, and a TAEHV-class VAE roundtrip runs through ComfyUI's VAE class.
No timing is asserted: speed is the benchmark's business, not the tests'."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


class InProcessView:
    """conftest's Comfy seen through what bench/sections/overhead.py uses of
    tools/comfy_inprocess.ComfyInProcess."""

    def __init__(self, comfy, pack, test_nodes):
        self.pack, self.test_nodes, self.nodes = pack, test_nodes, comfy.nodes

    def module(self, dotted: str):
        return sys.modules[f"{self.pack.__name__}.{dotted}"]


@pytest.fixture
def bench_ctx(comfy, zc_test_nodes, tmp_path, tmp_path_factory):
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    from bench.common import Context
    name = str(REPO.resolve()).replace(".", "_x_")
    if sys.modules.get(name) is None:  # never the user's spill folder inside the ComfyUI checkout
        os.environ.setdefault("ZEROCOPY_SPILL_DIR", str(tmp_path_factory.mktemp("zc_spill_bench")))
    pack = sys.modules.get(name) or comfy.load_custom_node(REPO)
    (tmp_path / "out").mkdir()
    (tmp_path / "tmp").mkdir()
    return Context(mode="smoke", out_dir=tmp_path / "out", tmp_dir=tmp_path / "tmp",
                   comfyui_path=Path("/unused"), comfy=InProcessView(comfy, pack, zc_test_nodes), cuda=False)


def test_overhead_section_runs_the_real_nodes_and_comfyui_routes(bench_ctx):
    from bench.common import FAIL, NOT_MEASURED, PASS
    from bench.sections import overhead

    section = overhead.run(bench_ctx)

    assert section.data["route_ours"] == "ComfyUI nodes"
    assert section.data["route_file"] == "SaveLatent -> LoadLatent"
    wan, ltx = section.data["shapes"]
    assert "error" not in wan, wan
    assert len(wan["ours"]) == wan["reps"] and len(wan["file"]) == wan["reps"]
    rows = {r.id: r for r in section.rows}
    assert rows["O1a"].result in (PASS, FAIL) and "SaveLatent→LoadLatent" in rows["O1a"].figure
    # the Wan VAE rows are full-mode only: they say so instead of guessing
    assert all(r.result == NOT_MEASURED and "full mode only" in r.measured
               for r in section.rows if r.id in ("O1b", "O1c"))
    if "unavailable" in ltx:  # an older ComfyUI without LTX-2
        assert rows["O2"].result == NOT_MEASURED
    else:
        assert "error" not in ltx, ltx
        # LTX-2 is audio-video: SaveLatent cannot save a nested latent, so one file per stream
        assert rows["O2a"].result in (PASS, FAIL)
        taehv = ltx["vae"]["taehv128"]
        assert taehv["reps"] == 1 and len(taehv["times"]) == 1
        step = taehv["steps"][0]
        assert step["latent"][1] == 128 and step["pixels"][-1] == 3  # a real LTX-2-latent roundtrip
        assert rows["O2b"].result in (PASS, FAIL)
    assert (bench_ctx.out_dir / "overhead.png").is_file()
    # the section cleans up: no tag of its own is left in the pack's store
    store = bench_ctx.comfy.module("zc_nodes.runtime").store()
    assert not [t for t in store.tags() if t.startswith("bench_")]
