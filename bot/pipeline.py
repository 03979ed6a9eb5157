"""The product as code.

For each repository: load config -> discover manifests -> fetch history -> recommend -> apply
thresholds and policy -> edit -> open/update pull request -> update dashboard.

Failures are isolated: a ``ConfigError``, ``MetricsError`` or ``ForgeError`` (or any other
exception, reported as an internal error) fails one repository, shown on its dashboard, and the
others still run; a workload whose history is missing, whose engine input is incomplete, whose
edit fails verification or whose decision raised gets status ``error`` and nothing is written
for it (and the run exits 1).
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import closing
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from bot.config.bot import BotSettings
from bot.config.errors import ConfigError
from bot.config.forge import PullRequestConfig
from bot.config.recommend import NoiseSettings
from bot.config.repo import RepoConfig, find_repo_config, load_repo_config
from bot.forge.branches import Grouping, group_change_sets, group_key
from bot.forge.errors import ForgeError, RateLimitError
from bot.forge.lifecycle import ThresholdCheck, within_per_value
from bot.forge.previous import WorkloadMemory
from bot.forge.results import KeyResult, PublishReport, WorkloadStatus
from bot.manifests import Discovery, apply_changes, discover, environment_config
from bot.manifests.edit_planner import SKIPPED_NOTE
from bot.manifests.errors import ManifestError
from bot.metrics.errors import MetricsError
from bot.metrics.source import FetchResult, HistoryRequest, HistorySource, stream_history
from bot.model import (
    DEFAULT_ENVIRONMENT,
    SECONDS_PER_DAY,
    ChangeSet,
    DeclaredWorkload,
    EditResult,
    EmergencyPhase,
    FieldChange,
    FieldId,
    Inventory,
    Recommendation,
    SkippedChange,
    Status,
    WorkloadRef,
)
from bot.recommend.changes import field_changes, next_emergency_phase
from bot.recommend.engine import recommend
from bot.recommend.errors import RecommendError
from bot.recommend.inputs import EmergencyState, build_input
from bot.recommend.noise import passes_min_change
from bot.report.build import chart_candidates, make_proposal, summarize_history
from bot.report.proposal import HistorySummary, Prices, Proposal
from bot.report.replay import CostTotals, cost_totals
from bot.worker_pool import OrderedPool, usable_cores
from bot.workload_settings import RepositoryRules

if TYPE_CHECKING:  # what a forge offers (``bot.forge.github`` is one); ``plan`` loads none
    from bot.forge.protocol import Forge, ForgeSession

log = logging.getLogger("bot.pipeline")


# --------------------------------------------------------------------------- results


@dataclass(frozen=True, slots=True)
class WorkloadOutcome:
    """What the pipeline decided for one workload."""

    declared: DeclaredWorkload
    status: Status
    reasons: tuple[str, ...] = ()
    recommendation: Recommendation | None = None
    changes: tuple[FieldChange, ...] = ()
    summary: HistorySummary | None = None
    """What the reports need of the workload's history (``summarize_history``); never the
    samples, dropped once the recommendation is made."""

    @property
    def ref(self) -> WorkloadRef:
        return self.declared.ref


@dataclass(frozen=True, slots=True)
class ChangeSetEdit:
    """One change set as decided, and the one edit of its changes against the checkout."""

    change_set: ChangeSet
    edit: EditResult


@dataclass(frozen=True, slots=True)
class RepositoryOutcome:
    """Everything ``plan`` shows for one checkout."""

    root: Path
    config: RepoConfig
    discovery: Discovery
    """What the checkout declares (``.inventory``) and the index its edits are planned with."""
    outcomes: tuple[WorkloadOutcome, ...]
    edits: tuple[ChangeSetEdit, ...] = ()
    """The change sets, in order of first appearance, each edited once (``repository_outcome``'s
    ``grouping``; ``repository``: one set holding every change)."""
    window: tuple[float, float] = (0.0, 0.0)
    errors: tuple[str, ...] = ()
    prices: Prices = field(default_factory=Prices)
    """The prices of the replays' monthly cost (``repository_prices``)."""

    @property
    def inventory(self) -> Inventory:
        return self.discovery.inventory

    @property
    def edit(self) -> EditResult:
        """The edit ``plan`` shows and ``--write`` writes: the one change set of grouping
        ``repository`` (every change); nothing when no workload has changes."""
        if len(self.edits) > 1:
            raise ValueError("one edit of every change needs grouping 'repository'")
        return self.edits[0].edit if self.edits else EditResult()


