"""The startup self-check without ComfyUI: fakes shaped like ComfyUI v0.33.0's internals pass,
and each deliberately broken internal (a changed signature, a missing class) turns off exactly the
part that relies on it. The same checks against real ComfyUI trees: tests/integration/test_self_check.py."""

from __future__ import annotations

import types

import pytest
import torch

from zc_pack.zc_nodes import self_check
from zc_pack.zc_nodes.self_check import ABSENT, OFF, ON


# ---------------------------------------------------------------- fakes of ComfyUI's internals

def make_mm():
    """FAKE comfy.model_management with v0.33.0's signatures."""
    mm = types.SimpleNamespace()

    def free_memory(memory_required, device, keep_loaded=[], for_dynamic=False, pins_required=0,  # noqa: B006
                    ram_required=0):
        return []

    class LoadedModel:
        def __init__(self, model):
            self._model = model

        @property
        def model(self):
            return self._model

        def model_load(self, lowvram_model_memory=0, force_patch_weights=False):
            return None

        def model_unload(self, memory_to_free=None, unpatch_weights=True):
            return True

    mm.free_memory = free_memory
    mm.unload_all_models = lambda: None
    mm.get_total_memory = lambda dev=None, torch_total_too=False: 1 << 30
    mm.current_loaded_models = []
    mm.LoadedModel = LoadedModel
    return mm


class ModelPatcher:
    """FAKE comfy.model_patcher.ModelPatcher (the methods the lock wraps)."""

    def model_size(self):
        return 0

    def get_free_memory(self, device):
        return 0

    def load(self, device_to=None, lowvram_model_memory=0, force_patch_weights=False, full_load=False):
        return None

    def partially_unload(self, device_to, memory_to_free=0, force_patch_weights=False):
        return 0


class NestedTensor:
    """FAKE comfy.nested_tensor.NestedTensor (as ComfyUI's: a list of streams)."""

    def __init__(self, tensors):
        self.tensors = list(tensors)
        self.is_nested = True

    def unbind(self):
        return self.tensors


class Wan21:
    latent_channels = 16
    latent_dimensions = 3

    def process_in(self, latent):
        return latent

    def process_out(self, latent):
        return latent


def make_io(advanced=True):
    """FAKE comfy_api.latest.io: the names the nodes use."""
    io = types.SimpleNamespace()
    for name in ("Custom", "Int", "Float", "String", "Boolean", "Combo", "Latent", "Model", "Vae", "Clip",
                 "Image", "Conditioning", "Audio"):
        setattr(io, name, type(name, (), {}))

    class Schema:
        __dataclass_fields__ = dict.fromkeys(("node_id", "display_name", "category", "description", "inputs",
                                              "outputs", "hidden", "is_output_node"))

    class NodeOutput:
        def __init__(self, *args, ui=None, expand=None, block_execution=None):
            pass

    class ComfyNode:
        @classmethod
        def define_schema(cls):
            return None

        @classmethod
        def execute(cls, **kwargs):
            return None

    if advanced:
        def init(self, id, display_name=None, optional=False, tooltip=None, advanced=None):  # noqa: A002
            pass
    else:
        def init(self, id, display_name=None, optional=False, tooltip=None):  # noqa: A002
            pass
    io.Input = type("Input", (), {"__init__": init})
    io.Schema, io.NodeOutput, io.ComfyNode = Schema, NodeOutput, ComfyNode
    io.Hidden = types.SimpleNamespace(unique_id="UNIQUE_ID", prompt="PROMPT")
    return io


def check(**changes) -> self_check.SelfCheck:
    kwargs = dict(io=make_io(), mm=make_mm(), patcher_cls=ModelPatcher, patcher_classes=[ModelPatcher],
                  vbar_module=None, nested_module=types.SimpleNamespace(NestedTensor=NestedTensor),
                  latent_formats=types.SimpleNamespace(Wan21=Wan21), torch=torch,
                  format_names=["Wan21", "LTXAV"])
    kwargs.update(changes)
    return self_check.run(**kwargs)


def states(result) -> dict[str, str]:
    return {p.name: p.state for p in result.parts}


ALL_ON = {"v3_nodes": ON, "residency_lock": ON, "residency_dynamic": ABSENT, "nested_tensor": ON,
          "latent_formats": ON, "advanced_inputs": ON}


# --------------------------------------------------------------------------------------- tests

def test_comfyui_shaped_internals_turn_every_part_on():
    result = check()
    assert states(result) == ALL_ON
    assert result.off == [] and result.as_dict()["ok"] is True
    assert result.absent_formats == ["LTXAV"]  # a model this ComfyUI cannot load: absent, no fault
    assert "LTXAV" in result.part("latent_formats").detail


