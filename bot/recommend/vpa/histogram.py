"""VPA histograms: bucketing, percentiles, decay, merge and checkpoints, in numpy.

Reproduces ``util/histogram_options.go``, ``util/histogram.go`` and
``util/decaying_histogram.go`` of the VPA recommender. Contract, as upstream:

* values are bucketed by ``HistogramOptions.find_buckets``; bucket 0 is ``[0, first)``;
* a bucket lighter than ``epsilon`` counts as empty (it still counts towards the total);
* ``percentile(p)`` is the **upper edge** of the first bucket (from the first non-empty one)
  whose cumulative weight reaches ``p × total``; the last bucket returns its start; an empty
  histogram returns 0; no interpolation;
* a decaying histogram stores a sample at time ``t`` with weight ``w × 2^((t - ref)/half_life)``
  and moves ``ref`` forward (rounded to a multiple of the half-life counted from Go's zero time)
  when a sample is more than 100 half-lives after it.

Every function returns new values and never mutates its arguments.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from bot.model import FloatArray
from bot.recommend.errors import CheckpointError
from bot.recommend.vpa.constants import (
    BUCKET_GROWTH_RATIO,
    CPU_FIRST_BUCKET_CORES,
    CPU_MAX_CORES,
    EPSILON,
    GO_ZERO_TIME_UNIX_S,
    MAX_CHECKPOINT_WEIGHT,
    MAX_DECAY_EXPONENT,
    MEMORY_FIRST_BUCKET_BYTES,
    MEMORY_MAX_BYTES,
)

IndexArray = np.ndarray[tuple[int], np.dtype[np.intp]]


@dataclass(frozen=True, slots=True, eq=False)
class HistogramOptions:
    """Bucket layout: ``starts[b]`` is the first value of bucket ``b`` (``starts[0] == 0``)."""

    starts: FloatArray
    epsilon: float
    linear_size: float | None = None
    """Bucket width of a linear layout; None for the exponential layout."""
    first_bucket_size: float = 0.0
    """``F`` of the exponential layout."""
    ratio: float = 0.0
    """``r`` of the exponential layout."""

    @property
    def num_buckets(self) -> int:
        return int(self.starts.size)

    def bucket_start(self, bucket: int) -> float:
        """Start value of ``bucket`` (``GetBucketStart``)."""
        return float(self.starts[bucket])

    _upper_edges: FloatArray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        edges = np.append(self.starts[1:], self.starts[-1])
        edges.flags.writeable = False
        object.__setattr__(self, "_upper_edges", edges)

    def upper_edges(self) -> FloatArray:
        """What a percentile landing in each bucket returns: ``start(b+1)``, last: ``start(b)``."""
        return self._upper_edges

    def find_buckets(self, values: FloatArray) -> IndexArray:
        """Bucket index of each value (``FindBucket``), vectorised, clamped to ``[0, N-1]``.

        Exponential: ``trunc(log(v(r-1)/F + 1) / log r)``, 0 below ``F``; linear:
        ``trunc(v/size)``. Negative values land in bucket 0.
        """
        n = self.num_buckets
        vals = np.asarray(values, dtype=np.float64)
        if self.linear_size is not None:
            idx = vals / self.linear_size
            np.maximum(idx, 0.0, out=idx)
        else:
            idx = vals * (self.ratio - 1)
            np.maximum(idx, 0.0, out=idx)
            idx /= self.first_bucket_size
            idx += 1.0
            np.log(idx, out=idx)
            idx /= math.log(self.ratio)
            # numpy's vectorised log may be one ulp off: a value on a bucket start (1e7 bytes
            # is bucket 1 upstream) must not fall into the bucket below. Fix those few by
            # comparing with the start itself.
            whole_idx = np.rint(idx)
            whole_idx -= idx
            near = np.abs(whole_idx, out=whole_idx) < 1e-9
            if near.any():
                whole = np.minimum(np.rint(idx[near]), n - 1).astype(np.intp)
                below = np.maximum(whole - 1, 0)
                idx[near] = np.where(vals[near] >= self.starts[whole], whole, below)
            np.minimum(idx, n - 1, out=idx)
            # The indices go into the scratch array's memory (the same cast as ``astype``).
            out: IndexArray = whole_idx.view(np.intp)
            np.copyto(out, idx, casting="unsafe")
            return out
        np.minimum(idx, n - 1, out=idx)
        return idx.astype(np.intp)


def exponential_options(
    max_value: float, first_bucket_size: float, ratio: float, epsilon: float = EPSILON
) -> HistogramOptions:
    """``NewExponentialHistogramOptions``: ``N = ceil(log_r(M(r-1)/F + 1)) + 1`` buckets.

    ``start(b) = F(r^b - 1)/(r - 1)`` for b >= 1 (``util/histogram_options.go``).
    """
    if not (max_value > 0 and first_bucket_size > 0 and ratio > 1 and epsilon > 0):
        raise ValueError("exponential histogram needs max, first bucket > 0, ratio > 1")
    n = math.ceil(math.log(max_value * (ratio - 1) / first_bucket_size + 1, ratio)) + 1
    b = np.arange(n, dtype=np.float64)
    starts = first_bucket_size * (ratio**b - 1) / (ratio - 1)
    starts[0] = 0.0
    return HistogramOptions(starts, epsilon, None, first_bucket_size, ratio)


def linear_options(max_value: float, bucket_size: float, epsilon: float) -> HistogramOptions:
    """``NewLinearHistogramOptions``: ``N = ceil(M/size) + 1``, ``start(b) = b × size``."""
    if not (max_value > 0 and bucket_size > 0 and epsilon > 0):
        raise ValueError("linear histogram needs max, bucket size and epsilon > 0")
    n = math.ceil(max_value / bucket_size) + 1
    return HistogramOptions(np.arange(n, dtype=np.float64) * bucket_size, epsilon, bucket_size)


CPU_OPTIONS = exponential_options(CPU_MAX_CORES, CPU_FIRST_BUCKET_CORES, BUCKET_GROWTH_RATIO)
"""The VPA CPU histogram: 0.01 core .. 1000 cores, ratio 1.05, 176 buckets."""
MEMORY_OPTIONS = exponential_options(
    MEMORY_MAX_BYTES, MEMORY_FIRST_BUCKET_BYTES, BUCKET_GROWTH_RATIO
)
"""The VPA memory histogram: 1e7 .. 1e12 bytes, ratio 1.05, 176 buckets."""


def percentiles(
    weights: FloatArray,
    totals: FloatArray,
    p: float | tuple[float, ...],
    options: HistogramOptions,
    *,
    first_bucket: int = 0,
) -> FloatArray:
    """``Percentile(p)`` of each row of ``weights`` (rows x buckets), vectorised.

    Walk from the first bucket with weight >= epsilon, accumulating, and stop at the first bucket
    whose cumulative weight is >= ``p × total`` (never past the last non-empty bucket); return its
    upper edge. Rows with no bucket >= epsilon give 0 (``util/histogram.go``, ``Percentile``).
    With a tuple of ``p`` the result has one row per ``p``. ``first_bucket``: the columns of
    ``weights`` are the buckets from that one on, every bucket outside them empty (the same
    result as the whole rows, without walking the empty buckets).
    """
    if weights.ndim == 1:
        return _percentiles_1d(weights, float(np.atleast_1d(totals)[0]), p, options)
    w = weights
    n = w.shape[1]
    if n == 0:
        shape = (len(p), w.shape[0]) if isinstance(p, tuple) else (w.shape[0],)
        return np.zeros(shape)
    nonempty = w >= options.epsilon
    has_any = nonempty.any(axis=1)
    first = np.argmax(nonempty, axis=1)
    last = n - 1 - np.argmax(nonempty[:, ::-1], axis=1)
    # Only buckets from the lowest ``first`` to the highest ``last`` of the non-empty rows can
    # decide: below, every row's running sum is 0 (counted below a positive wanted weight, and
    # ``first`` is the answer otherwise); above, the answer is clamped to ``last`` anyway.
    lo, hi = (int(first[has_any].min()), int(last[has_any].max()) + 1) if has_any.any() else (0, n)
    cols = np.arange(lo, hi)
    cum = np.cumsum(np.where(cols[None, :] >= first[:, None], w[:, lo:hi], 0.0), axis=1)
    qs = np.atleast_1d(np.asarray(p, dtype=np.float64))
    wanted = qs[:, None] * np.atleast_1d(totals).astype(np.float64)[None, :]  # (p, rows)
    # Weights are >= 0, so each row of ``cum`` never decreases: the first bucket reaching the
    # wanted weight is the number of buckets below it (n when none does, then ``last``).
    hit = np.count_nonzero(cum[None, :, :] < wanted[:, :, None], axis=2)
    if lo:
        hit += np.where(wanted > 0, lo, 0)
    hit = np.minimum(np.maximum(hit, first), last)
    if first_bucket:
        hit += first_bucket
    out = np.where(has_any, options.upper_edges()[hit], 0.0)
    return out if isinstance(p, tuple) else out[0]


def _percentiles_1d(
    w: FloatArray, total: float, p: float | tuple[float, ...], options: HistogramOptions
) -> FloatArray:
    """``percentiles`` for one histogram: a cumulative sum and a binary search per ``p``."""
    nonempty = np.flatnonzero(w >= options.epsilon)
    qs = p if isinstance(p, tuple) else (p,)
    if nonempty.size == 0:
        out = np.zeros(len(qs))
    else:
        first, last = int(nonempty[0]), int(nonempty[-1])
        cum = np.cumsum(w[first : last + 1])
        hits = np.searchsorted(cum, np.array(qs) * total, side="left")
        out = options.upper_edges()[first + np.minimum(hits, last - first)]
    return out[:, None] if isinstance(p, tuple) else out


@dataclass(frozen=True, slots=True, eq=False)
class HistogramCheckpoint:
    """Serialised histogram: ``bucket_weights`` integers in 1..10000, exact ``total_weight``."""

    total_weight: float
    bucket_weights: Mapping[int, int]
    reference_s: float | None = None


@dataclass(frozen=True, slots=True, eq=False)
class Histogram:
    """Bucket weights and their float total (``util/histogram.go``, ``histogram``)."""

    options: HistogramOptions
    weights: FloatArray
    total_weight: float = 0.0

    @classmethod
    def empty(cls, options: HistogramOptions) -> Histogram:
        return cls(options, np.zeros(options.num_buckets), 0.0)

    def add(self, values: FloatArray | float, weights: FloatArray | float) -> Histogram:
        """``AddSample`` for every (value, weight); weights must be >= 0."""
        vals = np.atleast_1d(np.asarray(values, dtype=np.float64))
        ws = np.broadcast_to(np.asarray(weights, dtype=np.float64), vals.shape)
        if np.any(ws < 0):
            raise ValueError("histogram sample weights must be >= 0")
        add = np.bincount(
            self.options.find_buckets(vals), weights=ws, minlength=self.options.num_buckets
        )
        return Histogram(self.options, self.weights + add, self.total_weight + float(ws.sum()))

    def subtract(self, value: float, weight: float) -> Histogram:
        """``SubtractSample``: results below epsilon become exactly 0."""
        b = int(self.options.find_buckets(np.array([value]))[0])
        w = self.weights.copy()
        w[b] -= weight
        if w[b] < self.options.epsilon:
            w[b] = 0.0
        total = self.total_weight - weight
        return Histogram(self.options, w, 0.0 if total < self.options.epsilon else total)

    def merge(self, other: Histogram) -> Histogram:
        """Bucket-wise sum (``Merge``); both must share one options object."""
        if other.options is not self.options:
            raise ValueError("cannot merge histograms with different options")
        return Histogram(
            self.options, self.weights + other.weights, self.total_weight + other.total_weight
        )

    def scaled(self, factor: float) -> Histogram:
        return Histogram(self.options, self.weights * factor, self.total_weight * factor)

    def is_empty(self) -> bool:
        return not bool(np.any(self.weights >= self.options.epsilon))

    def percentile(self, p: float) -> float:
        return float(percentiles(self.weights, np.array([self.total_weight]), p, self.options)[0])

    def save_checkpoint(self) -> HistogramCheckpoint:
        """``SaveToChekpoint``: buckets scaled so the heaviest is 10000, rounded, zeros dropped."""
        top = float(self.weights.max()) if self.weights.size else 0.0
        if top <= 0:
            return HistogramCheckpoint(self.total_weight, {})
        ints = np.floor(self.weights * (MAX_CHECKPOINT_WEIGHT / top) + 0.5).astype(np.int64)
        keep = np.flatnonzero(ints > 0)
        return HistogramCheckpoint(self.total_weight, {int(b): int(ints[b]) for b in keep})

    def load_checkpoint(self, checkpoint: HistogramCheckpoint | None) -> Histogram:
        """``LoadFromCheckpoint``: adds ``int × total/sum(ints)`` to each bucket."""
        if checkpoint is None:
            raise CheckpointError("cannot load from an empty checkpoint")
        if checkpoint.total_weight < 0:
            raise CheckpointError(f"negative total weight {checkpoint.total_weight}")
        n = self.options.num_buckets
        for bucket, weight in checkpoint.bucket_weights.items():
            if not 0 <= bucket < n:
                raise CheckpointError(f"bucket index {bucket} outside 0..{n - 1}")
            if weight < 0:
                raise CheckpointError(f"negative weight {weight} in bucket {bucket}")
        total_ints = sum(checkpoint.bucket_weights.values())
        if total_ints == 0:
            return self
        ratio = checkpoint.total_weight / total_ints
        w = self.weights.copy()
        for bucket, weight in checkpoint.bucket_weights.items():
            w[bucket] += weight * ratio
        return Histogram(self.options, w, self.total_weight + checkpoint.total_weight)


def round_to_half_life(t_s: float, half_life_s: float) -> float:
    """Go ``Time.Round(halfLife)``: nearest multiple counted from Go's zero time, halves up."""
    k = math.floor((t_s - GO_ZERO_TIME_UNIX_S) / half_life_s + 0.5)
    return GO_ZERO_TIME_UNIX_S + k * half_life_s