# --------------------------------------------------------------------------- the steps


def history_requests(inventory: Inventory, config: RepoConfig) -> list[HistoryRequest]:
    """One request per workload, with its environment's Prometheus selector."""

    def selector(environment: str) -> dict[str, str]:
        env = environment_config(config, environment)
        return dict(env.selector) if env is not None else {}

    return [
        HistoryRequest(
            ref=w.ref,
            containers=tuple(c.name for c in w.containers if not c.init),
            selector=selector(w.ref.environment),
        )
        for w in inventory.workloads
    ]


def decide_workload(
    declared: DeclaredWorkload,
    fetched: FetchResult,
    rules: RepositoryRules,
    *,
    now_s: float,
    memory: WorkloadMemory | None = None,
    charts: bool = True,
) -> WorkloadOutcome:
    """Recommend for one workload and keep the changes that pass thresholds and policy.

    ``rules`` resolves the workload's settings once (``bot.workload_settings``): skipped when
    the repository ignores it or a Tortoise manages it, else its recommend settings, container
    policies and allocation bounds go to the engine.

    The outcome keeps what the reports need of the history (``summarize_history``: window,
    quality notes, OOM kills and, with ``charts``, the week usage a pull request may chart),
    never the history itself. ``charts`` False (``plan``, ``explain``: no pull request is
    built) skips the week usage.

    ``memory`` is what the bot's merged pull requests tell about the workload
    (``bot.forge.previous``): when each HPA target last changed (Tortoise's +5 points per
    24 h) and the emergency phase the last merged proposal left. None (``plan`` without
    GitHub): nothing known, every target free to move, phase ``normal``.
    """
    ref = declared.ref
    resolved = rules.for_workload(declared)
    if resolved.skip is not None:
        return WorkloadOutcome(declared, "skipped", (resolved.skip,))
    error = fetched.errors.get(ref)
    if error is not None:
        return WorkloadOutcome(declared, "error", (f"metrics: {error}",))
    history = fetched.histories.get(ref)
    if history is None:
        return WorkloadOutcome(declared, "error", ("metrics: no history was returned",))
    emergency = EmergencyState(
        requested=resolved.emergency,
        previous_phase=(memory.emergency_phase if memory else None) or "normal",
    )
    engine_input = build_input(
        declared,
        history,
        containers=resolved.containers,
        emergency=emergency,
        target_changed_s=dict(memory.target_changed_s) if memory else {},
        excluded_intervals_s=history.crash_loops_s,
    )
    try:
        recommendation = recommend(engine_input, resolved.recommend, now_s=now_s)
    except RecommendError as exc:
        summary = summarize_history(history)
        return WorkloadOutcome(declared, "error", (f"recommendation: {exc}",), summary=summary)
    changes = field_changes(recommendation)
    env = environment_config(rules.config, ref.environment)
    if changes and env is not None and env.update_mode == "off":
        reason = f"update_mode is off for environment {ref.environment!r}: shown, never edited"
        return WorkloadOutcome(
            declared,
            "skipped",
            (*recommendation.reasons, reason),
            recommendation,
            (),
            summarize_history(history),
        )
    replay = recommendation.replay
    summary = summarize_history(
        history,
        charts=chart_candidates(changes) if charts else (),
        time_zone=replay.current.replicas.time_zone if replay is not None else "UTC",
    )
    return WorkloadOutcome(
        declared,
        recommendation.status,
        recommendation.reasons,
        recommendation,
        changes,
        summary,
    )


def _only(fetched: FetchResult, ref: WorkloadRef) -> FetchResult:
    """What ``fetched`` holds of ``ref``: all a worker process is sent of a namespace group."""
    return FetchResult(
        {ref: fetched.histories[ref]} if ref in fetched.histories else {},
        {ref: fetched.errors[ref]} if ref in fetched.errors else {},
    )


