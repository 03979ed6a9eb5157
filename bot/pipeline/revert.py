"""Reverting what regressed (``docs/pull-requests.md``, "Verification"): per merged bot pull
request a regression was found in, with ``verify.revert: auto``, one proposal restoring the
previous values of its regressed fields only (``PullVerification.restore``), on the pull
request's own branch key, so it replaces this run's engine proposal for that key and the
lifecycle treats it as any proposal (an open revert is left up to date, a merged one is
verified in turn).

``publish`` receives the revert keys as urgent: they go first and ignore the noise threshold
(``min_monthly_change``) and the per-run limits, as a key a human ticked does. A revert a human
closed without merging is not proposed again while it would be the same revert.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from bot.config.repo import RepoConfig
from bot.forge.lifecycle import ThresholdCheck
from bot.forge.previous import POD_LEVEL_IN_ID, PreviousProposal, split_change_id
from bot.forge.results import PublishReport, WorkloadStatus
from bot.manifests import Discovery, apply_changes
from bot.model import ChangeSet, FieldChange, Note, WorkloadRef
from bot.recommend.rules import Rule
from bot.report import make_proposal, numbers, state_of
from bot.report.markdown import escape
from bot.report.proposal import Proposal
from bot.report.summary import explained_of
from bot.report.verification import PullVerification

log = logging.getLogger("bot.pipeline")

REVERT_NOTE = "verification.revert"
"""Code of the note a revert's body carries: which pull request it reverts and why."""


def _why(pull: PullVerification) -> str:
    """``reverts #12: app: 2 OOM kill(s) where the proposal predicted none; …``."""
    said = [
        f"{key}: {verdict.reason}"
        for key, verdict in sorted(pull.verdicts.items())
        if verdict.status == "regressed"
    ]
    return f"reverts #{pull.number} ({pull.url}): " + "; ".join(said)


def revert_changes(
    pull: PullVerification, refs: Mapping[str, WorkloadRef]
) -> tuple[FieldChange, ...]:
    """The changes restoring ``pull.restore`` (merged -> previous), for declared workloads."""
    out = []
    for change, (merged, previous) in sorted(pull.restore.items()):
        parts = split_change_id(change)
        if parts is None or parts[0] not in refs:
            continue
        container = None if parts[1] == POD_LEVEL_IN_ID else parts[1]
        out.append(
            FieldChange(
                refs[parts[0]],
                parts[2],
                previous,
                merged,
                container,
                f"restores the value before #{pull.number}, whose outcome regressed",
            )
        )
    return tuple(out)


def _rejected(pulls: Sequence[PreviousProposal], proposal: Proposal) -> bool:
    """Whether the latest bot pull request of ``proposal``'s key was closed without merging
    while carrying this very proposal (a human rejected the revert)."""
    latest = next((p for p in pulls if p.key == proposal.key), None)
    return (
        latest is not None
        and not latest.open
        and not latest.merged
        and latest.state is not None
        and latest.state.proposal == state_of(proposal).proposal
    )


def revert_proposals(
    verified: Sequence[PullVerification],
    pulls: Sequence[PreviousProposal],
    *,
    root: Path,
    discovery: Discovery,
    config: RepoConfig,
    label: str = "",
) -> list[Proposal]:
    """One revert proposal per pull request of ``verified`` with something to restore,
    edited against the checkout at ``root`` (nothing written), labelled ``label`` (none when
    empty); a revert the manifests refuse is logged and left out."""
    refs = {w.ref.key: w.ref for w in discovery.inventory.workloads}
    out = []
    for pull in verified:
        changes = revert_changes(pull, refs)
        if not changes:
            continue
        change_set = ChangeSet(pull.key, changes)
        edit = apply_changes(root, discovery, changes, config, write=False)
        if not edit.files or edit.failed:
            log.warning("revert of #%d: the manifests refused it: %s", pull.number, edit.errors)
            continue
        proposal = make_proposal(change_set, edit, title=f"Revert #{pull.number}")
        why = Note(REVERT_NOTE, _why(pull))
        proposal = replace(
            proposal,
            notes=(why, *proposal.notes),
            reverts=pull.number,
            labels=(label,) if label else (),
        )
        if _rejected(pulls, proposal):
            log.info("revert of #%d: closed without merging; not proposed again", pull.number)
            continue
        out.append(proposal)
    return out


def revert_statuses(
    statuses: Sequence[WorkloadStatus], reverts: Sequence[Proposal]
) -> list[WorkloadStatus]:
    """The dashboard's ``statuses`` with each workload a revert restores described by that
    revert: its key's pull request is the revert, so its line names what the revert restores
    (``reverts #3, whose outcome regressed: app limits.cpu 300m → 1``), not the engine's own
    proposal (left out this run, as the revert goes first)."""
    by_ref: dict[WorkloadRef, tuple[Proposal, list[str]]] = {}
    for revert in reverts:
        for change in revert.change_set.changes:
            where = f"{change.container} " if change.container else ""
            shown = " → ".join(
                numbers.field_value(change.field, v) for v in (change.current, change.proposed)
            )
            by_ref.setdefault(change.ref, (revert, []))[1].append(
                f"{where}{change.field.value} {shown}"
            )
    out = []
    for status in statuses:
        found = by_ref.get(status.ref)
        if found is None:
            out.append(status)
            continue
        revert, restored = found
        message = f"reverts #{revert.reverts}, whose outcome regressed: {', '.join(restored)}"
        out.append(WorkloadStatus(status.ref, "changes", message, revert.key))
    return out


