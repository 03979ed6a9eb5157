"""Quantiles the rules share: the weighted upper quantile (the budget, the backtest's raise, the
weekly cycle) and per-group quantiles (the trend's daily values).

Both are exact order statistics, computed with a partition where a full sort is not needed: an
upper quantile with ``share`` of the weight above it lies among the ``⌊share × W / w_min⌋ + 1``
largest values (``W`` the total weight, ``w_min`` the least weight), so only those are sorted.
"""

from __future__ import annotations

import math

import numpy as np

from bot.model import FloatArray

TOLERANCE = 1e-12
"""Relative slack on the weight comparison (cumulative sums round)."""


def weighted_upper_quantile(values: FloatArray, weights: FloatArray | None, share: float) -> float:
    """The least ``v`` among ``values`` with the weight of the values after ``v`` in ascending
    order at most ``share`` of the total weight ``W`` (ties counted above: never less than the
    exact quantile; ``1 − p`` gives the ``p`` quantile whose cumulative weight reaches ``p × W``).

    Unweighted: the order statistic of rank ``⌈n − 1 − share × n⌉``. Weighted: only the
    ``⌊share × W / w_min⌋ + 1`` largest values can hold it; they are partitioned off and sorted,
    and the first with weight above it ``≤ share × W`` is taken. ``values`` must not be empty
    (no sample has no quantile: the caller decides what that means), else ``ValueError``."""
    n = values.size
    if n == 0:
        raise ValueError("weighted_upper_quantile: no values (a quantile needs a sample)")
    if weights is not None and weights.shape != values.shape:
        raise ValueError("weighted_upper_quantile: values and weights differ in length")
    if weights is None:
        rank = min(max(math.ceil(n - 1 - share * n - 1e-9), 0), n - 1)
        return float(np.partition(values, rank)[rank])
    total = float(weights.sum())
    allowed = share * total + TOLERANCE * max(total, 1.0)
    least = float(weights.min())
    top = n if least <= 0 else min(n, int(allowed / least) + 2)
    if top < n:
        keep = np.argpartition(values, n - top)[n - top :]
        values, weights = values[keep], weights[keep]
    order = np.argsort(values, kind="stable")
    ranked = values[order]
    above = np.cumsum(weights[order][::-1])[::-1] - weights[order]
    first = int(np.argmax(above <= allowed)) if bool((above <= allowed).any()) else ranked.size - 1
    return float(ranked[first])


def group_quantiles(
    groups: np.ndarray, values: FloatArray, p: float
) -> tuple[np.ndarray, np.ndarray, FloatArray]:
    """Per distinct value of ``groups`` (small integers, ascending): the group, its sample count
    and the ``p`` quantile of its ``values`` by numpy's ``inverted_cdf`` (the sample of 0-based
    rank ``⌈p × n⌉ − 1`` in ascending order: an observed sample).

    The counts come from one ``bincount``, the groups are made contiguous (``_by_group``) and
    each group's order statistic comes from a partition of its own samples: linear in the
    samples, where sorting every value (the quantile needs one rank per group, not an order)
    is not."""
    if values.size == 0:
        empty = np.zeros(0)
        return empty.astype(groups.dtype), empty.astype(np.int64), empty
    low = int(groups.min())
    offsets = groups - low
    narrow = offsets.astype(np.int16) if int(offsets.max()) <= np.iinfo(np.int16).max else offsets
    every = np.bincount(narrow)
    present = np.flatnonzero(every)
    counts = every[present]
    ordered = _by_group(narrow, values)
    ends = np.cumsum(counts)
    rank = np.clip(np.ceil(p * counts.astype(np.float64)).astype(np.int64) - 1, 0, counts - 1)
    quantiles = np.empty(present.size, dtype=values.dtype)
    for i, (end, count, r) in enumerate(
        zip(ends.tolist(), counts.tolist(), rank.tolist(), strict=True)
    ):
        quantiles[i] = np.partition(ordered[end - count : end], r)[r]
    return (present + low).astype(groups.dtype), counts.astype(np.int64), quantiles


def _by_group(groups: np.ndarray, values: FloatArray) -> FloatArray:
    """``values`` with their ``groups`` ascending and each group contiguous: as they are, or
    reversed (a view) for groups already in order, as days counted back from now are along a
    pod's time-ordered samples; else after a radix sort (groups are small integers)."""
    step = np.diff(groups)
    if bool((step >= 0).all()):
        return values
    if bool((step <= 0).all()):
        return values[::-1]
    return values[np.argsort(groups, kind="stable")]
