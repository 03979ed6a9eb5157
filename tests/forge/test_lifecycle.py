"""``decide``: one row of the lifecycle table per case (docs/pull-requests.md)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.forge.lifecycle import ACTIONS, Observed, ObservedPull, decide, within_fraction
from bot.report.proposal import PullRequestState

KEY = "prod/shop/frontend"
NEW = PullRequestState(KEY, proposal="p2", files="f2", changes={"x": 2})
SAME = PullRequestState(KEY, proposal="p2", files="f2", changes={"x": 2})
MOVED = PullRequestState(KEY, proposal="p2", files="f1", changes={"x": 2})
OLD = PullRequestState(KEY, proposal="p1", files="f1", changes={"x": 1})


def pull(state="open", body=SAME, human=False):
    return ObservedPull(
        number=7, state=state, url="u", state_json=body, human_commits=human, head_sha="abc"
    )


def never(old, new):
    return False


def always(old, new):
    return True


CASES = [
    ("open-unchanged", Observed(KEY, pull(), "abc"), NEW, never, "up-to-date"),
    ("open-proposal-changed", Observed(KEY, pull(body=OLD), "abc"), NEW, never, "update"),
    ("open-body-unreadable", Observed(KEY, pull(body=None), "abc"), NEW, never, "update"),
    ("open-base-moved", Observed(KEY, pull(body=MOVED), "abc"), NEW, never, "rebuild"),
    ("open-no-change-needed", Observed(KEY, pull(), "abc"), None, never, "close"),
    ("open-human-commits", Observed(KEY, pull(human=True), "abc"), NEW, never, "note-human"),
    (
        "open-human-commits-no-change",
        Observed(KEY, pull(human=True), "abc"),
        None,
        never,
        "note-human",
    ),
    (
        "open-human-noted",
        Observed(KEY, pull(body=SAME.with_human_noted(), human=True), "abc"),
        NEW,
        never,
        "leave-human",
    ),
    ("closed-within-thresholds", Observed(KEY, pull("closed", OLD)), NEW, always, "suppress"),
    ("closed-outside-thresholds", Observed(KEY, pull("closed", OLD)), NEW, never, "create"),
    ("closed-ticked", Observed(KEY, pull("closed", OLD), requested=True), NEW, always, "create"),
    ("closed-no-proposal", Observed(KEY, pull("closed", OLD)), None, always, "nothing"),
    ("merged-no-proposal", Observed(KEY, pull("merged", OLD)), None, never, "nothing"),
    ("merged-same-proposal", Observed(KEY, pull("merged", SAME)), NEW, never, "up-to-date"),
    ("merged-next-proposal", Observed(KEY, pull("merged", OLD)), NEW, always, "create"),
    ("nothing-yet", Observed(KEY), NEW, never, "create"),
    ("nothing-needed", Observed(KEY), None, never, "nothing"),
    ("crash-after-push", Observed(KEY, None, "abc"), NEW, never, "create"),
    ("orphan-branch", Observed(KEY, None, "abc"), None, never, "delete-branch"),
    ("open-in-error", Observed(KEY, pull(), "abc", in_error=True), None, never, "undecided"),
    ("orphan-in-error", Observed(KEY, None, "abc", in_error=True), None, never, "undecided"),
    (
        "open-in-error-grouped",
        Observed(KEY, pull(), "abc", in_error=True),
        NEW,
        never,
        "up-to-date",
    ),
]


@pytest.mark.parametrize(
    ("observed", "proposal", "within", "expected"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_decide_row(observed, proposal, within, expected):
    action = decide(observed, proposal, within_thresholds=within)
    assert action.kind == expected
    assert action.kind in ACTIONS and action.reason


def test_crash_recovery_is_flagged():
    assert decide(Observed(KEY, None, "abc"), NEW).recovered
    assert not decide(Observed(KEY), NEW).recovered


def test_thresholds_receive_the_rejected_and_the_new_state_json():
    seen = []

    def spy(old, new):
        seen.append((old["proposal"], new["proposal"], new["changes"]))
        return True

    decide(Observed(KEY, pull("closed", OLD)), NEW, within_thresholds=spy)
    assert seen == [("p1", "p2", {"x": 2})]


def test_default_threshold_suppresses_only_the_identical_proposal():
    assert decide(Observed(KEY, pull("closed", SAME)), NEW).kind == "suppress"
    assert decide(Observed(KEY, pull("closed", OLD)), NEW).kind == "create"


states = st.builds(
    PullRequestState,
    key=st.just(KEY),
    proposal=st.sampled_from(["p1", "p2"]),
    files=st.sampled_from(["f1", "f2"]),
    human_noted=st.booleans(),
)
observations = st.builds(
    Observed,
    key=st.just(KEY),
    pull=st.one_of(
        st.none(),
        st.builds(
            ObservedPull,
            number=st.integers(1, 9),
            state=st.sampled_from(["open", "closed", "merged"]),
            state_json=st.one_of(st.none(), states),
            human_commits=st.booleans(),
        ),
    ),
    branch_sha=st.one_of(st.none(), st.just("abc")),
    requested=st.booleans(),
    in_error=st.booleans(),
)


@given(observations, st.one_of(st.none(), states), st.booleans())
def test_decide_properties(observed, proposal, within):
    action = decide(observed, proposal, within_thresholds=lambda old, new: within)
    pull = observed.pull
    if pull is not None and pull.state == "open" and pull.human_commits:
        assert action.kind in ("note-human", "leave-human")  # never overwrite a human
    if (
        pull is not None
        and pull.state == "open"
        and proposal is not None
        and pull.state_json is not None
    ):
        same = (pull.state_json.proposal, pull.state_json.files) == (
            proposal.proposal,
            proposal.files,
        )
        if same and not pull.human_commits:
            assert action.kind == "up-to-date"  # idempotent: nothing to write
    if action.kind in ("create", "update", "rebuild"):
        assert proposal is not None
    if action.kind == "create":
        assert pull is None or pull.state != "open"
    if observed.in_error and proposal is None:
        assert action.kind not in ("close", "delete-branch")  # unknown is not "no change"


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ({"a": 1.0}, {"a": 1.05}, True),
        ({"a": 1.0}, {"a": 1.2}, False),
        ({"a": 1.0}, {"a": 0.95}, True),
        ({"a": 1.0}, {"a": 1.0, "b": 2.0}, False),
        ({"a": None}, {"a": None}, True),
        ({"a": None}, {"a": 1.0}, False),
        ({"a": 0}, {"a": 0}, True),
        ({"a": 0}, {"a": 1}, False),
    ],
    ids=[
        "small-up",
        "large-up",
        "small-down",
        "new-field",
        "both-removed",
        "removed-vs-set",
        "zero-same",
        "zero-moved",
    ],
)
def test_within_fraction(old, new, expected):
    check = within_fraction(0.1)
    assert check({"proposal": "x", "changes": old}, {"proposal": "y", "changes": new}) is expected


def test_within_fraction_falls_back_to_digests_without_changes():
    check = within_fraction(0.1)
    assert check({"proposal": "x", "changes": {}}, {"proposal": "x", "changes": {"a": 1}})
    assert not check({"proposal": "x", "changes": {}}, {"proposal": "y", "changes": {"a": 1}})
