"""Why a locked model was loaded again, named per run: every cause, against the fakes in
residency_fakes.py (FakeLoadedModel/FakePatcher do to ComfyUI's counters what its load
does; FakeAimdo stands in for comfy-aimdo). The same causes on real ComfyUI graphs are in
tests/integration/test_vram_pin.py."""

from __future__ import annotations

import gc
import logging
import sys
import types
import uuid

import pytest
import torch
from residency_fakes import (
    GIB,
    PAGE,
    FakeAimdo,
    FakeBaseModel,
    FakeComfy,
    FakeLoadedModel,
    FakeModule,
    FakePatcher,
)

from zc_pack.zc_residency import classic, comfy_memory, dynamic_hooks
from zc_pack.zc_residency.causes import (
    FIRST_LOAD,
    CacheMode,
    CauseKind,
    ModelIdentity,
    PatchState,
    explicit_free,
    model_change,
    patch_change,
)
from zc_pack.zc_residency.load_evidence import RELOADS_PER_RUN, RunEvidence
from zc_pack.zc_residency.policy import Policy
from zc_pack.zc_residency.reasons import OWNERS_KEPT, PENDING_KEPT, LockReasons, OwnerHistory, Reload
from zc_pack.zc_residency.report import lock_state, node_report, report
from zc_pack.zc_residency.service import ResidencyService

DEVICE = "cuda:0"
SIZE = 2 * GIB
WAN = "/models/diffusion_models/wan2.1_t2v.safetensors"
CLASSIC = CacheMode("classic", "classic, --cache-classic (fake)")


def load_diffusion_model(path, model_options):  # stands in for comfy.sd.load_diffusion_model (never called)
    raise AssertionError("the lock only reads cached_patcher_init")


def classic_model(dtype=torch.float32, cast=None, path=WAN, options=None, record=True):
    base = FakeBaseModel(dtype=dtype, manual_cast_dtype=cast)
    init = (load_diffusion_model, (path, dict(options or {}))) if record else None
    return base, FakePatcher(base, SIZE, DEVICE, dynamic=False, cached_patcher_init=init)


@pytest.fixture
def fake_comfy():
    return FakeComfy()


@pytest.fixture
def service(fake_comfy):
    svc = ResidencyService(port=FakeAimdo(enabled=False), comfy_hooks=False, comfy=fake_comfy)
    yield svc
    svc.release_all("test teardown")


@pytest.fixture
def load(service, monkeypatch, fake_comfy):
    """load(patcher, run_id) goes through our real wrappers on LoadedModel.model_load and
    ModelPatcher.load, around FakeLoadedModel/FakePatcher (what ComfyUI does to the counters)."""
    monkeypatch.setattr(FakePatcher, "load", classic.wrap_patcher_load(service, FakePatcher.load))
    model_load = classic.wrap_model_load(service, FakeLoadedModel.model_load)

    def run(patcher, run_id, force=False):
        fake_comfy.prompt_id = run_id
        model_load(FakeLoadedModel(patcher), 0, force)
        lock = service.registry.find(patcher.model)
        return lock.evidence.run(run_id) if lock is not None else None
    return run


def kinds(run: RunEvidence) -> list[list[str]]:
    return [reload.kinds for reload in run.reloads]


# ------------------------------------------------------------------------------ first load, nothing


def test_the_first_load_after_locking_is_not_called_a_reload(service, load):
    _, patcher = classic_model()
    service.lock(patcher, "node:1")
    first = load(patcher, "r1")
    assert kinds(first) == [["first_load"]] and first.reloads[0].moved_bytes == SIZE
    assert "loaded: first load" in first.summary(False)
    second = load(patcher, "r2")  # stayed resident: nothing moved, nothing to explain
    assert second.bytes_loaded == 0 and second.reloads == []
    assert "reload" not in second.summary(False)


def test_bytes_moved_without_a_visible_cause_say_so(service, load):
    base, patcher = classic_model()
    base.model_loaded_weight_memory, base.current_weight_patches_uuid = SIZE, patcher.patches_uuid  # loaded
    service.lock(patcher, "node:1")
    assert load(patcher, "r1").reloads == []  # already resident when locked: the first load moved nothing
    FakeLoadedModel(patcher).unload()  # e.g. another node detached it, outside ComfyUI's memory manager
    run = load(patcher, "r2")
    assert kinds(run) == [["no_visible_cause"]]
    assert run.reloads[0].detail.startswith("ComfyUI moved 2.00 GiB onto cuda:0; no cause this pack can see")
    assert run.reloads[0].short == "2.00 GiB moved, no visible cause"


