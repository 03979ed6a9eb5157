"""The CPU sample counters of each replay step and the confidence drawn from them
(``model/aggregate_container_state.go``: ``TotalSamplesCount``, ``FirstSampleStart``,
``LastSampleStart``; ``logic/estimator.go``: ``getConfidence``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from bot.model import FloatArray
from bot.recommend.vpa.replay import ReplayGrid


@dataclass(frozen=True, slots=True, eq=False)
class CpuCounters:
    """Per replay step: accepted CPU samples so far, first and last sample start (unix s)."""

    counts: FloatArray
    first_s: float
    last_s: FloatArray


def cpu_counters(
    times_s: FloatArray,
    step_index: np.ndarray | None,
    grid: ReplayGrid,
    bounds: np.ndarray | None = None,
) -> CpuCounters:
    """``TotalSamplesCount``, ``FirstSampleStart``, ``LastSampleStart`` after each step.

    With ``bounds`` (``ReplayGrid.step_bounds`` of times in order) the counts are the bounds and
    the latest start after a step is the time just before its bound; ``step_index`` None:
    ``grid.bins(times_s, bounds)``.
    """
    if bounds is not None and times_s.size:
        ends = bounds[1:]
        last = np.where(ends > 0, times_s[np.maximum(ends - 1, 0)], -np.inf)
        return CpuCounters(ends.astype(np.float64), float(times_s[0]), last)
    if step_index is None:
        step_index = grid.bins(times_s, bounds)
    counts = np.cumsum(np.bincount(step_index, minlength=grid.steps)).astype(np.float64)
    last = np.full(grid.steps, -np.inf)
    if step_index.size and bool(np.all(step_index[1:] >= step_index[:-1])):
        starts = np.flatnonzero(np.r_[True, step_index[1:] != step_index[:-1]])
        last[step_index[starts]] = np.maximum.reduceat(times_s, starts)
    else:
        np.maximum.at(last, step_index, times_s)
    last = np.maximum.accumulate(last)
    first = float(times_s.min()) if times_s.size else math.inf
    return CpuCounters(counts, first, last)


def confidence(
    counters: CpuCounters, interval_s: float, *, samples_per_sample: float = 1.0
) -> FloatArray:
    """``min((last - first)/interval, count/interval_in_minutes)`` (``logic/estimator.go``,
    ``getConfidence``); 0 without samples. Memory bounds use the same CPU-driven counters.

    ``samples_per_sample`` > 1 counts each sample as that many one-minute samples (VPA's
    metrics-server convention), for histories sampled more coarsely (Prometheus steps).
    """
    with np.errstate(invalid="ignore"):
        span = np.where(np.isfinite(counters.last_s), counters.last_s - counters.first_s, 0.0)
    by_time = span / interval_s
    by_count = counters.counts * samples_per_sample / (interval_s / 60.0)
    return np.where(counters.counts > 0, np.minimum(by_time, by_count), 0.0)
