"""What a pull-request body shows, built in Python for ``templates/pull_request.md.j2``.

Laid out for a reviewer who decides in a minute (``docs/pull-requests.md``): per workload one
summary line (what changes, the monthly cost with replicas, the replay's risk figures, an OOM
story), one table of changes whose "why" holds the rule in words and the numbers it used, the
replay's table of the last days; everything else (rule ids, usage and the recommender, the
replay per container, the chart of the week, the data window and notes, feedback) folded in
``<details>``. Every time is on one clock, ``Proposal.display_zone``, stated once; hours of the
week (replica slots, charts) are on the slots' clock, ``Proposal.time_zone``, named with them. Every name that
came from a repository or from Prometheus is escaped here (``markdown.escape``/``code``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from bot.clock import zone
from bot.model import (
    HOURS_PER_WEEK,
    MIB,
    RESOURCES,
    SECONDS_PER_DAY,
    FieldChange,
    FieldId,
    Note,
    Number,
    Recommendation,
    Resource,
    WorkloadRef,
)
from bot.report import backtest as backtest_view
from bot.report import cron_floors, numbers, summary
from bot.report import replay as replay_view
from bot.report.build import chart_subject
from bot.report.held import held_values
from bot.report.markdown import code, escape, mermaid_label
from bot.report.proposal import Prices, Proposal
from bot.report.terms import TERMS_SLOT

MAX_CHARTS = 3
"""Mermaid charts per pull request (the first workloads by proposal order)."""

RESTART_CODES = frozenset({"restarts", "counter-resets"})
"""Data notes that count restarts (``… restarted N times; …``): an OOM story replaces them when
the OOM kills account for every restart."""

USAGE_TERM = re.compile(r"\d+% usage")
"""A target's reason that speaks of usage (``100 - (77% usage - 60% target)``)."""


def ref_name(ref: WorkloadRef) -> str:
    return f"{ref.kind}/{ref.namespace}/{ref.name}"


# --------------------------------------------------------------------------- changes


def _shown(change: FieldChange) -> str:
    """``1 GiB → 820 MiB``, ``60% → 65%``, ``3 → 5``; ``removed`` for a value taken out."""
    if change.proposed is None and change.current is not None:
        return f"{numbers.field_value(change.field, change.current)} → removed"
    return numbers.field_change(change.field, change.current, change.proposed)


def why(rec: Recommendation | None, change: FieldChange) -> str:
    """The rule in words with the numbers it used: the engine's reason, then its inputs
    (``summary.inputs_text``), and for a replica bound the slots that drive it. Escaped."""
    value = summary.explained_of(rec, change.field, change.container) if rec else None
    reason = value.reason if value is not None else change.reason
    parts = [escape(reason)] if reason else []
    inputs = summary.inputs_text(change.field, value.inputs) if value is not None else ""
    if inputs:
        parts.append(f"from {escape(inputs)}")
    hpa = rec.hpa if rec is not None else None
    slots = summary.driving_slots(hpa, change.field) if hpa is not None else None
    if slots and not (value is not None and any("hour" in k for k in value.inputs)):
        parts.append(escape(slots if slots.startswith("all ") else f"busiest slots {slots}"))
    return "; ".join(parts)


def change_rows(proposal: Proposal) -> list[dict[str, str]]:
    """One row per change: ``workload`` (short name), ``value``, ``change`` (current →
    proposed) and ``why``."""
    recs = {r.ref: r for r in proposal.change_set.recommendations}
    changes = proposal.change_set.changes
    several = {
        ref: len(
            {
                c.container
                for c in changes
                if c.ref == ref and c.container and c.field.is_request_or_limit
            }
        )
        > 1
        for ref in {c.ref for c in changes}
    }
    return [
        {
            "workload": escape(c.ref.name),
            "value": escape(
                summary.value_label(c, several[c.ref], proposal.mark(c.ref, c.container))
            ),
            "change": _shown(c),
            "why": why(recs.get(c.ref), c),
        }
        for c in changes
    ]


def rule_lines(
    rec: Recommendation, changes: Sequence[FieldChange], proposal: Proposal | None = None
) -> list[str]:
    """Per change, the rule id (and the rule of the value wanted before a limit), for
    ``docs/recommendations.md``; containers with their mark (``proposal.marks``). Escaped."""
    several = len({c.container for c in changes if c.container and c.field.is_request_or_limit}) > 1
    out = []
    for c in changes:
        value = summary.explained_of(rec, c.field, c.container)
        if value is None:
            continue
        mark = proposal.mark(c.ref, c.container) if proposal is not None else ""
        text = f"{escape(summary.value_label(c, several, mark))}: {code(value.rule)}"
        wanted = value.inputs.get("wanted_rule") or value.inputs.get("unfiltered_rule")
        if isinstance(wanted, str):
            text += f" (wanted by {code(wanted)})"
        out.append(text)
    return out


