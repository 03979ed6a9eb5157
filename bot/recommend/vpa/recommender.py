"""The VPA recommender for one container, wired once (``logic/recommender.go``).

``recommend_container`` is the whole chain; nothing else drives ``vpa.samples``, ``vpa.peaks``,
``vpa.replay``, ``vpa.counters`` and ``vpa.usage``:

1. samples: the window's CPU samples the VPA accepts (``accepted``, strict) and its memory
   samples; none of either, or less than ``min_history_s`` of CPU history, is too little data;
2. memory peaks: one per pod and ``memory_aggregation_interval_s``, OOM kills as bumps of
   ``max(request × oom_bump_up_ratio, request + oom_min_bump_up_bytes)``
   (``model/aggregate_container_state.go``); a kill with no reported request uses the
   manifest's;
3. histograms replayed on the grid: CPU weighted by usage (``MIN_SAMPLE_WEIGHT`` minimum),
   memory peaks weighted 1, each decaying with its half-life (``model/container.go``);
4. confidence from the CPU sample counts (``confidence_per_minute``: one sample a minute);
5. the estimator chain per resource (``estimator.estimate``: percentile, margin, confidence,
   per-pod minimum, capping) and the observed usage percentiles.

Series that are clean, grouped by pod and in time order (the usual case) skip the masks and
copies and take the shortcuts of those modules, with the same results.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bot.config.recommend import VpaSettings
from bot.model import (
    RESOURCES,
    SECONDS_PER_HOUR,
    ContainerHistory,
    FloatArray,
    IntArray,
    Resource,
    ResourceValues,
    Usage,
)
from bot.recommend.vpa.constants import MIN_SAMPLE_WEIGHT
from bot.recommend.vpa.counters import CpuCounters, confidence, cpu_counters
from bot.recommend.vpa.estimator import (
    EstimateRows,
    confidence_factors,
    estimate,
    pod_minimum_amount,
)
from bot.recommend.vpa.histogram import CPU_OPTIONS, MEMORY_OPTIONS
from bot.recommend.vpa.peaks import memory_peaks
from bot.recommend.vpa.replay import ReplayedHistogram, ReplayGrid, replay_rows
from bot.recommend.vpa.samples import SampleOrder, accepted, sample_order, sample_step_s
from bot.recommend.vpa.usage import usage_from_counts
from bot.recommend.window import Window, select

__all__ = [
    "ContainerVpa",
    "CpuSamples",
    "MemorySamples",
    "ReplayGrid",
    "TooLittleData",
    "recommend_container",
]


@dataclass(frozen=True, slots=True)
class TooLittleData:
    """Why a container has no estimate yet (no samples, too short a history)."""

    reason: str


@dataclass(frozen=True, slots=True, eq=False)
class MemorySamples:
    """The window's working-set samples and OOM kills of one container (unix s, bytes)."""

    times_s: FloatArray
    pods: IntArray
    used_bytes: FloatArray
    oom_times_s: FloatArray
    oom_pods: IntArray


@dataclass(frozen=True, slots=True, eq=False)
class CpuSamples:
    """The window's CPU samples of one container that the VPA accepts (unix s, cores)."""

    times_s: FloatArray
    pods: IntArray
    cores: FloatArray


@dataclass(frozen=True, slots=True, eq=False)
class ContainerVpa:
    """What the VPA recommender says of one container, per resource."""

    rows: dict[Resource, EstimateRows]
    """Target, bounds and uncapped target at the end of each replay step."""
    usage: dict[Resource, Usage | None]
    """Observed usage percentiles (CPU samples, finite working-set samples)."""
    pod_minimum: dict[Resource, float]
    """The per-pod minimum of this container (cores or bytes)."""
    oom_bump_bytes: float
    """The largest OOM bump in the window (0 without OOM kills)."""
    memory: MemorySamples
    cpu: CpuSamples


