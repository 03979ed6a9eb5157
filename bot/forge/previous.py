"""What the bot's own pull requests remember between runs.

The bot keeps no database: the state JSON in each bot pull request's body
(``bot.report.proposal.PullRequestState``) and GitHub's merge times are its memory. From the one
listing of pull requests a run already makes, ``workload_memory`` derives per workload:

- ``target_changed_s[(container or "*", resource)]``: ``merged_at`` of the latest merged bot
  pull request whose state changes contain ``<workload key>/<container or ->/hpa.target.<resource>``
  (``-`` is the pod-level ``Resource`` target, ``*`` for the engine). Tortoise's
  ``HPATargetUtilizationUpdateInterval`` (``pkg/hpa/service.go``) counts from there: the value
  changed when a human merged it, not when the bot proposed it. A state too large to list its
  changes (``MAX_STATE_CHANGES_CHARS``) tells nothing about targets.
- ``emergency_phase``: the phase recorded in ``phases`` of the latest merged bot pull request
  that mentions the workload (in ``phases`` or ``changes``); ``normal`` when that pull request
  recorded none (written before phases existed), None when no merged bot pull request mentions it.
- ``reverted``: when that latest merged bot pull request is a revert (its state's ``reverts``),
  the value the reverted pull request had set for each field the revert restored
  (``RevertedValues``): what the engine's rule ``after_revert.floor`` bounds the next proposal
  with. A reverted pull request no longer listed, or whose state is unreadable, tells nothing.

Pull requests closed unmerged and open ones change nothing in the repository, so they are
ignored here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from bot.model import POD_LEVEL, EmergencyPhase, FieldId, Number, Resource
from bot.report.proposal import PullRequestState

POD_LEVEL_IN_ID = "-"
"""Container part of a change id that has no container (pod-level target)."""


@dataclass(frozen=True, slots=True)
class PreviousProposal:
    """One bot pull request as the listing shows it.

    ``state`` is the parsed body state (None when absent or unreadable); ``merged_at_s`` and
    ``closed_at_s`` are unix seconds (None while open, or not merged).
    """

    key: str
    number: int
    branch: str
    open: bool
    merged: bool
    state: PullRequestState | None = None
    merged_at_s: float | None = None
    closed_at_s: float | None = None
    url: str = ""


@dataclass(frozen=True, slots=True)
class RevertedValues:
    """A merged revert of one workload: ``revert`` (its number) restored the values before
    ``reverted``, which had set ``values`` (by container, None for a pod-level field, and
    field) for the fields the revert restored."""

    revert: int
    reverted: int
    values: Mapping[tuple[str | None, FieldId], Number] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class WorkloadMemory:
    """What merged bot pull requests tell about one workload (see the module docstring)."""

    target_changed_s: Mapping[tuple[str, Resource], float] = field(default_factory=dict)
    emergency_phase: EmergencyPhase | None = None
    phase_pull: int | None = None
    """Number of the pull request ``emergency_phase`` was read from."""
    reverted: RevertedValues | None = None


def split_change_id(change_id: str) -> tuple[str, str, FieldId] | None:
    """``(workload key, container or "-", field)`` of a change id read from a pull-request
    state, None when malformed or the field is unknown.

    Inverse of ``bot.report.proposal.change_id``: container names and fields hold no ``/``.
    """
    parts = change_id.rsplit("/", 2)
    if len(parts) != 3 or not all(parts):
        return None
    field_id = FieldId.parse(parts[2])
    return None if field_id is None else (parts[0], parts[1], field_id)


def workload_memory(pulls: Iterable[PreviousProposal]) -> dict[str, WorkloadMemory]:
    """Per workload key, the memory of the merged bot pull requests in ``pulls``.

    Later merges win (ties: the higher pull-request number); pull requests that are not
    merged, or whose state cannot be read, are ignored.
    """
    pulls = tuple(pulls)
    merged = sorted(
        (p for p in pulls if p.merged and p.merged_at_s is not None and p.state is not None),
        key=lambda p: (p.merged_at_s or 0.0, p.number),
    )
    targets: dict[str, dict[tuple[str, Resource], float]] = {}
    phases: dict[str, tuple[EmergencyPhase, int]] = {}
    latest: dict[str, PreviousProposal] = {}
    for pull in merged:
        state, when = pull.state, pull.merged_at_s
        assert state is not None and when is not None
        mentioned: set[str] = set(state.phases)
        for change in state.changes:
            parts = split_change_id(change)
            if parts is None:
                continue
            workload, container, field_id = parts
            mentioned.add(workload)
            resource = field_id.resource
            if field_id.is_hpa_target and resource is not None:
                who = POD_LEVEL if container == POD_LEVEL_IN_ID else container
                targets.setdefault(workload, {})[(who, resource)] = when
        for workload in mentioned:
            phases[workload] = (state.phases.get(workload, "normal"), pull.number)
            latest[workload] = pull
    by_number = {p.number: p for p in pulls if p.state is not None}
    return {
        workload: WorkloadMemory(
            target_changed_s=targets.get(workload, {}),
            emergency_phase=phases[workload][0] if workload in phases else None,
            phase_pull=phases[workload][1] if workload in phases else None,
            reverted=reverted_values(workload, latest[workload], by_number)
            if workload in latest
            else None,
        )
        for workload in sorted(set(targets) | set(phases))
    }


def reverted_values(
    workload: str, revert: PreviousProposal, pulls: Mapping[int, PreviousProposal]
) -> RevertedValues | None:
    """What ``revert``, the latest merged bot pull request mentioning ``workload``, tells when
    it is a revert: the values the pull request it reverted (found in ``pulls``, by number) had
    set for the workload's fields it restored; None when it is no revert, the reverted pull
    request is unknown, or it set none of them (a removed value bounds nothing)."""
    number = revert.state.reverts if revert.state is not None else None
    reverted = pulls.get(number) if number is not None else None
    if number is None or reverted is None or reverted.state is None or revert.state is None:
        return None
    values: dict[tuple[str | None, FieldId], Number] = {}
    for change in revert.state.changes:
        parts = split_change_id(change)
        value = reverted.state.changes.get(change)
        if parts is None or parts[0] != workload or value is None:
            continue
        container = None if parts[1] == POD_LEVEL_IN_ID else parts[1]
        values[(container, parts[2])] = value
    return RevertedValues(revert.number, number, values) if values else None


__all__ = [
    "PreviousProposal",
    "RevertedValues",
    "WorkloadMemory",
    "reverted_values",
    "split_change_id",
    "workload_memory",
]