# --------------------------------------------------------------------------- summary


def oom_stories(proposal: Proposal, rec: Recommendation) -> list[str]:
    """The OOM kills recorded per container, in words, with what the replay predicts at the
    proposed limit. Escaped."""
    kills = proposal.oom_kills.get(rec.ref.key, {})
    out = []
    for cr in rec.containers:
        count = kills.get(cr.name, 0)
        if not count:
            continue
        memory = cr.memory
        predicted = None
        if rec.replay is not None:
            replayed = rec.replay.proposed.container_memory(cr.name)
            predicted = replayed.oom_kills if replayed is not None else None
        out.append(
            escape(
                summary.oom_story(
                    rec.ref.name,
                    cr.name,
                    kills=count,
                    limit=memory.limit.current,
                    request=memory.request.current,
                    predicted=predicted,
                    proposed_limit=memory.limit.proposed,
                )
            )
        )
    return out


def workload_summary(
    proposal: Proposal, rec: Recommendation, changes: Sequence[FieldChange], prices: Prices
) -> str:
    """``**frontend** (Deployment shop/frontend, default): <what changes>. <cost>; <risk>.
    <OOM story> <held values>``. Escaped."""
    ref = rec.ref
    head = (
        f"**{escape(ref.name)}** ({escape(ref.kind)} {escape(ref.namespace)}/"
        f"{escape(ref.name)}, {escape(ref.environment)}): "
        f"{escape(summary.what_changes(changes, rec.hpa))}."
    )
    parts = [head]
    replay = rec.replay
    if replay is None:
        parts.append("No replay (nothing to replay): cost and risk not estimated.")
    else:
        days = replay_view.window_days(replay.current.window_s)
        cost = replay_view.cost_line(replay, prices)
        risk = replay_view.risk_figures(replay)
        parts.append(escape(f"{cost[0].upper()}{cost[1:]}; replayed on the last {days}: {risk}."))
    tested = backtest_view.brief(rec)
    if tested:
        parts.append(escape(f"{tested[0].upper()}{tested[1:]}."))
    parts += oom_stories(proposal, rec)
    held = held_values(rec)
    if held:
        parts.append(
            f"{len(held)} value{'s' if len(held) != 1 else ''} held back by the replay (below)."
        )
    return " ".join(parts)


# --------------------------------------------------------------------------- legend and data


SLOT_TERM = re.compile(r"\bslots?\b|\bhours\b")
"""Words of a replica row that read hours of the week (``busiest slot``, ``hours Tue 20``): the
legend names the slots' clock only then (a revert's rows restore values, and name none)."""


def legend(rows: Sequence[dict[str, str]], time_zone: str, *, hours: bool) -> str:
    """The terms the table uses, each defined once, and the clock of every time shown."""
    text = " ".join(r["why"] for r in rows)
    terms = []
    if re.search(r"\brec\b", text):
        terms.append(
            "rec = Tortoise's recommendation for a container, the highest VPA target it has seen "
            "(sticky; its rules read it, not the VPA target)"
        )
    if USAGE_TERM.search(text):
        terms.append("usage % = ⌈100 × rec / request⌉")
    if hours and SLOT_TERM.search(text):
        terms.append(f"slots are hours of the week on the {time_zone} clock")
    if not terms:
        return ""
    return escape("; ".join(terms)) + "."


def window(proposal: Proposal) -> str | None:
    """``2026-01-01 08:58 → 2026-01-09 08:58 UTC (8.0 days)`` on ``report.time_zone``."""
    if proposal.window_s is None:
        return None
    clock = zone(proposal.display_zone)
    start, end = (datetime.fromtimestamp(t, clock) for t in proposal.window_s)
    days = (proposal.window_s[1] - proposal.window_s[0]) / SECONDS_PER_DAY
    return escape(f"{start:%Y-%m-%d %H:%M} → {end:%Y-%m-%d %H:%M} {clock.key} ({days:.1f} days)")


def _weekly(proposal: Proposal) -> bool:
    """Whether the body shows hours of the week: replica slots (an HPA's replicas change or are
    replayed) or a chart of the week."""
    hpa = any(r.replay is not None for r in proposal.change_set.recommendations)
    return hpa or bool(proposal.week_usage)


def _restarts(message: str) -> int | None:
    match = summary.RESTARTS.search(message)
    return int(match.group(1)) if match else None


