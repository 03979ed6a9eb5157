"""The two hindsight oracles every candidate's requested CPU is compared with.

Both know the scored days of the run under the current values (``current``: the run simulated
without a break, ``from_step`` its first scored sample); neither could be known at the split.

- **budget-matched** (``budget_matched``, a candidate row of its own): per container the least
  static CPU request whose scored container-minutes over request stay within the budget the
  gate allows by default, ``recommend.replay.max_over_request`` (``budget(settings)`` of the
  default settings, whatever ``--set`` changes for tortoise-bot): with per-pod usage ``u`` of ``N`` container-minutes, the least sample value
  ``r`` with ``#(u > r) ≤ ⌊budget · N⌋`` (for 1 %, the p99 of per-pod usage). Memory: the scored
  peak working set as the request, limits raised to it where below. For an HPA'd service the
  replicas depend on the requests and targets, so a grid is re-simulated: each HPA metric's
  capacity per pod (``request × target``, what sets the replicas) scaled by each of
  ``HPA_CAPACITY_FACTORS``; at each capacity the requests are the budget quantiles of the usage
  it gives and the targets ``capacity / request`` (whole percent); kept: the least core-hours
  among the grid points whose over-request share is within the budget and whose shortfall
  minutes are no more than the current values' (none qualifying: the least over-request share).
- **risk-matched** (``risk_matched``, a ratio per candidate): the least requested core-hours
  with the same *pooled* CPU over-request share ``s`` as the candidate over the services of the
  run. Per container ``c`` (scored usage sorted in descending order ``u_c[k]``, container-hours
  ``H_c``, ``m`` minutes a sample) and a price ``λ`` per over-request minute, the request
  ``R_c(λ) = u_c[k*]`` with ``k* = argmin_k H_c · u_c[k] + λ · m · k`` (``k`` minutes left
  above it); ``λ`` is bisected until ``Σ_c k*_c / Σ_c N_c`` reaches ``s``. The cost is
  ``Σ_c H_c · R_c``, with the replicas the current values ran (an HPA'd service's usage per pod
  as its current HPA gave it).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from benchmarks.quality.scores import HOUR_S, score
from bot.config.recommend import RecommendSettings
from bot.model import FloatArray
from bot.sim.cluster import SimulatedService
from bot.sim.spec import ContainerSpec, HpaMetric, ServiceSpec

DEFAULT_BUDGET = 0.01
"""The over-request budget when ``recommend.replay.max_over_request`` is not a setting."""

HPA_CAPACITY_FACTORS = tuple(round(0.4 * 4 ** (k / 8), 3) for k in range(9))
"""Factors on an HPA metric's capacity per pod tried by the budget-matched oracle (0.4–1.6)."""

BISECTION_STEPS = 48
"""Bisections of the price ``λ`` (log scale) of the risk-matched oracle."""


def budget(settings: RecommendSettings) -> float:
    """The share of container-minutes over the CPU request the replay gate allows."""
    return float(getattr(settings.replay, "max_over_request", DEFAULT_BUDGET))


def budget_quantile(usage: FloatArray, share: float) -> float:
    """The least sample value ``r`` with ``#(usage > r) ≤ ⌊share · N⌋``."""
    ordered = np.sort(usage)
    allowed = min(len(ordered) - 1, math.floor(share * len(ordered)))
    return float(ordered[len(ordered) - 1 - allowed])


def scored_usage(sim: SimulatedService, from_step: int) -> dict[str, FloatArray]:
    """Per container, per-pod CPU usage of every scored sample, concatenated over pods."""
    parts: dict[str, list[FloatArray]] = {c.name: [] for c in sim.spec.containers}
    for pod in sim.pods:
        skip = max(0, from_step - pod.start)
        for run in pod.containers:
            parts[run.name].append(run.cpu_cores[skip:])
    return {name: np.concatenate(p) if p else np.zeros(0) for name, p in parts.items()}


def scored_peak(sim: SimulatedService, from_step: int) -> dict[str, float]:
    """Per container, the peak working set of the scored samples, bytes."""
    out = {c.name: 0.0 for c in sim.spec.containers}
    for pod in sim.pods:
        skip = max(0, from_step - pod.start)
        for run in pod.containers:
            out[run.name] = max(out[run.name], float(run.memory_bytes[skip:].max(initial=0.0)))
    return out


def _static(
    service: ServiceSpec, sim: SimulatedService, from_step: int, share: float
) -> ServiceSpec:
    """``service`` with the budget quantiles of ``sim``'s scored usage and its peak working sets
    as requests, limits raised to them where below."""
    usage, peak = scored_usage(sim, from_step), scored_peak(sim, from_step)
    out: list[ContainerSpec] = []
    for c in service.containers:
        cpu = budget_quantile(usage[c.name], share) if len(usage[c.name]) else c.cpu_request_cores
        mem = math.ceil(peak[c.name]) or c.memory_request_bytes
        out.append(
            replace(
                c,
                cpu_request_cores=cpu,
                memory_request_bytes=mem,
                cpu_limit_cores=None if c.cpu_limit_cores is None else max(c.cpu_limit_cores, cpu),
                memory_limit_bytes=(
                    None if c.memory_limit_bytes is None else max(c.memory_limit_bytes, mem)
                ),
            )
        )
    return replace(service, containers=tuple(out))


