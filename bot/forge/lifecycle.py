"""The pull-request lifecycle: one pure decision per branch (``docs/pull-requests.md``).

``decide(observed, proposal)`` reads what the forge saw for one branch key and the state the
new proposal would have, and returns the single ``Action`` to take. It does no I/O; limits
(open pull requests, new ones per run) are applied afterwards, across keys, by ``publish``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from bot.forge.previous import split_change_id
from bot.model import FieldId
from bot.report.proposal import PullRequestState

PullState: TypeAlias = Literal["open", "closed", "merged"]

ActionKind: TypeAlias = Literal[
    "create",
    "update",
    "rebuild",
    "close",
    "suppress",
    "note-human",
    "leave-human",
    "up-to-date",
    "nothing",
    "delete-branch",
    "undecided",
]
"""What to do with one branch key (see ``ACTIONS`` for each meaning)."""

ACTIONS: Mapping[ActionKind, str] = {
    "create": "push the branch and open a pull request",
    "update": "force-push the rebuilt branch and rewrite the body (the proposal changed)",
    "rebuild": "force-push the branch rebuilt on the new base (same proposal, the files moved)",
    "close": "comment why, close the pull request and delete the branch",
    "suppress": "nothing: a human rejected a proposal within thresholds of this one",
    "note-human": "comment once that the branch has human commits, then leave it",
    "leave-human": "nothing: the branch has human commits and the bot already said so",
    "up-to-date": "nothing: the open pull request already carries this proposal",
    "nothing": "nothing: no proposal and no open pull request",
    "delete-branch": "delete a bot branch left without a pull request and without a proposal",
    "undecided": "nothing: a workload of the key is in error, so whether a change is needed is "
    "unknown; its pull request and branch stay as they are",
}

ThresholdCheck: TypeAlias = Callable[[Mapping[str, Any], Mapping[str, Any]], bool]
"""``within_thresholds(rejected_state_json, new_state_json)``: True = too close to re-propose."""


@dataclass(frozen=True, slots=True)
class ObservedPull:
    """The latest bot pull request of a branch key (an open one wins over closed ones)."""

    number: int
    state: PullState
    url: str = ""
    state_json: PullRequestState | None = None
    human_commits: bool = False
    head_sha: str | None = None


@dataclass(frozen=True, slots=True)
class Observed:
    """What the forge saw for one branch key before acting."""

    key: str
    pull: ObservedPull | None = None
    branch_sha: str | None = None
    """SHA of the bot branch on the remote; None when it does not exist."""
    requested: bool = False
    """A human ticked this key's dashboard checkbox."""
    in_error: bool = False
    """A workload of this key is in error in this run (its history could not be read, ...):
    the missing proposal means "unknown", not "no change needed"."""


@dataclass(frozen=True, slots=True)
class Action:
    """The decision for one key: ``kind`` plus a one-line ``reason`` for logs and dashboard."""

    kind: ActionKind
    reason: str
    recovered: bool = False
    """``create`` over a branch pushed by a run that died before opening the pull request."""


def same_proposal(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """Default threshold check: the rejected and the new proposal digest are equal."""
    return old.get("proposal") == new.get("proposal")


def within_per_value(close: Callable[[FieldId | None, float, float], bool]) -> ThresholdCheck:
    """A threshold check comparing the two states value by value.

    The new proposal is "within" the rejected one when both set the same values, absences
    (``None``: a removed field) match, and ``close(field, rejected, proposed)`` holds for
    every other value (``field`` None: a change id whose field is unknown). A state without ``changes`` (too large to keep) falls back to
    ``same_proposal``.
    """

    def check(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
        rejected, proposed = old.get("changes") or {}, new.get("changes") or {}
        if not rejected or not proposed:
            return same_proposal(old, new)
        if set(rejected) != set(proposed):
            return False
        for key, value in proposed.items():
            before = rejected[key]
            if value is None or before is None:
                if value != before:
                    return False
            elif value != before:
                parts = split_change_id(key)
                field_id = parts[2] if parts is not None else None
                if not close(field_id, float(before), float(value)):
                    return False
        return True

    return check


def within_fraction(fraction: float) -> ThresholdCheck:
    """Within when each proposed value differs from the rejected one by less than ``fraction``:
    ``|new - old| < fraction * |old|`` (``old == 0``: only an equal value is within)."""
    return within_per_value(lambda _key, old, new: abs(new - old) < fraction * abs(old))


_NO_CHANGE = "no change is needed any more"


def _undecided() -> Action:
    """No proposal because a workload is in error: unknown is not "no change needed"."""
    return Action("undecided", "a workload of it is in error in this run: it is left as it is")


def decide(
    observed: Observed,
    proposal: PullRequestState | None,
    *,
    within_thresholds: ThresholdCheck = same_proposal,
) -> Action:
    """The one action for ``observed`` given the new proposal's state (None = no change needed).

    Rows, first match wins (``docs/pull-requests.md`` has the table):

    1. open, human commits, not yet noted -> ``note-human``; noted -> ``leave-human``
    2. open, no proposal -> ``close``; ``undecided`` when a workload of the key is in error
    3. open, body state unreadable or proposal digest differs -> ``update``
    4. open, same proposal, files digest differs (base moved under the edit) -> ``rebuild``
    5. open, same state -> ``up-to-date``
    6. no proposal: a bot branch without pull request -> ``delete-branch`` (``undecided`` when a
       workload of the key is in error); else ``nothing``
    7. closed unmerged, not ticked, new proposal within thresholds of the rejected one -> ``suppress``
    8. merged with this very proposal -> ``up-to-date``
    9. otherwise (none, closed outside thresholds or ticked, merged earlier) -> ``create``
    """
    pull = observed.pull
    if pull is not None and pull.state == "open":
        old = pull.state_json
        if pull.human_commits:
            if old is not None and old.human_noted:
                return Action(
                    "leave-human", "the branch has commits by a human; they are left as they are"
                )
            return Action(
                "note-human", "the branch has commits by a human; the bot stops updating it"
            )
        if proposal is None:
            return _undecided() if observed.in_error else Action("close", _NO_CHANGE)
        if old is None:
            return Action("update", "the pull request body has no readable bot state")
        if old.proposal != proposal.proposal:
            return Action("update", "the proposal changed")
        if old.files != proposal.files:
            return Action("rebuild", "the base branch moved under the edited files")
        return Action("up-to-date", "the pull request carries this proposal")
    if proposal is None:
        if observed.branch_sha is not None and pull is None:
            if observed.in_error:
                return _undecided()
            return Action("delete-branch", "a bot branch without a pull request or a proposal")
        return Action("nothing", "no change needed")
    rejected = pull.state_json if pull is not None and pull.state == "closed" else None
    if (
        rejected is not None
        and not observed.requested
        and within_thresholds(rejected.to_json(), proposal.to_json())
    ):
        number = pull.number if pull is not None else 0
        return Action(
            "suppress",
            f"#{number} was closed without merging and the new proposal is within its thresholds",
        )
    merged = pull.state_json if pull is not None and pull.state == "merged" else None
    if merged is not None and not observed.requested and merged.proposal == proposal.proposal:
        number = pull.number if pull is not None else 0
        return Action("up-to-date", f"#{number} merged this proposal")
    recovered = pull is None and observed.branch_sha is not None
    reason = "a human asked for it on the dashboard" if observed.requested else "a change is needed"
    if recovered:
        reason += " (the branch was pushed by an earlier run that stopped before opening the pull request)"
    return Action("create", reason, recovered=recovered)
