"""The pure steps around ``publish``, over plain values (no forge): which branches a run looks
at, the order it acts in, which new pull requests wait for a slot, and the dashboard's rows."""

from __future__ import annotations

import pytest

from bot.forge.dashboard import dashboard_rows
from bot.forge.lifecycle import Action, ActionKind, Observed
from bot.forge.results import KeyResult, PublishReport, WorkloadStatus
from bot.forge.schedule import Slots, Step, branch_keys, ordered
from bot.model import WorkloadRef


def step(key: str, kind: ActionKind, *, requested: bool = False) -> Step:
    return Step(key, f"tortoise-bot/{key}", Observed(key, requested=requested), Action(kind, ""))


def test_a_branch_takes_the_key_of_the_first_source_that_names_it():
    keys = branch_keys(
        {"tortoise-bot/a": "a"},
        {"tortoise-bot/a": "from-body", "tortoise-bot/b": "b"},
        {"tortoise-bot/b": "b-remote", "tortoise-bot/c": "c"},
    )
    assert keys == {"tortoise-bot/a": "a", "tortoise-bot/b": "b", "tortoise-bot/c": "c"}
    assert list(keys) == ["tortoise-bot/a", "tortoise-bot/b", "tortoise-bot/c"]


def test_closes_free_slots_before_updates_and_creates_with_requests_first():
    steps = [
        step("a", "create"),
        step("b", "update"),
        step("c", "close"),
        step("d", "create", requested=True),
        step("e", "delete-branch"),
        step("f", "nothing"),
    ]
    assert [s.key for s in ordered(steps)] == ["c", "e", "b", "f", "d", "a"]


@pytest.mark.parametrize(
    ("slots", "reason"),
    [
        (Slots(max_open=3, max_new_per_run=2, open=2, opened=1), None),
        (Slots(max_open=3, max_new_per_run=2, open=3, opened=0), "max_open"),
        (Slots(max_open=3, max_new_per_run=2, open=0, opened=2), "max_new_per_run"),
        (Slots(max_open=3, max_new_per_run=2, open=3, opened=2), "max_open"),
    ],
)
def test_a_new_pull_request_waits_only_while_a_limit_is_reached(slots, reason):
    got = slots.wait_reason(step("k", "create"))
    assert got == (None if reason is None else f"waiting for a free slot ({reason})")
    assert slots.wait_reason(step("k", "create", requested=True)) is None
    assert slots.wait_reason(step("k", "update")) is None


def test_slots_count_what_succeeded():
    slots = Slots(max_open=1, max_new_per_run=5, open=1)
    assert slots.wait_reason(step("new", "create")) is not None
    freed = slots.after("close")
    assert (freed.open, freed.opened) == (0, 0)
    assert freed.wait_reason(step("new", "create")) is None
    taken = freed.after("create")
    assert (taken.open, taken.opened) == (1, 1)
    assert taken.after("update") == taken
    assert taken.wait_reason(step("next", "create")) == "waiting for a free slot (max_open)"


def test_dashboard_rows_refine_each_workload_by_what_publish_did():
    def ref(name: str) -> WorkloadRef:
        return WorkloadRef("Deployment", "shop", name, "prod")

    report = PublishReport(
        (
            KeyResult("prod/shop/a", "create", "proposal-open", "a change is needed", 7, "u7"),
            KeyResult("prod/shop/b", "pending", "pending", "waiting for a free slot (max_open)"),
        ),
        not_done=("prod/shop/c",),
        stopped="rate limit",
    )
    statuses = [
        WorkloadStatus(ref("a"), "changes", "cpu 0.5 → 0.4", key="prod/shop/a"),
        WorkloadStatus(ref("b"), "changes", key="prod/shop/b"),
        WorkloadStatus(ref("c"), "changes", key="prod/shop/c"),
        WorkloadStatus(ref("d"), "no-change", "within thresholds", key="prod/shop/d"),
    ]
    rows = dashboard_rows(statuses, report)
    got = [(r.ref.name, r.status, r.message, r.number, r.checkbox) for r in rows]
    assert got == [
        ("a", "proposal-open", "cpu 0.5 → 0.4", 7, False),
        ("b", "pending", "waiting for a free slot (max_open)", None, True),
        ("c", "pending", "not done in the last run (API budget)", None, True),
        ("d", "up-to-date", "within thresholds", None, False),
    ]
