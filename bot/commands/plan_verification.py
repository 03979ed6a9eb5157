"""What ``tortoise-bot plan`` says of the repository's merged bot pull requests
(``docs/cli.md``, "plan"; ``docs/pull-requests.md``, "Verification").

With a forge repository named (``--github-repo OWNER/NAME``, or the one entry of
``repositories`` in the bot settings), a token (``github.token_env``) and a history source
that says what ran in the cluster (Prometheus, or a snapshot that recorded it;
``bot.metrics.cluster_state``), ``plan`` lists that repository's bot pull requests and
verifies the recent merged ones as ``run`` does (``bot.pipeline.verification.verify_merged``). It only reads: no
comment, no revert, no label, no branch. Otherwise it says why not, and the plan is the same.

One shape in every output format (``docs/schemas/plan.schema.json``, ``verification``):
``{"available": true, "reason": null, "pulls": [...]}`` or
``{"available": false, "reason": "...", "pulls": []}``.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bot.commands.common import SourceChoice, selector_of
from bot.config.bot import BotSettings
from bot.forge.errors import AuthError, ForgeError
from bot.metrics.errors import MetricsError
from bot.pipeline.plan import RepositoryOutcome, history_requests
from bot.redaction import visible
from bot.report.markdown import escape
from bot.report.verification import (
    HEADLINES,
    FigureRow,
    PullVerification,
    dashboard_lines,
    figure_rows,
    summary,
)
from bot.verification import Finding

if TYPE_CHECKING:
    from bot.forge.previous import PreviousProposal


@dataclass(frozen=True, slots=True)
class PlanVerification:
    """The verdicts ``plan`` shows (``available``), or why there are none (``reason``)."""

    available: bool
    reason: str | None = None
    pulls: tuple[PullVerification, ...] = field(default_factory=tuple)
    asked: bool = False
    """A forge repository was named: the table and the Markdown say what became of it (without
    one they stay as they were; the JSON always has the object)."""


def add_verification_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--github-repo",
        metavar="OWNER/NAME",
        help="Verify the merged bot pull requests of this GitHub repository (read only; "
        "default: the one entry of `repositories` in the bot settings).",
    )


def _repository(args: argparse.Namespace, settings: BotSettings) -> str | None:
    named: str | None = getattr(args, "github_repo", None)
    if named:
        return named
    return settings.repositories[0] if len(settings.repositories) == 1 else None


def plan_verification(
    args: argparse.Namespace,
    settings: BotSettings,
    plan: RepositoryOutcome,
    choice: SourceChoice,
    env: Mapping[str, str] | None = None,
) -> PlanVerification:
    """The verdicts on the merged bot pull requests of the forge repository ``args`` and
    ``settings`` name, read only; or why there are none. Never raises for a forge or
    Prometheus problem: the reason says it."""
    env = os.environ if env is None else env
    if not settings.verify.enabled:
        return PlanVerification(False, "verify.enabled is false")
    from bot.pipeline.verification import (  # noqa: PLC0415 (with verification only)
        verification_unavailable,
    )

    full_name = _repository(args, settings)
    demo = bool(getattr(args, "demo", False)) and not getattr(args, "github_repo", None)
    asked = full_name is not None or demo
    missing = verification_unavailable(choice.source, settings)
    if missing is not None:
        reason = f"history from {choice.description}: {missing}"
        return PlanVerification(False, reason, asked=asked)
    if full_name is None and not demo:
        return PlanVerification(
            False,
            "no forge repository: pass --github-repo OWNER/NAME or list one in `repositories`",
        )
    if selector_of(args) is not None:
        return PlanVerification(False, "a selection (--workload…) verifies nothing", asked=True)
    if demo or full_name is None:
        return _demo_verification(settings, plan, choice)
    from bot.forge.github import GitHubForge  # noqa: PLC0415 (PyGithub: with a forge only)
    from bot.forge.github.auth import credentials_from_env  # noqa: PLC0415

    try:
        credentials = credentials_from_env(settings.github, env)
    except AuthError as exc:
        reason = f"GitHub credentials: {visible(exc.message)}"
        return PlanVerification(False, reason, asked=True)
    try:
        with tempfile.TemporaryDirectory(prefix="tortoise-bot-") as workdir:
            forge = GitHubForge(settings.github, credentials, workdir=Path(workdir))
            session = forge.open(full_name, plan.config.pull_requests, dashboard=False)
            return _verified(session.previous_proposals(), settings, plan, choice)
    except (ForgeError, MetricsError) as exc:
        return PlanVerification(False, f"{full_name}: {visible(str(exc))}", asked=True)


def _verified(
    previous: Sequence[PreviousProposal],
    settings: BotSettings,
    plan: RepositoryOutcome,
    choice: SourceChoice,
) -> PlanVerification:
    """The verdicts on ``previous``, the bot's pull requests, from the plan's history source."""
    from bot.pipeline.verification import verify_merged  # noqa: PLC0415

    pulls = verify_merged(
        previous,
        plan.inventory,
        choice.source,
        history_requests(plan.inventory, plan.settings),
        settings,
        now_s=choice.now_s,
    )
    return PlanVerification(True, None, tuple(pulls), asked=True)


def _demo_verification(
    settings: BotSettings, plan: RepositoryOutcome, choice: SourceChoice
) -> PlanVerification:
    """The verdicts on the demo's recorded merged pull requests (``bot/demo/pulls.json``, read
    instead of a forge) from the demo's snapshot."""
    from bot.demo.pulls import demo_pulls  # noqa: PLC0415 (the demo only)

    try:
        return _verified(demo_pulls(), settings, plan, choice)
    except (ValueError, MetricsError) as exc:
        return PlanVerification(False, f"the demo's pull requests: {exc}", asked=True)