def _decide_contained(
    declared: DeclaredWorkload,
    fetched: FetchResult,
    rules: RepositoryRules,
    *,
    now_s: float,
    memory: WorkloadMemory | None,
    charts: bool,
) -> WorkloadOutcome:
    """``decide_workload``; a ``ConfigError`` (a bad quantity, at its file and line) fails the
    repository, any other exception only this workload (status ``error``, the others still
    decided). Called in a worker process with ``run.processes`` above 1 (``bot.worker_pool``)."""
    try:
        return decide_workload(declared, fetched, rules, now_s=now_s, memory=memory, charts=charts)
    except ConfigError:
        raise
    except Exception as exc:
        log.error("workload %s failed", declared.ref, exc_info=exc)
        return WorkloadOutcome(declared, "error", (failure_message(exc),))


def _mark_failed_edits(
    outcomes: Sequence[WorkloadOutcome], edits: Sequence[ChangeSetEdit]
) -> tuple[WorkloadOutcome, ...]:
    """The outcomes with what their change set's edit refused (status ``error``, the set's
    errors in the workload's files) or skipped (those changes dropped with the reason)."""
    errors_of: dict[WorkloadRef, dict[str, list[str]]] = {}
    skipped: dict[WorkloadRef, list[SkippedChange]] = defaultdict(list)
    for e in edits:
        by_file: dict[str, list[str]] = defaultdict(list)
        for err in e.edit.errors:
            by_file[err.file].append(f"{err.file}:{err.line}: {err.message}")
        errors_of.update((c.ref, by_file) for c in e.change_set.changes)
        for left_out in e.edit.skipped:
            skipped[left_out.change.ref].append(left_out)
    failed = {ref for e in edits for ref in e.edit.failed}
    out = []
    for outcome in outcomes:
        if outcome.ref in failed:
            own = errors_of.get(outcome.ref, {})
            why = [m for f in outcome.declared.files for m in own.get(f, [])]
            out.append(
                replace(
                    outcome,
                    status="error",
                    reasons=("edit refused, nothing written", *why),
                    changes=(),
                )
            )
        elif outcome.ref in skipped:
            dropped = [s.change for s in skipped[outcome.ref]]
            kept = tuple(c for c in outcome.changes if c not in dropped)
            by_reason: dict[str, list[str]] = defaultdict(list)
            for left_out in skipped[outcome.ref]:
                change = left_out.change
                by_reason[left_out.reason].append(
                    change.field + (f" of {change.container}" if change.container else "")
                )
            reasons = tuple(f"{', '.join(f)} skipped: {why}" for why, f in by_reason.items())
            out.append(
                replace(
                    outcome,
                    status=outcome.status if kept else "skipped",
                    reasons=(*outcome.reasons, *reasons),
                    changes=kept,
                )
            )
        else:
            out.append(outcome)
    return tuple(out)


