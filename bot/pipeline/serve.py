"""Serving a forge: each repository on a fresh checkout, planned (``bot.pipeline.plan``), its
pull requests and dashboard brought in line (``serve_repository``); many repositories in one
run, each failure contained to its repository (``run_repositories``)."""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from bot.config.bot import BotSettings
from bot.config.errors import ConfigError
from bot.config.forge import PullRequestConfig
from bot.config.repo import find_repo_config, load_repo_config
from bot.forge.branches import Grouping, group_key
from bot.forge.errors import RateLimitError
from bot.forge.results import KeyResult, PublishReport
from bot.manifests.files import parse_all
from bot.metrics.source import HistorySource
from bot.model import DeclaredWorkload, WorkloadRef
from bot.outcome_view import error_lines
from bot.pipeline.failures import KNOWN_FAILURES, Budget, RepositoryCrashError, failure_message
from bot.pipeline.plan import RepositoryOutcome, history_requests, repository_outcome
from bot.pipeline.proposals import (
    build_proposals,
    changes_cost,
    emergency_phases,
    held_below_threshold,
    proposals_within_thresholds,
    workload_statuses,
)
from bot.pipeline.revert import (
    engine_wanted,
    held_after_revert,
    held_after_revert_lines,
    revert_lines,
    revert_proposals,
    revert_statuses,
    reverted_keys,
)
from bot.pipeline.verification import comment_on_merges, verify_merged
from bot.report.replay import CostTotals
from bot.report.verification import dashboard_lines
from bot.report.verification import summary as verification_summary
from bot.settings import RepositorySettings
from bot.worker_pool import rehearse

if TYPE_CHECKING:  # what a forge offers (``bot.forge.github`` is one); ``plan`` loads none
    from bot.forge.protocol import Forge, ForgeSession

__all__ = [
    "RepositoryReport",
    "RunSummary",
    "SelectionScope",
    "run_repositories",
    "selection_scope",
    "serve_repository",
]

log = logging.getLogger("bot.pipeline")


@dataclass(frozen=True, slots=True)
class RepositoryReport:
    """The outcome of one repository in a run."""

    repository: str
    ok: bool
    message: str = ""
    opened: tuple[str, ...] = ()
    """Pull requests this run opened (URLs, else keys)."""
    adopted: tuple[str, ...] = ()
    """Pull requests this run was about to open and found already open: another run at the same
    time opened them; reported as "already open", never as opened twice."""
    updated: tuple[str, ...] = ()
    closed: tuple[str, ...] = ()
    counts: Mapping[str, int] = field(default_factory=dict)
    cost: CostTotals | None = None
    """The replays of the workloads with changes, summed (``bot.report.replay.cost_totals``)."""
    stopped: str | None = None
    """Why the run stopped in this repository (GitHub's API budget is gone), None otherwise."""
    held: tuple[str, ...] = ()
    """Keys whose new pull request was held back below ``pull_requests.min_monthly_change``."""
    waiting: tuple[str, ...] = ()
    """Keys whose new pull request waits for a later run (``pull_requests.max_new_per_run``
    opened already, or ``max_open`` open): pending on the dashboard, named in the summary."""
    verification: tuple[str, ...] = ()
    """The verdicts on merged pull requests, one Markdown line per workload (regressions
    first), as on the dashboard."""


@dataclass(frozen=True, slots=True)
class RunSummary:
    reports: tuple[RepositoryReport, ...]
    stopped: str | None = None
    """Why the run stopped before serving every repository (GitHub's API budget), or None."""
    not_reached: tuple[str, ...] = ()
    """The repositories the run did not finish, in order: the one where it stopped, then those
    it never began. The next run serves them first (``bot.resume``)."""

    @property
    def ok(self) -> bool:
        return self.stopped is None and all(r.ok for r in self.reports)

    def stop_line(self) -> str | None:
        """The summary line saying where the run stopped, or None when it reached every
        repository."""
        if self.stopped is None:
            return None
        count = len(self.not_reached)
        return (
            f"stopped: {self.stopped}; {count} repositor{'y' if count == 1 else 'ies'} not "
            f"finished ({', '.join(self.not_reached[:3])}{', …' if count > 3 else ''}): "
            "the next run starts with them"
        )


