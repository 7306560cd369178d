"""ZeroCopyVRAMPin on real ComfyUI (CPU, classic model management).

Every eviction path is driven twice: a control where ComfyUI evicts the model
because it is not locked, and the same call with the lock, where it stays and
ComfyUI's accounting (current_loaded_models, loaded bytes) stays true. On
--cpu the load device is the CPU, so "resident" means what ComfyUI counts as
loaded (LoadedModel entry + model_loaded_weight_memory); the bookkeeping and
every code path are ComfyUI's own. Dynamic VRAM needs a GPU: it is covered by
tests/python/test_residency_dynamic.py (fake aimdo) and bench/gpu/residency_check.py.
"""

from __future__ import annotations

import gc
import logging
import sys
import weakref
from pathlib import Path

import pytest
import torch
from conftest import Graph

REPO = Path(__file__).resolve().parents[2]
CANVAS = {"width": 64, "height": 64, "length": 5}  # latent [1,16,2,8,8]
CPU = torch.device("cpu")


@pytest.fixture(scope="session")
def residency_pack(comfyui, zc_test_nodes):
    """The pack as ComfyUI loaded it (reused if another test module loaded it); the test-only
    OOM node, ZCResidencyTestRaiseOOM, comes with zc_test_nodes."""
    name = str(REPO.resolve()).replace(".", "_x_")
    return sys.modules.get(name) or comfyui.load_custom_node(REPO)


@pytest.fixture(scope="session")
def mm(comfyui):
    import comfy.model_management
    return comfy.model_management


def _hook_targets(mm):
    import comfy.model_patcher
    targets = [(mm, "free_memory"), (mm, "unload_all_models"), (mm.LoadedModel, "model_unload"),
               (mm.LoadedModel, "model_load")]
    for cls in (comfy.model_patcher.ModelPatcher, getattr(comfy.model_patcher, "ModelPatcherDynamic", None)):
        for name in ("partially_unload", "load", "get_free_memory"):
            if cls is not None and name in cls.__dict__:
                targets.append((cls, name))
    return targets


def _stored(owner, name):
    return owner.__dict__[name] if isinstance(owner, type) else getattr(owner, name)


@pytest.fixture(scope="session")
def originals(residency_pack, mm):
    """ComfyUI's own functions, captured while nothing is locked (other test modules may have
    run workflows with ZeroCopyVRAMPin: their locks are released first)."""
    service = sys.modules[residency_pack.__name__ + ".zc_residency"].get_service()
    service.release_all("test setup")
    assert not service.registry and not len(service.hooks)
    return {(id(owner), name): (owner, name, _stored(owner, name)) for owner, name in _hook_targets(mm)}


@pytest.fixture
def residency(residency_pack, originals, mm, captures):
    """The pack's residency service, with every lock released and every model unloaded
    afterwards (and ComfyUI's functions checked to be its own again)."""
    service = sys.modules[residency_pack.__name__ + ".zc_residency"].get_service()
    service.release_all("test setup")
    service.history.clear()  # what earlier tests' nodes (same node ids) held must not explain this test's loads
    mm.unload_all_models()
    yield service
    service.release_all("test teardown")
    service.history.clear()
    mm.unload_all_models()
    gc.collect()
    for owner, name, original in originals.values():
        assert _stored(owner, name) is original, f"{name} was not restored"


@pytest.fixture
def fmt_bytes(residency_pack):
    """Bytes as the pack writes them (zc_residency/units.py, as ComfyUI loaded it)."""
    return sys.modules[residency_pack.__name__ + ".zc_residency.units"].fmt_bytes


@pytest.fixture(scope="module")
def second_t2v(model_dirs):
    import tiny_models
    return tiny_models.build_tiny_wan21_dit(model_dirs["diffusion_models"], "t2v", seed=11)


