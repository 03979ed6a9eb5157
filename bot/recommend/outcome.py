"""What one workload's values did in a window of its recorded history: the observed side of
the verification of a merged proposal (``bot.recommend.verify``, ``docs/pull-requests.md``).

``window_figures`` reads a ``WorkloadHistory`` over ``[start_s, end_s)`` under the values that
ran then (``Sizing``) and, when ``hours`` is given, only at those hours of the week (the hours
both the window before the merge and the one after it have samples, ``common_hours``), so a
week-end is never compared with a Monday. The figures are the replay's (``bot.model
.ReplayFigures``) as observed: the share of a container's CPU samples above its request, the
share of its CFS periods throttled, its OOM kills and restarts, the mean replicas and the capacity-shortfall
minutes at maxReplicas, plus the load peaks that say whether the load stayed within range.

Pure: numpy on the arrays it is given, no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from bot.clock import hour_of_week
from bot.model import HOURS_PER_WEEK, POD_LEVEL, FloatArray, WorkloadHistory
from bot.verification import WindowFigures

HPA_TOLERANCE = 0.1
"""The HPA controller's tolerance (``--horizontal-pod-autoscaler-tolerance``): utilisation
counts as above the target only beyond target × (1 + this), as in the replay."""


@dataclass(frozen=True, slots=True)
class Sizing:
    """The values a window ran with: CPU requests per container (cores; absent: none), the
    HPA's maxReplicas and CPU targets per container (percent; ``POD_LEVEL`` for a pod-level
    target), None/empty without an HPA."""

    requests_cpu: Mapping[str, float] = field(default_factory=dict)
    max_replicas: int | None = None
    cpu_targets: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Throttling:
    """One container's CFS periods summed over its pods, per sample time: ``throttled`` and
    ``periods`` are the increases of ``container_cpu_cfs_throttled_periods_total`` and
    ``container_cpu_cfs_periods_total`` at ``t_s``."""

    t_s: FloatArray
    throttled: FloatArray
    periods: FloatArray


def _in(
    t_s: FloatArray, start_s: float, end_s: float, hours: np.ndarray | None, time_zone: str
) -> np.ndarray:
    """Mask of the times in ``[start_s, end_s)`` at one of ``hours`` (all hours when None)."""
    keep = (t_s >= start_s) & (t_s < end_s)
    if hours is not None and t_s.size:
        keep &= hours[hour_of_week(t_s, time_zone)]
    return keep


def common_hours(
    history: WorkloadHistory,
    before: tuple[float, float],
    after: tuple[float, float],
    time_zone: str = "UTC",
) -> np.ndarray:
    """The hours of the week (168 booleans, Sunday 00 first) at which both windows have CPU
    samples of the workload: the hours compared."""
    seen = []
    for start, end in (before, after):
        hours = np.zeros(HOURS_PER_WEEK, dtype=bool)
        for c in history.containers.values():
            t = c.cpu_t[(c.cpu_t >= start) & (c.cpu_t < end)]
            if t.size:
                hours[hour_of_week(t, time_zone)] = True
        seen.append(hours)
    out: np.ndarray = seen[0] & seen[1]
    return out


def _step_minutes(times: FloatArray) -> float:
    """The usual spacing of sorted, distinct sample times, in minutes (1 when unknown)."""
    if times.size < 2:
        return 1.0
    return float(np.median(np.diff(times))) / 60.0


def _shortfall(
    history: WorkloadHistory,
    sizing: Sizing,
    keep_cpu: Mapping[str, np.ndarray],
) -> float | None:
    """Minutes at maxReplicas with a CPU-target container's mean utilisation above its target
    beyond the tolerance; None without an HPA (maxReplicas unknown)."""
    if sizing.max_replicas is None:
        return None
    if history.replicas_t.size == 0:
        return 0.0
    worst: float = 0.0
    for name, target in sizing.cpu_targets.items():
        containers = (
            list(history.containers.values())
            if name == POD_LEVEL
            else [history.containers[name]]
            if name in history.containers
            else []
        )
        for c in containers:
            request = sizing.requests_cpu.get(c.name)
            if not request:
                continue
            t, cores = c.cpu_t[keep_cpu[c.name]], c.cpu_cores[keep_cpu[c.name]]
            if t.size == 0:
                continue
            times, index = np.unique(t, return_inverse=True)
            mean = np.bincount(index, weights=cores) / np.bincount(index)
            at = np.searchsorted(history.replicas_t, times, side="right") - 1
            replicas = np.where(at >= 0, history.replicas[np.clip(at, 0, None)], 0.0)
            short = (replicas >= sizing.max_replicas) & (
                mean / request * 100.0 > target * (1.0 + HPA_TOLERANCE)
            )
            worst = max(worst, float(short.sum()) * _step_minutes(times))
    return worst


def window_figures(
    history: WorkloadHistory,
    sizing: Sizing,
    start_s: float,
    end_s: float,
    *,
    hours: np.ndarray | None = None,
    time_zone: str = "UTC",
    throttling: Mapping[str, Throttling] | None = None,
) -> WindowFigures:
    """The figures of ``history`` over ``[start_s, end_s)`` (at ``hours`` only, when given)
    under ``sizing`` (see the module docstring)."""
    keep_cpu = {
        name: _in(c.cpu_t, start_s, end_s, hours, time_zone)
        for name, c in history.containers.items()
    }
    cpu_share: dict[str, float] = {}
    memory_peak: dict[str, float] = {}
    oom: dict[str, int] = {}
    restarts: dict[str, int] = {}
    all_t: list[FloatArray] = []
    all_cores: list[FloatArray] = []
    for name, c in history.containers.items():
        cores = c.cpu_cores[keep_cpu[name]]
        request = sizing.requests_cpu.get(name)
        if request and cores.size:
            cpu_share[name] = float(np.mean(cores > request))
        all_t.append(c.cpu_t[keep_cpu[name]])
        all_cores.append(cores)
        memory = c.mem_bytes[_in(c.mem_t, start_s, end_s, hours, time_zone)]
        if memory.size:
            memory_peak[name] = float(memory.max())
        kills = int(np.count_nonzero((c.oom_t >= start_s) & (c.oom_t < end_s)))
        if kills:
            oom[name] = kills
        restarted = int(np.count_nonzero((c.restart_t >= start_s) & (c.restart_t < end_s)))
        if restarted:
            restarts[name] = restarted
    throttle_share: dict[str, float] = {}
    for name, series in (throttling or {}).items():
        keep = _in(series.t_s, start_s, end_s, hours, time_zone)
        periods = float(series.periods[keep].sum())
        if periods > 0:
            throttle_share[name] = float(series.throttled[keep].sum()) / periods
    peak = 0.0
    if all_t and sum(t.size for t in all_t):
        _, index = np.unique(np.concatenate(all_t), return_inverse=True)
        peak = float(np.bincount(index, weights=np.concatenate(all_cores)).max())
    keep_replicas = _in(history.replicas_t, start_s, end_s, hours, time_zone)
    replicas = history.replicas[keep_replicas]
    return WindowFigures(
        days=(end_s - start_s) / 86_400.0,
        cpu_share=cpu_share,
        throttle_share=throttle_share,
        oom_kills=oom,
        restarts=restarts,
        replicas_mean=float(replicas.mean()) if replicas.size else None,
        shortfall_minutes=_shortfall(history, sizing, keep_cpu),
        cpu_peak_cores=peak,
        memory_peak_bytes=memory_peak,
    )


__all__ = ["Sizing", "Throttling", "common_hours", "window_figures"]
