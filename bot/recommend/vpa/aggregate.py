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

from bot.model import FloatArray, IntArray, Usage
from bot.native import vpa as native_vpa
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


@dataclass(frozen=True, slots=True, eq=False)
class CpuCounters:
    """Per replay step: accepted CPU samples so far, first and last sample start (unix s)."""

    counts: FloatArray
    first_s: float
    last_s: FloatArray


@dataclass(frozen=True, slots=True)
class SampleOrder:
    """What one series' layout allows: shortcuts that give the same results."""

    clean: bool
    """Every value finite and >= 0, every time finite."""
    all_accepted: bool
    """``accepted`` keeps every sample: clean values, grouped by pod, in time order per pod."""
    sorted: bool
    """Times never decrease over the whole series (NaN-free)."""
    one_pod: bool = False
    """Every sample is of one pod (False: not known)."""


def _clean(times_s: FloatArray, values: FloatArray, *, times_sorted: bool = False) -> bool:
    """Every value finite and >= 0 and every time finite; NaN propagates through min/max.
    Sorted times (a NaN fails every comparison) are finite when both ends are."""
    if values.size == 0:
        return True
    if not (bool(values.min() >= 0) and bool(np.isfinite(values.max()))):
        return False
    if times_sorted:
        return bool(np.isfinite(times_s[0])) and bool(np.isfinite(times_s[-1]))
    return bool(np.isfinite(times_s.min())) and bool(np.isfinite(times_s.max()))


def sample_order(
    times_s: FloatArray, pods: IntArray, values: FloatArray, *, strict: bool
) -> SampleOrder:
    """``SampleOrder`` of one series in a few passes (``accepted`` rules, see there)."""
    n = times_s.size
    if n < 2:
        clean = _clean(times_s, values)
        return SampleOrder(clean, clean, clean)
    later = times_s[1:] > times_s[:-1] if strict else times_s[1:] >= times_s[:-1]
    in_time_order = bool(later.all())
    clean = _clean(times_s, values, times_sorted=in_time_order)
    if not clean:
        return SampleOrder(False, False, False)
    if in_time_order:
        grouped = bool(pods.min() == pods.max())
        return SampleOrder(True, grouped or bool(np.all(pods[1:] >= pods[:-1])), True, grouped)
    same_pod = pods[1:] == pods[:-1]
    ok = bool(np.all(pods[1:] >= pods[:-1])) and bool(np.all(later | ~same_pod))
    return SampleOrder(True, ok, False)


def accepted(
    times_s: FloatArray, pods: IntArray, values: FloatArray, *, strict: bool
) -> np.ndarray:
    """Which samples the recommender accepts, in the given order.

    A sample is dropped when its value is negative or NaN, or when its time is not after
    (``strict``: CPU, ``addCPUSample``) or is before (memory, ``addMemorySample``) the latest
    accepted time of the same pod.
    """
    n = times_s.size
    if n >= 2 and sample_order(times_s, pods, values, strict=strict).all_accepted:
        return np.ones(n, dtype=bool)  # grouped by pod and in time order: the common case
    ok = np.isfinite(values) & (values >= 0) & np.isfinite(times_s)
    if n < 2:
        return ok
    order = np.argsort(pods, kind="stable")
    t = times_s[order]
    p = pods[order].astype(np.float64)
    span = float(t.max() - t.min()) + 1.0
    key = p * span + (t - t.min())
    key = np.where(ok[order], key, -np.inf)
    prev = np.maximum.accumulate(np.concatenate(([-np.inf], key[:-1])))
    good = key > prev if strict else key >= prev
    out = np.empty(n, dtype=bool)
    out[order] = good
    return out & ok


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
    ``step_index`` None: ``grid.bins(times_s, bounds)``.
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


def sample_step_s(times_s: FloatArray, pods: IntArray, *, one_pod: bool = False) -> float:
    """The typical time between two samples of one pod (median), in seconds; 60 if unknown.
    ``one_pod``: every sample is known to be of one pod."""
    if times_s.size < 2:
        return 60.0
    diffs = np.diff(times_s)
    if one_pod or int(pods.min()) == int(pods.max()):
        shortest, longest = float(diffs.min()), float(diffs.max())
        if shortest == longest and shortest > 0:
            return shortest  # one pod sampled at a regular step: the median is that step
        steps = diffs
    else:
        steps = diffs[pods[1:] == pods[:-1]]
    steps = steps[steps > 0]
    return float(np.median(steps)) if steps.size else 60.0


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