@pytest.fixture(scope="module")
def tiny_lora(model_dirs):
    """A rank-4 LoRA on block 0's q projection of the tiny Wan DiT, in ComfyUI's generic
    'diffusion_model.<module>.lora_up/lora_down' format."""
    import tiny_models
    from safetensors.torch import save_file
    folder = model_dirs["diffusion_models"].parent / "loras"
    tiny_models.register_model_folder("loras", folder)
    generator = torch.Generator().manual_seed(5)
    prefix = "diffusion_model.blocks.0.self_attn.q"
    state = {f"{prefix}.lora_up.weight": torch.randn(128, 4, generator=generator) * 0.01,
             f"{prefix}.lora_down.weight": torch.randn(4, 128, generator=generator) * 0.01}
    save_file(state, str(folder / "zc_test_tiny_lora.safetensors"))
    return "zc_test_tiny_lora.safetensors"


def graph(unet, *, pin=True, seed=7, lora=None, lora_strength=0.5, oom=None, **pin_inputs):
    """UNETLoader -> [ZeroCopyVRAMPin] -> [LoraLoaderModelOnly] -> KSampler (2 steps)."""
    g = Graph()
    ids = {"loader": g.add("UNETLoader", unet_name=unet, weight_dtype="default")}
    model = ids["loader"]
    if pin:
        inputs = {"enable_pinning": True, "tune_allocator": False}
        inputs.update(pin_inputs)
        ids["pin"] = model = g.add("ZeroCopyVRAMPin", model=g.out(model), **inputs)
    if lora:
        ids["lora"] = model = g.add("LoraLoaderModelOnly", model=g.out(model), lora_name=lora,
                                    strength_model=lora_strength)
    pos = g.add("ZCTestConditioning", seed=1, tokens=8)
    neg = g.add("ZCTestConditioning", seed=2, tokens=8)
    empty = g.add("EmptyHunyuanLatentVideo", batch_size=1, **CANVAS)
    ids["sampler"] = g.add("KSampler", model=g.out(model), seed=seed, steps=2, cfg=1.0, sampler_name="euler",
                           scheduler="simple", positive=g.out(pos), negative=g.out(neg),
                           latent_image=g.out(empty), denoise=1.0)
    if oom is not None:
        ids["oom"] = g.add("ZCResidencyTestRaiseOOM", samples=g.out(ids["sampler"]), attempt=oom)
    return g, ids


def run(comfyui, g, ids, **kwargs):
    targets = [ids[k] for k in ("sampler", "pin", "oom") if k in ids]
    return comfyui.run(g.prompt, targets=targets, **kwargs)


def entry_of(mm, base):
    """ComfyUI's LoadedModel entry for the BaseModel base, or None."""
    found = [lm for lm in mm.current_loaded_models if lm.model is not None and lm.model.model is base]
    assert len(found) <= 1
    return found[0] if found else None


def loaded_state(mm, base):
    """(tracked by ComfyUI, bytes ComfyUI counts as loaded)."""
    entry = entry_of(mm, base)
    return entry is not None, int(base.model_loaded_weight_memory)


def model_of(comfyui, result, ids):
    return comfyui.output(result, ids["pin"] if "pin" in ids else ids["loader"])


def reload_kinds(lock, result) -> list[list[str]]:
    """The causes of each reload of the locked model in this queue run (load_evidence.py, reasons.py)."""
    return [reload.kinds for reload in lock.evidence.run(result.prompt_id).reloads]


# ------------------------------------------------------------------------------- eviction paths


@pytest.mark.parametrize("locked", [False, True], ids=["control", "locked"])
def test_free_memory_with_a_huge_request(comfyui, residency, mm, tiny_wan21_t2v, locked):
    g, ids = graph(tiny_wan21_t2v.name, enable_pinning=locked)
    patcher = model_of(comfyui, run(comfyui, g, ids), ids)
    base, size = patcher.model, patcher.model_size()
    assert loaded_state(mm, base) == (True, size)
    entry = entry_of(mm, base)

    unloaded = mm.free_memory(1e30, CPU)

    if locked:
        assert loaded_state(mm, base) == (True, size)
        assert entry_of(mm, base) is entry and entry not in unloaded
        assert residency.registry.find(base).evidence.run("outside a queue run").free_memory_kept == 1
    else:
        assert loaded_state(mm, base) == (False, 0)
        assert any(lm is entry for lm in unloaded)