def repository_outcome(
    root: Path,
    source: HistorySource,
    settings: BotSettings,
    *,
    now_s: float,
    write: bool = False,
    config: RepoConfig | None = None,
    memory: Mapping[str, WorkloadMemory] | None = None,
    on_workload: Callable[[WorkloadRef], None] | None = None,
    budget: Budget | None = None,
    charts: bool = True,
    grouping: Grouping = "repository",
) -> RepositoryOutcome:
    """Plan one checkout: every step up to the edit; ``write`` applies the edit to the tree.

    History streams (``stream_history``): each namespace group is recommended as soon as it
    is fetched, while Prometheus answers the next groups' queries, and its samples are
    dropped once recommended (each outcome keeps a ``HistorySummary``), so memory holds the
    groups in flight, not the repository's whole history. Outcomes are in inventory order.

    ``memory`` maps a workload key to what the bot's merged pull requests tell about it
    (``ForgeSession.workload_memory()``); absent keys know nothing. ``on_workload`` is
    called after each workload is decided (progress on a terminal). ``budget`` (``run``) is
    checked between steps and bounds the fetch (recommending included, as it runs between
    the fetch's parts). ``charts`` False skips the week usage that only pull-request bodies
    show (``build_proposals`` then has no chart to draw).

    The changes are grouped into change sets by ``grouping`` (``serve``: the pull requests'
    grouping) and each set is edited once (``ChangeSetEdit``); a workload whose edit fails, or
    whose changes are skipped, is marked from its own set's edit, and no set blocks another.
    ``repository`` (``plan``, ``explain``): one set, the edit of every change, the one
    ``write`` may apply.

    Raises ``ConfigError`` for a bad opt-in file and ``MetricsError`` when Prometheus is down:
    both fail the repository as a whole; ``RepositoryTimeoutError`` when the budget runs out.
    """
    config = config if config is not None else load_repo_config(root)
    discovery = discover(root, config)
    inventory = discovery.inventory
    rules = RepositoryRules.of_checkout(root, config, settings.recommend)
    problems = rules.problems()
    if problems:
        raise ConfigError(problems)
    window_s = settings.prometheus.window_days * SECONDS_PER_DAY
    start_s, end_s = now_s - window_s, now_s
    requests = history_requests(inventory, config)
    waiting: dict[WorkloadRef, list[int]] = defaultdict(list)
    for index, w in enumerate(inventory.workloads):
        waiting[w.ref].append(index)
    decided: dict[int, WorkloadOutcome] = {}

    def done(index: int, outcome: WorkloadOutcome) -> None:
        decided[index] = outcome
        if on_workload is not None:
            on_workload(outcome.ref)

    def lost(index: int, exc: Exception) -> WorkloadOutcome:
        log.error("workload %s failed", inventory.workloads[index].ref, exc_info=exc)
        return WorkloadOutcome(inventory.workloads[index], "error", (failure_message(exc),))

    processes = settings.run.processes_for(len(inventory.workloads), usable_cores())
    pool = OrderedPool[WorkloadOutcome](processes, done=done, lost=lost)

    def decide(indices: Iterable[int], fetched: FetchResult) -> None:
        for index in sorted(indices):
            w = inventory.workloads[index]
            pool.submit(
                index,
                _decide_contained,
                w,
                _only(fetched, w.ref) if pool.processes > 1 else fetched,
                rules,
                now_s=now_s,
                memory=(memory or {}).get(w.ref.key),
                charts=charts,
            )

    if budget is not None:
        budget.check("reading its history")
    parts = stream_history(
        source,
        requests,
        start_s=start_s,
        end_s=end_s,
        budget_s=budget.left_s() if budget is not None else None,
    )
    try:
        with closing(parts), pool:
            for part in parts:
                refs = [*part.errors, *part.histories]
                decide([i for ref in refs for i in waiting.pop(ref, ())], part)
                del part  # its histories go now, not when the next part is in
            decide([i for indices in waiting.values() for i in indices], FetchResult())
            pool.finish()
    except MetricsError as exc:
        if budget is not None:
            budget.check("reading its history", cause=exc)
        raise
    outcomes = [decided[i] for i in range(len(inventory.workloads))]
    if budget is not None:
        budget.check("editing")
    if write and grouping != "repository":
        raise ValueError("write applies one edit of every change: grouping 'repository'")
    change_sets = group_change_sets(
        (
            ChangeSet(o.ref.key, o.changes, (o.recommendation,) if o.recommendation else ())
            for o in outcomes
            if o.changes
        ),
        grouping,
    )
    edits = tuple(
        ChangeSetEdit(s, apply_changes(root, discovery, s.changes, config, write=write))
        for s in change_sets
    )
    return RepositoryOutcome(
        root=root,
        config=config,
        discovery=discovery,
        outcomes=_mark_failed_edits(outcomes, edits),
        edits=edits,
        window=(start_s, end_s),
        errors=tuple(f"{e.file}:{e.line}: {e.message}" for e in inventory.errors),
        prices=repository_prices(config, settings),
    )


# --------------------------------------------------------------------------- many repositories


@dataclass(frozen=True, slots=True)
class RepositoryReport:
    """The outcome of one repository in a run."""

    repository: str
    ok: bool
    message: str = ""
    opened: tuple[str, ...] = ()
    updated: tuple[str, ...] = ()
    closed: tuple[str, ...] = ()
    counts: Mapping[str, int] = field(default_factory=dict)
    cost: CostTotals | None = None
    """The replays of the workloads with changes, summed (``bot.report.replay.cost_totals``)."""
    stopped: str | None = None
    """Why the run stopped in this repository (GitHub's API budget is gone), None otherwise."""


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


class RepositoryTimeoutError(Exception):
    """A repository took longer than ``run.repository_timeout_s``: it stopped between two
    steps (or its fetch ran out of time), before writing anything more."""


