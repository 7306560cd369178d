"""The residency benchmark section (bench/sections/residency.py) on real ComfyUI, CPU,
in smoke mode (3 shots per film): the counts it reports are ComfyUI's own calls, it
leaves no lock, wrapper or loaded model behind. Timings are not asserted."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


class InProcessView:
    """conftest's Comfy seen through the interface of tools/comfy_inprocess.ComfyInProcess
    (what the benchmark gives a section as ctx.comfy)."""

    def __init__(self, comfy, pack):
        self._comfy, self.pack, self.executor = comfy, pack, comfy.executor

    def module(self, dotted: str):
        return sys.modules[f"{self.pack.__name__}.{dotted}"]

    def run(self, prompt: dict, targets: list[str]) -> dict:
        return dict(self._comfy.run(prompt, targets=targets))


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
                   comfyui_path=Path("/unused"), comfy=InProcessView(comfy, pack), cuda=False)


def test_residency_section_counts_comfyui_calls_and_leaves_nothing_behind(bench_ctx):
    import comfy.model_management as mm
    import comfy.model_patcher

    from bench.common import INFO, NOT_MEASURED, PASS
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
    assert rows["R4"].result == NOT_MEASURED and rows["R5"].result == NOT_MEASURED
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

    service = bench_ctx.comfy.module("zc_nodes.residency").get_service()
    assert not service.registry and not len(service.hooks)
    for (owner, name), original in originals.items():
        stored = owner.__dict__[name] if isinstance(owner, type) else getattr(owner, name)
        assert stored is original, f"{name} was not restored"
    assert not any(lm.model is not None and type(lm.model.model).__name__ == "WAN21"
                   for lm in mm.current_loaded_models)
