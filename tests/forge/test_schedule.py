"""The scheduling step of ``publish``, over plain values (no forge): which branches a run looks
at, the order it acts in, and which new pull requests wait for a slot."""

from __future__ import annotations

import pytest

from bot.forge.lifecycle import Action, ActionKind, Observed
from bot.forge.schedule import Slots, Step, branch_keys, ordered


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
