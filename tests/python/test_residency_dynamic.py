"""The dynamic-VRAM residency lock against FakeAimdo (a fake of the few comfy-aimdo
calls it uses; see residency_fakes.py). The real thing is checked on a GPU by
bench/gpu/residency_check.py."""

from __future__ import annotations

import gc

import pytest
from residency_fakes import GIB, PAGE, FakeAimdo, FakeBaseModel, FakeComfy, FakeModule, FakePatcher

from zc_pack.zc_residency import dynamic_hooks
from zc_pack.zc_residency.policy import Policy
from zc_pack.zc_residency.report import lock_state, report
from zc_pack.zc_residency.service import ResidencyService

DEVICE = "cuda:0"
STAGED = 10 * PAGE  # 320 MiB of staged weights


@pytest.fixture
def fake_aimdo():
    return FakeAimdo()


@pytest.fixture
def fake_comfy():
    return FakeComfy()


@pytest.fixture
def service(fake_aimdo, fake_comfy):
    svc = ResidencyService(port=fake_aimdo, vbar_module=fake_aimdo.module, comfy_hooks=False, comfy=fake_comfy)
    yield svc
    svc.release_all("test teardown")


def loaded_model(size=STAGED, modules=None):
    base = FakeBaseModel(modules)
    return base, FakePatcher(base, size, DEVICE)


def test_lock_before_the_first_load_applies_the_limit_at_load(service, fake_aimdo):
    base, patcher = loaded_model()
    outcome = service.lock(patcher, "node:1")
    assert outcome.locked and outcome.lock.dynamic and outcome.lock.vbar_limit_bytes == 0  # no VBAR yet

    vbar = fake_aimdo.stage(base, DEVICE, STAGED)  # ComfyUI's first load creates the VBAR
    run = outcome.lock.evidence.run(None)
    service.after_locked_load(outcome.lock, patcher, run, 0.001, 0)
    vbar.fault_all()  # the sampler uses every weight

    assert vbar.limit_calls == [STAGED] and outcome.lock.vbar_limit_bytes == STAGED
    assert fake_aimdo.pressure(100) == 0  # nothing below the limit can be evicted
    assert vbar.loaded_size() == STAGED


def test_control_without_a_lock_is_evicted(fake_aimdo):
    base, _ = loaded_model()
    vbar = fake_aimdo.stage(base, DEVICE, STAGED)
    vbar.fault_all()
    assert fake_aimdo.pressure(4) == 4 and vbar.loaded_size() == STAGED - 4 * PAGE


def test_limit_is_reapplied_after_comfyui_resets_it(service, fake_aimdo):
    base, patcher = loaded_model()
    vbar = fake_aimdo.stage(base, DEVICE, STAGED)
    vbar.fault_all()
    service.lock(patcher, "node:1")
    assert vbar.watermark_limit_pages == 10

    fake_aimdo.module.vbars_reset_watermark_limits()  # what execution.py calls after every node

    assert fake_aimdo.resets == 1  # ComfyUI's reset really ran ...
    assert vbar.watermark_limit_pages == 10  # ... and the lock is back in place
    assert fake_aimdo.pressure(100) == 0


def test_unlock_clears_the_limit_and_restores_the_module(service, fake_aimdo):
    original_reset = fake_aimdo.module.vbars_reset_watermark_limits
    base, patcher = loaded_model()
    vbar = fake_aimdo.stage(base, DEVICE, STAGED)
    vbar.fault_all()
    service.lock(patcher, "node:1")
    assert fake_aimdo.module.vbars_reset_watermark_limits is not original_reset

    service.release_owner("node:1")

    assert fake_aimdo.module.vbars_reset_watermark_limits is original_reset
    assert vbar.limit_calls[-1] == 0 and vbar.watermark_limit_pages == 0
    assert fake_aimdo.pressure(3) == 3  # evictable again, like the control


def test_free_memory_estimate_does_not_count_locked_pages(service, fake_aimdo):
    base, patcher = loaded_model()
    vbar = fake_aimdo.stage(base, DEVICE, STAGED)
    vbar.fault_all()
    torch_free = 2 * GIB

    def comfy_get_free_memory(self, device):  # ComfyUI: torch free + every resident VBAR byte
        return torch_free + sum(v.loaded_size() for v in fake_aimdo.vbars)

    corrected = dynamic_hooks.wrap_get_free_memory(service, comfy_get_free_memory)
    assert corrected(patcher, DEVICE) == torch_free + STAGED  # nothing locked: unchanged

    service.lock(patcher, "node:1")
    assert corrected(patcher, DEVICE) == torch_free  # locked pages are not reclaimable

    other_base = FakeBaseModel()
    other = fake_aimdo.stage(other_base, DEVICE, 3 * PAGE)
    other.fault_all()
    assert corrected(patcher, DEVICE) == torch_free + 3 * PAGE  # an unlocked VBAR still counts
    assert corrected(patcher, "cuda:1") == torch_free + STAGED + 3 * PAGE  # other device: no lock there


def test_explicit_free_steps_aside_then_holds_again(service, fake_aimdo):
    base, patcher = loaded_model()
    vbar = fake_aimdo.stage(base, DEVICE, STAGED)
    vbar.fault_all()
    lock = service.lock(patcher, "node:1").lock

    stepped = service.apply_unload_policy(["prompt_worker", "run"], None)  # POST /free
    assert stepped == [lock] and vbar.watermark_limit_pages == 0
    assert vbar.evict(100) == 10  # ComfyUI's unload frees it all

    service.end_step_aside(stepped)
    assert not lock.yielding and vbar.watermark_limit_pages == 10


