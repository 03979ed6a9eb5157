"""The dashboard's rows and body from what the pipeline found and what ``publish`` did (pure;
where the dashboard lives is the forge's)."""

from __future__ import annotations

from collections.abc import Sequence

from bot.forge.results import PublishReport, WorkloadStatus
from bot.model import Status
from bot.report import DashboardRow, Prices, render_dashboard
from bot.report.proposal import DashboardStatus

SIMPLE: dict[Status, DashboardStatus] = {
    "no-change": "up-to-date",
    "gathering-data": "gathering-data",
    "skipped": "skipped",
    "error": "error",
    "changes": "pending",
}
"""A workload's dashboard status when ``publish`` did nothing to its key."""


def dashboard_rows(statuses: Sequence[WorkloadStatus], report: PublishReport) -> list[DashboardRow]:
    """Dashboard rows: pipeline statuses refined by what ``publish`` did to each key."""
    rows = []
    for s in statuses:
        result = report.result(s.key) if s.key else None
        if s.status != "changes" or result is None:
            status = SIMPLE[s.status]
            checkbox = False
            if s.key in report.not_done:
                status, message = "pending", "not done in the last run (API budget)"
                checkbox = True
            elif s.status == "changes":
                message = s.message or "a change is proposed; no pull request was opened"
            else:
                message = s.message
            rows.append(
                DashboardRow(
                    s.ref, status, message, s.key, checkbox=checkbox, proposal=s.recommendation
                )
            )
            continue
        rows.append(
            DashboardRow(
                s.ref,
                result.status,
                result.message
                if result.status not in ("proposal-open", "up-to-date")
                else s.message,
                s.key,
                result.url,
                result.number,
                checkbox=result.status in ("pending", "suppressed"),
                proposal=s.recommendation,
            )
        )
    return rows


def dashboard_body(
    statuses: Sequence[WorkloadStatus],
    report: PublishReport,
    *,
    title: str,
    prices: Prices,
    findings: Sequence[str] = (),
    verification: Sequence[str] = (),
) -> str:
    """The dashboard's Markdown: its rows, the keys the run did not get to and the
    repository's findings."""
    not_done = [f"{k}: not done ({report.stopped or 'stopped'})" for k in report.not_done]
    return render_dashboard(
        dashboard_rows(statuses, report),
        title=title,
        not_done=not_done,
        prices=prices,
        findings=findings,
        verification=verification,
    )


__all__ = ["SIMPLE", "dashboard_body", "dashboard_rows"]
