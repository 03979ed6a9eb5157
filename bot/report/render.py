"""Pull-request bodies and the dashboard issue, rendered from ``templates/*.j2`` (jinja2).

The view models are built here, in Python, from the same data as the plan JSON; the
templates only lay them out. Every name that came from a repository or from Prometheus goes
through ``markdown.escape`` (the ``md`` filter) or ``markdown.code``. Bodies stay within
GitHub's limit (``MAX_BODY_CHARS``): a group too large for the full rationale is summarised
and links to the dashboard, and its tables are cut with a count of what was left out.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

import jinja2

from bot.model import RESOURCES, FieldChange, Number, Recommendation, Resource, WorkloadRef
from bot.report import numbers
from bot.report import replay as replay_view
from bot.report.build import chart_subject
from bot.report.charts import HOURS_PER_WEEK
from bot.report.markdown import code, escape, mermaid_label
from bot.report.proposal import (
    DashboardRow,
    Prices,
    Proposal,
    PullRequestState,
    embed_state,
    state_of,
)

TEMPLATE_DIRS = (
    Path(__file__).resolve().parents[2] / "templates",
    Path(__file__).resolve().parents[1] / "templates",
)
"""Where ``pull_request.md.j2`` and ``dashboard.md.j2`` are looked for: the project's
``templates/`` (source tree, editable installs), then ``bot/templates`` inside an installed
wheel (the source tree links it to ``templates/``; ``pyproject.toml`` ships it as package data)."""

TEMPLATES_DIR = next(
    (d for d in TEMPLATE_DIRS if (d / "pull_request.md.j2").is_file()), TEMPLATE_DIRS[0]
)
"""The templates in use."""

MAX_BODY_CHARS = 65_536
"""GitHub's limit on issue and pull-request bodies, in characters."""

MAX_TITLE_CHARS = 256
"""GitHub's limit on titles."""

MAX_CHARTS = 3
"""Mermaid charts per pull request (the first workloads by proposal order)."""

MAX_MESSAGE_CHARS = 300
"""Longest dashboard message per workload (an error's first characters), in characters."""

REQUEST_MARKER = "tortoise-bot-request"
"""HTML comment after a dashboard checkbox: ``- [ ] <!-- tortoise-bot-request: KEY -->``."""

_TICKED_RE = re.compile(r"^\s*[-*] \[[xX]\] <!-- " + REQUEST_MARKER + r": (\S+) -->", re.MULTILINE)

_WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")


@cache
def _environment(directory: Path) -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(directory),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["md"] = escape
    env.filters["code"] = code
    env.filters["mermaid"] = mermaid_label
    return env


def _render(name: str, templates_dir: Path | None, **context: Any) -> str:
    return _environment(templates_dir or TEMPLATES_DIR).get_template(name).render(**context)


# --------------------------------------------------------------------------- view models


def _change_value(change: FieldChange, value: float | int | None) -> str:
    if change.field.endswith(".cpu") and not change.field.startswith("hpa."):
        return numbers.cores(value)
    if change.field.endswith(".memory") and not change.field.startswith("hpa."):
        return numbers.memory(value)
    if change.field.startswith("hpa.target."):
        return "—" if value is None else f"{value}%"
    return "—" if value is None else str(value)


def _change_rows(changes: Iterable[FieldChange]) -> list[dict[str, str]]:
    return [
        {
            "workload": escape(f"{c.ref.kind}/{c.ref.namespace}/{c.ref.name}"),
            "environment": escape(c.ref.environment),
            "container": escape(c.container or "—"),
            "field": code(c.field),
            "current": _change_value(c, c.current),
            "proposed": "removed"
            if c.proposed is None and c.current is not None
            else _change_value(c, c.proposed),
            "change": numbers.change_percent(c.current, c.proposed),
            "reason": escape(c.reason),
        }
        for c in changes
    ]