def run_repositories(
    repositories: Sequence[str],
    serve_one: Callable[[str], RepositoryReport],
) -> RunSummary:
    """Serve each repository; any failure is recorded and the next repository still runs.

    Every ``Exception`` is contained to its repository (``KeyboardInterrupt`` and
    ``SystemExit`` still stop the run): the package error families with their message, any
    other exception as an internal error with its traceback in the log. One failure stops the
    run: GitHub's API budget running out (``RateLimitError``, or a repository whose publishing
    stopped for it); the repositories not finished are listed in ``RunSummary.not_reached``.
    """
    reports: list[RepositoryReport] = []
    for position, name in enumerate(repositories):
        try:
            report = serve_one(name)
        except Exception as exc:
            if isinstance(exc, KNOWN_FAILURES):
                log.warning("repository %s failed: %s", name, exc)
            else:
                log.error("repository %s failed", name, exc_info=exc)
            stopped = str(exc) if isinstance(exc, RateLimitError) else None
            report = RepositoryReport(name, ok=False, message=failure_message(exc), stopped=stopped)
        reports.append(report)
        if report.stopped is not None:
            log.warning("GitHub's API budget is gone: the run stops at %s", name)
            return RunSummary(tuple(reports), report.stopped, tuple(repositories[position:]))
    return RunSummary(tuple(reports))


def serve_repository(
    full_name: str,
    forge: Forge,
    source: HistorySource,
    settings: BotSettings,
    *,
    now_s: float,
    dry_run: bool = False,
    selected: Callable[[WorkloadRef], bool] | None = None,
) -> RepositoryReport:
    """Plan one repository on a fresh checkout and bring its pull requests and dashboard in line.

    A bad opt-in file is reported on the dashboard issue and fails this repository only; so
    does any other failure, and running longer than ``run.repository_timeout_s``. The
    manifest files are parsed once in a worker process first (``rehearse``): input that
    would crash the parser (a signal, never an exception) fails this repository, not the
    run.

    ``selected`` (``run --namespace/--workload/--environment``): only the workloads it accepts
    are planned, and only the pull requests whose every workload it accepts are opened,
    updated or closed (``selection_scope``); the others and the dashboard are left as they are.
    """
    budget = Budget.start(settings.run.repository_timeout_s)
    session = forge.open(full_name, PullRequestConfig())
    try:
        root = session.checkout()
        if find_repo_config(root) is None:
            return RepositoryReport(
                full_name, ok=True, message="not opted in (no .tortoise-bot.yaml)"
            )
        try:
            config = load_repo_config(root)
        except ConfigError as exc:
            if not dry_run:
                session.report_config_error([str(p) for p in exc.problems])
            raise
        repository = RepositorySettings.of_checkout(root, config, settings)
        session.configure(repository.pull_requests, dashboard=config.dashboard)
        try:
            crashed = rehearse(parse_all, root, config.paths, timeout_s=budget.left_s())
            if crashed is not None:
                raise RepositoryCrashError(crashed)
            return _serve_configured(
                session,
                root,
                repository,
                source=source,
                settings=settings,
                now_s=now_s,
                dry_run=dry_run,
                budget=budget,
                selected=selected,
            )
        except Exception as exc:
            if not dry_run:
                _report_failure(session, exc)
            raise
    finally:
        session.disconnect()  # a long-running serve keeps no connection between repositories


def _report_failure(session: ForgeSession, exc: Exception) -> None:
    """Show why the repository failed on its dashboard; a failure to do so is only logged."""
    try:
        session.report_failure(failure_message(exc))
    except Exception as again:  # the forge may be what failed: never hide the first error
        log.warning("%s: cannot show the failure on the dashboard: %s", session.full_name, again)