def notes(
    proposal: Proposal, recs: Sequence[Recommendation], reasons: Sequence[str], *, named: bool
) -> list[str]:
    """Every data and decision note once: the same note from the history and the engine is
    one; a note a change's reason already says is left out; a restart count the recorded OOM
    kills explain gives way to the OOM story. ``named``: prefix the workload. Escaped."""
    seen: dict[tuple[str, str], str] = {}
    owners: dict[tuple[str, str], WorkloadRef | None] = {}
    all_notes: list[tuple[WorkloadRef | None, Note]] = [(None, n) for n in proposal.notes]
    all_notes += [(r.ref, n) for r in recs for n in r.notes]
    for ref, note in all_notes:
        key = (note.code, note.message)
        if key in seen or any(note.message in reason for reason in reasons):
            if ref is not None and owners.get(key) is None:
                owners[key] = ref
            continue
        if note.code in RESTART_CODES and note.container:
            count = _restarts(note.message)
            kills = sum(
                proposal.oom_kills.get(r.ref.key, {}).get(note.container, 0)
                for r in recs
                if ref is None or r.ref == ref
            )
            if count is not None and kills >= count:
                continue
        seen[key] = note.message
        owners[key] = ref
    out = []
    for key, message in seen.items():
        owner = owners.get(key)
        prefix = f"{escape(owner.name)}: " if named and owner is not None else ""
        out.append(f"{prefix}{code(key[0])} {escape(message)}")
    return out


# --------------------------------------------------------------------------- details


def usage_rows(rec: Recommendation, proposal: Proposal | None = None) -> list[dict[str, str]]:
    """Per container and resource: usage percentiles, the VPA estimate, policy; a container
    with a mark (``proposal.marks``) named with it."""
    rows = []
    for container in rec.containers:
        mark = proposal.mark(rec.ref, container.name) if proposal is not None else ""
        for res in RESOURCES:
            r = container.resource(res)
            usage, vpa = r.usage, r.vpa
            rows.append(
                {
                    "container": escape(f"{container.name} ({mark})" if mark else container.name),
                    "resource": res,
                    "usage": "—"
                    if usage is None
                    else " / ".join(
                        numbers.amount(res, v) for v in (usage.p50, usage.p90, usage.p99, usage.max)
                    ),
                    "samples": "—" if usage is None else f"{usage.samples:,}",
                    "vpa": "—"
                    if vpa is None
                    else f"{numbers.amount(res, vpa.target)} ({numbers.amount(res, vpa.lower_bound)}–{numbers.amount(res, vpa.upper_bound)})",
                    "confidence": "—" if vpa is None else f"{vpa.confidence:.2f}",
                    "policy": r.policy,
                }
            )
    return rows


def _line(values: Sequence[float], scale: float = 1.0, digits: int = 2) -> str:
    """Mermaid line data: ``values × scale`` rounded to ``digits``, 0 for an hour without a
    sample (NaN)."""
    return ", ".join("0" if math.isnan(v) else f"{round(v * scale, digits):g}" for v in values)


def week_chart(
    proposal: Proposal, rec: Recommendation, changes: Sequence[FieldChange]
) -> dict[str, Any] | None:
    """The workload's chart of the week (``build.chart_subject``): replicas by hour of the
    week, current and proposed, when the change touches the HPA; else the usage of the first
    changed container resource against its current and proposed request (and limit when it
    changes too). None when there is nothing to draw."""
    subject = chart_subject(changes)
    replay = rec.replay
    if subject is None:
        if replay is None or len(replay.current.replicas.by_hour) != HOURS_PER_WEEK:
            return None
        how = "the HPA controller replayed" if replay.current.replicas.replayed else "as recorded"
        return {
            "title": mermaid_label(f"{rec.ref.name} replicas by hour of the week"),
            "y_axis": "replicas",
            "lines": [
                _line(replay.current.replicas.by_hour),
                _line(replay.proposed.replicas.by_hour),
            ],
            "caption": f"Replicas by hour of the week ({how}; mean of each hour), current "
            f"(first line) and proposed (second line); x: hours from Sunday 00:00 "
            f"{escape(zone(replay.current.replicas.time_zone).key)}.",
        }
    usage = proposal.week_usage.get(rec.ref.key)
    if usage is None:
        return None
    cpu = usage.resource == "cpu"
    scale, unit, digits = (1.0, "cores", 3) if cpu else (1.0 / MIB, "MiB", 0)
    container, resource = usage.container, usage.resource
    lines = [_line(usage.values, scale, digits)]
    names = ["usage P95" if usage.percentile < 100 else "peak usage"]
    request = _pair(rec, changes, container, resource, "request")
    limit = _pair(rec, changes, container, resource, "limit")
    limit_changes = any(
        c.container == container and c.field == FieldId.limit(resource) for c in changes
    )
    same = " (= limit)" if limit == request and limit_changes else ""
    shown = [("request", request, same)]
    if limit_changes and limit != request:
        shown.append(("limit", limit, ""))
    for kind, pair, note in shown:
        for when, value in zip(("current", "proposed"), pair, strict=True):
            if value is not None:
                lines.append(_line([float(value)] * HOURS_PER_WEEK, scale, digits))
                names.append(f"{when} {kind}{note}")
    statistic = (
        "P95 of the pods' samples" if usage.percentile < 100 else "peak of the pods' samples"
    )
    return {
        "title": mermaid_label(
            f"{rec.ref.name} {container} {resource} in {unit} by hour of the week"
        ),
        "y_axis": unit,
        "lines": lines,
        "caption": f"{escape(container)} {resource} usage by hour of the week ({statistic}), "
        f"in {unit}; lines in order: {', '.join(names)}; x: hours from Sunday 00:00 "
        f"{escape(zone(usage.time_zone).key)}.",
    }