def _resource_rows(rec: Recommendation) -> list[dict[str, str]]:
    rows = []
    for container in rec.containers:
        for res in RESOURCES:
            resource = res
            r = container.resource(res)
            usage = r.usage
            vpa = r.vpa
            rows.append(
                {
                    "container": escape(container.name),
                    "resource": resource,
                    "request": f"{numbers.amount(res, r.request.current)} → {numbers.amount(res, r.request.proposed)}",
                    "limit": f"{numbers.amount(res, r.limit.current)} → {numbers.amount(res, r.limit.proposed)}",
                    "change": numbers.change_percent(r.request.current, r.request.proposed),
                    "usage": "—"
                    if usage is None
                    else " / ".join(
                        numbers.amount(res, v) for v in (usage.p50, usage.p90, usage.p99, usage.max)
                    ),
                    "samples": "—" if usage is None else str(usage.samples),
                    "vpa": "—"
                    if vpa is None
                    else f"{numbers.amount(res, vpa.target)} ({numbers.amount(res, vpa.lower_bound)}–{numbers.amount(res, vpa.upper_bound)})",
                    "confidence": "—" if vpa is None else f"{vpa.confidence:.2f}",
                    "policy": r.policy,
                    "rule": f"{code(r.request.rule)} {escape(r.request.reason)}",
                }
            )
    return rows


def _hpa_view(proposal: Proposal, rec: Recommendation) -> dict[str, Any] | None:
    hpa = rec.hpa
    if hpa is None:
        return None
    peaks = proposal.replica_peaks.get(rec.ref.key)
    return {
        "min": f"{hpa.min_replicas.current} → {hpa.min_replicas.proposed}",
        "min_rule": f"{code(hpa.min_replicas.rule)} {escape(hpa.min_replicas.reason)}",
        "max": f"{hpa.max_replicas.current} → {hpa.max_replicas.proposed}",
        "max_rule": f"{code(hpa.max_replicas.rule)} {escape(hpa.max_replicas.reason)}",
        "targets": [
            {
                "container": escape(t.container),
                "resource": t.resource,
                "value": numbers.target(t.value.current, t.value.proposed),
                "rule": f"{code(t.value.rule)} {escape(t.value.reason)}",
            }
            for t in hpa.targets
        ],
        "peaks": None
        if peaks is None
        else [{"day": d, "replicas": f"{v:g}"} for d, v in zip(_WEEKDAYS, peaks, strict=False)],
    }


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
        zone = replay.current.replicas.time_zone
        how = "the HPA controller replayed" if replay.current.replicas.replayed else "as recorded"
        return {
            "title": mermaid_label(f"{rec.ref.name} replicas by hour of the week"),
            "y_axis": "replicas",
            "lines": [
                _line(replay.current.replicas.by_hour),
                _line(replay.proposed.replicas.by_hour),
            ],
            "caption": f"Replicas by hour of the week ({how}; mean of each hour), current "
            f"(first line) and proposed (second line). x: hours from Sunday 00:00 "
            f"{escape(zone)}; Monday starts at 24, Saturday at 144.",
        }
    usage = proposal.week_usage.get(rec.ref.key)
    if usage is None:
        return None
    cpu = usage.resource == "cpu"
    scale, unit, digits = (1.0, "cores", 3) if cpu else (1.0 / numbers.MIB, "MiB", 0)
    container, resource = usage.container, usage.resource
    lines = [_line(usage.values, scale, digits)]
    legend = ["usage P95" if usage.percentile < 100 else "peak usage"]
    request = _pair(rec, changes, container, resource, "request")
    limit = _pair(rec, changes, container, resource, "limit")
    limit_changes = any(
        c.container == container and c.field == f"limits.{resource}" for c in changes
    )
    same = " (= limit)" if limit == request and limit_changes else ""
    shown = [("request", request, same)]
    if limit_changes and limit != request:
        shown.append(("limit", limit, ""))
    for kind, pair, note in shown:
        for when, value in zip(("current", "proposed"), pair, strict=True):
            if value is not None:
                lines.append(_line([float(value)] * HOURS_PER_WEEK, scale, digits))
                legend.append(f"{when} {kind}{note}")
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
        f"in {unit}; lines in order: {', '.join(legend)}. x: hours from Sunday 00:00 "
        f"{escape(usage.time_zone)}; Monday starts at 24, Saturday at 144.",
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