# ------------------------------------------------------------------------------ 1: LoRA / patch change


def test_a_lora_change_is_named_with_the_patch_counts(service, load):
    _, patcher = classic_model()
    service.lock(patcher, "node:1")
    load(patcher, "r1")
    lora = patcher.clone()
    lora.add_patches(["blocks.0.q.weight", "blocks.0.k.weight"])
    run = load(lora, "r2")
    assert kinds(run) == [["patch_change"]] and run.bytes_loaded == SIZE
    assert run.reloads[0].short == "LoRA/patch change"
    assert "0 patched weights before, 2 now" in run.reloads[0].detail
    assert load(lora, "r3").reloads == []  # the same clone again: the same patch set, nothing moves

    stronger = patcher.clone()
    stronger.add_patches(["blocks.0.q.weight", "blocks.0.k.weight"])  # same keys, another strength
    detail = load(stronger, "r4").reloads[0].detail
    assert "2 patched weights before, 2 now (same count: a LoRA strength" in detail


def test_forced_patching_and_a_compute_dtype_patch(service, load):
    _, patcher = classic_model()
    service.lock(patcher, "node:1")
    load(patcher, "r1")
    forced = load(patcher, "r2", force=True)  # load_models_gpu(force_patch_weights=True)
    assert kinds(forced) == [["patch_change"]] and forced.reloads[0].short == "patches forced again"

    cast = patcher.clone()
    cast.object_patches["manual_cast_dtype"] = torch.bfloat16  # what set_model_compute_dtype does
    cast.patches_uuid = uuid.uuid4()
    run = load(cast, "r3")
    assert kinds(run) == [["dtype_change"]] and run.reloads[0].short == "compute dtype the model's own → bfloat16"


# ------------------------------------------------------------------------------ 2: weight dtype change


def test_a_new_model_with_another_weight_dtype_is_named(service, load):
    _, default = classic_model()
    service.lock(default, "node:1")
    load(default, "r1")
    _, fp8 = classic_model(torch.float8_e4m3fn, torch.float32, options={"dtype": torch.float8_e4m3fn})
    outcome = service.lock(fp8, "node:1")  # the loader ran again with weight_dtype fp8_e4m3fn
    assert outcome.locked and outcome.released[0][1].startswith("its node received a different model")
    run = load(fp8, "r2")
    assert kinds(run) == [["dtype_change"]] and run.reloads[0].short == "weight dtype float32 → float8_e4m3fn"
    assert run.reloads[0].detail.startswith(
        "weight dtype changed (float32 → float8_e4m3fn, computing in float32)")


def test_a_new_model_from_another_file_or_with_other_options(service, load):
    _, first = classic_model()
    service.lock(first, "node:1")
    _, other_file = classic_model(path="/models/diffusion_models/wan2.1_i2v.safetensors")
    service.lock(other_file, "node:1")
    reload = load(other_file, "r1").reloads[0]
    assert reload.kinds == ["model_change"]
    assert "another model file (wan2.1_t2v.safetensors → wan2.1_i2v.safetensors)" in reload.detail

    _, fast = classic_model(path="/models/diffusion_models/wan2.1_i2v.safetensors",
                            options={"fp8_optimizations": True})
    service.lock(fast, "node:1")
    assert load(fast, "r2").reloads[0].short == "loader options changed"


# ------------------------------------------------------------------------------ 3: the cache dropped it


def test_the_cache_dropping_the_model_is_named_with_the_cache_mode(service, load, fake_comfy):
    base, patcher = classic_model()
    service.lock(patcher, "node:1")
    load(patcher, "r1")
    del base, patcher
    gc.collect()  # ComfyUI's cache let go of the model: the lock went with it
    assert not service.registry

    fake_comfy.cache = CacheMode("none", "none, --cache-none: every node runs again each time")
    _, again = classic_model()  # the loader built the same file again
    service.lock(again, "node:1")
    reload = load(again, "r2").reloads[0]
    assert reload.kinds == ["cache_drop"] and reload.short == "cache dropped the model (none)"
    assert reload.detail == ("ComfyUI's node cache dropped the model object (cache mode: none, --cache-none: "
                             "every node runs again each time); the loader built the same file with the same "
                             "options again")


