"""The product as code.

For each repository: load config -> discover manifests -> fetch history -> recommend -> apply
thresholds and policy -> edit -> open/update pull request -> update dashboard.

Failures are isolated: a ``ConfigError``, ``MetricsError`` or ``ForgeError`` fails one
repository (the others still run); a workload whose history is missing, whose engine input is
incomplete or whose edit fails verification gets status ``error`` and nothing is written for it.
"""

from __future__ import annotations

import fnmatch
import logging
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from bot.config.bot import BotSettings
from bot.config.errors import ConfigError
from bot.config.recommend import RecommendSettings, resolve
from bot.config.repo import RepoConfig, WorkloadConfig, load_repo_config
from bot.forge.errors import ForgeError
from bot.manifests import apply_changes, discover
from bot.manifests.errors import ManifestError
from bot.metrics.errors import MetricsError
from bot.metrics.source import FetchResult, HistoryRequest, HistorySource
from bot.model import (
    DEFAULT_ENVIRONMENT,
    DeclaredWorkload,
    EditResult,
    FieldChange,
    Inventory,
    Policy,
    Recommendation,
    Resource,
    Status,
    WorkloadHistory,
    WorkloadRef,
)
from bot.recommend.changes import field_changes
from bot.recommend.engine import recommend
from bot.recommend.errors import RecommendError
from bot.recommend.inputs import EmergencyState, build_input

log = logging.getLogger("bot.pipeline")

SECONDS_PER_DAY = 86_400.0


# --------------------------------------------------------------------------- results


@dataclass(frozen=True, slots=True)
class WorkloadOutcome:
    """What the pipeline decided for one workload."""

    declared: DeclaredWorkload
    status: Status
    reasons: tuple[str, ...] = ()
    recommendation: Recommendation | None = None
    changes: tuple[FieldChange, ...] = ()
    history: WorkloadHistory | None = None

    @property
    def ref(self) -> WorkloadRef:
        return self.declared.ref


@dataclass(frozen=True, slots=True)
class RepositoryPlan:
    """Everything ``plan`` shows for one checkout."""

    root: Path
    config: RepoConfig
    inventory: Inventory
    outcomes: tuple[WorkloadOutcome, ...]
    edit: EditResult
    window: tuple[float, float] = (0.0, 0.0)
    errors: tuple[str, ...] = ()


# --------------------------------------------------------------------------- settings per workload


def _matches(rule: WorkloadConfig, ref: WorkloadRef) -> bool:
    parts = rule.match.split("/")
    names = {
        1: (ref.name,),
        2: (ref.namespace, ref.name),
        3: (ref.kind, ref.namespace, ref.name),
    }.get(len(parts))
    if names is None:
        return False
    if not all(fnmatch.fnmatchcase(n, p) for n, p in zip(names, parts, strict=True)):
        return False
    return rule.environment is None or fnmatch.fnmatchcase(ref.environment, rule.environment)


def workload_rules(config: RepoConfig, ref: WorkloadRef) -> list[WorkloadConfig]:
    """The ``workloads:`` entries that apply to ``ref``, in file order (later entries win)."""
    return [rule for rule in config.workloads if _matches(rule, ref)]


def container_policies(
    rules: Sequence[WorkloadConfig], containers: Iterable[str]
) -> dict[str, dict[Resource, Policy]]:
    """Per container and resource, the policy the rules set (absent = the engine's default)."""
    out: dict[str, dict[Resource, Policy]] = {}
    for name in containers:
        chosen: dict[Resource, Policy] = {}
        for rule in rules:
            for policy in (rule.policy, rule.containers.get(name)):
                if policy is None:
                    continue
                if policy.cpu is not None:
                    chosen["cpu"] = policy.cpu
                if policy.memory is not None:
                    chosen["memory"] = policy.memory
        out[name] = chosen
    return out


def workload_settings(
    base: RecommendSettings, config: RepoConfig, rules: Sequence[WorkloadConfig]
) -> RecommendSettings:
    """Admin defaults <- repository ``recommend:`` <- each matching workload's ``recommend:``."""
    return resolve(base, config.recommend, *(rule.recommend for rule in rules))


# --------------------------------------------------------------------------- the steps


def history_requests(inventory: Inventory, config: RepoConfig) -> list[HistoryRequest]:
    """One request per workload, with its environment's Prometheus selector."""
    selectors: Mapping[str, Mapping[str, str]] = {
        env.name: env.selector for env in config.environments
    }
    return [
        HistoryRequest(
            ref=w.ref,
            containers=tuple(c.name for c in w.containers if not c.init),
            selector=dict(selectors.get(w.ref.environment, {})),
        )
        for w in inventory.workloads
    ]


