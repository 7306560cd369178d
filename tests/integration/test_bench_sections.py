"""Benchmark sections on real ComfyUI, CPU, in smoke mode. No timing is asserted: speed is the
benchmark's business (bench/run.py), not the tests'.

- overhead (bench/sections/overhead.py): 'ours' runs the real ZeroCopyLatentStore and
  ZeroCopyLatentHandoff node code (it raises unless every handoff certificate says
  bit-identical), the file route runs ComfyUI's own SaveLatent/LoadLatent, one memcpy of the
  latent runs beside them (same repetitions, same idle gap), and a TAEHV-class VAE roundtrip
  runs through ComfyUI's VAE class.
- residency (bench/sections/residency.py, 3 shots per film): the counts it reports are ComfyUI's
  own calls, and it leaves no lock, wrapper or loaded model behind.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


class InProcessView:
    """conftest's Comfy seen through the interface of tools/comfy_inprocess.ComfyInProcess
    (what the benchmark gives a section as ctx.comfy)."""

    def __init__(self, comfyui, pack, test_nodes):
        self._comfy, self.pack, self.executor = comfyui, pack, comfyui.executor
        self.test_nodes, self.nodes = test_nodes, comfyui.nodes

    def module(self, dotted: str):
        return sys.modules[f"{self.pack.__name__}.{dotted}"]

    def run(self, prompt: dict, targets: list[str]) -> dict:
        return dict(self._comfy.run(prompt, targets=targets))


@pytest.fixture
def bench_ctx(comfyui, zc_test_nodes, tmp_path, tmp_path_factory):
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    from bench.common import Context
    name = str(REPO.resolve()).replace(".", "_x_")
    if sys.modules.get(name) is None:  # never the user's spill folder inside the ComfyUI checkout
        os.environ.setdefault("ZEROCOPY_SPILL_DIR", str(tmp_path_factory.mktemp("zc_spill_bench")))
    pack = sys.modules.get(name) or comfyui.load_custom_node(REPO)
    (tmp_path / "out").mkdir()
    (tmp_path / "tmp").mkdir()
    return Context(mode="smoke", out_dir=tmp_path / "out", tmp_dir=tmp_path / "tmp",
                   comfyui_path=Path("/unused"), comfy=InProcessView(comfyui, pack, zc_test_nodes), cuda=False)


def test_overhead_section_runs_the_real_nodes_and_comfyui_routes(bench_ctx):
    from bench.common import FAIL, NOT_MEASURED, PASS
    from bench.sections import overhead

    section = overhead.run(bench_ctx)

    assert section.data["route_ours"] == "ComfyUI nodes"
    assert section.data["route_file"] == "SaveLatent -> LoadLatent"
    wan, ltx = section.data["shapes"]
    assert "error" not in wan, wan
    assert len(wan["ours"]) == len(wan["file"]) == len(wan["memcpy"]) == wan["reps"]
    assert wan["idle_s"] == section.data["idle_s"] > 0
    rows = {r.id: r for r in section.rows}
    assert rows["O1a"].result in (PASS, FAIL) and "SaveLatent→LoadLatent" in rows["O1a"].figure
    assert "one memcpy" in rows["O1a"].measured
    # the hot path's goals: against the nodes' file route and a memcpy; smoke mode measures neither
    # of their shapes, and says so
    assert all(rows[h].result == NOT_MEASURED for h in ("H1", "H2", "H3"))
    assert "SaveLatent→LoadLatent" in rows["H1"].figure and "memcpy" in rows["H2"].figure
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


def test_residency_section_counts_comfyui_calls_and_leaves_nothing_behind(bench_ctx):
    import comfy.model_management as mm
    import comfy.model_patcher

    from bench.common import INFO, PASS
    from bench.sections import residency

    originals = {(owner, name): owner.__dict__[name] for owner, name in (
        (mm.LoadedModel, "model_load"), (mm.LoadedModel, "model_unload"),
        (comfy.model_patcher.ModelPatcher, "load"), (comfy.model_patcher.ModelPatcher, "partially_unload"),
        (mm, "free_memory"))}

    section = residency.run(bench_ctx)

    rows = {r.id: r for r in section.rows}
    assert rows["R1"].result == PASS and rows["R1"].measured == "3 vs 0"
    assert rows["R2"].result == PASS and rows["R2"].measured.startswith("2 (")
    assert rows["R3"].result == INFO
    assert list(rows) == ["R1", "R2", "R3"]  # its GPU rows are the gpu section's (G6-G9)
    cpu = section.data["cpu"]
    size = cpu["unpinned"]["model_bytes"]
    unpinned, pinned = cpu["unpinned"]["shots"], cpu["pinned"]["shots"]
    assert [s["bytes_loaded"] for s in unpinned] == [size] * 3
    assert [s["unload_calls"] for s in unpinned] == [1, 1, 1]
    assert [s["resident_after"] for s in unpinned] == [0, 0, 0]
    assert [s["bytes_loaded"] for s in pinned] == [size, 0, 0]
    assert [s["load_calls"] for s in pinned] == [1, 1, 1]
    assert [s["patcher_loads"] for s in pinned] == [1, 0, 0]
    assert [s["resident_after"] for s in pinned] == [size] * 3
    assert [s["kept_by_lock"] for s in pinned] == [1, 1, 1]
    assert cpu["pinned"]["locked"]
    # the pack's own per-run evidence agrees: one run moved the model, the others nothing
    evidence = [r for r in cpu["pinned"]["lock_evidence"]["runs"] if r["run"] != "outside a queue run"]
    assert [r["bytes_loaded"] for r in evidence] == [size, 0, 0]
    assert (bench_ctx.out_dir / "residency.png").is_file() and section.plots == ["residency.png"]

    service = bench_ctx.comfy.module("zc_residency").get_service()
    assert not service.registry and not len(service.hooks)
    for (owner, name), original in originals.items():
        stored = owner.__dict__[name] if isinstance(owner, type) else getattr(owner, name)
        assert stored is original, f"{name} was not restored"
    assert not any(lm.model is not None and type(lm.model.model).__name__ == "WAN21"
                   for lm in mm.current_loaded_models)


def test_padding_section_encodes_once_then_serves_the_cache(bench_ctx):
    """The gray padding rows on real ComfyUI in smoke mode: the one-time encode with the
    real Wan 2.1 VAE architecture, then hops served from memory (with the next hop's latents made
    ahead, and without) and from the disk cache. The GPU encode is row P3 of the GPU section."""
    from bench.common import FAIL, INFO, PASS
    from bench.sections import padding

    section = padding.run(bench_ctx)
    rows = {r.id: r for r in section.rows}
    assert list(rows) == ["P1", "P2a", "P2b"]
    assert rows["P1"].result == INFO and section.data["encode_s"] > 0
    assert section.data["latent_shape"] == [1, 16, 3, 8, 8] and section.data["file_bytes"] > 0
    assert rows["P2a"].result in (PASS, FAIL) and "memcpy" in rows["P2a"].goal
    assert "libc memcpy" in rows["P2a"].measured and "nothing made ahead" in rows["P2a"].measured
    assert {len(section.data["memory"][side]) for side in ("ours", "unprepared", "memcpy", "old")} == \
        {section.data["reps"]}
    assert rows["P2b"].result == INFO and "disk cache" in rows["P2b"].figure
