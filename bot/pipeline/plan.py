"""One checkout, planned: the history each workload needs, the decision per workload and the
one edit of each change set (``repository_outcome``); nothing is published.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import closing
from dataclasses import dataclass, field, replace
from pathlib import Path

from bot.config.bot import BotSettings
from bot.config.errors import ConfigError
from bot.config.forge import CostConfig
from bot.config.repo import RepoConfig, load_repo_config
from bot.forge.branches import Grouping, group_change_sets
from bot.forge.previous import WorkloadMemory
from bot.manifests import Discovery, apply_changes, discover
from bot.metrics.errors import MetricsError
from bot.metrics.source import FetchResult, HistoryRequest, HistorySource, stream_history
from bot.model import (
    SECONDS_PER_DAY,
    ChangeSet,
    ContainerSettings,
    DeclaredWorkload,
    EditResult,
    Inventory,
    Recommendation,
    SkippedChange,
    WorkloadRef,
)
from bot.pipeline.coexist import coexisting, coexisting_containers
from bot.pipeline.failures import Budget, failure_message
from bot.pipeline.namespace_findings import with_namespace_findings
from bot.pipeline.outcome import WorkloadOutcome, in_inventory_order, skipped_outcome
from bot.pipeline.podlevel import resize_notes, within_pod
from bot.pipeline.timings import PlanTimings
from bot.recommend.changes import field_changes
from bot.recommend.engine import recommend
from bot.recommend.errors import RecommendError
from bot.recommend.inputs import AfterRevert, EmergencyState, build_input
from bot.report.build import chart_candidates, summarize_history
from bot.report.proposal import Prices
from bot.settings import RepositorySettings
from bot.worker_pool import OrderedPool, usable_cores

__all__ = [
    "ChangeSetEdit",
    "RepositoryOutcome",
    "WorkloadOutcome",
    "decide_workload",
    "history_requests",
    "repository_outcome",
]

log = logging.getLogger("bot.pipeline")

IN_FLIGHT_PER_PROCESS = 8
"""Workloads handed to each worker process ahead of its results: enough that the workers keep
busy while this process waits for the next part of the history, few enough that the inputs
held for them stay a small part of the memory (about 1.6 MB each at 3 containers × 14 days:
the containers of a pod share their time axes, ``bot.metrics.assemble``)."""


# --------------------------------------------------------------------------- results


@dataclass(frozen=True, slots=True)
class ChangeSetEdit:
    """One change set as decided, and the one edit of its changes against the checkout."""

    change_set: ChangeSet
    edit: EditResult


@dataclass(frozen=True, slots=True)
class RepositoryOutcome:
    """Everything ``plan`` shows for one checkout."""

    root: Path
    settings: RepositorySettings
    """The checkout's effective settings (``bot.settings``), resolved once."""
    discovery: Discovery
    """What the checkout declares (``.inventory``) and the index its edits are planned with."""
    outcomes: tuple[WorkloadOutcome, ...]
    edits: tuple[ChangeSetEdit, ...] = ()
    """The change sets, in order of first appearance, each edited once (``repository_outcome``'s
    ``grouping``; ``repository``: one set holding every change)."""
    window: tuple[float, float] = (0.0, 0.0)
    errors: tuple[str, ...] = ()
    prices: Prices = field(default_factory=Prices)
    """The prices of the replays' monthly cost (the effective ``pull_requests.cost``)."""

    @property
    def config(self) -> RepoConfig:
        """The checkout's opt-in file as read."""
        return self.settings.config

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


def history_requests(inventory: Inventory, settings: RepositorySettings) -> list[HistoryRequest]:
    """One request per workload proposed for, with its environment's Prometheus selector (the
    one its deployment implies or the opt-in file sets, ``Inventory.deployments``)."""
    out = []
    for w in inventory.workloads:
        if w.ref in inventory.not_proposed:
            continue
        deployment = inventory.deployment(w.ref.environment)
        selector = (
            dict(deployment.selector)
            if deployment is not None
            else settings.selector(w.ref.environment)
        )
        out.append(
            HistoryRequest(
                ref=w.ref,
                containers=tuple(c.name for c in w.containers if not c.init),
                selector=selector,
                hpa=w.hpa.name if w.hpa is not None and w.hpa.keda is not None else None,
                labels=w.labels,
            )
        )
    return out