def test_the_same_file_again_while_the_old_object_lives_also_names_the_cache(service, load):
    _, first = classic_model()
    service.lock(first, "node:1")
    _, again = classic_model()
    service.lock(again, "node:1")
    reload = load(again, "r1").reloads[0]
    assert reload.kinds == ["cache_drop"]
    assert "no longer held its earlier output (cache mode: classic" in reload.detail


def test_without_a_loader_record_a_new_object_is_only_called_that(service, load):
    _, first = classic_model(record=False)  # ComfyUI before cached_patcher_init (2025)
    service.lock(first, "node:1")
    _, again = classic_model(record=False)
    service.lock(again, "node:1")
    reload = load(again, "r1").reloads[0]
    assert reload.kinds == ["model_change"] and reload.short == "new model object"
    assert "why it ran again is not visible here" in reload.detail


# ------------------------------------------------------------------------------ 4, 5: free and OOM


def test_an_explicit_free_the_lock_stepped_aside_for_explains_the_next_reload(service, load):
    _, patcher = classic_model()
    lock = service.lock(patcher, "node:1").lock
    load(patcher, "r1")
    stepped = service.apply_unload_policy(["prompt_worker", "run"], None)  # POST /free, policy yield
    FakeLoadedModel(patcher).unload()  # ComfyUI's unload_all_models then unloads it
    service.end_step_aside(stepped)
    assert load(patcher, "r2").reloads[0].kinds == ["explicit_free"]
    assert lock.evidence.last_reload_why.detail.startswith("an explicit free (POST /free")


def test_a_free_before_the_model_was_ever_loaded_explains_nothing(service, load):
    _, patcher = classic_model()
    service.lock(patcher, "node:1")
    service.end_step_aside(service.apply_unload_policy(["prompt_worker"], None))  # nothing loaded to unload
    assert load(patcher, "r1").reloads[0].kinds == ["first_load"]


def test_a_free_the_lock_held_through_leaves_no_cause_behind(service, load):
    _, patcher = classic_model()
    lock = service.lock(patcher, "node:1", policy=Policy.SURVIVE_FREE).lock
    load(patcher, "r1")
    service.apply_unload_policy(["prompt_worker"], None)  # held: nothing was unloaded
    assert not lock.reasons.pending
    FakeLoadedModel(patcher).unload()
    assert load(patcher, "r2").reloads[0].kinds == ["no_visible_cause"]


def test_free_model_and_node_cache_names_both_steps(service, load):
    base, patcher = classic_model()
    service.lock(patcher, "node:1")
    load(patcher, "r1")
    service.end_step_aside(service.apply_unload_policy(["prompt_worker"], None))
    FakeLoadedModel(patcher).unload()
    del base, patcher
    gc.collect()  # {"free_memory": true}: the node cache is reset too
    _, again = classic_model()
    service.lock(again, "node:1")
    reload = load(again, "r2").reloads[0]
    assert reload.kinds == ["explicit_free", "cache_drop"]
    assert reload.short == "explicit free + cache dropped the model (classic)"
    assert "; then ComfyUI's node cache dropped the model object" in reload.detail


def test_oom_recovery_is_named_when_the_node_locks_the_model_again(service, load):
    _, patcher = classic_model()
    service.lock(patcher, "node:1")
    load(patcher, "r1")
    service.apply_unload_policy(["execute"], MemoryError("CUDA out of memory"))  # released (policy yield)
    FakeLoadedModel(patcher).unload()
    assert not service.registry
    service.lock(patcher, "node:1")  # enable_pinning toggled: locked again
    reload = load(patcher, "r2").reloads[0]
    assert reload.kinds == ["oom_recovery"] and "out-of-memory recovery unloaded it" in reload.detail


def test_an_oom_of_a_model_the_node_no_longer_uses_is_not_blamed(service, load):
    _, patcher = classic_model()
    service.lock(patcher, "node:1")
    service.apply_unload_policy(["execute"], MemoryError("CUDA out of memory"))
    _, other = classic_model(torch.float16)
    service.lock(other, "node:1")
    assert load(other, "r1").reloads[0].kinds == ["dtype_change"]