@pytest.mark.parametrize("locked", [False, True], ids=["control", "locked"])
def test_unload_all_models(comfyui, residency, mm, tiny_wan21_t2v, locked):
    g, ids = graph(tiny_wan21_t2v.name, enable_pinning=locked)
    patcher = model_of(comfyui, run(comfyui, g, ids), ids)
    base, size = patcher.model, patcher.model_size()

    mm.unload_all_models()  # called here by "another caller": held by every policy

    assert loaded_state(mm, base) == ((True, size) if locked else (False, 0))


@pytest.fixture
def reuse_path_on_cpu(mm, monkeypatch):
    """Make load_models_gpu take its NORMAL_VRAM budget path for a CPU model and see
    0 bytes free: the reuse branch then computes a negative budget for an already
    loaded model and shrinks it (partially_load -> partially_unload)."""
    monkeypatch.setattr(mm, "vram_state", mm.VRAMState.NORMAL_VRAM)
    monkeypatch.setattr(mm, "lowvram_available", True)
    monkeypatch.setattr(mm, "is_device_cpu", lambda device: False)
    monkeypatch.setattr(mm, "get_free_memory",
                        lambda dev=None, torch_free_too=False: (0, 0) if torch_free_too else 0)
    return monkeypatch


@pytest.mark.parametrize("locked", [False, True], ids=["control", "locked"])
def test_reuse_path_shrink_with_a_negative_budget(comfyui, residency, mm, tiny_wan21_t2v, locked, request):
    g, ids = graph(tiny_wan21_t2v.name, enable_pinning=locked)
    patcher = model_of(comfyui, run(comfyui, g, ids), ids)
    base, size = patcher.model, patcher.model_size()
    entry = entry_of(mm, base)
    patch = request.getfixturevalue("reuse_path_on_cpu")

    mm.load_models_gpu([patcher])
    patch.undo()

    tracked, loaded = loaded_state(mm, base)
    assert tracked and entry_of(mm, base) is entry  # the reuse path keeps the entry either way
    if locked:
        assert loaded == size and not base.model_lowvram
        assert residency.registry.find(base).evidence.run("outside a queue run").unload_refusals == 1
    else:
        assert loaded < size and base.model_lowvram  # ComfyUI offloaded part of it


@pytest.mark.parametrize("locked", [False, True], ids=["control", "locked"])
def test_disable_smart_memory_unloads_at_the_end_of_each_prompt(comfyui, residency, mm, tiny_wan21_t2v,
                                                                locked, monkeypatch):
    monkeypatch.setattr(mm, "DISABLE_SMART_MEMORY", True)  # what --disable-smart-memory sets
    g, ids = graph(tiny_wan21_t2v.name, enable_pinning=locked)
    patcher = model_of(comfyui, run(comfyui, g, ids), ids)  # execution.py unloads all at the end
    base, size = patcher.model, patcher.model_size()
    assert loaded_state(mm, base) == ((True, size) if locked else (False, 0))


def prompt_worker(mm, free_memory_flag, reset_cache):
    """Stand-in for the end of ComfyUI's main.py prompt_worker loop, which serves POST /free
    ({"unload_models": true} and/or {"free_memory": true}) between queue runs: it calls
    unload_all_models(), then, for free_memory, resets the executor's caches. It is
    ComfyUI's only caller of unload_all_models() outside a run, and the lock recognises
    it by this function name (see residency/policy.py)."""
    mm.unload_all_models()
    if free_memory_flag:
        reset_cache()


@pytest.mark.parametrize("policy", ["yield", "survive_free"])
def test_explicit_free_follows_the_policy(comfyui, residency, mm, tiny_wan21_t2v, policy):
    g, ids = graph(tiny_wan21_t2v.name, residency_policy=policy)
    patcher = model_of(comfyui, run(comfyui, g, ids), ids)
    base, size = patcher.model, patcher.model_size()

    prompt_worker(mm, False, comfyui.reset_cache)  # POST /free {"unload_models": true}

    lock = residency.registry.find(base)
    assert lock is not None and not lock.yielding  # the lock itself stays in both policies
    if policy == "yield":
        assert loaded_state(mm, base) == (False, 0)  # it stepped aside: ComfyUI unloaded it
        g.prompt[ids["sampler"]]["inputs"]["seed"] = 8
        result = run(comfyui, g, ids)  # reloaded once, then held again
        assert loaded_state(mm, base) == (True, size)
        assert lock.evidence.run(result.prompt_id).bytes_loaded == size
        assert reload_kinds(lock, result) == [["explicit_free"]]
        mm.free_memory(1e30, CPU)
        assert loaded_state(mm, base) == (True, size)
    else:
        assert loaded_state(mm, base) == (True, size)