def _replay_view(rec: Recommendation, prices: Prices) -> str:
    """The "last N days under this proposal" section of one workload (``replay.markdown``)."""
    return replay_view.markdown(
        rec, prices, heading=f"### {escape(rec.ref.name)}", column=rec.ref.environment
    )


def _window(proposal: Proposal) -> str | None:
    if proposal.window_s is None:
        return None
    start, end = (datetime.fromtimestamp(t, UTC) for t in proposal.window_s)
    days = (proposal.window_s[1] - proposal.window_s[0]) / 86400
    return f"{start:%Y-%m-%d %H:%M} → {end:%Y-%m-%d %H:%M} UTC ({days:.1f} days)"


def _notes(proposal: Proposal) -> list[str]:
    seen: dict[str, None] = {}
    for note in proposal.notes:
        seen[f"{code(note.code)} {escape(note.message)}"] = None
    for rec in proposal.change_set.recommendations:
        for note in rec.notes:
            where = f"{rec.ref.name}/{note.container}" if note.container else rec.ref.name
            seen[f"{escape(where)}: {code(note.code)} {escape(note.message)}"] = None
    return list(seen)


# --------------------------------------------------------------------------- pull request


def pull_request_title(proposal: Proposal) -> str:
    """The title, one line, at most ``MAX_TITLE_CHARS`` characters (titles are not Markdown)."""
    title = " ".join(proposal.title.split())
    return title if len(title) <= MAX_TITLE_CHARS else title[: MAX_TITLE_CHARS - 1] + "…"


def render_pull_request(
    proposal: Proposal,
    *,
    prices: Prices | None = None,
    dashboard_url: str | None = None,
    state: PullRequestState | None = None,
    templates_dir: Path | None = None,
) -> tuple[str, str]:
    """(title, body) of the pull request for ``proposal``; the body ends with its state JSON.

    Tried in order until the body fits ``MAX_BODY_CHARS``: the full body; the summary body
    (no per-container rationale, charts or HPA history; link to the dashboard); the summary
    with the change table cut to fewer rows.
    """
    state = state or state_of(proposal)
    prices = prices or Prices()
    recs = [r for r in proposal.change_set.recommendations if r.status == "changes"] or list(
        proposal.change_set.recommendations
    )
    changes = list(proposal.change_set.changes)
    by_ref: dict[WorkloadRef, list[FieldChange]] = {}
    for change in changes:
        by_ref.setdefault(change.ref, []).append(change)
    workloads: list[dict[str, Any]] = []
    for r in recs:
        chart = (
            week_chart(proposal, r, by_ref.get(r.ref, [])) if len(workloads) < MAX_CHARTS else None
        )
        workloads.append(
            {
                "name": escape(f"{r.ref.kind}/{r.ref.namespace}/{r.ref.name}"),
                "short": escape(r.ref.name),
                "environment": escape(r.ref.environment),
                "reasons": [escape(x) for x in r.reasons],
                "resources": _resource_rows(r),
                "hpa": _hpa_view(proposal, r),
                "replay": _replay_view(r, prices),
                "chart": chart,
            }
        )
    cost = replay_view.cost_totals(recs, prices)
    context: dict[str, Any] = {
        "summary": {
            "workloads": len(proposal.workloads),
            "changes": len(changes),
            "days": replay_view.window_days(recs[0].replay.current.window_s)
            if recs and recs[0].replay
            else None,
            "requests": cost.requests_text(),
            "cost": cost.cost_text(),
            "unreplayed": [escape(n) for n in cost.unreplayed],
        },
        "workloads": workloads,
        "window": _window(proposal),
        "notes": _notes(proposal),
        "dashboard_url": dashboard_url,
        "state_comment": embed_state(state),
        "key": escape(proposal.key),
    }
    title = pull_request_title(proposal)
    body = _render(
        "pull_request.md.j2",
        templates_dir,
        compact=False,
        changes=_change_rows(changes),
        omitted=0,
        **context,
    )
    if len(body) <= MAX_BODY_CHARS:
        return title, body
    limit = len(changes)
    while True:
        rows = _change_rows(changes[:limit])
        body = _render(
            "pull_request.md.j2",
            templates_dir,
            compact=True,
            changes=rows,
            omitted=len(changes) - limit,
            **context,
        )
        if len(body) <= MAX_BODY_CHARS:
            return title, body
        if limit == 0:
            return title, _cut_keeping_state(body, context["state_comment"])
        limit = limit * 3 // 4


