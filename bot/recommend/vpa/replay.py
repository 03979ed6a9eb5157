"""Usage samples into VPA histograms, replayed on a time grid (``model/container.go``,
``model/aggregate_container_state.go``).

One pass per container and resource: every sample gets a bucket and a decayed weight, and one
``np.bincount`` over ``(replay step, bucket)`` gives the histogram increments of every step; a
cumulative sum over steps gives the histogram as the recommender held it at the end of each step.
The last row is the histogram "now"; the earlier rows let Tortoise's sticky maximum of the VPA
target (``pkg/tortoise/tortoise.go``, ``UpdateContainerRecommendationFromVPA``) be replayed.
No Python loop touches individual samples.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from bot.model import FloatArray
from bot.recommend.vpa.constants import GO_ZERO_TIME_UNIX_S
from bot.recommend.vpa.histogram import (
    DecayingHistogram,
    Histogram,
    HistogramOptions,
    decay_weights,
    final_reference_s,
    percentiles,
)


@dataclass(frozen=True, slots=True)
class ReplayGrid:
    """Replay steps ``[start_s + i·step_s, start_s + (i+1)·step_s)``, ``steps`` of them."""

    start_s: float
    step_s: float
    steps: int

    @classmethod
    def covering(cls, first_s: float, now_s: float, step_s: float) -> ReplayGrid:
        steps = max(1, math.ceil((now_s - first_s) / step_s))
        return cls(first_s, step_s, steps)

    def _index(self, times_s: FloatArray) -> FloatArray:
        idx = np.floor((times_s - self.start_s) * (1.0 / self.step_s))
        return np.clip(idx, 0, self.steps - 1)

    def bins(self, times_s: FloatArray, bounds: np.ndarray | None = None) -> np.ndarray:
        """Replay step of each time; from ``step_bounds(times_s)`` when given (same result)."""
        if bounds is not None:
            return np.repeat(np.arange(self.steps, dtype=np.intp), np.diff(bounds))
        return self._index(times_s).astype(np.intp)

    def step_bounds(self, times_s: FloatArray) -> np.ndarray | None:
        """For times in non-decreasing order: ``bounds[s]`` is the number of times in steps
        before ``s`` (``steps + 1`` positions), so step ``s`` holds ``times_s[bounds[s]:
        bounds[s + 1]]``; None when that cannot be shown.

        Candidate positions come from a binary search on the step edges, then the two times
        around each position are put through the very formula of ``bins``: the step of sorted
        times never decreases, so positions whose neighbours straddle the step are exact.
        """
        n = times_s.size
        if n == 0:
            return np.zeros(self.steps + 1, dtype=np.intp)
        s = np.arange(1, self.steps, dtype=np.intp)
        pos = np.searchsorted(times_s, self.start_s + self.step_s * s)
        below = self._index(times_s[np.maximum(pos - 1, 0)])
        above = self._index(times_s[np.minimum(pos, n - 1)])
        exact = ((pos == 0) | (below < s)) & ((pos == n) | (above >= s))
        if not bool(exact.all()):
            return None
        bounds = np.empty(self.steps + 1, dtype=np.intp)
        bounds[0], bounds[-1] = 0, n
        bounds[1:-1] = pos
        return bounds


@dataclass(frozen=True, slots=True, eq=False)
class ReplayedHistogram:
    """Cumulative decayed bucket weights at the end of each replay step (rows × buckets),
    held as the columns of the buckets some sample reached (``used``, from ``first_bucket``);
    every other bucket is 0 in every row."""

    options: HistogramOptions
    used: FloatArray
    totals: FloatArray
    reference_s: float
    half_life_s: float
    first_bucket: int = 0

    @property
    def weights(self) -> FloatArray:
        """Every bucket's column (rows × ``options.num_buckets``)."""
        full = np.zeros((self.used.shape[0], self.options.num_buckets))
        full[:, self.first_bucket : self.first_bucket + self.used.shape[1]] = self.used
        return full

    def percentiles(self, p: tuple[float, ...]) -> FloatArray:
        """``Percentile(p)`` for each ``p`` (rows) at the end of every replay step (columns)."""
        return percentiles(self.used, self.totals, p, self.options, first_bucket=self.first_bucket)

    def final(self) -> DecayingHistogram:
        """The histogram at the last step, as a checkpointable ``DecayingHistogram``."""
        hist = Histogram(self.options, self.weights[-1].copy(), float(self.totals[-1]))
        return DecayingHistogram(hist, self.half_life_s, self.reference_s)


def replay_rows(
    values: FloatArray,
    base_weights: FloatArray | float,
    times_s: FloatArray,
    step_index: np.ndarray | None,
    *,
    grid: ReplayGrid,
    options: HistogramOptions,
    half_life_s: float,
    buckets: np.ndarray | None = None,
    bounds: np.ndarray | None = None,
) -> ReplayedHistogram:
    """Histogram of ``values`` after each replay step: one bincount, one cumulative sum.

    A sample's weight is ``base × 2^((t - ref)/half_life)`` with ``ref`` the reference time the
    recommender would hold after feeding these samples (``decaying_histogram.go``).
    ``step_index`` None: ``grid.bins(times_s, bounds)``; ``buckets``: ``options.find_buckets
    (values)`` when already computed.
    """
    n = options.num_buckets
    if values.size == 0:
        zeros = np.zeros((grid.steps, 0))
        return ReplayedHistogram(options, zeros, np.zeros(grid.steps), 0.0, half_life_s)
    ref = final_reference_s(
        times_s, GO_ZERO_TIME_UNIX_S, half_life_s, times_sorted=bounds is not None
    )
    weights = decay_weights(times_s, ref, half_life_s)
    weights *= base_weights
    own = step_index is None
    if step_index is None:
        step_index = grid.bins(times_s, bounds)
    totals = np.bincount(step_index, weights=weights, minlength=grid.steps)
    if own:
        flat = step_index  # an array of our own: becomes the flat index in place
        flat *= n
    else:
        flat = step_index * n
    flat += options.find_buckets(values) if buckets is None else buckets
    inc = np.bincount(flat, weights=weights, minlength=grid.steps * n).reshape(grid.steps, n)
    # Buckets no sample reached stay 0 in every step: accumulate and keep only the others.
    used = np.flatnonzero(inc.any(axis=0))
    lo, hi = (int(used[0]), int(used[-1]) + 1) if used.size else (0, 0)
    cum = np.cumsum(inc[:, lo:hi], axis=0, dtype=np.float64)
    return ReplayedHistogram(options, cum, np.cumsum(totals), ref, half_life_s, lo)
