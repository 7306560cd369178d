"""The startup self-check against a real ComfyUI tree (COMFYUI_PATH): every part the tree can
have is on, and one memory-manager function given a different signature turns off exactly the
residency lock, whose node then passes the model through unlocked and says why."""

from __future__ import annotations

import inspect
import sys
from pathlib import Path

import pytest
from conftest import Graph

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def pack(comfyui, zc_test_nodes):
    name = str(REPO.resolve()).replace(".", "_x_")
    return sys.modules.get(name) or comfyui.load_custom_node(REPO)


@pytest.fixture
def self_check(pack):
    module = sys.modules[pack.__name__ + ".zc_nodes.self_check"]
    yield module
    module.set_result(None)  # the next use checks this process's ComfyUI again


def test_every_part_is_on_for_this_comfyui(comfyui, self_check):
    from comfy_api.latest import io

    result = self_check.result()  # ran when ComfyUI loaded the pack
    states = {p.name: p.state for p in result.parts}
    advanced = "advanced" in inspect.signature(io.Input.__init__).parameters
    assert states == {"v3_nodes": "on", "residency_lock": "on", "residency_dynamic": "absent",  # --cpu
                      "nested_tensor": "on", "latent_formats": "on",
                      "advanced_inputs": "on" if advanced else "absent"}, result.as_dict()
    assert result.off == [] and result.broken_formats == {}
    import comfy.latent_formats
    assert all(not hasattr(comfy.latent_formats, n) for n in result.absent_formats)
    assert result.as_dict()["ok"] is True


def test_a_changed_free_memory_turns_off_only_the_lock(comfyui, self_check, pack, monkeypatch, tiny_wan21_t2v):
    import comfy.model_management as mm

    def free_memory(memory_required, device, keep=None):  # keep_loaded renamed: the lock's contract broken
        return []

    monkeypatch.setattr(mm, "free_memory", free_memory)
    result = self_check.run_against_comfy()
    assert [p.name for p in result.off] == ["residency_lock"]
    assert "keep_loaded" in result.part("residency_lock").detail
    self_check.set_result(result)
    monkeypatch.undo()  # ComfyUI itself runs with its own function; only the pack believes it changed

    g = Graph()
    loader = g.add("UNETLoader", unet_name=tiny_wan21_t2v.name, weight_dtype="default")
    pin = g.add("ZeroCopyVRAMPin", model=g.out(loader), enable_pinning=True, tune_allocator=False)
    run = comfyui.run(g.prompt, targets=[pin])
    report = comfyui.output(run, pin, 1)
    assert report.startswith("ZeroCopyVRAMPin: NOT LOCKED"), report
    assert "startup self-check" in report and "keep_loaded" in report
    service = sys.modules[pack.__name__ + ".zc_residency"].get_service()
    assert not service.registry and not len(service.hooks)
    assert comfyui.output(run, pin, 0) is not None  # the model passes through