def test_oom_releases_by_default_and_survive_policy_holds_once(service, fake_aimdo):
    base, patcher = loaded_model()
    fake_aimdo.stage(base, DEVICE, STAGED).fault_all()
    other_base, other = loaded_model()
    fake_aimdo.stage(other_base, DEVICE, STAGED).fault_all()
    default = service.lock(patcher, "node:1").lock
    holder = service.lock(other, "node:2", policy=Policy.SURVIVE_FREE_AND_OOM).lock

    service.apply_unload_policy(["execute"], MemoryError("CUDA out of memory"))
    assert service.registry.find(base) is None and base.dynamic_vbars[DEVICE].watermark_limit_pages == 0
    assert default.vbar_limit_bytes == 0
    assert service.registry.find(other_base) is holder and holder.ooms_survived == 1

    service.apply_unload_policy(["execute"], MemoryError("CUDA out of memory"))
    assert service.registry.find(other_base) is None  # a second OOM: never an OOM loop


def test_evidence_counts_weights_copied_into_vbar_pages(service, fake_aimdo, fake_comfy):
    modules = {f"blocks.{i}": FakeModule(4 * PAGE, signature=bytes([i, 1])) for i in range(3)}
    base, patcher = loaded_model(modules=modules)
    fake_aimdo.stage(base, DEVICE, 12 * PAGE).fault_all()
    lock = service.lock(patcher, "node:1").lock  # baseline signatures taken here

    fake_comfy.prompt_id = "run-one"
    service.after_locked_load(lock, patcher, lock.evidence.run(service.run_id()), 0.002, 0)
    fake_aimdo.module.vbars_reset_watermark_limits()  # end of the sampler node
    assert lock.evidence.run("run-one").bytes_recopied == 0  # stayed resident: nothing copied

    fake_comfy.prompt_id = "run-two"
    modules["blocks.1"]._v_signature = bytes([1, 2])  # page re-created: weight copied again
    service.after_locked_load(lock, patcher, lock.evidence.run(service.run_id()), 0.002, 0)
    fake_comfy.prompt_id = None  # the reset runs outside the node's context
    fake_aimdo.module.vbars_reset_watermark_limits()
    assert lock.evidence.run("run-two").bytes_recopied == 4 * PAGE

    state = lock_state(service, lock)
    assert state["mode"] == "dynamic" and state["vbar_limit_bytes"] == 12 * PAGE
    assert state["last_reload_bytes"] == 4 * PAGE and [r["run"] for r in state["runs"]] == ["run-one", "run-two"]


def test_a_clone_shares_the_lock_and_a_new_model_moves_it(service, fake_aimdo):
    base, patcher = loaded_model()
    vbar = fake_aimdo.stage(base, DEVICE, STAGED)
    lock = service.lock(patcher, "node:1").lock
    assert service.lock(patcher.clone(), "node:1").lock is lock  # LoRA/patch clone: same BaseModel

    new_base, new_patcher = loaded_model()
    service.lock(new_patcher, "node:1")  # the loader ran again
    assert service.registry.find(base) is None and vbar.limit_calls[-1] == 0
    assert service.registry.find(new_base) is not None and len(service.registry) == 1


def test_lock_goes_when_comfyui_drops_the_model(service, fake_aimdo):
    base, patcher = loaded_model()
    fake_aimdo.stage(base, DEVICE, STAGED)
    service.lock(patcher, "node:1")
    del base, patcher
    gc.collect()
    assert not service.registry and not len(service.hooks)
    assert any("released the model object" in text for _, text in service.events)


def test_budget_refusal_locks_nothing(service, fake_comfy):
    fake_comfy.total_bytes = 8 * GIB
    _, patcher = loaded_model(size=7 * GIB)
    outcome = service.lock(patcher, "node:1", headroom_bytes=2 * GIB)
    assert not outcome.locked and not service.registry and not len(service.hooks)
    assert "not locked:" in outcome.message and "8.00 GiB total on cuda:0" in outcome.message


def test_report_is_plain_json(service, fake_aimdo):
    import json
    base, patcher = loaded_model()
    fake_aimdo.stage(base, DEVICE, STAGED).fault_all()
    service.lock(patcher, "node:1")
    data = report(service)
    json.dumps(data)
    assert data["state"] == "locked" and data["resident"] is True and data["locks"][0]["mode"] == "dynamic"
    assert data["hooks_installed"] == ["fake_comfy_aimdo.model_vbar.vbars_reset_watermark_limits"]


def test_each_load_publishes_the_lock_state(service, fake_aimdo):
    published = []
    service.publisher = published.append  # the node layer sets the web UI's notifier here
    base, patcher = loaded_model()
    fake_aimdo.stage(base, DEVICE, STAGED).fault_all()
    lock = service.lock(patcher, "node:1").lock
    service.after_locked_load(lock, patcher, lock.evidence.run(None), 0.001, 0)
    assert [p["state"] for p in published] == ["locked"] and published[0]["owners"] == ["node:1"]

    def broken(state):
        raise RuntimeError("no websocket")
    service.publisher = broken  # a failing UI message never fails a load
    service.after_locked_load(lock, patcher, lock.evidence.run(None), 0.001, 0)