def _pair(
    rec: Recommendation,
    changes: Sequence[FieldChange],
    container: str,
    resource: Resource,
    kind: str,
) -> tuple[Number | None, Number | None]:
    """(current, proposed) of a container's request or limit: the change's, else the
    recommendation's current value on both sides."""
    field = f"{kind}s.{resource}"
    change = next((c for c in changes if c.container == container and c.field == field), None)
    if change is not None:
        return change.current, change.proposed
    cr = next((c for c in rec.containers if c.name == container), None)
    if cr is None:
        return None, None
    value = cr.resource(resource).request if kind == "request" else cr.resource(resource).limit
    return value.current, value.current


# --------------------------------------------------------------------------- the whole body


def context(proposal: Proposal, prices: Prices) -> dict[str, Any]:
    """Everything ``pull_request.md.j2`` lays out, except the change rows (cut to fit by the
    caller) and the state comment."""
    recs = [r for r in proposal.change_set.recommendations if r.status == "changes"] or list(
        proposal.change_set.recommendations
    )
    changes = list(proposal.change_set.changes)
    by_ref: dict[WorkloadRef, list[FieldChange]] = {}
    for change in changes:
        by_ref.setdefault(change.ref, []).append(change)
    several = len(proposal.workloads) > 1
    workloads: list[dict[str, Any]] = []
    for rec in recs:
        mine = by_ref.get(rec.ref, [])
        chart = week_chart(proposal, rec, mine) if len(workloads) < MAX_CHARTS else None
        heading = f"#### {escape(rec.ref.name)}" if several else "####"
        workloads.append(
            {
                "name": escape(ref_name(rec.ref)),
                "short": escape(rec.ref.name),
                "summary": workload_summary(proposal, rec, mine, prices),
                "replay": replay_view.markdown(
                    rec, prices, heading=heading, column=rec.ref.environment, brief=True
                ),
                "backtest": backtest_view.markdown(rec, proposal.display_zone),
                "cron": cron_floors.markdown(rec),
                "rules": rule_lines(rec, mine, proposal),
                "usage": usage_rows(rec, proposal),
                "per_container": [
                    {
                        "label": escape(r.label),
                        "current": escape(r.current),
                        "proposed": escape(r.proposed),
                    }
                    for r in (
                        replay_view.container_rows(rec.replay, proposal.marks.get(rec.ref.key))
                        if rec.replay
                        else []
                    )
                ],
                "hours": escape(replay_view.cost_formula(rec.replay, prices) or "")
                if rec.replay
                else "",
                "chart": chart,
            }
        )
    cost = replay_view.cost_totals(recs, prices)
    reasons = [c.reason for c in changes]
    for rec in recs:
        for change in by_ref.get(rec.ref, []):
            value = summary.explained_of(rec, change.field, change.container)
            if value is not None:
                reasons.append(value.reason)
    return {
        "several": several,
        "total": {
            "workloads": len(proposal.workloads),
            "changes": len(changes),
            "key": escape(proposal.key),
            "cost": escape(cost.cost_text() or ""),
            "requests": escape(cost.requests_text() or ""),
        },
        "workloads": workloads,
        "zone": escape(zone(proposal.display_zone).key),
        "slots_zone": escape(zone(proposal.time_zone).key) if _weekly(proposal) else None,
        "window": window(proposal),
        "terms": TERMS_SLOT,
        "notes": notes(proposal, recs, reasons, named=several),
        "key": escape(proposal.key),
        "hours": any(
            c.field in (FieldId.HPA_MIN_REPLICAS, FieldId.HPA_MAX_REPLICAS) for c in changes
        ),
    }
