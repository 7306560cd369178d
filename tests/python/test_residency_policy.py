"""What a lock does for each caller of unload_all_models(), per policy."""

from __future__ import annotations

import pytest

from zc_pack.zc_residency.policy import Action, Policy, UnloadReason, action_for, classify_unload, parse_policy

R = UnloadReason
EXPECTED = {  # (policy, reason) -> action, the table in policy.py's docstring
    (Policy.YIELD, R.USER_FREE): Action.STEP_ASIDE,
    (Policy.YIELD, R.OOM): Action.RELEASE,
    (Policy.YIELD, R.END_OF_PROMPT): Action.HOLD,
    (Policy.YIELD, R.OTHER): Action.HOLD,
    (Policy.SURVIVE_FREE, R.USER_FREE): Action.HOLD,
    (Policy.SURVIVE_FREE, R.OOM): Action.RELEASE,
    (Policy.SURVIVE_FREE, R.END_OF_PROMPT): Action.HOLD,
    (Policy.SURVIVE_FREE, R.OTHER): Action.HOLD,
    (Policy.SURVIVE_FREE_AND_OOM, R.USER_FREE): Action.HOLD,
    (Policy.SURVIVE_FREE_AND_OOM, R.OOM): Action.HOLD,
    (Policy.SURVIVE_FREE_AND_OOM, R.END_OF_PROMPT): Action.HOLD,
    (Policy.SURVIVE_FREE_AND_OOM, R.OTHER): Action.HOLD,
}


@pytest.mark.parametrize("policy,reason", list(EXPECTED))
def test_policy_table(policy, reason):
    assert action_for(policy, reason) is EXPECTED[policy, reason]


def test_no_policy_survives_a_second_oom():
    for policy in Policy:
        assert action_for(policy, R.OOM, ooms_survived=1) is Action.RELEASE


def is_oom(exc):
    return isinstance(exc, MemoryError)


@pytest.mark.parametrize("names,exc,reason", [
    (["execute", "execute_async"], MemoryError("CUDA out of memory"), R.OOM),
    (["execute"], ValueError("not memory"), R.OTHER),
    (["prompt_worker", "run"], None, R.USER_FREE),
    (["helper", "prompt_worker"], None, R.USER_FREE),
    (["execute_async", "execute"], None, R.END_OF_PROMPT),
    (["some_node_execute", "execute_async"], None, R.OTHER),
    ([], None, R.OTHER),
])
def test_classify_unload(names, exc, reason):
    assert classify_unload(names, exc, is_oom) is reason


def test_classify_survives_a_failing_oom_check():
    def broken(exc):
        raise RuntimeError("boom")
    assert classify_unload(["prompt_worker"], MemoryError(), broken) is R.USER_FREE


def test_parse_policy_names_the_choices():
    assert parse_policy("survive_free") is Policy.SURVIVE_FREE
    with pytest.raises(ValueError, match="residency_policy 'hold' is not one of yield, survive_free, "
                                         "survive_free_and_oom"):
        parse_policy("hold")