def test_a_partial_load_being_topped_up_is_not_called_unexplained(service, load):
    base, patcher = classic_model()
    base.model_loaded_weight_memory, base.current_weight_patches_uuid = SIZE // 4, patcher.patches_uuid
    base.model_lowvram = True  # ComfyUI loaded it partially (low VRAM)
    service.lock(patcher, "node:1")
    load(patcher, "r1")
    base.model_loaded_weight_memory, base.model_lowvram = SIZE // 2, True
    reload = load(patcher, "r2").reloads[0]
    assert reload.kinds == ["partial_top_up"] and "partially loaded (1.00 GiB of 2.00 GiB)" in reload.detail


# ------------------------------------------------------------------------------ the three places


def test_log_report_and_ui_state_name_the_cause(service, load, caplog):
    _, patcher = classic_model()
    outcome = service.lock(patcher, "node:1")
    load(patcher, "r1")
    lora = patcher.clone()
    lora.add_patches(["blocks.0.q.weight"])
    with caplog.at_level(logging.INFO, logger="zerocopy_continuity"):
        load(lora, "run-2222")
    line = next(r.getMessage() for r in caplog.records if ": load call " in r.getMessage())
    assert "run run-2222: load call" in line and line.endswith(
        "; reloaded because: LoRA or other patch change: 0 patched weights before, 1 now; ComfyUI unpatched "
        "the weights and patched them again")

    state = lock_state(service, outcome.lock)
    assert state["last_reload_reason"] == "LoRA/patch change" and state["last_reload_causes"] == ["patch_change"]
    assert state["last_reload_detail"].startswith("LoRA or other patch change")
    assert state["runs"][-1]["reload_reasons"] == ["LoRA/patch change"]
    assert report(service)["last_reload_reason"] == "LoRA/patch change"  # the single-lock UI fields

    text = node_report(service, outcome, lora, enabled=True, policy=Policy.YIELD, dynamic_vram=False)
    assert "  run run-2222: 1 load call" in text and "reloaded: LoRA/patch change" in text
    assert "last reload (2.00 GiB moved): LoRA or other patch change: 0 patched weights before" in text


# ------------------------------------------------------------------------------ dynamic VRAM


def test_dynamic_reloads_are_the_vbar_copies_and_in_place_repatches(fake_comfy):
    aimdo = FakeAimdo()
    service = ResidencyService(port=aimdo, vbar_module=aimdo.module, comfy_hooks=False, comfy=fake_comfy)
    modules = {f"blocks.{i}": FakeModule(4 * PAGE) for i in range(2)}
    base = FakeBaseModel(modules)
    patcher = FakePatcher(base, 8 * PAGE, DEVICE, dynamic=True)
    lock = service.lock(patcher, "node:1").lock
    aimdo.stage(base, DEVICE, 8 * PAGE)

    def sample(p, run_id, copied=()):
        fake_comfy.prompt_id = run_id
        service.before_locked_load(lock, p)
        p.model.current_weight_patches_uuid = p.patches_uuid  # ComfyUI's dynamic load
        service.after_locked_load(lock, p, lock.evidence.run(service.run_id()), 0.001, 64 << 10)  # force-loaded
        for name in copied:  # the sampler faulted these in: new page serials
            modules[name]._v_signature = uuid.uuid4().bytes
        fake_comfy.prompt_id = None
        aimdo.module.vbars_reset_watermark_limits()  # end of the node
        return lock.evidence.run(run_id)

    assert kinds(sample(patcher, "r1", copied=modules)) == [["first_load"]]
    assert sample(patcher, "r2").reloads == []  # the force-loaded weights alone are not a reload
    lora = patcher.clone()
    lora.add_patches(["blocks.0.weight"])
    repatched = sample(lora, "r3")  # re-copied in place: same pages, no new serials
    assert kinds(repatched) == [["patch_change"]] and repatched.reloads[0].moved_bytes == 0
    evicted = sample(lora, "r4", copied=["blocks.1"])
    assert kinds(evicted) == [["no_visible_cause"]] and evicted.reloads[0].moved_bytes == 4 * PAGE
    service.release_all("test teardown")