def recommend_container(
    history: ContainerHistory,
    grid: ReplayGrid,
    settings: VpaSettings,
    window: Window,
    *,
    name: str,
    n_containers: int,
    min_history_s: float,
    declared_memory_bytes: int | None,
    min_allowed: ResourceValues,
    max_allowed: ResourceValues,
) -> ContainerVpa | TooLittleData:
    """The VPA estimates of container ``name`` at the end of each replay step of ``grid``, or
    why there is too little data (see the module doc for the chain)."""
    ch = history
    cpu_order = sample_order(ch.cpu_t, ch.cpu_pod, ch.cpu_cores, strict=True)
    if cpu_order.all_accepted and window.all_kept(ch.cpu_t, times_sorted=cpu_order.sorted):
        cpu_t, cpu_v, cpu_pods = ch.cpu_t, ch.cpu_cores, ch.cpu_pod
    else:
        keep = window.keep(ch.cpu_t)
        keep &= accepted(ch.cpu_t, ch.cpu_pod, ch.cpu_cores, strict=True)
        cpu_t, cpu_v, cpu_pods = select(keep, ch.cpu_t, ch.cpu_cores, ch.cpu_pod)
    if cpu_t.size == 0:
        return TooLittleData(f"no CPU samples for container {name}")
    span_s = float(cpu_t[-1] - cpu_t[0] if cpu_order.sorted else cpu_t.max() - cpu_t.min())
    if span_s < min_history_s:
        return TooLittleData(
            f"container {name}: {span_s / SECONDS_PER_HOUR:.1f} h of CPU history, "
            f"{min_history_s / SECONDS_PER_HOUR:g} h needed"
        )
    whole_order = sample_order(ch.mem_t, ch.mem_pod, ch.mem_bytes, strict=False)
    mem_order: SampleOrder | None = whole_order
    if window.all_kept(ch.mem_t, times_sorted=whole_order.sorted):
        mem_t, mem_pod, mem_used = ch.mem_t, ch.mem_pod, ch.mem_bytes
    else:
        mem_order = None  # of the whole series, not of the window's samples
        mem_t, mem_pod, mem_used = select(window.keep(ch.mem_t), ch.mem_t, ch.mem_pod, ch.mem_bytes)
    oom_t, oom_pod, oom_req = select(
        window.keep(ch.oom_t), ch.oom_t, ch.oom_pod, ch.oom_request_bytes
    )
    declared = declared_memory_bytes
    if oom_req.size and declared and not bool(np.isfinite(oom_req).all()):
        # A kill whose request kube-state-metrics did not report: the manifest's request.
        oom_req = np.where(np.isfinite(oom_req), oom_req, float(declared))
    peaks = memory_peaks(
        mem_t,
        mem_pod,
        mem_used,
        oom_times_s=oom_t,
        oom_pods=oom_pod,
        oom_request_bytes=oom_req,
        interval_s=settings.memory_aggregation_interval_s,
        oom_bump_up_ratio=settings.oom_bump_up_ratio,
        oom_min_bump_up_bytes=settings.oom_min_bump_up_bytes,
        order=mem_order,
    )
    if peaks.values.size == 0:
        return TooLittleData(f"no memory samples for container {name}")
    per_sample = 1.0
    if settings.confidence_per_minute:
        per_sample = max(1.0, sample_step_s(cpu_t, cpu_pods, one_pod=cpu_order.one_pod) / 60.0)
    cpu_rows, counters, cpu_usage = _cpu_replay(cpu_t, cpu_v, grid, settings, cpu_order.sorted)
    conf = confidence(counters, settings.confidence_interval_s, samples_per_sample=per_sample)
    factors = confidence_factors(conf)
    mem_rows = replay_rows(
        peaks.values,
        1.0,
        peaks.window_end_s,
        grid.bins(peaks.window_start_s),
        grid=grid,
        options=MEMORY_OPTIONS,
        half_life_s=settings.memory_half_life_s,
    )
    finite_mem = mem_used
    if mem_order is None or not mem_order.clean:
        finite_mem = select(np.isfinite(mem_used), mem_used)[0]
    rows: dict[Resource, EstimateRows] = {}
    for resource, histogram in (("cpu", cpu_rows), ("memory", mem_rows)):
        res: Resource = "cpu" if resource == "cpu" else "memory"
        rows[res] = estimate(
            histogram,
            conf,
            res,
            settings,
            n_containers=n_containers,
            min_allowed=min_allowed.get(res),
            max_allowed=max_allowed.get(res),
            factors=factors,
        )
    return ContainerVpa(
        rows=rows,
        usage={
            "cpu": cpu_usage,
            "memory": usage_from_counts(finite_mem, MEMORY_OPTIONS),
        },
        pod_minimum={res: pod_minimum_amount(res, settings, n_containers) for res in RESOURCES},
        oom_bump_bytes=float(peaks.oom_bumps.max()) if peaks.oom_bumps.size else 0.0,
        memory=MemorySamples(mem_t, mem_pod, mem_used, oom_t, oom_pod),
        cpu=CpuSamples(cpu_t, cpu_pods, cpu_v),
    )


CpuHistory = tuple[ReplayedHistogram, CpuCounters, Usage | None]
"""A container's replayed CPU histogram, its counters and its observed usage."""


def _cpu_replay(
    cpu_t: FloatArray, cpu_v: FloatArray, grid: ReplayGrid, settings: VpaSettings, in_order: bool
) -> CpuHistory:
    """The CPU histogram replayed on ``grid``, its counters and the observed usage; the
    samples' buckets are found once for the histogram and the usage. ``in_order``: the times
    never decrease (a subset of times in order is in order), so each replay step's bounds
    follow from a binary search."""
    bounds = grid.step_bounds(cpu_t) if in_order else None
    cpu_steps = None if bounds is not None else grid.bins(cpu_t)
    cpu_buckets = CPU_OPTIONS.find_buckets(cpu_v)
    counters = cpu_counters(cpu_t, cpu_steps, grid, bounds)
    rows = replay_rows(
        cpu_v,
        MIN_SAMPLE_WEIGHT,
        cpu_t,
        cpu_steps,
        grid=grid,
        options=CPU_OPTIONS,
        half_life_s=settings.cpu_half_life_s,
        buckets=cpu_buckets,
        bounds=bounds,
    )
    return rows, counters, usage_from_counts(cpu_v, CPU_OPTIONS, cpu_buckets)