def _cut_keeping_state(body: str, state_comment: str) -> str:
    """``body`` cut to ``MAX_BODY_CHARS`` with its state comment kept whole at the end."""
    note = "\n\n…cut at GitHub's size limit.\n\n"
    room = MAX_BODY_CHARS - len(state_comment) - len(note) - 1
    head = body.replace(state_comment, "")[: max(room, 0)]
    return head + note + state_comment + "\n"


# --------------------------------------------------------------------------- dashboard

_SECTIONS: tuple[tuple[str, str], ...] = (
    ("error", "Errors"),
    ("suppressed", "Suppressed (a pull request was closed unmerged)"),
    ("pending", "Pending (waiting for a free pull-request slot)"),
    ("human-edited", "Edited by a human (left alone)"),
    ("proposal-open", "Open pull requests"),
    ("gathering-data", "Gathering data"),
    ("up-to-date", "Up to date"),
    ("skipped", "Skipped"),
)


def render_dashboard(
    rows: Sequence[DashboardRow],
    *,
    title: str,
    not_done: Sequence[str] = (),
    templates_dir: Path | None = None,
    prices: Prices | None = None,
) -> str:
    """The dashboard issue body: every workload by status, checkboxes for pending/suppressed.

    Each proposal's line carries its replay's figures (monthly cost change at ``prices``, risk
    current → proposed, ``replay.summary``); the values the replay gate held back are listed
    in their own section. The body is deterministic (sorted, no timestamps) so an unchanged run
    leaves it alone. ``not_done`` lists work a run could not finish (e.g. the API budget ran
    out).
    """
    prices = prices or Prices()
    sections = []
    for status, heading in _SECTIONS:
        items = sorted(
            (r for r in rows if r.status == status), key=lambda r: (r.ref.key, r.key or "")
        )
        if not items:
            continue
        sections.append(
            {
                "heading": heading,
                "status": status,
                "items": [
                    {
                        "checkbox": r.checkbox and r.key is not None,
                        "key": r.key or "",
                        "name": escape(f"{r.ref.kind}/{r.ref.namespace}/{r.ref.name}"),
                        "environment": escape(r.ref.environment),
                        "figures": escape(replay_view.summary(r.proposal.replay, prices))
                        if r.proposal is not None
                        else "",
                        "message": escape(_shorten(r.message, MAX_MESSAGE_CHARS)),
                        "link": f"[#{r.number}]({r.url})" if r.url and r.number else "",
                    }
                    for r in items
                ],
            }
        )
    held = [
        {
            "name": escape(f"{r.ref.kind}/{r.ref.namespace}/{r.ref.name}"),
            "environment": escape(r.ref.environment),
            "field": code(h.target),
            "wanted": escape(numbers.field_value(h.field, h.wanted)),
            "kept": escape(numbers.field_value(h.field, h.kept)),
            "why": escape(_shorten(h.why, MAX_MESSAGE_CHARS)),
        }
        for r in sorted(rows, key=lambda r: (r.ref.key, r.key or ""))
        if r.proposal is not None
        for h in replay_view.held_values(r.proposal)
    ]
    body = _render(
        "dashboard.md.j2",
        templates_dir,
        title=escape(title),
        sections=sections,
        held=held,
        total=len(rows),
        marker=REQUEST_MARKER,
        not_done=[escape(x) for x in not_done],
    )
    if len(body) > MAX_BODY_CHARS:
        cut = body[: MAX_BODY_CHARS - 200]
        body = cut[: cut.rfind("\n")] + "\n\n…the dashboard was cut at GitHub's size limit.\n"
    return body


def _shorten(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def ticked_keys(body: str | None) -> set[str]:
    """Branch keys whose dashboard checkbox a human ticked."""
    return set(_TICKED_RE.findall(body or ""))


def counts_by_status(rows: Iterable[DashboardRow]) -> Mapping[str, int]:
    out: dict[str, int] = {}
    for r in rows:
        out[r.status] = out.get(r.status, 0) + 1
    return out
