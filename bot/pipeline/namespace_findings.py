"""Findings about what a namespace declares, added to the decided workloads' notes (so the
plan, its JSON and the pull request show them); nothing is scaled down to fit.

- ``resource-quota``: a ``ResourceQuota`` of the namespace (``requests.cpu``,
  ``requests.memory``, ``limits.cpu``, ``limits.memory``) below the namespace's proposed total:
  the sum over its workloads of each container's request (or limit) × the workload's **maximum**
  replicas (the HPA's proposed ``maxReplicas``, else ``spec.replicas``; a DaemonSet counts one
  pod). The maximum, because a quota refuses a pod at its creation: the scale-up that reaches
  ``maxReplicas`` is when a namespace over its quota loses pods, and a quota sized for
  ``minReplicas`` fails exactly under load. Values not proposed are the manifest's; a container
  without a request counts the LimitRange's ``defaultRequest`` (else nothing). Added to the
  workloads of the namespace that have changes, with the current total beside it.
- extended resources (``nvidia.com/gpu``): the workload's units per pod go on its replay
  (``ReplayComparison.extended``) so the monthly cost prices them per replica
  (``pull_requests.cost.extended_resources``); a raised ``minReplicas`` of a workload with a
  priced one gets an ``extended-cost`` note naming the floor's rule and what the added pods'
  units cost a month.
- ``pdb``: a ``PodDisruptionBudget`` selecting the workload whose ``minAvailable`` (a count)
  is at or above its proposed ``minReplicas`` (else ``spec.replicas``): no pod may be evicted
  at that size, so node drains block; a percentage is worked out at that size
  (``ceil(n × p)`` pods must stay); ``maxUnavailable`` 0 always blocks.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from bot.model import (
    DeclaredPDB,
    DeclaredQuota,
    DeclaredWorkload,
    Note,
    Recommendation,
    Resource,
)

if TYPE_CHECKING:
    from bot.pipeline.plan import WorkloadOutcome
from bot.recommend.units import amount
from bot.report.numbers import money, unsigned_money
from bot.report.proposal import Prices

NOTE_CODES = ("resource-quota", "pdb", "limit-range-default", "runtime-memory", "extended-cost")
"""The note codes of what the namespace and the runtime declare (``plan`` prints them)."""


def with_namespace_findings(
    outcomes: Sequence[WorkloadOutcome], prices: Prices | None = None
) -> tuple[WorkloadOutcome, ...]:
    """``outcomes`` with the quota and PDB findings of the module doc in their notes, and
    their extended resources on their replays (``prices``: of the ``extended-cost`` notes)."""
    groups: dict[tuple[str, str], list[int]] = defaultdict(list)
    for index, outcome in enumerate(outcomes):
        groups[(outcome.ref.environment, outcome.ref.namespace)].append(index)
    added: dict[int, list[Note]] = defaultdict(list)
    for indices in groups.values():
        members = [outcomes[i] for i in indices]
        quotas = members[0].declared.bounds.quotas
        changed = [i for i in indices if outcomes[i].changes]
        for quota in quotas:
            for note in quota_notes(quota, members):
                for i in changed:
                    added[i].append(note)
    for index, outcome in enumerate(outcomes):
        added[index].extend(pdb_notes(outcome.declared, outcome.recommendation))
        added[index].extend(floor_cost_notes(outcome, prices or Prices()))
    out = []
    for index, outcome in enumerate(outcomes):
        rec = outcome.recommendation
        if rec is None:
            out.append(outcome)
            continue
        units = extended_per_pod(outcome.declared)
        if units and rec.replay is not None:
            rec = replace(rec, replay=replace(rec.replay, extended=units))
        if added[index]:
            rec = replace(
                rec, notes=rec.notes + tuple(n for n in added[index] if n not in rec.notes)
            )
        out.append(replace(outcome, recommendation=rec))
    return tuple(out)


def extended_per_pod(declared: DeclaredWorkload) -> dict[str, float]:
    """The extended resources one pod of ``declared`` requests (its containers' sum; init
    containers run before them and are not counted)."""
    units: dict[str, float] = {}
    for container in declared.containers:
        if container.init:
            continue
        for name, value in container.extended.items():
            units[name] = units.get(name, 0.0) + value
    return units


def floor_cost_notes(outcome: WorkloadOutcome, prices: Prices) -> list[Note]:
    """A raised ``minReplicas`` of a workload with a priced extended resource: the floor's rule
    and what the pods it adds cost a month in that resource."""
    rec = outcome.recommendation
    if rec is None or rec.hpa is None or not outcome.changes:
        return []
    low = rec.hpa.min_replicas
    if low.current is None or low.proposed is None or low.proposed <= low.current:
        return []
    added = int(low.proposed) - int(low.current)
    notes = []
    for name, units in extended_per_pod(outcome.declared).items():
        price = prices.extended.get(name)
        if not price:
            continue
        cost = added * units * price
        notes.append(
            Note(
                "extended-cost",
                f"minReplicas {low.current} → {low.proposed} ({low.rule}) adds {added} "
                f"pod{'s' if added != 1 else ''} × {units:g} {name} × "
                f"{unsigned_money(price, prices.currency)} per unit-month = "
                f"{money(cost, prices.currency)}/month at the floor",
            )
        )
    return notes


def max_replicas(declared: DeclaredWorkload, rec: Recommendation | None, *, proposed: bool) -> int:
    """The most pods the workload runs: the HPA's ``maxReplicas`` (proposed or current), else
    ``spec.replicas``, else one."""
    if rec is not None and rec.hpa is not None and proposed:
        value = rec.hpa.max_replicas.proposed or rec.hpa.max_replicas.current
        if value:
            return int(value)
    if declared.hpa is not None:
        return declared.hpa.max_replicas
    return declared.replicas or 1


def pod_total(
    declared: DeclaredWorkload, rec: Recommendation | None, group: str, resource: Resource
) -> float:
    """One pod's ``group`` (``requests`` or ``limits``) of ``resource``, proposed where the
    recommendation proposes a value (``rec`` None: the manifest's)."""
    limit_range = declared.bounds.limit_range
    total = 0.0
    for container in declared.containers:
        if container.init:
            continue
        values = container.requests if group == "requests" else container.limits
        value = values.get(resource)
        found = rec and next((c for c in rec.containers if c.name == container.name), None)
        if found:
            x = found.resource(resource)
            explained = x.request if group == "requests" else x.limit
            value = explained.proposed if explained.proposed is not None else value
        if value is None and limit_range is not None:
            default = (
                limit_range.default_request if group == "requests" else limit_range.default_limit
            )
            value = default.get(resource)
        total += float(value or 0.0)
    return total


def quota_notes(quota: DeclaredQuota, members: Sequence[WorkloadOutcome]) -> list[Note]:
    """A note per key of ``quota`` the members' proposed total exceeds (see module doc)."""
    notes = []
    for key, hard in quota.hard.items():
        resource = key.resource
        if resource is None:
            continue
        group = "requests" if key.is_request else "limits"
        proposed = sum(
            pod_total(o.declared, o.recommendation, group, resource)
            * max_replicas(o.declared, o.recommendation, proposed=True)
            for o in members
        )
        current = sum(
            pod_total(o.declared, None, group, resource)
            * max_replicas(o.declared, None, proposed=False)
            for o in members
        )
        if proposed <= hard * (1 + 1e-9):
            continue
        notes.append(
            Note(
                "resource-quota",
                f"ResourceQuota {quota.name} ({quota.where}) {key.text} {amount(hard, resource)}: "
                f"the namespace's proposed total at maximum replicas is "
                f"{amount(proposed, resource)} (now {amount(current, resource)}), "
                f"{amount(proposed - hard, resource)} over; pods beyond it are refused at "
                "creation",
            )
        )
    return notes


def _min_replicas(declared: DeclaredWorkload, rec: Recommendation | None) -> int | None:
    """The fewest pods the proposal runs: the HPA's proposed ``minReplicas``, else the
    manifest's (``spec.replicas``); None when unknown (a DaemonSet)."""
    if rec is not None and rec.hpa is not None:
        value = rec.hpa.min_replicas.proposed or rec.hpa.min_replicas.current
        if value:
            return int(value)
    if declared.hpa is not None:
        return declared.hpa.min_replicas or 1
    return declared.replicas


def pdb_notes(declared: DeclaredWorkload, rec: Recommendation | None) -> list[Note]:
    """A note per PDB selecting the workload that blocks drains at its proposed size."""
    size = _min_replicas(declared, rec)
    if size is None:
        return []
    label = "proposed minReplicas" if declared.hpa is not None else "replicas"
    return [n for pdb in declared.bounds.pdbs if (n := _pdb_note(pdb, size, label)) is not None]


def _pdb_note(pdb: DeclaredPDB, size: int, label: str) -> Note | None:
    name = f"PDB {pdb.name} ({pdb.where})"
    if pdb.min_available is not None:
        text = str(pdb.min_available)
        if text.endswith("%"):
            try:
                share = float(text[:-1]) / 100
            except ValueError:
                return None
            stay = math.ceil(size * share)
            may = max(size - stay, 0)
            tail = "node drains will block" if may == 0 else f"{may} may be evicted at a time"
            return Note(
                "pdb",
                f"{name} minAvailable {text} of {label} {size} = {stay} "
                f"pod{'s' if stay != 1 else ''} must stay: {tail}",
            )
        try:
            count = int(text)
        except ValueError:
            return None
        if count > size:
            return Note(
                "pdb", f"{name} minAvailable {count} > {label} {size}: node drains will block"
            )
        if count == size:
            return Note(
                "pdb",
                f"{name} minAvailable {count} = {label} {size}: no pod may be evicted at that "
                "size, node drains will block",
            )
        return None
    if pdb.max_unavailable is not None and str(pdb.max_unavailable).strip() in ("0", "0%"):
        return Note("pdb", f"{name} maxUnavailable {pdb.max_unavailable}: node drains will block")
    return None