def test_free_memory_and_cache_drops_the_lock_with_the_model(comfyui, residency, mm, tiny_wan21_t2v):
    g, ids = graph(tiny_wan21_t2v.name, residency_policy="survive_free")
    patcher = model_of(comfyui, run(comfyui, g, ids), ids)
    base_ref = weakref.ref(patcher.model)
    del patcher

    prompt_worker(mm, True, comfyui.reset_cache)  # POST /free {"free_memory": true}: caches dropped
    gc.collect()

    assert base_ref() is None  # nothing of ours kept it alive
    assert not residency.registry and not len(residency.hooks)
    assert not any(lm.model is not None and lm.model.model is base_ref() for lm in mm.current_loaded_models)


def test_oom_recovery_releases_the_lock_by_default(comfyui, residency, mm, tiny_wan21_t2v):
    g, ids = graph(tiny_wan21_t2v.name, oom=1)
    result = run(comfyui, g, ids, expect_error=True)
    failure = next(d for e, d in result.events if e == "execution_error")
    assert failure["exception_type"].endswith("OutOfMemoryError")
    patcher = comfyui.output(result, ids["pin"])
    assert residency.registry.find(patcher.model) is None  # released, so no OOM loop
    assert loaded_state(mm, patcher.model) == (False, 0)  # ComfyUI's recovery unloaded it
    assert not len(residency.hooks)


def test_survive_free_and_oom_holds_once_then_releases(comfyui, residency, mm, tiny_wan21_t2v):
    g, ids = graph(tiny_wan21_t2v.name, oom=1, residency_policy="survive_free_and_oom")
    result = run(comfyui, g, ids, expect_error=True)
    patcher = comfyui.output(result, ids["pin"])
    base, size = patcher.model, patcher.model_size()
    assert residency.registry.find(base).ooms_survived == 1
    assert loaded_state(mm, base) == (True, size)

    g.prompt[ids["oom"]]["inputs"]["attempt"] = 2
    run(comfyui, g, ids, expect_error=True)

    assert residency.registry.find(base) is None
    assert loaded_state(mm, base) == (False, 0)


# ------------------------------------------------------------------------------- identity of the lock


def test_lora_clone_keeps_the_lock(comfyui, residency, mm, tiny_wan21_t2v, tiny_lora):
    g, ids = graph(tiny_wan21_t2v.name, lora=tiny_lora)
    first = run(comfyui, g, ids)
    locked_patcher = comfyui.output(first, ids["pin"])
    clone = comfyui.output(first, ids["lora"])
    base, size = locked_patcher.model, locked_patcher.model_size()
    assert clone is not locked_patcher and clone.model is base and clone.patches
    assert entry_of(mm, base).model is clone  # ComfyUI tracks the clone it sampled with

    mm.free_memory(1e30, CPU)
    assert loaded_state(mm, base) == (True, size)

    g.prompt[ids["sampler"]]["inputs"]["seed"] = 8  # same clone (cached): nothing moves
    second = run(comfyui, g, ids)
    lock = residency.registry.find(base)
    assert lock.evidence.run(second.prompt_id).bytes_loaded == 0
    assert lock.evidence.run(second.prompt_id).load_calls == 1
    assert reload_kinds(lock, first) == [["first_load"]] and reload_kinds(lock, second) == []

    # A new LoRA strength is a new patch set: classic ComfyUI unpatches the whole model
    # to its offload device and loads it again. The lock holds, and the evidence says so.
    g.prompt[ids["lora"]]["inputs"]["strength_model"] = 0.25
    third = run(comfyui, g, ids)
    assert residency.registry.find(base) is lock
    assert lock.evidence.run(third.prompt_id).bytes_loaded == size
    assert reload_kinds(lock, third) == [["patch_change"]]  # named from ComfyUI's own patches_uuid test
    assert "1 patched weight before, 1 now (same count: a LoRA strength" in lock.evidence.last_reload_why.detail
    mm.unload_all_models()
    assert loaded_state(mm, base) == (True, size)