def _capacity(service: ServiceSpec, metric: HpaMetric) -> float:
    """``Σ requests of the metric's containers × target / 100``: cores a pod serves at target."""
    names = [c.name for c in service.containers] if metric.container is None else [metric.container]
    cores = sum(c.cpu_request_cores for c in service.containers if c.name in names)
    return cores * metric.target_percent / 100.0


def _with_capacity(service: ServiceSpec, capacities: Sequence[float]) -> ServiceSpec:
    """``service`` with each HPA metric's target set so that its capacity is ``capacities``."""
    hpa = service.hpa
    assert hpa is not None
    metrics = hpa.targets(service.containers[0].name)
    targets = []
    for metric, capacity in zip(metrics, capacities, strict=True):
        per_pod = _capacity(service, replace(metric, target_percent=100))
        targets.append(replace(metric, target_percent=max(1, round(100 * capacity / per_pod))))
    return replace(service, hpa=replace(hpa, metrics=tuple(targets)))


@dataclass(frozen=True)
class OracleRun:
    """The budget-matched oracle's values and their run (scored from ``from_step``)."""

    values: ServiceSpec
    run: SimulatedService


def budget_matched(
    service: ServiceSpec,
    current: SimulatedService,
    from_step: int,
    share: float,
    simulate: Callable[[ServiceSpec], SimulatedService],
    step_s: int,
) -> OracleRun:
    """The budget-matched oracle (module doc); ``simulate(values)`` runs the span with
    ``values`` from the split on."""
    if service.hpa is None:
        values = _static(service, current, from_step, share)
        return OracleRun(values, simulate(values))
    metrics = service.hpa.targets(service.containers[0].name)
    base = [_capacity(service, m) for m in metrics]
    limit = score(current, step_s, from_step).shortfall_minutes
    best: tuple[tuple[bool, float], OracleRun] | None = None
    for factor in HPA_CAPACITY_FACTORS:
        capacities = [factor * c for c in base]
        probe = _with_capacity(service, capacities)
        sized = _with_capacity(_static(probe, simulate(probe), from_step, share), capacities)
        run = simulate(sized)
        s = score(run, step_s, from_step)
        over = s.over_request_minutes / max(s.container_minutes, 1.0)
        ok = over <= share and s.shortfall_minutes <= limit
        rank = (not ok, s.core_hours if ok else over)
        if best is None or rank < best[0]:
            best = (rank, OracleRun(sized, run))
    assert best is not None
    return best[1]


@dataclass(frozen=True)
class Curve:
    """One container's scored usage under the current values, for the risk-matched oracle."""

    service: str
    usage_desc: FloatArray
    hours: float
    """Container-hours ``H_c``."""


def curves(runs: Mapping[str, SimulatedService], from_step: int, step_s: int) -> list[Curve]:
    """The containers of ``runs`` (service -> its current run) as risk curves."""
    out = []
    for name, sim in runs.items():
        for usage in scored_usage(sim, from_step).values():
            if len(usage):
                ordered = np.sort(usage)[::-1][: len(usage) // 2 + 1].copy()
                out.append(Curve(name, ordered, len(usage) * step_s / HOUR_S))
    return out


def _choice(curve: Curve, price_hours: float) -> int:
    """``k*``: minutes above the request that minimise ``H · u[k] + price · k``."""
    k = np.arange(len(curve.usage_desc))
    return int(np.argmin(curve.hours * curve.usage_desc + price_hours * k))


def risk_matched(found: Sequence[Curve], share: float, step_hours: float) -> dict[str, float]:
    """Per service, the core-hours of the least-cost requests whose pooled over-request share
    is ``share`` (module doc); ``step_hours``: hours a sample stands for (the price is per
    sample)."""
    if not found:
        return {}
    total = sum(c.hours for c in found) / step_hours  # samples

    def over(price: float) -> float:
        return sum(_choice(c, price) for c in found) / total

    low, high = 1e-12, max(c.hours * float(c.usage_desc[0]) for c in found) + 1.0
    for _ in range(BISECTION_STEPS):
        mid = math.sqrt(low * high)
        if over(mid) > share:
            low = mid
        else:
            high = mid
    out: dict[str, float] = {}
    for c in found:
        out[c.service] = out.get(c.service, 0.0) + c.hours * float(c.usage_desc[_choice(c, high)])
    return out