@dataclass(frozen=True, slots=True, eq=False)
class MemoryPeaks:
    """One peak per pod per aggregation window, entered at the window end."""

    values: FloatArray
    window_start_s: FloatArray
    window_end_s: FloatArray
    oom_bumps: FloatArray
    """The memory sample each OOM kill produced (``needed``), one per accepted OOM."""


def memory_peaks(
    times_s: FloatArray,
    pods: IntArray,
    usage_bytes: FloatArray,
    *,
    oom_times_s: FloatArray,
    oom_pods: IntArray,
    oom_request_bytes: FloatArray,
    interval_s: float,
    oom_bump_up_ratio: float,
    oom_min_bump_up_bytes: float,
    order: SampleOrder | None = None,
) -> MemoryPeaks:
    """Per-pod window peaks with OOM bumps (``model/container.go``, ``addMemorySample``,
    ``RecordOOM``).

    Windows of ``interval_s`` start at each pod's first sample (usage or OOM), so a sample at
    ``t`` belongs to the window ending at ``t0 + (floor((t - t0)/I) + 1)·I``. Its peak is the
    largest usage sample in it, raised by OOM samples
    ``needed = max(used + min_bump, trunc(used × ratio))`` where ``used = max(request at the OOM,
    usage peak of that window up to the OOM)``; OOM samples never feed ``used`` (no runaway).
    Deviation: the rare "first sample of a window is 0 bytes" quirk is not reproduced.

    ``order`` (``sample_order(..., strict=False)`` of the usage series) may be passed when known.
    """
    ok_oom = np.isfinite(oom_request_bytes) & (oom_request_bytes >= 0)
    if not ok_oom.any() and times_s.size:
        if order is None:
            order = sample_order(times_s, pods, usage_bytes, strict=False)
        if order.all_accepted:
            compiled = native_vpa.memory_peaks(times_s, pods, usage_bytes, interval_s)
            if compiled is not None:
                return _peaks_of_entries(compiled, interval_s)
            fast = _peaks_in_order(times_s, pods, usage_bytes, interval_s, one_pod=order.one_pod)
            if fast is not None:
                return fast
    keep = accepted(times_s, pods, usage_bytes, strict=False)
    if bool(keep.all()):
        t, p, v = times_s, pods.astype(np.intp), usage_bytes
    else:
        t, p, v = times_s[keep], pods[keep].astype(np.intp), usage_bytes[keep]
    ot, op, orq = oom_times_s[ok_oom], oom_pods[ok_oom].astype(np.intp), oom_request_bytes[ok_oom]
    if t.size == 0 and ot.size == 0:
        empty = np.zeros(0)
        return MemoryPeaks(empty, empty, empty, empty)
    n_pods = int(max(p.max(initial=-1), op.max(initial=-1))) + 1
    t0 = np.full(n_pods, np.inf)
    grouped = p.size > 0 and bool(np.all(p[1:] >= p[:-1]))
    if grouped:
        firsts = np.flatnonzero(np.r_[True, p[1:] != p[:-1]])
        t0[p[firsts]] = np.minimum.reduceat(t, firsts)
    else:
        np.minimum.at(t0, p, t)
    np.minimum.at(t0, op, ot)
    k = np.floor((t - t0[p]) / interval_s).astype(np.intp)
    ok_k = np.floor((ot - t0[op]) / interval_s).astype(np.intp)
    n_windows = int(max(k.max(initial=0), ok_k.max(initial=0))) + 1
    key = p * n_windows + k
    peak = np.full(n_pods * n_windows, -1.0)
    if grouped and bool(np.all(key[1:] >= key[:-1])):
        # Grouped by pod and in time order (the common case): one reduceat per window.
        starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
        peak[key[starts]] = np.maximum.reduceat(v, starts)
    else:
        np.maximum.at(peak, key, v)
    bumps = np.zeros(ot.size)
    for i in range(ot.size):
        same = (key == op[i] * n_windows + ok_k[i]) & (t <= ot[i])
        used = max(float(orq[i]), float(v[same].max()) if same.any() else 0.0)
        needed = max(used + oom_min_bump_up_bytes, math.trunc(used * oom_bump_up_ratio))
        bumps[i] = needed
    if ot.size:
        np.maximum.at(peak, op * n_windows + ok_k, bumps)
    return _window_peaks(peak, t0, n_windows, interval_s, bumps)


