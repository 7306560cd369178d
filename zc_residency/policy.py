"""What a residency lock does when ComfyUI asks every model to leave VRAM.

ComfyUI has one entry point for "unload everything", ``unload_all_models()``,
and four kinds of callers. The lock tells them apart and answers each
according to the lock's policy:

======================  ==========================  ==================  =======================
who calls               ``yield`` (default)         ``survive_free``    ``survive_free_and_oom``
======================  ==========================  ==================  =======================
explicit free           step aside (unload; the     hold                hold
(POST /free, the        lock stays and holds the
"Unload Models" button) model again once reloaded)
OOM recovery            release the lock            release the lock    hold once; a second OOM
                                                                        releases the lock
--disable-smart-memory  hold                        hold                hold
(end of every prompt)
any other caller        hold                        hold                hold
(another node pack)
======================  ==========================  ==================  =======================

Releasing on OOM is what keeps a lock from causing an OOM loop: ComfyUI's
recovery frees the model, and a cached node does not re-lock it on the next
run (re-running the node does, after the budget check).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from enum import Enum


class Policy(str, Enum):
    YIELD = "yield"
    SURVIVE_FREE = "survive_free"
    SURVIVE_FREE_AND_OOM = "survive_free_and_oom"


DEFAULT_POLICY = Policy.YIELD
POLICY_NAMES = [p.value for p in Policy]

DESCRIPTIONS = {
    Policy.YIELD: "steps aside for an explicit free (the model is unloaded, then held again once "
                  "reloaded); released on OOM recovery",
    Policy.SURVIVE_FREE: "holds through an explicit free; released on OOM recovery",
    Policy.SURVIVE_FREE_AND_OOM: "holds through an explicit free and one OOM recovery; a second OOM "
                                 "recovery releases it",
}


class UnloadReason(str, Enum):
    USER_FREE = "an explicit free (POST /free: the Unload Models / Free memory buttons)"
    OOM = "ComfyUI's out-of-memory recovery"
    END_OF_PROMPT = "--disable-smart-memory's unload at the end of the prompt"
    OTHER = "unload_all_models() called by another node or pack"


class Action(str, Enum):
    HOLD = "hold"
    STEP_ASIDE = "step aside"
    RELEASE = "release"


def parse_policy(value) -> Policy:
    """The Policy named by value; raises ValueError naming the choices."""
    if isinstance(value, Policy):
        return value
    try:
        return Policy(str(value))
    except ValueError:
        raise ValueError(f"residency_policy {value!r} is not one of {', '.join(POLICY_NAMES)}; "
                         f"choose one (default {DEFAULT_POLICY.value})") from None


def action_for(policy: Policy, reason: UnloadReason, ooms_survived: int = 0) -> Action:
    """What a lock with ``policy`` does for an unload_all_models() call made for ``reason``."""
    if reason is UnloadReason.USER_FREE:
        return Action.STEP_ASIDE if policy is Policy.YIELD else Action.HOLD
    if reason is UnloadReason.OOM:
        if policy is Policy.SURVIVE_FREE_AND_OOM and ooms_survived < 1:
            return Action.HOLD
        return Action.RELEASE
    return Action.HOLD


# ComfyUI's callers of unload_all_models(), by the function that calls it:
# main.py prompt_worker (after POST /free sets its flags; the only caller
# outside a queue run) and execution.py PromptExecutor.execute_async (at the
# end of a prompt when --disable-smart-memory is set). The OOM handler in
# execution.py execute() calls it while handling the exception.
FREE_CALLER = "prompt_worker"
END_OF_PROMPT_CALLER = "execute_async"


def classify_unload(caller_names: Iterable[str], exception: BaseException | None,
                    is_oom: Callable[[BaseException], bool]) -> UnloadReason:
    """Why unload_all_models() is being called.

    caller_names: co_name of the calling frames, nearest first (a few suffice);
    exception: the exception being handled at the call (sys.exc_info()[1]), if any.
    """
    if exception is not None:
        try:
            if is_oom(exception):
                return UnloadReason.OOM
        except Exception:  # noqa: BLE001, S110 - a failing check means "not an OOM"
            pass
    names = list(caller_names)
    if FREE_CALLER in names:
        return UnloadReason.USER_FREE
    if names and names[0] == END_OF_PROMPT_CALLER:
        return UnloadReason.END_OF_PROMPT
    return UnloadReason.OTHER