@dataclass(frozen=True, slots=True)
class Budget:
    """The time one repository may take (``run.repository_timeout_s``), from its start.

    ``deadline`` is ``time.monotonic()`` seconds. Steps check it between them (a step in
    progress is bounded by its own timeouts: a fetch gets ``left_s()`` as its budget, git and
    GitHub calls have theirs), so a repository stops cleanly, never halfway through a write.
    """

    seconds: float
    deadline: float

    @classmethod
    def start(cls, seconds: float) -> Budget:
        return cls(seconds, time.monotonic() + seconds)

    def left_s(self) -> float:
        return max(0.0, self.deadline - time.monotonic())

    def check(self, before: str, *, cause: Exception | None = None) -> None:
        """Raise ``RepositoryTimeoutError`` when the time is up (``before``: the next step)."""
        if time.monotonic() < self.deadline:
            return
        message = (
            f"took longer than run.repository_timeout_s ({self.seconds:g} s): stopped before "
            f"{before}, nothing written"
        )
        if cause is not None:
            message += f" (last error: {cause})"
        raise RepositoryTimeoutError(message) from cause


KNOWN_FAILURES = (ConfigError, MetricsError, ManifestError, ForgeError, RepositoryTimeoutError)
"""The package error families: a failure of the repository's input or of a server, reported
with its own message. Any other exception is a bug, contained all the same."""


def failure_message(exc: Exception) -> str:
    """What a failed repository (or workload) reports: the package error's own message, or
    the exception's type and text for anything else (a bug, named as such)."""
    if isinstance(exc, KNOWN_FAILURES):
        return str(exc)
    return f"internal error ({type(exc).__name__}: {exc}); please report it with the log"


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


__all__ = [
    "DEFAULT_ENVIRONMENT",
    "RepositoryOutcome",
    "RepositoryReport",
    "RunSummary",
    "WorkloadOutcome",
    "decide_workload",
    "repository_outcome",
    "run_repositories",
]


# --------------------------------------------------------------------------- pull requests


def build_proposals(plan: RepositoryOutcome) -> list[Proposal]:
    """One ``Proposal`` per change set of ``plan`` (``repository_outcome``'s ``grouping``),
    from the one edit of that set: the files of one pull request hold only its own changes.

    The proposal carries the workloads still ``changes`` after their edit, with the changes
    that were written; the notes of changes the edit skipped stay with their workloads'
    reasons (the dashboard), not in the pull request.
    """
    outcomes = {o.ref: o for o in plan.outcomes if o.status == "changes"}
    summaries = {ref: o.summary for ref, o in outcomes.items() if o.summary is not None}
    proposals = []
    for edited in plan.edits:
        if not edited.edit.files:
            continue
        written = [
            outcomes[r]
            for r in dict.fromkeys(c.ref for c in edited.change_set.changes)
            if r in outcomes
        ]
        change_set = ChangeSet(
            edited.change_set.key,
            tuple(c for o in written for c in o.changes),
            tuple(o.recommendation for o in written if o.recommendation is not None),
        )
        notes = tuple(n for n in edited.edit.notes if n.code != SKIPPED_NOTE)
        edit = replace(edited.edit, notes=notes)
        proposals.append(make_proposal(change_set, edit, summaries=summaries))
    return proposals


def proposals_within_thresholds(noise: NoiseSettings) -> ThresholdCheck:
    """The check that keeps a rejected proposal closed: True when every proposed request or
    limit of the new proposal is within minChange (``bot.recommend.noise``) of the rejected one
    and every other value (replica counts, targets) is equal (``lifecycle.within_per_value``)."""

    def close(field_id: FieldId | None, rejected: float, proposed: float) -> bool:
        resource = field_id.resource if field_id is not None else None
        if field_id is None or not field_id.is_request_or_limit or resource is None:
            return False
        moved, _ = passes_min_change(rejected, proposed, resource, noise)
        return not moved

    return within_per_value(close)


def emergency_phases(plan: RepositoryOutcome) -> dict[str, EmergencyPhase]:
    """Per workload key with a recommendation, the emergency phase its proposal leaves
    (``bot.recommend.changes.next_emergency_phase``), kept in the pull-request state."""
    return {
        o.ref.key: next_emergency_phase(o.recommendation)
        for o in plan.outcomes
        if o.recommendation is not None
    }


def workload_statuses(plan: RepositoryOutcome) -> list[WorkloadStatus]:
    """The dashboard's view of each workload, keyed by its change set."""
    grouping = plan.config.pull_requests.grouping
    return [
        WorkloadStatus(
            o.ref,
            o.status,
            "; ".join(o.reasons),
            group_key(o.ref, grouping) if o.status == "changes" else None,
            o.recommendation if o.status == "changes" else None,
        )
        for o in plan.outcomes
    ]


