"""``Proposal`` from what the pipeline has: a change set, the edit result and the histories."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from bot.model import ChangeSet, EditResult, WorkloadHistory, WorkloadRef
from bot.report.charts import hourly_profile, weekday_peaks
from bot.report.proposal import Proposal


def proposal_title(change_set: ChangeSet) -> str:
    """``Right-size frontend in shop (prod)`` for one workload, else a count and the key."""
    refs = sorted({c.ref for c in change_set.changes})
    if len(refs) == 1:
        ref = refs[0]
        return f"Right-size {ref.name} in {ref.namespace} ({ref.environment})"
    return f"Right-size {len(refs)} workloads in {change_set.key}"


def make_proposal(
    change_set: ChangeSet,
    edit: EditResult,
    *,
    title: str | None = None,
    histories: Mapping[WorkloadRef, WorkloadHistory] | None = None,
    replicas: Mapping[WorkloadRef, float] | None = None,
) -> Proposal:
    """The proposal for ``change_set`` whose files ``edit`` produced against the current base.

    From ``histories``: usage by hour (P90 per UTC hour) of every container resource whose
    request changes, peak replicas per weekday, the mean replica count (unless ``replicas``
    gives it) and the data window. Notes: the edit's, then each history's quality notes.
    """
    histories = histories or {}
    hourly: dict[str, tuple[float, ...]] = {}
    peaks: dict[str, tuple[float, ...]] = {}
    counts: dict[str, float] = {ref.key: n for ref, n in (replicas or {}).items()}
    notes = list(edit.notes)
    windows: list[tuple[float, float]] = []
    for ref in sorted({c.ref for c in change_set.changes}):
        history = histories.get(ref)
        if history is None:
            continue
        windows.append((history.start_s, history.end_s))
        notes.extend(history.quality)
        if history.replicas.size:
            peaks[ref.key] = weekday_peaks(history.replicas_t, history.replicas)
            counts.setdefault(ref.key, float(np.mean(history.replicas)))
        for change in change_set.changes:
            if change.ref != ref or change.container is None:
                continue
            container = history.containers.get(change.container)
            if container is None:
                continue
            if change.field == "requests.cpu" and container.cpu_t.size:
                hourly[f"{ref.key}/{change.container}/cpu"] = hourly_profile(
                    container.cpu_t, container.cpu_cores
                )
            elif change.field == "requests.memory" and container.mem_t.size:
                hourly[f"{ref.key}/{change.container}/memory"] = hourly_profile(
                    container.mem_t, container.mem_bytes
                )
    window = (min(w[0] for w in windows), max(w[1] for w in windows)) if windows else None
    return Proposal(
        key=change_set.key,
        title=title or proposal_title(change_set),
        change_set=change_set,
        files=edit.files,
        diff=edit.diff,
        notes=tuple(dict.fromkeys(notes)),
        hourly_usage=hourly,
        replica_peaks=peaks,
        replicas=counts,
        window_s=window,
    )
