"""Pull-request bodies and the dashboard issue, rendered from ``templates/*.j2`` (jinja2).

The view models are built here, in Python, from the same data as the plan JSON; the
templates only lay them out. Every name that came from a repository or from Prometheus goes
through ``markdown.escape`` (the ``md`` filter) or ``markdown.code``. Bodies stay within
GitHub's limit (``MAX_BODY_CHARS``): a group too large for the full rationale is summarised
and links to the dashboard, and its tables are cut with a count of what was left out.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

import jinja2

from bot.model import RESOURCES, FieldChange, Recommendation
from bot.report import numbers
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
"""Mermaid charts per pull request (the first containers by proposal order)."""

MAX_MESSAGE_CHARS = 300
"""Longest dashboard message per workload (an error's first characters), in characters."""

REQUEST_MARKER = "tortoise-bot-request"
"""HTML comment after a dashboard checkbox: ``- [ ] <!-- tortoise-bot-request: KEY -->``."""

_TICKED_RE = re.compile(r"^\s*[-*] \[[xX]\] <!-- " + REQUEST_MARKER + r": (\S+) -->", re.MULTILINE)

_HOURS = [f"{h:02d}" for h in range(24)]
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


@dataclass(frozen=True, slots=True)
class _Totals:
    cpu_before_cores: float
    cpu_after_cores: float
    memory_before_bytes: float
    memory_after_bytes: float
    cost_delta_month: float


def _replicas(proposal: Proposal, key: str) -> float:
    return proposal.replicas.get(key, 1.0)


def totals(proposal: Proposal, prices: Prices) -> _Totals:
    """Requested CPU and memory before and after, times replicas, and the monthly cost delta.

    Before/after sum every container request of the change set's workloads (an unchanged
    request counts on both sides), so a pull request that only tunes an HPA still shows what
    its workloads request. ``cost = Σ Δcpu_cores × replicas × core_month + Σ Δmemory_bytes /
    GiB × replicas × gib_month`` (a removed request counts as going to zero). Without
    recommendations, only the request changes are summed.
    """
    cpu = [0.0, 0.0]
    mem = [0.0, 0.0]

    def add(resource: str, key: str, before: float | None, after: float | None) -> None:
        n = _replicas(proposal, key)
        target = cpu if resource == "cpu" else mem
        target[0] += float(before or 0) * n
        target[1] += float(after or 0) * n

    proposed = {
        (c.ref, c.container, c.field): c.proposed
        for c in proposal.change_set.changes
        if c.field in ("requests.cpu", "requests.memory")
    }
    if proposal.change_set.recommendations:
        for rec in proposal.change_set.recommendations:
            for container in rec.containers:
                for res in (container.cpu, container.memory):
                    current = res.request.current
                    after = proposed.get(
                        (rec.ref, container.name, f"requests.{res.resource}"), current
                    )
                    add(res.resource, rec.ref.key, current, after)
    else:
        for change in proposal.change_set.changes:
            if change.field in ("requests.cpu", "requests.memory"):
                add(change.field.split(".")[1], change.ref.key, change.current, change.proposed)
    cost = (cpu[1] - cpu[0]) * prices.core_month + (
        mem[1] - mem[0]
    ) / numbers.GIB * prices.gib_month
    return _Totals(cpu[0], cpu[1], mem[0], mem[1], cost)


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


def _charts(proposal: Proposal) -> list[dict[str, Any]]:
    requests: dict[str, tuple[float | None, float | None]] = {}
    for change in proposal.change_set.changes:
        if change.field in ("requests.cpu", "requests.memory") and change.container:
            resource = change.field.split(".")[1]
            requests[f"{change.ref.key}/{change.container}/{resource}"] = (
                None if change.current is None else float(change.current),
                None if change.proposed is None else float(change.proposed),
            )
    charts: list[dict[str, Any]] = []
    for series_key, profile in proposal.hourly_usage.items():
        if len(charts) >= MAX_CHARTS or len(profile) != 24:
            continue
        resource = series_key.rsplit("/", 1)[-1]
        scale, unit = (1.0, "cores") if resource == "cpu" else (1.0 / numbers.MIB, "MiB")
        old, new = requests.get(series_key, (None, None))
        lines = [[round(v * scale, 3) for v in profile]]
        names = ["usage P90"]
        for name, value in (("old request", old), ("new request", new)):
            if value is not None:
                lines.append([round(value * scale, 3)] * 24)
                names.append(name)
        charts.append(
            {
                "title": mermaid_label(series_key.split("/", 3)[-1]),
                "unit": unit,
                "hours": ", ".join(_HOURS),
                "lines": [", ".join(f"{v:g}" for v in line) for line in lines],
                "legend": names,
            }
        )
    return charts


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
    t = totals(proposal, prices)
    recs = [r for r in proposal.change_set.recommendations if r.status == "changes"] or list(
        proposal.change_set.recommendations
    )
    workloads = [
        {
            "name": escape(f"{r.ref.kind}/{r.ref.namespace}/{r.ref.name}"),
            "environment": escape(r.ref.environment),
            "reasons": [escape(x) for x in r.reasons],
            "resources": _resource_rows(r),
            "hpa": _hpa_view(proposal, r),
        }
        for r in recs
    ]
    changes = list(proposal.change_set.changes)
    context: dict[str, Any] = {
        "summary": {
            "workloads": len(proposal.workloads),
            "changes": len(changes),
            "cpu": f"{numbers.cores(t.cpu_before_cores)} → {numbers.cores(t.cpu_after_cores)} cores",
            "memory": f"{numbers.memory(t.memory_before_bytes)} → {numbers.memory(t.memory_after_bytes)}",
            "cost": numbers.money(t.cost_delta_month, prices.currency)
            if prices.core_month or prices.gib_month
            else None,
        },
        "workloads": workloads,
        "charts": _charts(proposal),
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
) -> str:
    """The dashboard issue body: every workload by status, checkboxes for pending/suppressed.

    The body is deterministic (sorted, no timestamps) so an unchanged run leaves it alone.
    ``not_done`` lists work a run could not finish (e.g. the API budget ran out).
    """
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
                        "message": escape(_shorten(r.message, MAX_MESSAGE_CHARS)),
                        "link": f"[#{r.number}]({r.url})" if r.url and r.number else "",
                    }
                    for r in items
                ],
            }
        )
    body = _render(
        "dashboard.md.j2",
        templates_dir,
        title=escape(title),
        sections=sections,
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
