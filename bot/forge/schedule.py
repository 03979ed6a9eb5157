"""Which branch keys ``publish`` looks at, in which order it acts, and which wait: pure.

``bot.forge.publish`` reads a forge's pull requests and branches, then follows these steps
before it writes anything (``docs/pull-requests.md``, "Commits, labels, reviewers"):

1. ``branch_keys``: every branch to look at, each with its change-set key: the proposals',
   then those of listed bot pull requests, then bot branches left on the remote.
2. ``lifecycle.decide`` per branch gives its ``Action``; ``ordered`` sorts the ``Step`` values:
   closes and branch deletions first (they free slots), then updates, then new pull requests;
   within each, keys a human ticked on the dashboard first, then by key.
3. ``Slots.wait_reason`` per step: a new pull request no human asked for waits while
   ``max_open`` bot pull requests are open or ``max_new_per_run`` were opened in this run;
   ``Slots.after`` counts each step that succeeded.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from bot.forge.lifecycle import Action, ActionKind, Observed

ORDER: Mapping[ActionKind, int] = {
    "close": 0,
    "delete-branch": 0,
    "update": 1,
    "rebuild": 1,
    "note-human": 1,
    "create": 2,
}
"""Rank of each action in a run (other kinds: 1): what frees a slot before what takes one."""


@dataclass(frozen=True, slots=True)
class Step:
    """One branch key to act on: its branch, what the forge saw, the decision."""

    key: str
    ref: str
    observed: Observed
    action: Action


def branch_keys(
    proposed: Mapping[str, str], listed: Mapping[str, str], remote: Mapping[str, str]
) -> dict[str, str]:
    """Branch -> change-set key of every branch a run looks at (each maps branch -> key):
    ``proposed`` (the proposals' branches), then ``listed`` (bot pull requests), then
    ``remote`` (bot branches); the first to name a branch gives its key."""
    keys = dict(proposed)
    for ref, key in (*listed.items(), *remote.items()):
        keys.setdefault(ref, key)
    return keys


def ordered(steps: Iterable[Step]) -> list[Step]:
    """``steps`` in the order a run acts on them: by ``ORDER`` of the action, keys a human
    ticked first, then by key (the sort is stable)."""
    return sorted(
        steps, key=lambda s: (ORDER.get(s.action.kind, 1), not s.observed.requested, s.key)
    )


WAIT_MAX_OPEN = "waiting for a free slot (max_open)"
"""Why a new pull request waits while ``max_open`` bot pull requests are open."""

WAIT_MAX_NEW = "waiting for a free slot (max_new_per_run)"
"""Why a new pull request waits once this run opened ``max_new_per_run``."""

WAIT_ACTIONS: Mapping[str, str] = {WAIT_MAX_OPEN: "waiting-open", WAIT_MAX_NEW: "waiting-new"}
"""The ``KeyResult.action`` of a new pull request held back by each limit."""


@dataclass(frozen=True, slots=True)
class Slots:
    """Bot pull requests open (``open``) and opened in this run (``opened``), against the two
    limits of the repository's settings."""

    max_open: int
    max_new_per_run: int
    open: int
    opened: int = 0

    def wait_reason(self, step: Step) -> str | None:
        """Why ``step`` waits for a later run, or None when it goes now: only a ``create`` no
        human requested waits, while ``open >= max_open`` or ``opened >= max_new_per_run``."""
        if step.action.kind != "create" or step.observed.requested:
            return None
        if self.open >= self.max_open:
            return WAIT_MAX_OPEN
        if self.opened >= self.max_new_per_run:
            return WAIT_MAX_NEW
        return None

    def after(self, kind: ActionKind) -> Slots:
        """The slots once a step of ``kind`` succeeded: a ``create`` opens one more, a
        ``close`` frees one, anything else leaves them."""
        if kind == "create":
            return replace(self, open=self.open + 1, opened=self.opened + 1)
        if kind == "close":
            return replace(self, open=self.open - 1)
        return self


__all__ = [
    "ORDER",
    "WAIT_ACTIONS",
    "WAIT_MAX_NEW",
    "WAIT_MAX_OPEN",
    "Slots",
    "Step",
    "branch_keys",
    "ordered",
]
