"""``_order_pair``'s search (a threshold from every 16th value, else a partial sort of the whole
array): the two values of a full sort."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.recommend.replay.figures import _order_pair


def _alike(values: np.ndarray, k: int) -> None:
    ordered = np.sort(values)
    assert _order_pair(values.copy(), k) == (float(ordered[k]), float(ordered[k + 1]))


@settings(max_examples=150, deadline=None)
@given(
    st.integers(2, 3000),
    st.integers(0, 2**32 - 1),
    st.sampled_from(["lognormal", "few values", "integers", "spiky"]),
    st.floats(0.0, 1.0),
)
def test_the_pair_is_that_of_a_sort(n, seed, kind, where):
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
    _alike(values, min(int(where * (n - 1)), n - 2))


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
def test_ordered_and_repeated_series_give_a_sorts_pair(make, q):
    n = 20_160
    _alike(make(n), int(q * (n - 1)))