def test_loader_running_again_moves_the_lock(comfyui, residency, mm, tiny_wan21_t2v, second_t2v):
    g, ids = graph(tiny_wan21_t2v.name)
    first = comfyui.output(run(comfyui, g, ids), ids["pin"])
    first_ref = weakref.ref(first.model)

    g.prompt[ids["loader"]]["inputs"]["unet_name"] = second_t2v.name  # the loader runs again
    result = run(comfyui, g, ids)
    second = comfyui.output(result, ids["pin"])
    why = residency.registry.find(second.model).evidence.last_reload_why
    assert reload_kinds(residency.registry.find(second.model), result) == [["model_change"]]
    if getattr(second, "cached_patcher_init", None) is not None:  # 2026: ComfyUI records what the loader read
        assert why.short == "another model file" and second_t2v.name in why.detail
    else:  # v0.3.75: only that it is a new model object
        assert why.short == "new model object"

    assert residency.registry.find(second.model) is not None
    assert residency.registry.find(first.model) is None and len(residency.registry) == 1
    mm.free_memory(1e30, CPU)  # the old model is ComfyUI's to evict again
    assert loaded_state(mm, first.model) == (False, 0)
    assert loaded_state(mm, second.model) == (True, second.model_size())
    del first
    gc.collect()
    assert first_ref() is None  # and nothing of ours keeps the old copy alive


# ------------------------------------------------------------------------------- on/off, inertness


def test_unlock_restores_comfyui_exactly(comfyui, residency, mm, tiny_wan21_t2v, originals):
    g, ids = graph(tiny_wan21_t2v.name)
    patcher = model_of(comfyui, run(comfyui, g, ids), ids)
    assert any(_stored(o, n) is not f for o, n, f in originals.values())  # hooked while locked

    g.prompt[ids["pin"]]["inputs"]["enable_pinning"] = False
    result = run(comfyui, g, ids)

    assert "OFF" in comfyui.output(result, ids["pin"], 1) and "released WAN21" in comfyui.output(result, ids["pin"], 1)
    assert not residency.registry and not len(residency.hooks)
    for owner, name, original in originals.values():
        assert _stored(owner, name) is original
    mm.free_memory(1e30, CPU)  # ComfyUI's behaviour again: the control result
    assert loaded_state(mm, patcher.model) == (False, 0)


def test_two_nodes_share_one_lock_and_hooks_are_installed_once(comfyui, residency, mm, tiny_wan21_t2v, originals):
    g, ids = graph(tiny_wan21_t2v.name)
    ids["pin2"] = g.add("ZeroCopyVRAMPin", model=g.out(ids["pin"]), enable_pinning=True, tune_allocator=False)
    g.prompt[ids["sampler"]]["inputs"]["model"] = g.out(ids["pin2"])
    patcher = model_of(comfyui, comfyui.run(g.prompt, targets=[ids["sampler"], ids["pin"], ids["pin2"]]), ids)

    lock = residency.registry.find(patcher.model)
    assert len(residency.registry) == 1 and len(lock.owners) == 2
    hooked = [(o, n, f) for o, n, f in originals.values() if _stored(o, n) is not f]
    assert len(hooked) == len(residency.hooks)  # one wrapper per attribute ...
    assert all(_stored(o, n).__wrapped__ is f for o, n, f in hooked)  # ... directly around ComfyUI's

    g.prompt[ids["pin"]]["inputs"]["enable_pinning"] = False  # one node lets go: still locked by the other
    comfyui.run(g.prompt, targets=[ids["sampler"], ids["pin"], ids["pin2"]])
    assert residency.registry.find(patcher.model) is lock and len(lock.owners) == 1