def decide_workload(
    declared: DeclaredWorkload,
    fetched: FetchResult,
    config: RepoConfig,
    settings: RecommendSettings,
    *,
    now_s: float,
) -> WorkloadOutcome:
    """Recommend for one workload and keep the changes that pass thresholds and policy."""
    ref = declared.ref
    rules = workload_rules(config, ref)
    if any(rule.ignore for rule in rules):
        return WorkloadOutcome(declared, "skipped", ("ignored by the repository config",))
    if declared.managed_by_tortoise:
        return WorkloadOutcome(
            declared,
            "skipped",
            ("a Tortoise object in the repository manages this workload; the two would fight",),
        )
    error = fetched.errors.get(ref)
    if error is not None:
        return WorkloadOutcome(declared, "error", (f"metrics: {error}",))
    history = fetched.histories.get(ref)
    if history is None:
        return WorkloadOutcome(declared, "error", ("metrics: no history was returned",))
    resolved = workload_settings(settings, config, rules)
    policies = container_policies(rules, (c.name for c in declared.containers))
    emergency = EmergencyState(requested=any(rule.emergency for rule in rules))
    engine_input = build_input(declared, history, policies=policies, emergency=emergency)
    try:
        recommendation = recommend(engine_input, resolved, now_s=now_s)
    except RecommendError as exc:
        return WorkloadOutcome(declared, "error", (f"recommendation: {exc}",), history=history)
    changes = field_changes(recommendation)
    return WorkloadOutcome(
        declared,
        recommendation.status,
        recommendation.reasons,
        recommendation,
        changes,
        history,
    )


def _mark_failed_edits(
    outcomes: Sequence[WorkloadOutcome], edit: EditResult
) -> tuple[WorkloadOutcome, ...]:
    failed = set(edit.failed)
    messages: dict[str, list[str]] = defaultdict(list)
    for err in edit.errors:
        messages[err.file].append(f"{err.file}:{err.line}: {err.message}")
    out = []
    for outcome in outcomes:
        if outcome.ref in failed:
            why = [m for f in outcome.declared.files for m in messages.get(f, [])]
            out.append(
                replace(
                    outcome,
                    status="error",
                    reasons=("edit refused, nothing written", *why),
                    changes=(),
                )
            )
        else:
            out.append(outcome)
    return tuple(out)


def plan_repository(
    root: Path,
    source: HistorySource,
    settings: BotSettings,
    *,
    now_s: float,
    write: bool = False,
    config: RepoConfig | None = None,
) -> RepositoryPlan:
    """Plan one checkout: every step up to the edit; ``write`` applies the edit to the tree.

    Raises ``ConfigError`` for a bad opt-in file and ``MetricsError`` when Prometheus is down:
    both fail the repository as a whole.
    """
    config = config if config is not None else load_repo_config(root)
    inventory = discover(root, config)
    window_s = settings.prometheus.window_days * SECONDS_PER_DAY
    start_s, end_s = now_s - window_s, now_s
    fetched = source.fetch(history_requests(inventory, config), start_s=start_s, end_s=end_s)
    outcomes = [
        decide_workload(w, fetched, config, settings.recommend, now_s=now_s)
        for w in inventory.workloads
    ]
    changes = [c for o in outcomes for c in o.changes]
    edit = apply_changes(root, inventory, changes, config, write=write)
    return RepositoryPlan(
        root=root,
        config=config,
        inventory=inventory,
        outcomes=_mark_failed_edits(outcomes, edit),
        edit=edit,
        window=(start_s, end_s),
        errors=tuple(f"{e.file}:{e.line}: {e.message}" for e in inventory.errors),
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


@dataclass(frozen=True, slots=True)
class RunSummary:
    reports: tuple[RepositoryReport, ...]

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.reports)


def run_repositories(
    repositories: Sequence[str],
    serve_one: Callable[[str], RepositoryReport],
) -> RunSummary:
    """Serve each repository; a failure is recorded and the next repository still runs."""
    reports = []
    for name in repositories:
        try:
            reports.append(serve_one(name))
        except (ConfigError, MetricsError, ManifestError, ForgeError) as exc:
            log.warning("repository %s failed: %s", name, exc)
            reports.append(RepositoryReport(name, ok=False, message=str(exc)))
    return RunSummary(tuple(reports))


__all__ = [
    "DEFAULT_ENVIRONMENT",
    "RepositoryPlan",
    "RepositoryReport",
    "RunSummary",
    "WorkloadOutcome",
    "decide_workload",
    "plan_repository",
    "run_repositories",
]
