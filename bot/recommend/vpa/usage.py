"""The observed usage percentiles shown next to each proposal: p50, p90 and p99 as bucket
upper edges of the VPA histogram layout (about 5 % resolution), and the exact maximum."""

from __future__ import annotations

import math

import numpy as np

from bot.model import FloatArray, Usage
from bot.recommend.vpa.histogram import HistogramOptions, percentiles

USAGE_PERCENTILES = (0.5, 0.9, 0.99)
"""The observed usage percentiles shown next to each proposal."""


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