def decide_workload(
    declared: DeclaredWorkload,
    fetched: FetchResult,
    settings: RepositorySettings,
    *,
    now_s: float,
    memory: WorkloadMemory | None = None,
    charts: bool = True,
) -> WorkloadOutcome:
    """Recommend for one workload and keep the changes that pass thresholds and policy.

    ``settings`` resolves the workload's settings once (``bot.settings``): skipped when the
    repository ignores it or a Tortoise manages it, else its recommend settings, container
    policies and allocation bounds go to the engine; an environment whose ``update_mode`` is
    ``off`` has its changes shown, never edited.

    The outcome keeps what the reports need of the history (``summarize_history``: window,
    quality notes, OOM kills and, with ``charts``, the week usage a pull request may chart),
    never the history itself. ``charts`` False (``plan``, ``explain``: no pull request is
    built) skips the week usage.

    ``memory`` is what the bot's merged pull requests tell about the workload
    (``bot.forge.previous``): when each HPA target last changed (Tortoise's +5 points per
    24 h), the emergency phase the last merged proposal left and, when that was a revert, the
    values that regressed (rule ``after_revert.floor``, bounded by
    ``verify.after_revert_margin``; none with ``verify.enabled`` false). None (``plan`` without
    GitHub): nothing known, every target free to move, phase ``normal``, no revert.
    """
    ref = declared.ref
    resolved = settings.for_workload(declared)
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
    reverted = memory.reverted if memory is not None and settings.verify.enabled else None
    after_revert = None
    if reverted is not None:  # rule after_revert.floor
        margin = settings.verify.after_revert_margin
        after_revert = AfterRevert(reverted.revert, reverted.reverted, reverted.values, margin)

    def run(containers: Mapping[str, ContainerSettings]) -> Recommendation:
        engine_input = build_input(
            declared,
            history,
            containers=containers,
            emergency=emergency,
            after_revert=after_revert,
            target_changed_s=dict(memory.target_changed_s) if memory else {},
            excluded_intervals_s=history.crash_loops_s,
            kubernetes_version=settings.environment(ref.environment).kubernetes_version.value,
        )
        return recommend(engine_input, resolved.recommend, now_s=now_s)

    try:  # a VPA beside the bot, then the pod's own resources (coexist.py, podlevel.py)
        managed = coexisting_containers(declared, resolved.containers)
        recommendation = coexisting(declared, within_pod(declared, managed, run))
    except RecommendError as exc:
        summary = summarize_history(history)
        return WorkloadOutcome(declared, "error", (f"recommendation: {exc}",), summary=summary)
    changes = field_changes(recommendation)
    resized = resize_notes(declared, changes)
    if resized:
        recommendation = replace(recommendation, notes=(*recommendation.notes, *resized))
    if changes and resolved.update_mode == "off":
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
        severity="finding",  # the engine's errors are about what the repository declares
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
    settings: RepositorySettings,
    *,
    now_s: float,
    memory: WorkloadMemory | None,
    charts: bool,
) -> tuple[WorkloadOutcome, float]:
    """``decide_workload`` and the CPU seconds its thread spent on it (the engine with its
    replay, wherever the pool runs it: ``PlanTimings``); a ``ConfigError`` (a bad quantity, at
    its file and line) fails the repository, any other exception only this workload (status
    ``error``, the others still decided). Called in a worker process with ``run.processes``
    above 1 (``bot.worker_pool``)."""
    began = time.thread_time()
    try:
        outcome = decide_workload(
            declared, fetched, settings, now_s=now_s, memory=memory, charts=charts
        )
    except ConfigError:
        raise
    except Exception as exc:
        log.error("workload %s failed", declared.ref, exc_info=exc)
        outcome = WorkloadOutcome(declared, "error", (failure_message(exc),))
    return outcome, time.thread_time() - began


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
            why = [m for f in outcome.declared.files for m in own.get(f, [])] or [
                m for ms in own.values() for m in ms if f": {outcome.ref}: " in m
            ]
            out.append(
                replace(
                    outcome,
                    status="error",
                    reasons=("edit refused, nothing written", *why),
                    changes=(),
                    severity="finding",
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


def selected_inventory(inventory: Inventory, selected: Callable[[WorkloadRef], bool]) -> Inventory:
    """``inventory`` with only the workloads ``selected`` accepts (the command line's
    ``--namespace``, ``--workload``, ``--environment``)."""
    return replace(
        inventory,
        workloads=tuple(w for w in inventory.workloads if selected(w.ref)),
        skipped=tuple(s for s in inventory.skipped if selected(s.ref)),
    )


def repository_outcome(
    root: Path,
    source: HistorySource,
    settings: BotSettings,
    *,
    now_s: float,
    write: bool = False,
    repository: RepositorySettings | None = None,
    memory: Mapping[str, WorkloadMemory] | None = None,
    on_workload: Callable[[WorkloadRef], None] | None = None,
    budget: Budget | None = None,
    charts: bool = True,
    grouping: Grouping = "repository",
    selected: Callable[[WorkloadRef], bool] | None = None,
) -> RepositoryOutcome:
    """Plan one checkout: every step up to the edit; ``write`` applies the edit to the tree.

    History streams (``stream_history``): each namespace group is recommended as soon as it
    is fetched, while Prometheus answers the next groups' queries, and its samples are
    dropped once recommended (each outcome keeps a ``HistorySummary``), so memory holds the
    groups in flight, not the repository's whole history. Outcomes are in inventory order.

    ``repository`` is the checkout's settings, resolved once (``serve`` resolves them before
    it plans); None: read from the checkout's opt-in file over ``settings``.

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
    ``write`` may apply. ``selected`` (the command line's ``--namespace``, ``--workload``,
    ``--environment``): only the workloads it accepts are fetched, recommended and edited.

    Raises ``ConfigError`` for a bad opt-in file and ``MetricsError`` when Prometheus is down:
    both fail the repository as a whole; ``RepositoryTimeoutError`` when the budget runs out.
    """
    if repository is None:
        repository = RepositorySettings.of_checkout(root, load_repo_config(root), settings)
    config = repository.config
    timings = PlanTimings()
    discovery = discover(root, config, check=budget.check if budget is not None else None)
    timings.discovered()
    inventory = discovery.inventory
    if selected is not None:
        inventory = selected_inventory(inventory, selected)
    problems = repository.problems()
    if problems:
        raise ConfigError(problems)
    window_s = settings.prometheus.window_days * SECONDS_PER_DAY
    start_s, end_s = now_s - window_s, now_s
    requests = history_requests(inventory, repository)
    waiting: dict[WorkloadRef, list[int]] = defaultdict(list)
    decided: dict[int, WorkloadOutcome] = {}
    for index, w in enumerate(inventory.workloads):
        reason = inventory.not_proposed.get(w.ref)
        if reason is not None:
            decided[index] = WorkloadOutcome(w, "skipped", (f"not proposed for: {reason}",))
        else:
            waiting[w.ref].append(index)

    def done(index: int, timed: tuple[WorkloadOutcome, float]) -> None:
        decided[index] = timed[0]
        timings.engine_cpu_s += timed[1]
        if on_workload is not None:
            on_workload(timed[0].ref)

    def lost(index: int, exc: Exception) -> tuple[WorkloadOutcome, float]:
        log.error("workload %s failed", inventory.workloads[index].ref, exc_info=exc)
        return WorkloadOutcome(inventory.workloads[index], "error", (failure_message(exc),)), 0.0

    processes = settings.run.processes_for(len(inventory.workloads), usable_cores())
    pool = OrderedPool[tuple[WorkloadOutcome, float]](
        processes, done=done, lost=lost, in_flight=IN_FLIGHT_PER_PROCESS * processes
    )

    def decide(indices: Iterable[int], fetched: FetchResult) -> None:
        for index in sorted(indices):
            w = inventory.workloads[index]
            pool.submit(
                index,
                _decide_contained,
                w,
                _only(fetched, w.ref) if pool.processes > 1 else fetched,
                repository,
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
            pool.start()
            for part in timings.waited(parts):
                refs = [*part.errors, *part.histories]
                decide([i for ref in refs for i in waiting.pop(ref, ())], part)
                del part  # its histories go now, not when the next part is in
            decide([i for indices in waiting.values() for i in indices], FetchResult())
            pool.finish()
    except MetricsError as exc:
        if budget is not None:
            budget.check("reading its history", cause=exc)
        raise
    outcomes = with_namespace_findings(
        [decided[i] for i in range(len(inventory.workloads))],
        cost_prices(repository.pull_requests.cost),
    )
    timings.recommended()
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
    timings.edited(root, len(outcomes))
    return RepositoryOutcome(
        root=root,
        settings=repository,
        discovery=discovery,
        outcomes=in_inventory_order(
            (*_mark_failed_edits(outcomes, edits), *map(skipped_outcome, inventory.skipped))
        ),
        edits=edits,
        window=(start_s, end_s),
        errors=tuple(f"{e.file}:{e.line}: {e.message}" for e in inventory.errors),
        prices=cost_prices(repository.pull_requests.cost),
    )


def cost_prices(cost: CostConfig) -> Prices:
    """The prices of the cost figures (``bot.report``) from the effective ``pull_requests.cost``."""
    return Prices(
        cost.cpu_core_month, cost.memory_gib_month, cost.currency, dict(cost.extended_resources)
    )
