"""What a plan proposes: one pull request per change set (``build_proposals``), the check
that keeps a rejected one closed, the emergency phases its pull-request state keeps, the
dashboard's rows and the cost of the changes."""

from __future__ import annotations

from dataclasses import replace

from bot.config.recommend import NoiseSettings
from bot.forge.branches import group_key
from bot.forge.lifecycle import ThresholdCheck, within_per_value
from bot.forge.results import WorkloadStatus
from bot.manifests.edit_planner import SKIPPED_NOTE
from bot.model import ChangeSet, EmergencyPhase, FieldId, Note
from bot.pipeline.plan import ChangeSetEdit, RepositoryOutcome
from bot.recommend.changes import next_emergency_phase, risk_fix
from bot.recommend.noise import passes_min_change
from bot.report import Prices
from bot.report.build import make_proposal
from bot.report.numbers import money, unsigned_money
from bot.report.proposal import Proposal
from bot.report.replay import CostTotals, cost_totals

__all__ = [
    "build_proposals",
    "changes_cost",
    "emergency_phases",
    "held_below_threshold",
    "proposals_within_thresholds",
    "workload_statuses",
]


def build_proposals(plan: RepositoryOutcome) -> list[Proposal]:
    """One ``Proposal`` per change set of ``plan`` (``repository_outcome``'s ``grouping``),
    from the one edit of that set: the files of one pull request hold only its own changes.

    The proposal carries the workloads still ``changes`` after their edit, with the changes
    that were written; the notes of changes the edit skipped stay with their workloads'
    reasons (the dashboard), not in the pull request.
    """
    outcomes = {o.ref: o for o in plan.outcomes if o.status == "changes"}
    summaries = {ref: o.summary for ref, o in outcomes.items() if o.summary is not None}
    proposals = []
    for edited in plan.edits:
        if not edited.edit.files:
            continue
        written = [
            outcomes[r]
            for r in dict.fromkeys(c.ref for c in edited.change_set.changes)
            if r in outcomes
        ]
        change_set = ChangeSet(
            edited.change_set.key,
            tuple(c for o in written for c in o.changes),
            tuple(o.recommendation for o in written if o.recommendation is not None),
        )
        notes = tuple(n for n in edited.edit.notes if n.code != SKIPPED_NOTE)
        notes += refused_notes(edited)
        edit = replace(edited.edit, notes=notes)
        proposals.append(
            make_proposal(
                change_set,
                edit,
                summaries=summaries,
                display_zone=plan.settings.display_zone,
                marks={
                    o.ref.key: {c.name: c.mark for c in o.declared.containers if c.mark}
                    for o in written
                },
            )
        )
    return proposals


REFUSED_NOTE = "edit-refused"
"""The code of a note naming a workload of the change set whose edit was refused."""


def refused_notes(edited: ChangeSetEdit) -> tuple[Note, ...]:
    """A note per workload of the change set whose edit would not render and is left out of
    the pull request: its reason (kustomize's message, the object's file and line, what to
    do), so a reviewer of a grouped pull request sees what it does not hold."""
    out = []
    for ref in dict.fromkeys(edited.edit.failed):
        why = [e.message for e in edited.edit.errors if e.message.startswith(f"{ref}: ")]
        text = why[0] if why else f"{ref}: its edit was refused"
        out.append(Note(REFUSED_NOTE, f"not in this pull request: {text}"))
    return tuple(out)


def proposals_within_thresholds(noise: NoiseSettings) -> ThresholdCheck:
    """The check that keeps a rejected proposal closed: True when every proposed request or
    limit of the new proposal is within minChange (``bot.recommend.noise``) of the rejected one
    and every other value (replica counts, targets) is equal (``lifecycle.within_per_value``)."""

    def close(field_id: FieldId | None, rejected: float, proposed: float) -> bool:
        resource = field_id.resource if field_id is not None else None
        if field_id is None or not field_id.is_request_or_limit or resource is None:
            return False
        moved, _ = passes_min_change(rejected, proposed, resource, noise)
        return not moved

    return within_per_value(close)


def emergency_phases(plan: RepositoryOutcome) -> dict[str, EmergencyPhase]:
    """Per workload key with a recommendation, the emergency phase its proposal leaves
    (``bot.recommend.changes.next_emergency_phase``), kept in the pull-request state."""
    return {
        o.ref.key: next_emergency_phase(o.recommendation)
        for o in plan.outcomes
        if o.recommendation is not None
    }


def workload_statuses(plan: RepositoryOutcome) -> list[WorkloadStatus]:
    """The dashboard's view of each workload, keyed by its change set."""
    grouping = plan.settings.pull_requests.grouping
    return [
        WorkloadStatus(
            o.ref,
            o.status,
            "; ".join(o.reasons),
            group_key(o.ref, grouping) if o.status == "changes" else None,
            o.recommendation if o.status == "changes" else None,
        )
        for o in plan.outcomes
    ]


def changes_cost(plan: RepositoryOutcome) -> CostTotals:
    """The replays of the workloads with changes, summed, at the repository's prices."""
    recs = [o.recommendation for o in plan.outcomes if o.status == "changes" and o.recommendation]
    return cost_totals(recs, plan.prices)


def held_below_threshold(
    proposals: list[Proposal], prices: Prices, threshold: float, risk_minutes: float
) -> dict[str, str]:
    """Per key of a proposal too small to open as a new pull request, why
    (``pull_requests.min_monthly_change``): its workloads' replayed monthly cost changes by
    less than ``threshold``. Never held: a risk fix of any of its workloads
    (``bot.recommend.changes.risk_fix``), and a proposal whose change is unknown (no prices, a
    workload without a replay), or with a threshold of 0."""
    if threshold <= 0:
        return {}
    held: dict[str, str] = {}
    for proposal in proposals:
        recs = proposal.change_set.recommendations
        if any(risk_fix(rec, risk_minutes) for rec in recs):
            continue
        totals = cost_totals(recs, prices)
        if not totals.priced or not totals.replayed or totals.unreplayed:
            continue
        change = totals.delta_month
        if abs(change) < threshold:
            held[proposal.key] = (
                f"monthly cost change {money(change, prices.currency)} is below "
                f"pull_requests.min_monthly_change ({unsigned_money(threshold, prices.currency)}); "
                "tick the box to open it anyway"
            )
    return held
