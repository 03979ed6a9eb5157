"""The compiled pair of order statistics (``bot.native.order``) and ``_order_pair``'s numpy
search: the same two values, which are those of a full sort."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.native import order
from bot.recommend.replay import figures


def _twin(values: np.ndarray, k: int) -> tuple[float, float]:
    with pytest.MonkeyPatch.context() as m:
        m.setattr(order, "order_pair", lambda *_: None)
        return figures._order_pair(values.copy(), k)


def _sorted(values: np.ndarray, k: int) -> tuple[float, float]:
    ordered = np.sort(values)
    return float(ordered[k]), float(ordered[k + 1])


def _alike(values: np.ndarray, k: int) -> None:
    before = values.copy()
    compiled = order.order_pair(values, k)
    assert compiled is not None
    assert np.array_equal(values, before)  # the kernel reads, never reorders
    assert compiled == _twin(values, k) == _sorted(values, k)


@settings(max_examples=150, deadline=None)
@given(
    st.integers(2, 3000),
    st.integers(0, 2**32 - 1),
    st.sampled_from(["lognormal", "few values", "integers", "spiky"]),
    st.floats(0.0, 1.0),
)
def test_the_compiled_pair_is_the_twins(n, seed, kind, where):
    """Short series (the whole array searched) and long ones (the sample's threshold),
    repeated values, ranks from the first to the last pair."""
    rng = np.random.default_rng(seed)
    if kind == "lognormal":
        values = rng.lognormal(-1.0, 0.6, n)
    elif kind == "few values":
        values = rng.choice([0.0, 0.25, 0.5, 3.0], n)
    elif kind == "integers":
        values = rng.integers(0, 20, n).astype(np.float64)
    else:
        values = rng.lognormal(-3.0, 0.2, n)
        values[rng.integers(0, n, max(1, n // 50))] *= 40.0
    k = min(int(where * (n - 1)), n - 2)
    _alike(values, k)


@pytest.mark.parametrize(
    "make",
    [
        lambda n: np.arange(n, dtype=np.float64),  # in order
        lambda n: np.arange(n, dtype=np.float64)[::-1].copy(),  # reversed
        lambda n: np.concatenate([np.arange(n // 2), np.arange(n - n // 2)[::-1]]).astype(float),
        np.zeros,  # one value
        lambda n: np.where(np.arange(n) % 97 == 0, 5.0, 0.0),  # zeros but a few
        lambda n: np.where(np.arange(n) < 16 * 64, 9.0, 1.0),  # a sample that misleads
    ],
    ids=["ascending", "descending", "organ pipe", "constant", "sparse", "misleading"],
)
@pytest.mark.parametrize("q", [0.5, 0.95, 0.999])
def test_ordered_and_repeated_series_alike(make, q):
    n = 20_160
    values = make(n)
    _alike(values, int(q * (n - 1)))


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf"), -0.0])
def test_what_numpy_may_order_otherwise_goes_to_the_twin(bad):
    values = np.linspace(0.0, 1.0, 5000)
    values[1234] = bad
    assert order.order_pair(values, 4000) is None
    assert order.order_pair(values[:100].copy(), 50) is not None  # without it: taken


@pytest.mark.parametrize(("n", "k"), [(1, 0), (5, 4), (5, -1), (0, 0)])
def test_a_rank_without_a_next_value_is_refused(n, k):
    assert order.order_pair(np.arange(float(n)), k) is None