def _serve_configured(
    session: ForgeSession,
    root: Path,
    repository: RepositorySettings,
    *,
    source: HistorySource,
    settings: BotSettings,
    now_s: float,
    dry_run: bool,
    budget: Budget,
    selected: Callable[[WorkloadRef], bool] | None = None,
) -> RepositoryReport:
    """``serve_repository`` once the opt-in file is read and the session configured."""
    from bot.forge.publish import publish, update_dashboard  # noqa: PLC0415 (jinja2: not for plan)

    full_name = session.full_name
    memory = session.workload_memory()
    plan = repository_outcome(
        root,
        source,
        settings,
        now_s=now_s,
        repository=repository,
        memory=memory,
        budget=budget,
        grouping=repository.pull_requests.grouping,
        selected=selected,
    )
    phases = emergency_phases(plan)
    proposals = [
        replace(p, emergency_phases={r.key: phases[r.key] for r in p.workloads if r.key in phases})
        for p in build_proposals(plan)
    ]
    scope = None
    if selected is not None:
        scope = selection_scope(
            plan.inventory.workloads, repository.pull_requests.grouping, selected
        )
        proposals = [p for p in proposals if p.key in scope.keys]
    counts: dict[str, int] = defaultdict(int)
    for outcome in plan.outcomes:
        counts[outcome.status] += 1
    cost = changes_cost(plan)
    unread = _unread(full_name, plan.errors)
    if dry_run:
        message = "; ".join(m for m in ("dry run", unread) if m)
        return RepositoryReport(full_name, ok=True, message=message, counts=dict(counts), cost=cost)
    verified = (  # a selection sees part of the repository: its merges are left for a whole run
        verify_merged(
            session.previous_proposals(),
            plan.inventory,
            source,
            history_requests(plan.inventory, repository),
            settings,
            now_s=now_s,
        )
        if selected is None
        else []
    )
    reverts = (
        revert_proposals(
            verified,
            session.previous_proposals(),
            root=plan.root,
            discovery=plan.discovery,
            config=plan.config,
            label=settings.verify.revert_label,
        )
        if settings.verify.revert == "auto"
        else []
    )
    reverted = {r.key for r in reverts}
    # Held after a revert is judged on the engine's own proposal, before the after-revert floor
    # (``engine_wanted``): the floor lifts a restored field out of the noise thresholds of the
    # pull request that regressed, so a proposal judged after it would never be held.
    within = proposals_within_thresholds(settings.recommend.noise)
    wanted = [engine_wanted(p) for p in proposals]
    after_revert = reverted_keys(wanted, session.previous_proposals(), within)
    held_reverted = held_after_revert(wanted, session.previous_proposals(), within)
    proposals = [*reverts, *(p for p in proposals if p.key not in reverted)]
    budget.check("publishing")
    held = repository.dashboard_only_reason(now_s=now_s)
    if held is not None:
        report = PublishReport(
            tuple(KeyResult(p.key, "pending", "pending", held) for p in proposals)
        )
    else:
        grouping = repository.pull_requests.grouping
        noise = settings.recommend.noise
        report = publish(
            session,
            proposals,
            within_thresholds=proposals_within_thresholds(noise),
            in_error={group_key(o.ref, grouping) for o in plan.outcomes if o.status == "error"},
            held={
                **held_below_threshold(
                    proposals,
                    plan.prices,
                    repository.pull_requests.min_monthly_change,
                    noise.risk_minutes,
                ),
                **held_reverted,
            },
            scope=scope.keys if scope is not None else None,
            urgent=reverted,
        )
    if scope is None:  # a selection sees part of the repository: its dashboard stays whole
        update_dashboard(
            session,
            revert_statuses(workload_statuses(plan), reverts),
            report,
            findings=repository_findings(plan),
            verification=dashboard_lines(verified),
        )
    done_about = revert_lines(verified, report, settings.verify.revert)
    failed = [r.message for r in report.errors] + comment_on_merges(session, verified, done_about)
    failures = sum(o.failed for o in plan.outcomes)
    if failures:
        failed.append(f"{failures} workload(s) failed (listed on the dashboard)")
    findings = sum(o.status == "error" and not o.failed for o in plan.outcomes)
    findings += len(plan.errors)
    warned = [f"{findings} finding(s) in the repository (listed on the dashboard)"] * bool(findings)
    message = "; ".join([*failed, *warned]) or (report.stopped or "")
    message = "; ".join(m for m in (message, unread) if m)
    if not failed:
        limits = repository.pull_requests
        below = tuple(k for k in report.held if k not in after_revert)
        for line in held_after_revert_lines(report.held, after_revert):
            message = f"{message}; {line}" if message else line
        for keys, why in (
            (below, "held back below pull_requests.min_monthly_change"),
            (report.waiting_new, f"held back by max_new_per_run ({limits.max_new_per_run})"),
            (report.waiting_open, f"held back by max_open ({limits.max_open} open)"),
        ):
            if keys:
                held = f"{len(keys)} {why}: {', '.join(keys)}"
                message = f"{message}; {held}" if message else held
    if verified:
        said = f"verification: {verification_summary(verified)}"
        message = f"{message}; {said}" if message else said
    if scope is not None and scope.mixed:
        left = scope.mixed_text()
        message = f"{message}; {left}" if message else left
    return RepositoryReport(
        full_name,
        ok=not failed and report.stopped is None,
        message=message,
        stopped=report.stopped,
        opened=_links(report, report.opened),
        adopted=_links(report, report.adopted),
        updated=_links(report, report.updated),
        closed=_links(report, report.closed),
        counts=dict(counts),
        cost=cost,
        held=report.held,
        waiting=(*report.waiting_new, *report.waiting_open),
        verification=tuple(dashboard_lines(verified)),
    )


