"""What the bot's pull requests tell the engine's rule ``after_revert.floor``: after a merged
revert, the values the reverted pull request had set for the fields the revert restored
(``WorkloadMemory.reverted``), read per workload from the listing a run already makes."""

from __future__ import annotations

from bot.forge.previous import PreviousProposal, RevertedValues, workload_memory
from bot.model import FieldId
from bot.report import PullRequestState

PAY, WEB = "default/shop/pay", "default/shop/web"


def _merged(
    number: int, at: float, changes: dict[str, float | int | None], reverts: int | None = None
) -> PreviousProposal:
    state = PullRequestState("default/shop", "p", "f", changes, reverts=reverts)
    return PreviousProposal("default/shop", number, f"b{number}", False, True, state, at, at)


REVERTED = _merged(
    3,
    100.0,
    {
        f"{PAY}/app/requests.cpu": 0.1,
        f"{PAY}/app/requests.memory": 100e6,  # not regressed: not restored
        f"{PAY}/-/hpa.target.cpu": 80,
        f"{PAY}/-/hpa.maxReplicas": 4,
        f"{PAY}/app/limits.cpu": None,  # removed: bounds nothing
        f"{WEB}/app/requests.cpu": 0.2,
    },
)
REVERT = _merged(
    6,
    200.0,
    {
        f"{PAY}/app/requests.cpu": 0.5,
        f"{PAY}/-/hpa.target.cpu": 60,
        f"{PAY}/-/hpa.maxReplicas": 10,
        f"{PAY}/app/limits.cpu": 1.0,
        f"{WEB}/app/requests.cpu": 0.4,
    },
    reverts=3,
)


def test_a_merged_revert_tells_the_values_that_regressed_per_workload():
    memory = workload_memory([REVERT, REVERTED])
    assert memory[PAY].reverted == RevertedValues(
        6,
        3,
        {
            ("app", FieldId.REQUESTS_CPU): 0.1,
            (None, FieldId.HPA_TARGET_CPU): 80,
            (None, FieldId.HPA_MAX_REPLICAS): 4,
        },
    )
    assert memory[WEB].reverted == RevertedValues(6, 3, {("app", FieldId.REQUESTS_CPU): 0.2})


def test_a_merge_after_the_revert_or_an_unlisted_reverted_pull_request_tells_nothing():
    later = _merged(7, 300.0, {f"{PAY}/app/requests.cpu": 0.3})  # the next proposal, merged
    memory = workload_memory([later, REVERT, REVERTED])
    assert memory[PAY].reverted is None
    assert memory[WEB].reverted is not None  # its latest merge is still the revert
    assert workload_memory([REVERT])[PAY].reverted is None  # #3 no longer listed
    assert workload_memory([REVERTED])[PAY].reverted is None  # no revert merged
