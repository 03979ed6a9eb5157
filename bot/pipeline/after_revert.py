"""Learning from a regression (``docs/recommendations.md``, rule ``after-revert-floor``): after a
merged revert, the engine's next proposal for a field the revert restored does not cut as deep
as the pull request that regressed.

For a field where more is safer (requests, limits, minReplicas, maxReplicas) the proposal is at
least ``regressed × (1 + verify.after_revert_margin)``; for an HPA utilization target (where
less is safer) at most ``regressed × (1 − verify.after_revert_margin)``. A bound that reaches
the current value drops the change (the restored value stays). The revert is the latest merged
bot pull request of the key; ``regressed`` is the value the reverted pull request had set.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from bot.config.repo import RepoConfig
from bot.forge.previous import POD_LEVEL_IN_ID, PreviousProposal
from bot.manifests import Discovery, apply_changes
from bot.model import FieldChange, FieldId, Note, Number
from bot.report.proposal import Proposal, change_id

log = logging.getLogger("bot.pipeline")

AFTER_REVERT_NOTE = "verification.after-revert-floor"
"""Code of the note a proposal carries when this rule moved one of its values."""


def bounded(field_id: FieldId, proposed: Number, regressed: Number, margin: float) -> Number:
    """``proposed`` kept at least ``regressed × (1 + margin)`` (at most ``regressed × (1 −
    margin)`` for an HPA target); replica counts rounded up (targets down) to whole numbers."""
    if field_id.is_hpa_target:
        bound = int(regressed * (1 - margin))
        return min(proposed, bound)
    bound_f = regressed * (1 + margin)
    if field_id in (FieldId.HPA_MIN_REPLICAS, FieldId.HPA_MAX_REPLICAS):
        whole = int(bound_f)
        return max(proposed, whole if whole == bound_f else whole + 1)
    return max(proposed, bound_f)


def _floors(
    pulls: Sequence[PreviousProposal],
) -> dict[str, tuple[int, Mapping[str, Number | None]]]:
    """Per key whose latest merged bot pull request is a revert: the reverted pull request's
    number and the values it set for the fields the revert restored."""
    by_number = {p.number: p for p in pulls}
    latest: dict[str, PreviousProposal] = {}
    for pull in pulls:
        if pull.merged and pull.state is not None and pull.merged_at_s is not None:
            seen = latest.get(pull.key)
            if seen is None or (seen.merged_at_s or 0.0, seen.number) < (
                pull.merged_at_s,
                pull.number,
            ):
                latest[pull.key] = pull
    out: dict[str, tuple[int, Mapping[str, Number | None]]] = {}
    for key, revert in latest.items():
        number = revert.state.reverts if revert.state is not None else None
        reverted = by_number.get(number) if number is not None else None
        if number is None or reverted is None or reverted.state is None or revert.state is None:
            continue
        restored = {c: reverted.state.changes.get(c) for c in revert.state.changes}
        out[key] = (number, restored)
    return out


def floored_changes(
    changes: Sequence[FieldChange], regressed: Mapping[str, Number | None], margin: float
) -> tuple[tuple[FieldChange, ...], list[str]]:
    """``changes`` with each restored field bounded (see the module docstring), and what moved."""
    out, said = [], []
    for change in changes:
        value = regressed.get(change_id(change.ref, change.container, change.field))
        if value is None or change.proposed is None:
            out.append(change)
            continue
        new = bounded(change.field, change.proposed, value, margin)
        if new == change.proposed:
            out.append(change)
            continue
        where = f"{change.container or POD_LEVEL_IN_ID} {change.field.text}"
        reaches = change.current is not None and (
            new <= change.current if change.field.is_hpa_target else new >= change.current
        )
        if reaches:
            said.append(f"{where}: kept at {change.current} (the bound {new:g} reaches it)")
            continue
        said.append(f"{where}: {change.proposed:g} → {new:g}")
        out.append(replace(change, proposed=new))
    return tuple(out), said


def after_revert_proposals(
    proposals: Sequence[Proposal],
    pulls: Sequence[PreviousProposal],
    margin: float,
    *,
    root: Path,
    discovery: Discovery,
    config: RepoConfig,
) -> list[Proposal]:
    """``proposals`` with the engine's proposals of a reverted key bounded and edited again
    (nothing written); a proposal left without a change, or refused by the manifests, is
    dropped (logged)."""
    floors = _floors(pulls)
    out = []
    for proposal in proposals:
        floor = floors.get(proposal.key)
        if proposal.reverts is not None or floor is None:
            out.append(proposal)
            continue
        number, regressed = floor
        changes, said = floored_changes(proposal.change_set.changes, regressed, margin)
        if not said:
            out.append(proposal)
            continue
        edit = apply_changes(root, discovery, changes, config, write=False) if changes else None
        if edit is None or not edit.files or edit.failed:
            log.info(
                "%s: nothing left above the floor after the revert of #%d", proposal.key, number
            )
            continue
        why = Note(
            AFTER_REVERT_NOTE,
            f"after the revert of #{number}, not below its values × (1 + {margin:g}): "
            + "; ".join(said),
        )
        out.append(
            replace(
                proposal,
                change_set=replace(proposal.change_set, changes=changes),
                files=edit.files,
                diff=edit.diff,
                notes=(why, *proposal.notes),
            )
        )
    return out


__all__ = ["AFTER_REVERT_NOTE", "after_revert_proposals", "bounded", "floored_changes"]