def test_wrappers_are_inert_for_models_that_are_not_locked(comfyui, residency, mm, tiny_wan21_t2v, second_t2v):
    g, ids = graph(tiny_wan21_t2v.name)
    locked = model_of(comfyui, run(comfyui, g, ids), ids)
    g2, ids2 = graph(second_t2v.name, pin=False)
    other = model_of(comfyui, run(comfyui, g2, ids2), ids2)
    other_entry = entry_of(mm, other.model)
    assert len(residency.hooks) and residency.registry.find(other.model) is None

    # a caller's own keep_loaded is honoured, not replaced
    mm.free_memory(1e30, CPU, keep_loaded=[other_entry])
    assert loaded_state(mm, other.model) == (True, other.model_size())

    # the unlocked model gets exactly ComfyUI's treatment: returned as unloaded, popped, 0 bytes
    unloaded = mm.free_memory(1e30, CPU)
    assert [lm for lm in unloaded if lm is other_entry] == [other_entry]
    assert loaded_state(mm, other.model) == (False, 0)
    assert loaded_state(mm, locked.model) == (True, locked.model_size())
    mm.load_models_gpu([other])
    freed = other.partially_unload(CPU, 1)  # ComfyUI's own partial unload runs for it
    assert freed > 0 and other.model.model_loaded_weight_memory == other.model_size() - freed
    assert entry_of(mm, other.model).model_unload(1) is False  # partial: ComfyUI's own answer


# ------------------------------------------------------------------------------- budget, evidence


def test_budget_guard_refuses_and_passes_through(comfyui, residency, mm, tiny_wan21_t2v, caplog):
    g, ids = graph(tiny_wan21_t2v.name, vram_headroom_gb=4096.0)
    with caplog.at_level(logging.WARNING, logger="zerocopy_continuity"):
        result = run(comfyui, g, ids)
    report = comfyui.output(result, ids["pin"], 1)
    assert report.startswith("ZeroCopyVRAMPin: NOT LOCKED")
    assert "not locked:" in report and "4096.00 GiB headroom" in report and "short" in report
    assert "lower vram_headroom_gb" in report
    assert any("not locked:" in r.getMessage() for r in caplog.records)
    assert comfyui.output(result, ids["pin"]) is comfyui.output(result, ids["loader"])  # passed through
    assert not residency.registry and not len(residency.hooks)


def test_report_and_log_show_zero_reload_per_run(comfyui, residency, mm, tiny_wan21_t2v, caplog, fmt_bytes):
    g, ids = graph(tiny_wan21_t2v.name)
    with caplog.at_level(logging.INFO, logger="zerocopy_continuity"):
        first = run(comfyui, g, ids)
        patcher = comfyui.output(first, ids["pin"])
        size = patcher.model_size()
        runs = [first.prompt_id]
        for seed in (8, 9):
            g.prompt[ids["sampler"]]["inputs"]["seed"] = seed
            runs.append(run(comfyui, g, ids).prompt_id)
    lock = residency.registry.find(patcher.model)
    evidence = [lock.evidence.run(r) for r in runs]
    assert [e.bytes_loaded for e in evidence] == [size, 0, 0]
    assert [e.load_calls for e in evidence] == [1, 1, 1]
    lines = [r.getMessage() for r in caplog.records if ": load call " in r.getMessage()]
    assert len(lines) == 3 and all(line.startswith("[ZeroCopy-Continuity] residency: locked WAN21") for line in lines)
    assert "0 B moved" not in lines[0] and "0 B moved onto cpu" in lines[1] and "0 B moved onto cpu" in lines[2]
    assert lines[0].endswith("; loaded because: first load since the model was locked (not a reload)")
    assert not any("because" in line for line in lines[1:])  # nothing moved: nothing to explain

    g.prompt[ids["pin"]]["inputs"]["tune_allocator"] = True  # re-runs the node: a fresh report
    report = comfyui.output(run(comfyui, g, ids), ids["pin"], 1)
    assert report.startswith("ZeroCopyVRAMPin: LOCKED WAN21 on cpu, classic memory management")
    assert f"run {runs[1][:8]}: 1 load call" in report and f"run {runs[2][:8]}: 1 load call" in report
    assert f"run {runs[0][:8]}: 1 load call" in report and ", loaded: first load" in report
    assert f"last load ({fmt_bytes(size)} moved): first load since the model was locked (not a reload)" in report
    assert "allocator: cpu is not a CUDA device" in report


# ------------------------------------------------------------------------------- why a reload happened


