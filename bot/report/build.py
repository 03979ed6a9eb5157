"""``Proposal`` from what the pipeline has: a change set, the edit result and what the
histories showed (``HistorySummary``, made by ``summarize_history`` as each workload is decided)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from bot.model import (
    ChangeSet,
    EditResult,
    FieldChange,
    Resource,
    WorkloadHistory,
    WorkloadRef,
)
from bot.report.charts import week_profile
from bot.report.proposal import HistorySummary, Proposal, WeekUsage

CPU_PERCENTILE = 95.0
"""The CPU usage a week chart shows per hour: the 95th percentile of the pods' samples."""

MEMORY_PERCENTILE = 100.0
"""The memory usage a week chart shows per hour: the peak working set (OOM kills happen there)."""


def proposal_title(change_set: ChangeSet) -> str:
    """``Right-size frontend in shop (prod)`` for one workload, else a count and the key."""
    refs = sorted({c.ref for c in change_set.changes})
    if len(refs) == 1:
        ref = refs[0]
        return f"Right-size {ref.name} in {ref.namespace} ({ref.environment})"
    return f"Right-size {len(refs)} workloads in {change_set.key}"


def chart_subject(changes: Iterable[FieldChange]) -> tuple[str, Resource] | None:
    """What one workload's week chart is about: None for its replicas (a change that touches
    the HPA, or nothing to chart), else ``(container, resource)`` of its first changed request
    (or limit, when no request changes)."""
    changes = list(changes)
    if any(c.field.is_hpa for c in changes):
        return None
    requests_first = [c for c in changes if c.field.is_request] + [
        c for c in changes if c.field.is_limit
    ]
    for c in requests_first:
        if c.container is not None and c.field.resource is not None:
            return c.container, c.field.resource
    return None


def chart_candidates(changes: Iterable[FieldChange]) -> list[tuple[str, Resource]]:
    """Every ``(container, resource)`` that ``chart_subject`` may pick from ``changes`` or from
    any part of them (an edit may leave some changes out), in order, each once."""
    out: dict[tuple[str, Resource], None] = {}
    for c in changes:
        if c.field.is_request_or_limit and c.container is not None and c.field.resource:
            out[(c.container, c.field.resource)] = None
    return list(out)


def summarize_history(
    history: WorkloadHistory,
    *,
    charts: Sequence[tuple[str, Resource]] = (),
    time_zone: str = "UTC",
) -> HistorySummary:
    """What ``make_proposal`` needs of ``history``: its window, quality notes and recorded OOM
    kills per container, and for each of ``charts`` (``chart_candidates`` of the workload's
    changes) the usage by hour of the week on the clock of ``time_zone`` (its replay's,
    ``ReplicaReplay.time_zone``; UTC without a replay): CPU the 95th percentile of the pods'
    samples, memory the peak. A container or resource without samples has no chart."""
    usage: dict[tuple[str, Resource], WeekUsage] = {}
    for name, resource in charts:
        container = history.containers.get(name)
        if container is None:
            continue
        times, samples, percentile = (
            (container.cpu_t, container.cpu_cores, CPU_PERCENTILE)
            if resource == "cpu"
            else (container.mem_t, container.mem_bytes, MEMORY_PERCENTILE)
        )
        if times.size:
            values = week_profile(times, samples, time_zone, percentile=percentile)
            usage[(name, resource)] = WeekUsage(name, resource, values, percentile, time_zone)
    return HistorySummary(
        start_s=history.start_s,
        end_s=history.end_s,
        quality=history.quality,
        oom_kills={
            name: int(c.oom_t.size) for name, c in history.containers.items() if c.oom_t.size
        },
        week_usage=usage,
    )


def make_proposal(
    change_set: ChangeSet,
    edit: EditResult,
    *,
    title: str | None = None,
    summaries: Mapping[WorkloadRef, HistorySummary] | None = None,
    display_zone: str = "UTC",
    marks: Mapping[str, Mapping[str, str]] | None = None,
) -> Proposal:
    """The proposal for ``change_set`` whose files ``edit`` produced against the current base.

    From ``summaries`` (``summarize_history``): for each workload whose change is about its
    requests (``chart_subject``), that container resource's usage by hour of the week (CPU:
    P95, memory: the peak) on the clock of its replay; the OOM kills recorded per container;
    the data window. Notes: the edit's, then each history's quality notes. ``time_zone``: the
    first replay's clock (UTC without one); ``display_zone``: the clock of the other times.
    ``marks``: per workload key, each marked container's mark (``Proposal.marks``).
    """
    summaries = summaries or {}
    zones = {
        r.ref: r.replay.current.replicas.time_zone
        for r in change_set.recommendations
        if r.replay is not None
    }
    usage: dict[str, WeekUsage] = {}
    kills: dict[str, dict[str, int]] = {}
    notes = list(edit.notes)
    windows: list[tuple[float, float]] = []
    for ref in sorted({c.ref for c in change_set.changes}):
        summary = summaries.get(ref)
        if summary is None:
            continue
        windows.append((summary.start_s, summary.end_s))
        notes.extend(summary.quality)
        if summary.oom_kills:
            kills[ref.key] = dict(summary.oom_kills)
        subject = chart_subject(c for c in change_set.changes if c.ref == ref)
        chart = summary.week_usage.get(subject) if subject is not None else None
        if chart is not None:
            usage[ref.key] = chart
    window = (min(w[0] for w in windows), max(w[1] for w in windows)) if windows else None
    return Proposal(
        key=change_set.key,
        title=title or proposal_title(change_set),
        change_set=change_set,
        files=edit.files,
        diff=edit.diff,
        notes=tuple(dict.fromkeys(notes)),
        week_usage=usage,
        oom_kills=kills,
        window_s=window,
        time_zone=next(iter(zones.values()), "UTC"),
        display_zone=display_zone,
        marks=dict(marks or {}),
    )