def final_reference_s(
    times_s: FloatArray, reference_s: float, half_life_s: float, *, times_sorted: bool = False
) -> float:
    """The reference time after feeding ``times_s`` in time order (``shiftReferenceTimestamp``).

    It moves whenever a sample is strictly more than 100 half-lives after it; the first sample
    of a fresh histogram (reference at Go's zero time) always moves it. ``times_sorted``: the
    times never decrease and hold no NaN (the first and last are the least and the greatest).
    """
    if times_s.size == 0:
        return reference_s
    ref = reference_s
    limit = MAX_DECAY_EXPONENT * half_life_s
    if times_sorted:
        first, last = float(times_s[0]), float(times_s[-1])
    else:
        first = float(np.minimum.reduce(times_s))
        last = float(np.maximum.reduce(times_s))
    if first > ref + limit:
        ref = round_to_half_life(first, half_life_s)  # every sample is later: the first moves it
    while last > ref + limit:
        ref = round_to_half_life(float(times_s[times_s > ref + limit].min()), half_life_s)
    return ref


def decay_weights(times_s: FloatArray, reference_s: float, half_life_s: float) -> FloatArray:
    """``2^((t - ref)/half_life)`` for every sample time (``decaying_histogram.go``)."""
    w = np.subtract(times_s, reference_s, dtype=np.float64)
    w *= 1.0 / half_life_s
    return np.exp2(w, out=w)