def engine_wanted(proposal: Proposal) -> Proposal:
    """``proposal`` with each value the after-revert floor moved (rule ``after_revert.floor``,
    ``bot.recommend.after_revert``) set back to what the engine wanted before it (its
    ``wanted`` input): what ``reverted_keys`` judges, since the floor is what lifts a restored
    field out of the noise thresholds of the pull request that regressed."""
    changes = proposal.change_set.changes
    recs = {rec.ref: rec for rec in proposal.change_set.recommendations}
    out = []
    for change in changes:
        rec = recs.get(change.ref)
        value = explained_of(rec, change.field, change.container) if rec is not None else None
        wanted = value.inputs.get("wanted") if value is not None else None
        floored = value is not None and value.rule == Rule.AFTER_REVERT_FLOOR.value
        number = wanted if isinstance(wanted, int | float) else None
        out.append(replace(change, proposed=number) if floored and number is not None else change)
    if all(a is b for a, b in zip(out, changes, strict=True)):
        return proposal
    return replace(proposal, change_set=replace(proposal.change_set, changes=tuple(out)))


def reverted_keys(
    proposals: Sequence[Proposal], pulls: Sequence[PreviousProposal], within: ThresholdCheck
) -> dict[str, tuple[int, int]]:
    """Per key of an engine proposal held back because the latest merged bot pull request of
    its key is a revert and the proposal is within the noise thresholds of the pull request
    that revert restored the values before (the history that led to it has not moved): the
    numbers of the reverted pull request and of the revert."""
    by_number = {p.number: p for p in pulls}
    latest_merged: dict[str, PreviousProposal] = {}
    for pull in pulls:
        if not pull.merged or pull.state is None or pull.merged_at_s is None:
            continue
        seen = latest_merged.get(pull.key)
        if seen is None or (seen.merged_at_s or 0.0, seen.number) < (pull.merged_at_s, pull.number):
            latest_merged[pull.key] = pull
    out = {}
    for proposal in proposals:
        revert = latest_merged.get(proposal.key)
        if proposal.reverts is not None or revert is None or revert.state is None:
            continue
        number = revert.state.reverts
        reverted = by_number.get(number) if number is not None else None
        if number is None or reverted is None or reverted.state is None:
            continue
        if within(reverted.state.to_json(), state_of(proposal).to_json()):
            out[proposal.key] = (number, revert.number)
    return out


def held_after_revert(
    proposals: Sequence[Proposal], pulls: Sequence[PreviousProposal], within: ThresholdCheck
) -> dict[str, str]:
    """Per key of ``reverted_keys``: why it is held. Held as a key below
    ``min_monthly_change`` is: pending on the dashboard, opened only when a human ticks it."""
    return {
        key: f"held after revert #{revert}: within the noise thresholds of #{number}, whose "
        f"values #{revert} reverted; held until the history moves"
        for key, (number, revert) in reverted_keys(proposals, pulls, within).items()
    }


def held_after_revert_lines(
    held: Sequence[str], reverted: Mapping[str, tuple[int, int]]
) -> list[str]:
    """The run line's words for the keys of ``held`` that ``reverted`` holds (not "below
    min_monthly_change"): ``1 held after revert #6: default/shop/pay``, one per revert."""
    by_revert: dict[int, list[str]] = {}
    for key in held:
        if key in reverted:
            by_revert.setdefault(reverted[key][1], []).append(key)
    return [
        f"{len(keys)} held after revert #{number}: {', '.join(keys)}"
        for number, keys in sorted(by_revert.items())
    ]


def revert_lines(
    verified: Sequence[PullVerification], report: PublishReport, mode: str
) -> dict[int, str]:
    """Per pull request with something to restore, what was done about it, for its
    verification comment: the revert pull request (``auto``), or that none is opened
    (``propose-only``)."""
    out = {}
    for pull in verified:
        if not pull.restore:
            continue
        if mode != "auto":
            out[pull.number] = "verify.revert is propose-only: no revert pull request is opened."
            continue
        result = report.result(pull.key)
        if result is not None and result.url and result.number and result.status != "error":
            out[pull.number] = f"Revert: [#{result.number}]({result.url})"
        elif result is not None:
            out[pull.number] = f"Revert not opened: {escape(result.message or result.action)}"
    return out


__all__ = [
    "REVERT_NOTE",
    "engine_wanted",
    "held_after_revert",
    "held_after_revert_lines",
    "revert_changes",
    "revert_lines",
    "revert_proposals",
    "revert_statuses",
    "reverted_keys",
]
