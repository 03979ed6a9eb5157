"""The candidates: sets of declared values (requests, limits, HPA min/max/targets) per service.

- ``tortoise_rounds``: the product's own decision (``bot.pipeline.plan.decide_workload`` with the
  repository and bot defaults, as ``plan`` and ``run`` call it), merged once (``one_pr``) and
  merged until it proposes nothing (``merged``, at most ``MAX_ROUNDS``), the training window
  re-simulated under the merged values before each decision; each merge is told to the next
  decision as a merged pull request 24 h old (``WorkloadMemory``), so Tortoise's +5 points per
  24 h target rule never waits.
- ``vpa_defaults``: the VPA recommender's target (upstream P90 × 1.15 of the decaying CPU
  histogram and of daily memory peaks, with the pod minimums, as the engine computes it to the
  upstream vectors) as the request, limits in proportion (``getProportionalResourceLimit``).
  Resources an HPA scales on keep their values: the VPA must not act on them.
- ``krr_simple``: robusta-dev/krr ``simple`` with its defaults: CPU request the largest per-pod
  p95, no CPU limit; memory request and limit the peak × 1.15; with ``allow_hpa`` false a
  resource an HPA scales on keeps its values.
The hindsight oracles are in ``benchmarks.quality.oracles``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

import numpy as np

from bot.config.bot import BotSettings
from bot.config.recommend import RecommendSettings
from bot.config.repo import RepoConfig
from bot.forge.previous import WorkloadMemory
from bot.metrics.source import FetchResult
from bot.model import POD_LEVEL, FieldChange, Recommendation, WorkloadHistory
from bot.pipeline.plan import decide_workload
from bot.recommend.changes import next_emergency_phase
from bot.recommend.vpa.limits import proportional_limit
from bot.settings import RepositorySettings
from bot.sim.spec import ServiceSpec
from bot.sim.values import apply_changes, declared_workload, service_ref

MAX_ROUNDS = 6
"""Most pull requests merged in a row; still proposing after them counts ``MAX_ROUNDS + 1``."""

KRR_CPU_PERCENTILE = 95.0
"""KRR ``simple``: ``cpu_percentile`` default."""

KRR_MEMORY_BUFFER = 0.15
"""KRR ``simple``: ``memory_buffer_percentage`` default (15 %)."""


@dataclass(frozen=True)
class Decision:
    """The product's proposal on one training history."""

    changes: tuple[FieldChange, ...]
    recommendation: Recommendation | None


def decide(
    service: ServiceSpec,
    history: WorkloadHistory,
    settings: RecommendSettings,
    memory: WorkloadMemory | None = None,
) -> Decision:
    """``bot.pipeline.plan.decide_workload`` for ``service`` at the end of ``history``."""
    ref = service_ref(service)
    outcome = decide_workload(
        declared_workload(service),
        FetchResult(histories={ref: history}),
        RepositorySettings(RepoConfig(), BotSettings(recommend=settings)),
        now_s=history.end_s,
        memory=memory,
    )
    return Decision(outcome.changes, outcome.recommendation)


def merged_memory(
    before: WorkloadMemory | None,
    changes: Iterable[FieldChange],
    rec: Recommendation | None,
    *,
    merged_at_s: float,
) -> WorkloadMemory:
    """What a merged pull request of ``changes`` tells the next run (``bot.forge.previous``)."""
    changed = dict(before.target_changed_s) if before else {}
    for change in changes:
        resource = change.field.resource
        if change.field.is_hpa_target and resource is not None:
            changed[(change.container or POD_LEVEL, resource)] = merged_at_s
    phase = next_emergency_phase(rec) if rec is not None else "normal"
    return WorkloadMemory(target_changed_s=changed, emergency_phase=phase)


@dataclass(frozen=True)
class TortoiseRun:
    """The product on one service: values after one pull request and after merging until it
    proposes nothing."""

    one_pr: ServiceSpec
    merged: ServiceSpec
    rounds: int
    """Pull requests merged until no proposal; ``MAX_ROUNDS + 1``: still proposing after
    ``MAX_ROUNDS``."""
    first: Decision
    proposals: tuple[tuple[FieldChange, ...], ...] = ()
    """The changes of each decision that proposed some, in order (the last one not merged
    when the loop gave up)."""


def tortoise_rounds(
    service: ServiceSpec,
    train: Callable[[ServiceSpec], WorkloadHistory],
    settings: RecommendSettings,
) -> TortoiseRun:
    """Merge the product's proposals until it proposes nothing (module doc); ``train(values)``
    is the training history under ``values``."""
    interval = settings.admin.hpa_target_utilization_update_interval_s
    values, memory, rounds = service, None, 0
    first: Decision | None = None
    one_pr: ServiceSpec | None = None
    proposals: list[tuple[FieldChange, ...]] = []
    while True:
        history = train(values)
        decision = decide(values, history, settings, memory)
        first = first or decision
        if not decision.changes:
            break
        proposals.append(decision.changes)
        if rounds == MAX_ROUNDS:
            rounds += 1
            break
        values = apply_changes(values, decision.changes)
        one_pr = one_pr or values
        rounds += 1
        memory = merged_memory(
            memory, decision.changes, decision.recommendation, merged_at_s=history.end_s - interval
        )
    return TortoiseRun(one_pr or service, values, rounds, first, tuple(proposals))


def _horizontal(service: ServiceSpec) -> bool:
    """Whether an HPA scales ``service`` on CPU (the simulated HPA scales on nothing else)."""
    return service.hpa is not None


def vpa_defaults(service: ServiceSpec, rec: Recommendation | None) -> ServiceSpec:
    """The VPA recommender's targets as requests, limits in proportion (module doc)."""
    estimates = {c.name: c for c in rec.containers} if rec is not None else {}
    out = []
    for spec in service.containers:
        c, found = spec, estimates.get(spec.name)
        cpu = found.cpu.vpa if found else None
        mem = found.memory.vpa if found else None
        if cpu is not None and not _horizontal(service):
            limit = proportional_limit(c.cpu_limit_cores, c.cpu_request_cores, cpu.target, "cpu")
            c = replace(c, cpu_request_cores=cpu.target, cpu_limit_cores=limit.value)
        if mem is not None:
            limit = proportional_limit(
                c.memory_limit_bytes, c.memory_request_bytes, mem.target, "memory"
            )
            c = replace(
                c,
                memory_request_bytes=math.ceil(mem.target),
                memory_limit_bytes=None if limit.value is None else math.ceil(limit.value),
            )
        out.append(c)
    return replace(service, containers=tuple(out))


def krr_simple(service: ServiceSpec, history: WorkloadHistory) -> ServiceSpec:
    """KRR's ``simple`` strategy on the training history (module doc)."""
    out = []
    for spec in service.containers:
        c, h = spec, history.containers[spec.name]
        if not _horizontal(service) and len(h.cpu_cores):
            p95 = max(
                float(np.percentile(h.cpu_cores[h.cpu_pod == pod], KRR_CPU_PERCENTILE))
                for pod in np.unique(h.cpu_pod)
            )
            c = replace(c, cpu_request_cores=p95, cpu_limit_cores=None)
        if len(h.mem_bytes):
            memory = math.ceil(float(h.mem_bytes.max()) * (1 + KRR_MEMORY_BUFFER))
            c = replace(c, memory_request_bytes=memory, memory_limit_bytes=memory)
        out.append(c)
    return replace(service, containers=tuple(out))