@pytest.fixture
def cache_flags(comfyui, monkeypatch):
    """Set ComfyUI's cache launch flags (comfy.cli_args.args) as a server started with them would
    have them; the lock names the cache mode from these."""
    from comfy.cli_args import args

    def use(**flags):
        for name in ("cache_classic", "cache_none"):
            monkeypatch.setattr(args, name, False, raising=False)
        monkeypatch.setattr(args, "cache_lru", 0, raising=False)
        for name, value in flags.items():
            monkeypatch.setattr(args, name, value, raising=False)
    return use


def test_reload_after_a_weight_dtype_change_is_named(comfyui, residency, mm, tiny_wan21_t2v):
    g, ids = graph(tiny_wan21_t2v.name)
    run(comfyui, g, ids)
    g.prompt[ids["loader"]]["inputs"]["weight_dtype"] = "fp8_e4m3fn"  # UNETLoader runs again
    result = run(comfyui, g, ids)
    patcher = comfyui.output(result, ids["pin"])
    lock = residency.registry.find(patcher.model)
    assert str(patcher.model.get_dtype()) == "torch.float8_e4m3fn"  # ComfyUI really loaded fp8 weights
    assert reload_kinds(lock, result) == [["dtype_change"]]
    assert lock.evidence.last_reload_why.short == "weight dtype float32 → float8_e4m3fn"


def test_reload_after_the_cache_dropped_the_model_names_the_cache_mode(comfyui, residency, mm, tiny_wan21_t2v,
                                                                      cache_flags):
    cache_flags(cache_classic=True)  # --cache-classic, as the test executor caches
    g, ids = graph(tiny_wan21_t2v.name)
    first_ref = weakref.ref(model_of(comfyui, run(comfyui, g, ids), ids).model)
    comfyui.reset_cache()  # what a restarted server, "Free model and node cache" or another workflow does
    gc.collect()  # prompt_worker collects garbage after prompts
    assert first_ref() is None and not residency.registry  # the lock went with the model

    result = run(comfyui, g, ids)
    lock = residency.registry.find(model_of(comfyui, result, ids).model)
    assert reload_kinds(lock, result) == [["cache_drop"]]
    assert lock.evidence.last_reload_why.short == "cache dropped the model (classic)"
    assert "cache mode: classic, --cache-classic" in lock.evidence.last_reload_why.detail


def test_reload_after_another_workflow_under_cache_classic_is_named(comfyui, residency, mm, tiny_wan21_t2v,
                                                                    second_t2v, cache_flags):
    cache_flags(cache_classic=True)  # ComfyUI issue #14276: a workflow switch, then every prompt reloads
    g, ids = graph(tiny_wan21_t2v.name)
    first_ref = weakref.ref(model_of(comfyui, run(comfyui, g, ids), ids).model)
    other, other_ids = graph(second_t2v.name, pin=False)
    run(comfyui, other, other_ids)  # another workflow: the classic cache drops the first one's outputs
    gc.collect()
    assert first_ref() is None

    result = run(comfyui, g, ids)  # back to the first workflow: its loader runs again
    lock = residency.registry.find(model_of(comfyui, result, ids).model)
    assert reload_kinds(lock, result) == [["cache_drop"]]
    assert "running another workflow drops this one's outputs" in lock.evidence.last_reload_why.detail


def test_every_run_under_cache_none_reloads_and_says_why(comfyui, residency, mm, tiny_wan21_t2v, cache_flags,
                                                         monkeypatch):
    cache_flags(cache_none=True)
    none_executor = comfyui.execution.PromptExecutor(comfyui.server, cache_type=comfyui.execution.CacheType.NONE,
                                                   cache_args={"lru": 0, "ram": 0, "ram_inactive": 0})
    monkeypatch.setattr(comfyui, "executor", none_executor)  # --cache-none: every node runs every time
    g, ids = graph(tiny_wan21_t2v.name)
    results, locks = [], []
    monkeypatch.setattr(residency.registry, "on_added", [*residency.registry.on_added,
                                                         lambda lock, why: locks.append(lock)])
    for seed in (7, 8, 9):
        g.prompt[ids["sampler"]]["inputs"]["seed"] = seed
        results.append(run(comfyui, g, ids))
        gc.collect()  # as prompt_worker does between prompts
        assert not residency.registry  # nothing caches the model: its lock lasts one run
    assert len(locks) == 3 and len({id(lock) for lock in locks}) == 3  # a new model (and lock) every run
    assert [reload_kinds(lock, result) for lock, result in zip(locks, results)] == [
        [["first_load"]], [["cache_drop"]], [["cache_drop"]]]
    lock = locks[-1]
    assert lock.evidence.last_reload_why.short == "cache dropped the model (none)"
    assert "--cache-none: every node runs again each time" in lock.evidence.last_reload_why.detail