def changes_cost(plan: RepositoryOutcome) -> CostTotals:
    """The replays of the workloads with changes, summed, at the repository's prices."""
    recs = [o.recommendation for o in plan.outcomes if o.status == "changes" and o.recommendation]
    return cost_totals(recs, plan.prices)


def repository_prices(config: RepoConfig, settings: BotSettings) -> Prices:
    """The prices of a repository's cost figures: its ``pull_requests.cost``, else the bot's
    ``prices``."""
    cost = effective_pull_requests(config, settings).cost
    return Prices(cost.cpu_core_month, cost.memory_gib_month, cost.currency)


def effective_pull_requests(config: RepoConfig, settings: BotSettings) -> PullRequestConfig:
    """The repository's pull-request settings, with the bot's prices unless it sets its own."""
    pull_requests = config.pull_requests
    if "cost" in pull_requests.model_fields_set:
        return pull_requests
    return pull_requests.model_copy(update={"cost": settings.prices})


def dashboard_only_reason(config: RepoConfig, *, now_s: float) -> str | None:
    """Why this run only updates the dashboard (no pull request is opened or updated), or None.

    ``update_mode: off`` always; ``pull_requests.schedule`` outside its window.
    """
    if config.update_mode == "off":
        return "update_mode is off"
    window = config.pull_requests.schedule
    if window is not None and not window.contains(now_s):
        return "outside the pull-request schedule window"
    return None


def serve_repository(
    full_name: str,
    forge: Forge,
    source: HistorySource,
    settings: BotSettings,
    *,
    now_s: float,
    dry_run: bool = False,
) -> RepositoryReport:
    """Plan one repository on a fresh checkout and bring its pull requests and dashboard in line.

    A bad opt-in file is reported on the dashboard issue and fails this repository only; so
    does any other failure, and running longer than ``run.repository_timeout_s``.
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
        session.configure(effective_pull_requests(config, settings), dashboard=config.dashboard)
        try:
            return _serve_configured(
                session,
                root,
                config,
                source=source,
                settings=settings,
                now_s=now_s,
                dry_run=dry_run,
                budget=budget,
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
    config: RepoConfig,
    *,
    source: HistorySource,
    settings: BotSettings,
    now_s: float,
    dry_run: bool,
    budget: Budget,
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
        config=config,
        memory=memory,
        budget=budget,
        grouping=config.pull_requests.grouping,
    )
    phases = emergency_phases(plan)
    proposals = [
        replace(p, emergency_phases={r.key: phases[r.key] for r in p.workloads if r.key in phases})
        for p in build_proposals(plan)
    ]
    counts: dict[str, int] = defaultdict(int)
    for outcome in plan.outcomes:
        counts[outcome.status] += 1
    cost = changes_cost(plan)
    if dry_run:
        return RepositoryReport(
            full_name, ok=True, message="dry run", counts=dict(counts), cost=cost
        )
    budget.check("publishing")
    held = dashboard_only_reason(config, now_s=now_s)
    if held is not None:
        report = PublishReport(
            tuple(KeyResult(p.key, "pending", "pending", held) for p in proposals)
        )
    else:
        grouping = config.pull_requests.grouping
        report = publish(
            session,
            proposals,
            within_thresholds=proposals_within_thresholds(settings.recommend.noise),
            in_error={group_key(o.ref, grouping) for o in plan.outcomes if o.status == "error"},
        )
    update_dashboard(session, workload_statuses(plan), report)
    failed = [r.message for r in report.errors]
    if counts.get("error"):
        failed.append(f"{counts['error']} workload(s) in error (listed on the dashboard)")
    message = "; ".join(failed) or (report.stopped or "")
    return RepositoryReport(
        full_name,
        ok=not failed and report.stopped is None,
        message=message,
        stopped=report.stopped,
        opened=_links(report, report.opened),
        updated=_links(report, report.updated),
        closed=_links(report, report.closed),
        counts=dict(counts),
        cost=cost,
    )


def _links(report: PublishReport, keys: Sequence[str]) -> tuple[str, ...]:
    """The pull-request URL (else the key) of each key that succeeded."""
    results = [report.result(key) for key in keys]
    return tuple((r.url or r.key) for r in results if r is not None)
