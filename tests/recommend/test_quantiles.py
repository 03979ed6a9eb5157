"""The shared quantiles against their definitions, computed the slow way."""

from __future__ import annotations

import numpy as np
import pytest

from bot.recommend.quantiles import group_quantiles, weighted_upper_quantile


def _by_definition(values: np.ndarray, weights: np.ndarray, share: float) -> float:
    """The least value whose weight after it, in a full stable sort, is ≤ share × total."""
    order = np.argsort(values, kind="stable")
    total = float(weights.sum())
    after = total - np.cumsum(weights[order])
    for i in range(values.size):
        if after[i] <= share * total * (1 + 1e-9):
            return float(values[order][i])
    return float(values[order][-1])


@pytest.mark.parametrize("seed", range(40))
def test_weighted_upper_quantile_matches_the_full_sort(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 3000))
    values = np.round(rng.gamma(2.0, 1.0, n), int(rng.integers(0, 3)))  # ties when rounded
    weights = rng.integers(1, 12, n).astype(np.float64)
    if seed % 3 == 0:
        weights = 1.0 / weights  # fractional weights, as the weekly cycle's
    share = float(rng.choice([0.0, 0.001, 0.01, 0.05, 0.1, 0.5, 0.99]))
    assert weighted_upper_quantile(values, weights, share) == _by_definition(values, weights, share)


def test_weighted_upper_quantile_counts_heavy_samples_above() -> None:
    values = np.array([5.0, 1.0, 4.0, 2.0, 3.0])
    # 3.0 weighs 6 of 10: at most half the weight above 3.0 is 4.0 and 5.0 (2 of 10)
    assert weighted_upper_quantile(values, np.array([1.0, 1, 1, 1, 6]), 0.5) == 3.0
    assert weighted_upper_quantile(values, np.array([6.0, 1, 1, 1, 1]), 0.5) == 5.0


@pytest.mark.parametrize("p", [0.0, 0.5, 0.9, 0.95, 1.0])
def test_group_quantiles_are_numpys_inverted_cdf_per_group(p: float) -> None:
    rng = np.random.default_rng(7)
    groups = rng.integers(0, 14, 5000)
    values = rng.random(5000)
    names, counts, quantiles = group_quantiles(groups, values, p)
    assert names.tolist() == sorted(set(groups.tolist()))
    for name, count, q in zip(names.tolist(), counts.tolist(), quantiles.tolist(), strict=True):
        mine = values[groups == name]
        assert count == mine.size
        assert q == float(np.quantile(mine, p, method="inverted_cdf"))


@pytest.mark.parametrize("weights", [None, np.zeros(0)])
def test_weighted_upper_quantile_of_no_values_says_so(weights: np.ndarray | None) -> None:
    with pytest.raises(ValueError, match="no values"):
        weighted_upper_quantile(np.zeros(0), weights, 0.1)


def test_group_quantiles_of_no_values_are_empty() -> None:
    names, counts, values = group_quantiles(np.zeros(0, dtype=np.int64), np.zeros(0), 0.9)
    assert names.size == counts.size == values.size == 0


@pytest.mark.parametrize(
    "present", [(-3, -2, 0, 4, 10), (0, 1, 2, 5, 9, 13), (40_000, 40_002), (0, 7, 40_000)]
)
def test_group_quantiles_of_interleaved_groups_with_gaps(present: tuple[int, ...]) -> None:
    """Groups interleaved (several pods' samples one after the other), some absent, below zero,
    beyond 16 bits or spread wider than 16 bits: each still has its own ``inverted_cdf``
    quantile."""
    rng = np.random.default_rng(len(present))
    groups = rng.choice(np.array(present, dtype=np.int64), 3000)
    values = np.round(rng.gamma(2.0, 1.0, 3000), 1)  # ties
    names, counts, quantiles = group_quantiles(groups, values, 0.9)
    assert names.dtype == groups.dtype and quantiles.dtype == values.dtype
    assert names.tolist() == list(present)
    for name, count, q in zip(names.tolist(), counts.tolist(), quantiles.tolist(), strict=True):
        mine = values[groups == name]
        assert count == mine.size
        assert q == float(np.quantile(mine, 0.9, method="inverted_cdf"))


@pytest.mark.parametrize("order", ["ascending", "descending"])
def test_group_quantiles_of_groups_already_in_order(order: str) -> None:
    """Days counted back from now along time-ordered samples (descending), or the reverse:
    the same quantiles as for the groups shuffled."""
    rng = np.random.default_rng(3)
    groups = np.sort(rng.integers(0, 14, 4000))
    groups = groups if order == "ascending" else groups[::-1].copy()
    values = np.round(rng.gamma(2.0, 1.0, 4000), 1)
    shuffled = rng.permutation(4000)
    mine = group_quantiles(groups, values, 0.95)
    other = group_quantiles(groups[shuffled], values[shuffled], 0.95)
    assert all(np.array_equal(a, b) for a, b in zip(mine, other, strict=True))
    assert mine[2].tolist() == [
        float(np.quantile(values[groups == g], 0.95, method="inverted_cdf")) for g in mine[0]
    ]
