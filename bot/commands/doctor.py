"""``tortoise-bot doctor``: why Prometheus gives a repository no history, and the fix.

Per metric family the bot reads: whether series exist, the labels they carry, whether each
environment's selector matches them, the scrape interval, and the setting or relabelling that
fixes what is wrong (``bot/metrics/doctor.py``). ``--repo`` adds the repository's environments
(namespaces and selectors) and workload kinds; without it the families of every kind are
checked, with the configured matchers only. Exit 0 when every required family is there for
every environment, 1 when one is missing or Prometheus does not answer, 2 for a usage error.

``plan`` prints the same diagnosis (``print_summary``) when every workload lacks data.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from bot.commands.common import PROMETHEUS_URL_ENV, load_settings, parse_now, print_json
from bot.config.bot import BotSettings
from bot.config.errors import ConfigError
from bot.config.repo import load_repo_config
from bot.console import WORDS, wrap_cell
from bot.errors import EXIT_FAILED, EXIT_OK, UsageError
from bot.manifests import discover
from bot.metrics.client import PrometheusClient
from bot.metrics.doctor import Diagnosis, FamilyReport, Problem, Scope, diagnose, scopes_of
from bot.metrics.errors import MetricsError
from bot.metrics.source import HistoryRequest
from bot.pipeline.plan import history_requests
from bot.settings import RepositorySettings

WIDTH = 80
"""Text output fits this many columns."""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--repo", type=Path, metavar="PATH", help="Repository checkout (its environments)."
    )
    parser.add_argument("--config", type=Path, help="Bot settings file (YAML).")
    parser.add_argument("--prometheus", metavar="URL", help="Prometheus-compatible API base URL.")
    parser.add_argument(
        "--now", metavar="ISO8601", help="Look for series before this time (default: now)."
    )
    parser.add_argument("--format", choices=("text", "json"), default="text", help="Output.")


def run(args: argparse.Namespace) -> int:
    settings = load_settings(args)
    if not settings.prometheus.url:
        raise UsageError(
            "no Prometheus: pass --prometheus URL (or set prometheus.url in --config, "
            f"or {PROMETHEUS_URL_ENV})"
        )
    requests: list[HistoryRequest] | None = None
    if args.repo is not None:
        if not args.repo.is_dir():
            raise UsageError(f"--repo {args.repo}: not a directory")
        requests = checkout_requests(args.repo, settings)
    now = parse_now(args.now)
    at_s = now if now is not None else datetime.now(UTC).timestamp()
    try:
        diagnosis = run_checks(settings, requests, at_s=at_s)
    except MetricsError as exc:
        print(
            f"tortoise-bot doctor: no answer from {settings.prometheus.url}: {exc}", file=sys.stderr
        )
        return EXIT_FAILED
    if args.format == "json":
        print_json(document(diagnosis))
    else:
        sys.stdout.write("".join(f"{line}\n" for line in text_lines(diagnosis)))
    return EXIT_OK if diagnosis.ok else EXIT_FAILED


def checkout_requests(root: Path, settings: BotSettings) -> list[HistoryRequest]:
    """The history requests ``plan`` would send for the checkout at ``root``."""
    repository = RepositorySettings.of_checkout(root, load_repo_config(root), settings)
    problems = repository.problems()
    if problems:
        raise ConfigError(problems)
    return history_requests(discover(root, repository.config).inventory, repository)


def run_checks(
    settings: BotSettings, requests: list[HistoryRequest] | None, *, at_s: float
) -> Diagnosis:
    """The diagnosis of the configured Prometheus for ``requests`` (None: no repository),
    every query within ``prometheus.fetch_timeout_s``."""
    config = settings.prometheus
    scopes: tuple[Scope, ...] = (Scope("(all)", (), ()),)
    kinds: set[str] = {"Deployment", "StatefulSet"}
    if requests is not None:
        scopes = scopes_of(requests) or scopes
        kinds = {r.ref.kind for r in requests} or kinds
    client = PrometheusClient(config, env=os.environ)
    try:
        with client.bounded(time.monotonic() + config.fetch_timeout_s):
            return diagnose(client, config, at_s=at_s, scopes=scopes, kinds=kinds)
    finally:
        client.close()


# --------------------------------------------------------------------------- output


def _utc(unix_s: float) -> str:
    return datetime.fromtimestamp(unix_s, UTC).strftime("%Y-%m-%d %H:%M")


def _wrapped(text: str, first: str, rest: str) -> list[str]:
    lines = wrap_cell(text, WORDS, WIDTH - max(len(first), len(rest)))
    return [(first if i == 0 else rest) + line for i, line in enumerate(lines)]


def _family_lines(report: FamilyReport) -> list[str]:
    family = report.family
    lines = [f"{report.status:<8} {family.metric}"]
    if report.series:
        detail = f"{report.series} series"
        if report.scrape_interval_s is not None:
            detail += f", scraped every ~{report.scrape_interval_s:g} s"
        if report.scopes:
            detail += "; " + ", ".join(f"{n} in {env}" for env, n in report.scopes)
        lines += _wrapped(detail, " " * 9, " " * 11)
        if report.labels_seen:
            lines += _wrapped("labels: " + ", ".join(report.labels_seen), " " * 9, " " * 11)
    elif not family.required:
        lines += _wrapped(f"optional: {family.why}", " " * 9, " " * 11)
    return lines


def _grouped(problems: list[Problem]) -> list[tuple[Problem, list[str]]]:
    """Problems that differ only by metric, once each with the metrics they concern."""
    groups: dict[tuple[str, str | None, str, str], tuple[Problem, list[str]]] = {}
    for p in problems:
        key = (p.severity, p.environment, p.message, p.fix)
        groups.setdefault(key, (p, []))[1].append(p.metric)
    return list(groups.values())


def _problem_lines(problem: Problem, metrics: list[str]) -> list[str]:
    where = f" [{problem.environment}]" if problem.environment else ""
    named = [m for m in metrics if m]
    lines = _wrapped(f"{problem.severity}{where}: {problem.message}", "- ", "  ")
    if named:
        lines += _wrapped(
            f"{'metrics' if len(named) > 1 else 'metric'}: {', '.join(named)}", "  ", "    "
        )
    return [*lines, *_wrapped(f"fix: {problem.fix}", "  ", "    ")]


def _problems_lines(problems: list[Problem]) -> list[str]:
    lines: list[str] = []
    for problem, metrics in _grouped(problems):
        lines += _problem_lines(problem, metrics)
    return lines


def text_lines(diagnosis: Diagnosis) -> list[str]:
    """The diagnosis as text lines of at most ``WIDTH`` columns (a word longer stays whole)."""
    lines = _wrapped(
        f"tortoise-bot doctor: {diagnosis.url} at {_utc(diagnosis.at_s)} UTC "
        f"(series of the last {diagnosis.lookback_s / 3600:g} h)",
        "",
        "  ",
    )
    lines.append("")
    for report in diagnosis.families:
        lines += _family_lines(report)
    problems = diagnosis.all_problems()
    lines.append("")
    if not problems:
        lines.append("every metric the bot reads is there, for every environment")
        return lines
    count = len(_grouped(problems))
    lines.append(f"{count} problem{'s' if count != 1 else ''}:")
    return lines + _problems_lines(problems)


def summary_lines(diagnosis: Diagnosis) -> list[str]:
    """The problems alone, for ``plan`` when every workload lacks data."""
    problems = diagnosis.all_problems()
    head = "tortoise-bot doctor: every workload lacks data; "
    if not problems:
        text = head + "every metric is there (is the history window too short?)"
        return _wrapped(text, "", "  ")
    text = head + f"what {diagnosis.url} lacks (tortoise-bot doctor for details):"
    return _wrapped(text, "", "  ") + _problems_lines(problems)


def print_summary(
    settings: BotSettings, requests: list[HistoryRequest] | None, *, at_s: float, out: TextIO
) -> None:
    """Run the checks for ``requests`` (None: no environments, ``run``) and print their problems on ``out`` (a failure to ask
    is one line: the plan's own output stays whole)."""
    try:
        diagnosis = run_checks(settings, requests, at_s=at_s)
    except MetricsError as exc:
        out.write(f"tortoise-bot doctor: no diagnosis: {exc}\n")
        return
    out.write("".join(f"{line}\n" for line in summary_lines(diagnosis)))


def _problem_doc(problem: Problem) -> dict[str, Any]:
    return {
        "severity": problem.severity,
        "metric": problem.metric or None,
        "environment": problem.environment,
        "message": problem.message,
        "fix": problem.fix,
    }


def document(diagnosis: Diagnosis) -> dict[str, Any]:
    """The diagnosis as one JSON object (``--format json``)."""
    return {
        "url": diagnosis.url,
        "at": datetime.fromtimestamp(diagnosis.at_s, UTC).isoformat(),
        "lookback_s": diagnosis.lookback_s,
        "ok": diagnosis.ok,
        "families": [
            {
                "metric": r.family.metric,
                "setting": f"prometheus.metrics.{r.family.key}",
                "source": r.family.source,
                "required": r.family.required,
                "status": r.status,
                "series": r.series,
                "labels_seen": list(r.labels_seen),
                "scrape_interval_s": r.scrape_interval_s,
                "environments": dict(r.scopes),
                "problems": [_problem_doc(p) for p in r.problems],
            }
            for r in diagnosis.families
        ],
        "problems": [_problem_doc(p) for p in diagnosis.problems],
    }