def _window_peaks(
    peak: FloatArray, t0: FloatArray, n_windows: int, interval_s: float, bumps: FloatArray
) -> MemoryPeaks:
    """``MemoryPeaks`` from the (pod × window) peak table (-1: no sample), by window end."""
    present = np.flatnonzero(peak >= 0)
    pod_of = present // n_windows
    win_of = present % n_windows
    starts = t0[pod_of] + win_of * interval_s
    order = np.argsort(starts + interval_s, kind="stable")
    return MemoryPeaks(peak[present][order], starts[order], (starts + interval_s)[order], bumps)


@dataclass(frozen=True, slots=True, eq=False)
class CompiledMemory:
    """A whole working-set series in one compiled pass: its window peaks (no OOM kill), its
    observed usage and its latest time."""

    peaks: MemoryPeaks
    usage: Usage
    latest_s: float


def memory_compiled(
    times_s: FloatArray,
    pods: IntArray,
    usage_bytes: FloatArray,
    *,
    interval_s: float,
    options: HistogramOptions,
) -> CompiledMemory | None:
    """``memory_peaks`` without OOM kills and ``usage_from_counts`` of a series that is clean
    and grouped by pod in time order (``sample_order(..., strict=False).all_accepted``), in one
    compiled pass; None when the series is not such (or empty), or without the kernel: run
    those then."""
    if usage_bytes.size == 0 or options.linear_size is not None:
        return None
    found = native_vpa.memory_peaks(times_s, pods, usage_bytes, interval_s, options.starts)
    if found is None or found.counts is None:
        return None
    return CompiledMemory(
        _peaks_of_entries(found, interval_s),
        _usage_of_counts(found.counts, found.top, options),
        found.latest_s,
    )


def _peaks_of_entries(entries: native_vpa.WindowPeaks, interval_s: float) -> MemoryPeaks:
    """``_window_peaks`` of the compiled (pod, window) entries, which come in the order of the
    peak table's cells."""
    starts = entries.t0 + entries.window * interval_s
    ends = starts + interval_s
    if ends.size < 2 or bool((ends[1:] >= ends[:-1]).all()):  # one pod: in order already
        # (a copy: the entries are a view of the kernel's buffer, as long as the samples)
        return MemoryPeaks(entries.peak.copy(), starts, ends, np.zeros(0))
    order = np.argsort(ends, kind="stable")
    return MemoryPeaks(entries.peak[order], starts[order], ends[order], np.zeros(0))


MAX_POD_RUNS = 64
"""``_peaks_in_order`` searches window edges pod by pod, up to this many pods."""


def _peaks_in_order(
    t: FloatArray, pods: IntArray, v: FloatArray, interval_s: float, *, one_pod: bool = False
) -> MemoryPeaks | None:
    """``memory_peaks`` for accepted samples grouped by pod in time order without OOM kills:
    the same peak table, found from window edges instead of a window index per sample.

    Each pod's window index ``floor((t - t0) / I)`` never decreases along its samples, so a
    binary search on the edges ``t0 + j·I`` finds where each window starts; the positions are
    kept only when the formula itself, applied to the two samples around each, agrees (else
    None, and the caller takes the general path).
    """
    n = t.size
    if one_pod or int(pods.min()) == int(pods.max()):
        firsts = np.zeros(1, dtype=np.intp)
    else:
        firsts = np.flatnonzero(np.concatenate(([True], pods[1:] != pods[:-1])))
        if firsts.size > MAX_POD_RUNS:
            return None
    ends = np.append(firsts[1:], n)
    pod_ids = pods[firsts].astype(np.intp)
    n_pods = int(pod_ids.max()) + 1
    t0 = np.full(n_pods, np.inf)
    t0[pod_ids] = t[firsts]
    last_k = np.floor((t[ends - 1] - t0[pod_ids]) / interval_s).astype(np.intp)
    n_windows = max(int(last_k.max()), 0) + 1
    starts_parts: list[np.ndarray] = []
    keys_parts: list[np.ndarray] = []
    for a, e, pod, k_max in zip(
        firsts.tolist(), ends.tolist(), pod_ids.tolist(), last_k.tolist(), strict=True
    ):
        first_t = t0[pod]
        js = np.arange(1, k_max + 1, dtype=np.intp)
        pos = a + np.searchsorted(t[a:e], first_t + js * interval_s)
        below = np.floor((t[np.maximum(pos - 1, a)] - first_t) / interval_s)
        above = np.floor((t[np.minimum(pos, e - 1)] - first_t) / interval_s)
        if not bool(np.all((pos > a) & (below < js) & ((pos == e) | (above >= js)))):
            return None
        nonempty = pos < np.append(pos[1:], e)
        starts_parts += [np.array([a], dtype=np.intp), pos[nonempty]]
        keys_parts += [np.array([pod * n_windows]), pod * n_windows + js[nonempty]]
    starts = np.concatenate(starts_parts)
    peak = np.full(n_pods * n_windows, -1.0)
    peak[np.concatenate(keys_parts)] = np.maximum.reduceat(v, starts)
    return _window_peaks(peak, t0, n_windows, interval_s, np.zeros(0))


