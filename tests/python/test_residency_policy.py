"""What a lock does for each caller of unload_all_models(), per policy."""

from __future__ import annotations

import pytest

from zc_pack.zc_residency.policy import Action, Policy, UnloadReason, action_for, classify_unload, parse_policy

R = UnloadReason
A = Action
REASONS = (R.USER_FREE, R.OOM, R.END_OF_PROMPT, R.OTHER)
ROWS = {  # the table in policy.py's docstring: policy -> actions for REASONS, in order
    Policy.YIELD: (A.STEP_ASIDE, A.RELEASE, A.HOLD, A.HOLD),
    Policy.SURVIVE_FREE: (A.HOLD, A.RELEASE, A.HOLD, A.HOLD),
    Policy.SURVIVE_FREE_AND_OOM: (A.HOLD, A.HOLD, A.HOLD, A.HOLD),
}
EXPECTED = {  # (policy, reason) -> action
    (policy, reason): action
    for policy, row in ROWS.items()
    for reason, action in zip(REASONS, row)
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
