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
from functools import cache
from pathlib import Path
from typing import Any

import jinja2

from bot.clock import zone
from bot.report import backtest as backtest_view
from bot.report import body as body_view
from bot.report import numbers
from bot.report import replay as replay_view
from bot.report.held import held_values
from bot.report.markdown import code, escape, mermaid_label
from bot.report.proposal import (
    DashboardRow,
    Prices,
    Proposal,
    PullRequestState,
    embed_state,
    state_of,
)
from bot.report.terms import with_terms

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

MAX_MESSAGE_CHARS = 300
"""Longest dashboard message per workload (an error's first characters), in characters."""

REQUEST_MARKER = "tortoise-bot-request"
"""HTML comment after a dashboard checkbox: ``- [ ] <!-- tortoise-bot-request: KEY -->``."""

_TICKED_RE = re.compile(r"^\s*[-*] \[[xX]\] <!-- " + REQUEST_MARKER + r": (\S+) -->", re.MULTILINE)


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
    text = _environment(templates_dir or TEMPLATES_DIR).get_template(name).render(**context)
    return with_terms(text)


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
    What the body shows: ``bot.report.body``.

    Tried in order until the body fits ``MAX_BODY_CHARS``: the full body; the summary body
    (no replay tables, details or charts; link to the dashboard); the summary with the change
    table cut to fewer rows.
    """
    state = state or state_of(proposal)
    prices = prices or Prices()
    context = body_view.context(proposal, prices)
    context |= {"dashboard_url": dashboard_url, "state_comment": embed_state(state)}
    changes = list(proposal.change_set.changes)
    rows = body_view.change_rows(proposal)
    clock = zone(proposal.time_zone).key
    context["legend"] = body_view.legend(rows, clock, hours=context["hours"])
    title = pull_request_title(proposal)
    body = _render(
        "pull_request.md.j2", templates_dir, compact=False, changes=rows, omitted=0, **context
    )
    if len(body) <= MAX_BODY_CHARS:
        return title, body
    limit = len(changes)
    while True:
        body = _render(
            "pull_request.md.j2",
            templates_dir,
            compact=True,
            changes=rows[:limit],
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
    findings: Sequence[str] = (),
    verification: Sequence[str] = (),
) -> str:
    """The dashboard issue body: every workload by status, checkboxes for pending/suppressed.

    Each proposal's line carries its replay's figures (monthly cost change at ``prices``, risk
    current → proposed, ``replay.summary``); the values the replay gate held back are listed
    in their own section. The body is deterministic (sorted, no timestamps) so an unchanged run
    leaves it alone. ``not_done`` lists work a run could not finish (e.g. the API budget ran
    out); ``findings`` what the repository declares that the bot cannot read or edit;
    ``verification`` the verdicts on merged pull requests (Markdown lines, already escaped).
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
                        "figures": escape(
                            "; ".join(
                                x
                                for x in (
                                    replay_view.summary(r.proposal.replay, prices),
                                    backtest_view.short(r.proposal),
                                )
                                if x
                            )
                        )
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
        for h in held_values(r.proposal)
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
        findings=[escape(x) for x in findings],
        verification=list(verification),
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