USAGE_PERCENTILES = (0.5, 0.9, 0.99)
"""The observed usage percentiles shown next to each proposal."""
_USAGE_PS = np.array(USAGE_PERCENTILES, dtype=np.float64)


def usage_from_counts(
    values: FloatArray, options: HistogramOptions, buckets: np.ndarray | None = None
) -> Usage | None:
    """Observed p50/p90/p99 (bucket upper edges, about 5 % resolution) and the exact maximum.

    Without ``buckets`` the percentiles come from order statistics, with the same result: every
    sample weighs 1, so the first bucket whose running count reaches ``p × n`` is the bucket of
    the ``ceil(p × n)``-th smallest value (``find_buckets`` never decreases: it is the exact
    comparison with the bucket starts wherever the logarithm could be off). A partial sort
    (``np.partition`` at those three ranks: the same values a full sort puts there) costs less
    than bucketing every sample, and far less than a sort (20,160 slowly varying samples:
    about 60 µs against 1 ms).
    """
    if values.size == 0:
        return None
    if buckets is None:
        n = values.size
        ks = [min(max(math.ceil(p * n), 1), n) - 1 for p in USAGE_PERCENTILES]
        edges = options.upper_edges()[options.find_buckets(np.partition(values, ks)[ks])].tolist()
        top = float(values.max())
        p50, p90, p99 = (min(edge, top) for edge in edges)
        return Usage(p50, p90, p99, top, int(n))
    counts = np.bincount(buckets, minlength=options.num_buckets)
    return _usage_of_counts(counts, float(values.max()), options)


def _usage_of_counts(counts: np.ndarray, top: float, options: HistogramOptions) -> Usage:
    """``Usage`` from the samples per bucket and the largest sample.

    Every count is a whole number, so (with ``epsilon`` <= 1) the non-empty buckets are the
    counted ones and ``percentiles`` lands, for each ``p``, in the first bucket whose running
    count reaches ``p × n`` (none before the first counted bucket: ``p × n`` > 0), never past the
    last counted one, where the running count first reaches ``n``: two binary searches over the
    exact running counts give it."""
    if options.epsilon <= 1.0:
        found = native_vpa.usage_buckets(counts, _USAGE_PS)
        if found is not None:  # the same walk over the running counts, compiled
            (b50, b90, b99), n = found
            edges = options.upper_edges()
            p50, p90, p99 = float(edges[b50]), float(edges[b90]), float(edges[b99])
            return Usage(min(p50, top), min(p90, top), min(p99, top), top, n)
    n = int(counts.sum())
    if n and options.epsilon <= 1.0:
        running = np.cumsum(counts)
        last = int(np.searchsorted(running, n, side="left"))
        wanted = [p * n for p in USAGE_PERCENTILES]
        hits = np.minimum(np.searchsorted(running, wanted, side="left"), last)
        p50, p90, p99 = options.upper_edges()[hits].tolist()
        return Usage(min(p50, top), min(p90, top), min(p99, top), top, n)
    total = np.array([float(n)])
    p50, p90, p99 = percentiles(counts.astype(np.float64), total, USAGE_PERCENTILES, options)[
        :, 0
    ].tolist()
    return Usage(min(p50, top), min(p90, top), min(p99, top), top, n)