def test_reload_after_free_model_and_node_cache_names_both(comfyui, residency, mm, tiny_wan21_t2v, cache_flags):
    cache_flags(cache_classic=True)
    g, ids = graph(tiny_wan21_t2v.name)  # policy yield: steps aside for the explicit free
    model_of(comfyui, run(comfyui, g, ids), ids)
    prompt_worker(mm, True, comfyui.reset_cache)  # POST /free {"unload_models": true, "free_memory": true}
    gc.collect()
    result = run(comfyui, g, ids)
    lock = residency.registry.find(model_of(comfyui, result, ids).model)
    assert reload_kinds(lock, result) == [["explicit_free", "cache_drop"]]
    assert lock.evidence.last_reload_why.short == "explicit free + cache dropped the model (classic)"


def test_reload_after_oom_recovery_is_named_once_the_node_locks_again(comfyui, residency, mm, tiny_wan21_t2v):
    g, ids = graph(tiny_wan21_t2v.name, oom=1)
    patcher = comfyui.output(run(comfyui, g, ids, expect_error=True), ids["pin"])
    assert residency.registry.find(patcher.model) is None  # released by ComfyUI's OOM recovery (policy yield)

    g, ids = graph(tiny_wan21_t2v.name, vram_headroom_gb=3.5)  # same node ids, no OOM node; the pin runs again
    result = run(comfyui, g, ids)
    lock = residency.registry.find(patcher.model)
    assert model_of(comfyui, result, ids) is patcher and lock is not None  # the same model, locked again
    assert reload_kinds(lock, result) == [["oom_recovery"]]
    assert "out-of-memory recovery unloaded it" in lock.evidence.last_reload_why.detail


def test_reload_without_a_visible_cause_says_so(comfyui, residency, mm, tiny_wan21_t2v, fmt_bytes):
    g, ids = graph(tiny_wan21_t2v.name)
    patcher = model_of(comfyui, run(comfyui, g, ids), ids)
    size = patcher.model_size()
    entry_of(mm, patcher.model).model.detach()  # another node moving the weights itself, outside free_memory
    g.prompt[ids["sampler"]]["inputs"]["seed"] = 8
    result = run(comfyui, g, ids)
    lock = residency.registry.find(patcher.model)
    assert lock.evidence.run(result.prompt_id).bytes_loaded == size
    assert reload_kinds(lock, result) == [["no_visible_cause"]]
    assert lock.evidence.last_reload_why.detail.startswith(
        f"ComfyUI moved {fmt_bytes(size)} onto cpu; no cause this pack can see")


def test_the_badge_state_carries_the_reload_cause(comfyui, residency, mm, tiny_wan21_t2v, tiny_lora, residency_pack,
                                                  monkeypatch):
    ui_events = sys.modules[residency_pack.__name__ + ".zc_nodes.ui_events"]
    sent = []
    monkeypatch.setattr(ui_events, "notify_residency", lambda state, **extra: sent.append({**state, **extra}))
    g, ids = graph(tiny_wan21_t2v.name, lora=tiny_lora)
    run(comfyui, g, ids)
    g.prompt[ids["lora"]]["inputs"]["strength_model"] = 0.25
    run(comfyui, g, ids)
    published = [s for s in sent if s.get("state") == "locked" and "report" not in s]  # the loads' updates
    assert published[0]["last_reload_reason"] == "first load"
    assert published[-1]["last_reload_reason"] == "LoRA/patch change"
    assert published[-1]["last_reload_causes"] == ["patch_change"]
    assert published[-1]["last_reload_detail"].startswith("LoRA or other patch change: 1 patched weight before")