def test_the_per_evaluation_free_memory_wrapper_does_no_reason_work(service, monkeypatch):
    """ModelPatcher.get_free_memory runs once per model evaluation (cond batching, inside
    sampling): it must stay O(1) bookkeeping and never reach the reason code."""
    _, patcher = classic_model()
    service.lock(patcher, "node:1")

    def forbidden(*args, **kwargs):
        raise AssertionError("reason bookkeeping reached from get_free_memory")
    for owner, name in ((LockReasons, "at_load_call"), (LockReasons, "explain"), (LockReasons, "add"),
                        (OwnerHistory, "causes_for"), (OwnerHistory, "remember")):
        monkeypatch.setattr(owner, name, forbidden)
    corrected = dynamic_hooks.wrap_get_free_memory(service, lambda self, device: 3 * GIB)
    assert [corrected(patcher, DEVICE) for _ in range(100)] == [3 * GIB] * 100


# ------------------------------------------------------------------------------ pure parts, bounds


def test_pending_causes_wait_for_a_load_that_moves_and_state_is_bounded():
    reasons = LockReasons()
    for _ in range(PENDING_KEPT + 3):
        reasons.add(explicit_free("yield"))
    assert len(reasons.pending) == 1  # the same event twice in a row is one cause
    for policy in ("a", "b", "c", "d", "e", "f"):
        reasons.add(explicit_free(policy))
    assert len(reasons.pending) == PENDING_KEPT
    reasons.at_load_call(None, None)
    reasons.nothing_moved()  # a load that moved nothing: the pending causes keep waiting
    assert len(reasons.pending) == PENDING_KEPT and reasons.noticed == []
    reload = reasons.explain(5, DEVICE, 0.0)
    assert len(reload.causes) == PENDING_KEPT and FIRST_LOAD not in reload.causes and not reasons.pending

    history = OwnerHistory()
    refs = [types.SimpleNamespace() for _ in range(OWNERS_KEPT + 10)]
    identity = ModelIdentity("float32", None, None, None)
    for index, ref in enumerate(refs):
        history.remember(f"node:{index}", lambda ref=ref: ref, identity)
    assert len(history) == OWNERS_KEPT

    run = RunEvidence("r")
    for _ in range(RELOADS_PER_RUN + 2):
        run.add_reload(Reload((FIRST_LOAD,), 1, 0.0))
    assert len(run.reloads) == RELOADS_PER_RUN and run.more_reloads == 2 and "(+2 more)" in run.summary(False)


def test_cause_texts_never_name_what_they_cannot_see():
    state = PatchState(uuid.uuid4(), 3, 0, 0, None)
    assert "from before this lock saw them" in patch_change(None, state).detail
    unknown = ModelIdentity(None, None, None, None)
    cause = model_change(unknown, unknown, collected=False, cache=CLASSIC)
    assert cause.kind is CauseKind.MODEL_CHANGE and "same weight dtype" not in cause.detail


@pytest.mark.parametrize("flags, short, flag_text", [
    ({"cache_ram": []}, "RAM pressure", "the default"),  # v0.33.0: thresholds list, RAM pressure default
    ({"cache_ram": [4.0]}, "RAM pressure", "--cache-ram 4"),
    ({"cache_ram": 0.0}, "classic", "the default here"),  # v0.3.75: one threshold, 0 = off
    ({"cache_ram": 2.0}, "RAM pressure", "--cache-ram 2"),
    ({"cache_ram": [], "cache_classic": True}, "classic", "--cache-classic"),
    ({"cache_ram": [], "cache_lru": 8}, "LRU", "--cache-lru 8"),
    ({"cache_ram": [], "cache_none": True}, "none", "--cache-none"),
    ({}, "unknown", "no cache flag this pack knows"),
])
def test_cache_mode_is_read_from_the_launch_flags(monkeypatch, flags, short, flag_text):
    """FAKE comfy.cli_args modules with the flag attributes two ComfyUI generations have."""
    cli_args = types.ModuleType("comfy.cli_args")
    defaults = {"cache_classic": False, "cache_lru": 0, "cache_none": False} if flags else {}
    cli_args.args = types.SimpleNamespace(**{**defaults, **flags})
    monkeypatch.setitem(sys.modules, "comfy", types.ModuleType("comfy"))
    monkeypatch.setitem(sys.modules, "comfy.cli_args", cli_args)
    mode = comfy_memory.cache_mode()
    assert mode.short == short and flag_text in mode.detail
