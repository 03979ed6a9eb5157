"""A forge's pull requests as plain values, for ``bot.forge.publish`` and what any forge lists:
``ListedPull`` (one bot pull request as a listing shows it), ``OpenedPull`` (what opening one
gave), ``Write`` (each write a step makes, for the forge to price in API requests), and what
the listing remembers between runs (``previous_proposals``)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal, TypeAlias

from bot.forge.branches import BranchNames
from bot.forge.lifecycle import PullState
from bot.forge.previous import PreviousProposal
from bot.report import parse_state

Write: TypeAlias = Literal["open", "edit", "comment", "close", "label", "review"]
"""One write to a forge's pull requests: open one, edit its title or body, comment on it,
close it, set its labels and assignees, request its reviews. Pushes and branch deletions go
through git and are not writes of the API."""


@dataclass(frozen=True, slots=True)
class ListedComment:
    """One comment on a pull request: its id (to edit it) and its text."""

    id: int
    body: str


@dataclass(frozen=True, slots=True)
class ListedPull:
    """One bot pull request as the forge's listing shows it (no further request to read it).

    ``merged_at_s`` and ``closed_at_s`` are unix seconds (None while open, or not merged);
    ``labels`` and ``assignees`` are names and logins."""

    number: int
    branch: str
    state: PullState
    body: str | None = None
    url: str = ""
    head_sha: str | None = None
    labels: tuple[str, ...] = ()
    assignees: tuple[str, ...] = ()
    merged_at_s: float | None = None
    closed_at_s: float | None = None

    def key(self, names: BranchNames) -> str:
        """The change-set key: its body state's, else its branch's."""
        state = parse_state(self.body)
        return state.key if state else names.key_of(self.branch)


@dataclass(frozen=True, slots=True)
class OpenedPull:
    """A pull request ``open_pull`` opened, or ``adopted``: another run opened it on the same
    branch between the listing and now, and the forge returned that one instead."""

    number: int
    url: str
    adopted: bool = False


def latest(pulls: Iterable[ListedPull]) -> dict[str, ListedPull]:
    """The latest pull request per bot branch of a newest-first listing (an open one wins)."""
    found: dict[str, ListedPull] = {}
    for pull in pulls:
        current = found.get(pull.branch)
        if current is None or (current.state != "open" and pull.state == "open"):
            found[pull.branch] = pull
    return found


def previous_proposals(
    pulls: Sequence[ListedPull], names: BranchNames
) -> tuple[PreviousProposal, ...]:
    """Every listed bot pull request, in the listing's order, with its parsed state."""
    out = []
    for pull in pulls:
        state = parse_state(pull.body)
        out.append(
            PreviousProposal(
                key=state.key if state else names.key_of(pull.branch),
                number=pull.number,
                branch=pull.branch,
                open=pull.state == "open",
                merged=pull.merged_at_s is not None,
                state=state,
                merged_at_s=pull.merged_at_s,
                closed_at_s=pull.closed_at_s,
                url=pull.url,
            )
        )
    return tuple(out)


__all__ = ["ListedPull", "OpenedPull", "Write", "latest", "previous_proposals"]