@dataclass(frozen=True, slots=True, eq=False)
class DecayingHistogram:
    """A histogram whose older samples weigh exponentially less (``decaying_histogram.go``)."""

    histogram: Histogram
    half_life_s: float
    reference_s: float = GO_ZERO_TIME_UNIX_S

    @classmethod
    def empty(cls, options: HistogramOptions, half_life_s: float) -> DecayingHistogram:
        return cls(Histogram.empty(options), half_life_s)

    def _shifted(self, new_reference_s: float) -> Histogram:
        if new_reference_s == self.reference_s:
            return self.histogram
        k = round((self.reference_s - new_reference_s) / self.half_life_s)
        return self.histogram.scaled(math.ldexp(1.0, max(k, -2000)))

    def add(
        self, values: FloatArray, weights: FloatArray | float, times_s: FloatArray
    ) -> DecayingHistogram:
        """Add samples (value, weight) taken at ``times_s`` in one pass."""
        times = np.asarray(times_s, dtype=np.float64)
        ref = final_reference_s(times, self.reference_s, self.half_life_s)
        base = self._shifted(ref)
        w = np.asarray(weights, dtype=np.float64) * decay_weights(times, ref, self.half_life_s)
        return DecayingHistogram(base.add(values, w), self.half_life_s, ref)

    def merge(self, other: DecayingHistogram) -> DecayingHistogram:
        """The older-referenced one is shifted to the younger reference, then summed."""
        if other.half_life_s != self.half_life_s:
            raise ValueError("cannot merge decaying histograms with different half-lives")
        ref = max(self.reference_s, other.reference_s)
        merged = self._shifted(ref).merge(other._shifted(ref))
        return DecayingHistogram(merged, self.half_life_s, ref)

    def percentile(self, p: float) -> float:
        return self.histogram.percentile(p)

    def is_empty(self) -> bool:
        return self.histogram.is_empty()

    def save_checkpoint(self) -> HistogramCheckpoint:
        cp = self.histogram.save_checkpoint()
        return HistogramCheckpoint(cp.total_weight, cp.bucket_weights, self.reference_s)

    def load_checkpoint(self, checkpoint: HistogramCheckpoint | None) -> DecayingHistogram:
        """Load weights, then take the stored reference time (``LoadFromCheckpoint``)."""
        loaded = self.histogram.load_checkpoint(checkpoint)
        assert checkpoint is not None
        ref = self.reference_s if checkpoint.reference_s is None else checkpoint.reference_s
        return DecayingHistogram(loaded, self.half_life_s, ref)