@pytest.mark.parametrize("broken", [
    "free_memory_renamed_keep_loaded", "free_memory_new_required_argument", "model_unload_signature",
    "model_load_reordered", "partially_unload_missing", "loaded_model_missing"])
def test_a_broken_memory_manager_function_turns_off_only_the_residency_lock(broken):
    mm = make_mm()
    patcher = ModelPatcher
    if broken == "free_memory_renamed_keep_loaded":
        mm.free_memory = lambda memory_required, device, keep=None: []
    elif broken == "free_memory_new_required_argument":
        def free_memory(memory_required, device, keep_loaded=(), *, budget):
            return []
        mm.free_memory = free_memory
    elif broken == "model_unload_signature":
        mm.LoadedModel.model_unload = lambda self, device, memory_to_free=None: True
    elif broken == "model_load_reordered":
        mm.LoadedModel.model_load = lambda self, force_patch_weights=False, lowvram_model_memory=0: None
    elif broken == "partially_unload_missing":
        patcher = type("ModelPatcher", (), {"model_size": lambda self: 0, "load": lambda self: None})
    elif broken == "loaded_model_missing":
        del mm.LoadedModel
    result = check(mm=mm, patcher_cls=patcher)
    assert states(result) == {**ALL_ON, "residency_lock": OFF}
    part = result.part("residency_lock")
    assert "passes the model through unlocked" in part.detail
    assert not result.enabled("residency_lock") and result.enabled("nested_tensor")
    assert result.as_dict()["off"] == ["residency_lock"]


def test_a_wrapper_with_star_args_meets_the_free_memory_contract():
    """Another pack's (*args, **kwargs) wrapper: the lock's positional convention applies."""
    mm = make_mm()
    mm.free_memory = lambda *args, **kwargs: []
    assert states(check(mm=mm)) == ALL_ON


def test_a_broken_get_free_memory_turns_off_only_the_dynamic_lock():
    class Dynamic(ModelPatcher):
        def get_free_memory(self):  # the device parameter is gone
            return 0

    vbar = types.SimpleNamespace(vbars_reset_watermark_limits=lambda: None)
    assert states(check(patcher_classes=[ModelPatcher], vbar_module=vbar))["residency_dynamic"] == ON
    result = check(patcher_classes=[ModelPatcher, Dynamic], vbar_module=vbar)
    assert states(result) == {**ALL_ON, "residency_dynamic": OFF}
    assert "Dynamic.get_free_memory" in result.part("residency_dynamic").detail


def test_a_nested_tensor_that_does_not_unbind_turns_off_only_audio_video():
    class Broken(NestedTensor):
        def unbind(self):
            return self.tensors[:1]

    result = check(nested_module=types.SimpleNamespace(NestedTensor=Broken))
    assert states(result) == {**ALL_ON, "nested_tensor": OFF}
    assert "audio-video latents" in result.part("nested_tensor").detail
    missing = check(nested_module=None)
    assert states(missing) == {**ALL_ON, "nested_tensor": OFF}


def test_a_broken_latent_format_turns_off_its_family_only():
    class Wan21NoChannels(Wan21):
        latent_channels = None

    result = check(latent_formats=types.SimpleNamespace(Wan21=Wan21NoChannels))
    assert states(result) == {**ALL_ON, "latent_formats": OFF}
    assert set(result.broken_formats) == {"Wan21"} and "latent_channels" in result.broken_formats["Wan21"]


def test_a_v3_api_without_a_used_feature_turns_the_nodes_off():
    io = make_io()
    del io.Custom
    result = check(io=io)
    assert states(result)["v3_nodes"] == OFF and "io lacks Custom" in result.part("v3_nodes").detail
    assert states(check(io=None))["v3_nodes"] == OFF
    io = make_io()
    io.NodeOutput = type("NodeOutput", (), {"__init__": lambda self, *args: None})
    assert "ui=" in check(io=io).part("v3_nodes").detail


def test_advanced_inputs_are_feature_detected():
    assert states(check(io=make_io(advanced=False)))["advanced_inputs"] == ABSENT
    assert states(check(io=make_io(advanced=True)))["advanced_inputs"] == ON


def test_the_process_result_logs_one_line_per_part_that_is_off(caplog):
    mm = make_mm()
    mm.free_memory = lambda memory_required, device, keep=None: []
    result = check(mm=mm)
    with caplog.at_level("INFO", logger="zerocopy_continuity"):
        self_check.report(result)
    off_lines = [r.getMessage() for r in caplog.records if "is OFF" in r.getMessage()]
    assert len(off_lines) == 1 and "free_memory" in off_lines[0] and "keep_loaded" in off_lines[0]
    self_check.set_result(result)
    try:
        assert self_check.refusal("residency_lock").startswith("VRAM residency lock (ZeroCopyVRAMPin) is off")
        assert self_check.refusal("nested_tensor") == ""
    finally:
        self_check.set_result(None)