def usage_compiled(values: FloatArray, options: HistogramOptions) -> Usage | None:
    """``usage_from_counts(values, options)`` from the compiled bucket counts (the same
    numbers: the ``ceil(p × n)``-th smallest value lies in the first bucket whose running count
    reaches ``p × n``), or None to run it (no kernel, a linear layout, or a value it does not
    take)."""
    if values.size == 0 or options.linear_size is not None:
        return None
    found = native_vpa.bucket_counts(values, starts=options.starts)
    return None if found is None else _usage_of_counts(found[0], found[1], options)


_DECAYED_KEPT = 4
_decayed_kept: list[tuple[FloatArray, float, float, FloatArray]] = []
"""The last few ``_decayed`` results: (a copy of the times, half-life, reference, weights)."""


def _decayed(
    times_s: FloatArray, half_life_s: float, times_sorted: bool
) -> tuple[float, FloatArray]:
    """``final_reference_s`` of ``times_s`` (from Go's zero time) and ``decay_weights`` for it,
    read-only; the same arrays as a recent call whose times were the same, value for value
    (the containers of one pod are sampled at the same times: the weights are computed once
    per pod, and comparing the times costs a quarter of computing them)."""
    for kept_times, kept_half_life, ref, weights in _decayed_kept:
        if (
            kept_half_life == half_life_s
            and kept_times.shape == times_s.shape
            and bool(np.equal(kept_times, times_s).all())
        ):
            return ref, weights
    ref = final_reference_s(times_s, GO_ZERO_TIME_UNIX_S, half_life_s, times_sorted=times_sorted)
    weights = decay_weights(times_s, ref, half_life_s)
    weights.flags.writeable = False
    times = np.array(times_s, dtype=np.float64)
    times.flags.writeable = False
    if len(_decayed_kept) >= _DECAYED_KEPT:
        _decayed_kept.pop()
    _decayed_kept.insert(0, (times, half_life_s, ref, weights))
    return ref, weights


@dataclass(frozen=True, slots=True, eq=False)
class CompiledReplay:
    """``replay_rows`` of a series, its bucket counts' ``Usage`` and, when asked,
    ``cpu_counters``, from one compiled pass."""

    rows: ReplayedHistogram
    usage: Usage | None
    """None when not asked for."""
    counters: CpuCounters | None


def replay_compiled(
    values: FloatArray,
    base_weights: float,
    times_s: FloatArray,
    step_times_s: FloatArray,
    *,
    grid: ReplayGrid,
    options: HistogramOptions,
    half_life_s: float,
    counters: bool = False,
    times_sorted: bool = False,
    strict: bool = False,
    usage: bool = True,
) -> CompiledReplay | None:
    """``replay_rows(values, base_weights, times_s, grid.bins(step_times_s), ...)``,
    ``usage_from_counts(values, options, buckets)`` (unless not ``usage``) and, with
    ``counters`` (step times that
    never decrease; ``strict``: always increase), ``cpu_counters(step_times_s, None, grid)`` in
    one compiled pass (``bot.native.vpa``, the same numbers); None to run those (no kernel, a
    linear layout, no sample, or a value or order the kernel does not take). ``times_sorted``
    as ``final_reference_s``."""
    if values.size == 0 or options.linear_size is not None:
        return None
    ref, weights = _decayed(times_s, half_life_s, times_sorted)  # × base_weights in the pass
    found = native_vpa.replay(
        step_times_s,
        values,
        weights,
        start_s=grid.start_s,
        step_s=grid.step_s,
        steps=grid.steps,
        starts=options.starts,
        counters=counters,
        strict=strict,
        scale=float(base_weights),
    )
    if found is None:
        return None
    rows = ReplayedHistogram(
        options, found.cum[:, found.lo : found.hi], found.totals, ref, half_life_s, found.lo
    )
    cpu = None
    if found.step_counts is not None and found.last_s is not None:
        cpu = CpuCounters(found.step_counts, float(step_times_s[0]), found.last_s)
    observed = _usage_of_counts(found.counts, found.top, options) if usage else None
    return CompiledReplay(rows, observed, cpu)