def _iso(unix_s: float | None) -> str | None:
    if unix_s is None:
        return None
    return datetime.fromtimestamp(unix_s, UTC).isoformat().replace("+00:00", "Z")


def _finding(finding: Finding) -> dict[str, Any]:
    return {
        "kind": finding.kind,
        "container": finding.container,
        "predicted": finding.predicted,
        "observed": finding.observed,
        "before": finding.before,
        "allowed": finding.allowed,
        "fields": [{"container": c, "field": f.value} for c, f in finding.fields],
        "message": finding.message,
    }


def _figures(pull: PullVerification, key: str) -> list[FigureRow]:
    """The figures of one workload (none before the values ran)."""
    verdict = pull.verdicts[key]
    if verdict.before is None or verdict.after is None:
        return []
    return figure_rows(pull.predictions.get(key), verdict.before, verdict.after)


def _verdict(pull: PullVerification, key: str) -> dict[str, Any]:
    verdict = pull.verdicts[key]
    return {
        "workload": key,
        "status": verdict.status,
        "reason": verdict.reason,
        "live_at": _iso(verdict.live_s),
        "observed_days": verdict.observed_days,
        "findings": [_finding(f) for f in verdict.findings],
        "figures": [row.to_json() for row in _figures(pull, key)],
    }


def verification_json(view: PlanVerification) -> dict[str, Any]:
    """The ``verification`` object of ``plan --format json``."""
    return {
        "available": view.available,
        "reason": view.reason,
        "pulls": [
            {
                "number": pull.number,
                "url": pull.url,
                "key": pull.key,
                "merged_at": _iso(pull.merged_s),
                "workloads": [_verdict(pull, k) for k in sorted(pull.verdicts)],
                "restore": {
                    change: {"merged": merged, "previous": previous}
                    for change, (merged, previous) in sorted(pull.restore.items())
                },
            }
            for pull in view.pulls
        ],
    }


def verification_lines(view: PlanVerification) -> list[str]:
    """The plan's short "Verification" section, as plain lines (table format); none when no
    forge repository was named."""
    if not view.asked:
        return []
    if not view.available:
        return [f"verification: not available ({view.reason})"]
    if not view.pulls:
        return ["verification: no recent merged bot pull request"]
    lines = [f"verification: {summary(list(view.pulls))}"]
    for pull in view.pulls:
        for key, verdict in sorted(pull.verdicts.items()):
            lines.append(f"  #{pull.number} {key}: {HEADLINES[verdict.status]}: {verdict.reason}")
            lines += [
                f"    {a}: predicted {b or '–'}, before the merge {c}, after {d}"
                for a, b, c, d in map(FigureRow.texts, _figures(pull, key))
            ]
    return lines


def verification_markdown(view: PlanVerification) -> str:
    """The plan's "Verification" section in Markdown (``plan --format markdown``); '' when no
    forge repository was named."""
    if not view.asked:
        return ""
    lines = ["", "### Verification", ""]
    if not view.available:
        lines.append(f"Not available: {escape(view.reason or '')}.")
    elif not view.pulls:
        lines.append("No recent merged bot pull request.")
    else:
        lines.append(summary(list(view.pulls)))
        lines.append("")
        lines += [f"- {line}" for line in dashboard_lines(list(view.pulls))]
        for pull in view.pulls:
            for key in sorted(pull.verdicts):
                rows = _figures(pull, key)
                if not rows:
                    continue
                lines += ["", f"#{pull.number} {escape(key)}:", ""]
                lines += ["| figure | predicted | before the merge | after |", "|---|---|---|---|"]
                lines += [
                    f"| {escape(a)} | {b} | {c} | {d} |"
                    for a, b, c, d in map(FigureRow.texts, rows)
                ]
    return "\n".join(lines) + "\n"


__all__ = [
    "PlanVerification",
    "add_verification_options",
    "plan_verification",
    "verification_json",
    "verification_lines",
    "verification_markdown",
]