@dataclass(frozen=True, slots=True)
class SelectionScope:
    """The pull-request keys a filtered run may act on, and the keys it must leave alone
    because they also hold workloads outside the selection (acting on them would drop those
    workloads' changes from their pull request, or close it)."""

    keys: frozenset[str]
    mixed: tuple[str, ...] = ()

    def mixed_text(self) -> str:
        """The run's line about the keys left alone for holding unselected workloads."""
        return (
            f"{len(self.mixed)} pull request(s) also holding workloads outside the selection "
            f"left as they are: {', '.join(self.mixed)}"
        )


def selection_scope(
    workloads: Iterable[DeclaredWorkload],
    grouping: Grouping,
    selected: Callable[[WorkloadRef], bool],
) -> SelectionScope:
    """Which keys of the grouping every one of whose declared workloads ``selected`` accepts.

    A key none of whose workloads is selected is outside the run: its pull request is neither
    updated nor closed (the run has no proposal for it, which means "not looked at", not "no
    change needed"). A key with selected and unselected workloads is left alone too, and named.
    """
    chosen: dict[str, list[bool]] = defaultdict(list)
    for w in workloads:
        chosen[group_key(w.ref, grouping)].append(selected(w.ref))
    return SelectionScope(
        frozenset(k for k, marks in chosen.items() if all(marks)),
        tuple(sorted(k for k, marks in chosen.items() if any(marks) and not all(marks))),
    )


def repository_findings(plan: RepositoryOutcome) -> list[str]:
    """The repository's findings for its dashboard, each distinct one once: what it declares
    that the bot cannot read or edit (``file:line: message``) and its warnings."""
    warnings = [f"{w.file}:{w.line}: {w.message}" for w in plan.inventory.warnings]
    return [*error_lines(plan.inventory.errors), *warnings]


def _unread(full_name: str, errors: Sequence[str]) -> str:
    """The files of the checkout that could not be read (``file:line: problem``), each logged;
    a finding of this repository in the run's summary: the first named, the others counted."""
    for error in errors:
        log.warning("%s: %s", full_name, error)
    if not errors:
        return ""
    more = f" and {len(errors) - 1} more" if len(errors) > 1 else ""
    return f"{len(errors)} file problem(s): {errors[0]}{more}"


def _links(report: PublishReport, keys: Sequence[str]) -> tuple[str, ...]:
    """The pull-request URL (else the key) of each key that succeeded."""
    results = [report.result(key) for key in keys]
    return tuple((r.url or r.key) for r in results if r is not None)
