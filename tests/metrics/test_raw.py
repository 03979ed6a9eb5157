"""Client-side step values from raw samples: rate() and max_over_time() semantics."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.metrics.raw import EPSILON_S, combine_max, counter_rates, step_max

STEP = 60.0
T0 = 1_767_225_600.0


def _t(*steps: float) -> np.ndarray:
    return T0 + np.asarray(steps, dtype=np.float64) * STEP


@pytest.mark.parametrize(
    ("steps", "values", "want_t", "want_v"),
    [
        ((0, 1, 2), (0.0, 60.0, 180.0), (1, 2), (1.0, 2.0)),
        ((0, 1, 2), (600.0, 660.0, 30.0), (1, 2), (1.0, 0.5)),  # reset: the new value counts
        ((0, 1, 5, 6), (0.0, 60.0, 120.0, 180.0), (1, 6), (1.0, 1.0)),  # gap: no rate across
        ((-1, 0), (0.0, 30.0), (0,), (0.5,)),  # the sample before the window feeds the first step
    ],
    ids=["steady", "counter-reset", "gap", "lead-sample"],
)
def test_counter_rates_match_rate_over_one_step(steps, values, want_t, want_v):
    t, v = counter_rates(
        _t(*steps),
        np.asarray(values),
        first_s=T0,
        last_s=T0 + 10 * STEP,
        step_s=STEP,
        max_gap_s=STEP,
    )
    np.testing.assert_array_equal(t, _t(*want_t))
    np.testing.assert_allclose(v, want_v)


def test_faster_scrapes_give_the_mean_rate_of_each_step():
    t = T0 + np.arange(0, 241, 15, dtype=np.float64)  # 15 s scrapes over 4 steps
    v = np.cumsum(np.r_[0.0, np.full(len(t) - 1, 15.0) * np.repeat([1.0, 2.0, 3.0, 4.0], 4)])
    times, rate = counter_rates(t, v, first_s=T0, last_s=T0 + 240, step_s=STEP, max_gap_s=STEP)
    np.testing.assert_array_equal(times, _t(1, 2, 3, 4))
    np.testing.assert_allclose(rate, [1.0, 2.0, 3.0, 4.0])


def test_step_max_is_max_over_the_half_open_step():
    t = T0 + np.asarray([0.0, 30.0, 60.0, 61.0, 119.0, 500.0])
    v = np.asarray([5.0, 9.0, 7.0, 1.0, 3.0, 8.0])
    times, peak = step_max(t, v, first_s=T0, last_s=T0 + 120, step_s=STEP)
    np.testing.assert_array_equal(times, _t(0, 1, 2))
    np.testing.assert_array_equal(peak, [5.0, 9.0, 3.0])  # 500 s is past the window


def test_combine_max_takes_the_highest_value_per_time():
    a = (_t(0, 1, 2), np.asarray([1.0, 5.0, 2.0]))
    b = (_t(1, 2, 3), np.asarray([3.0, 4.0, 6.0]))
    t, v = combine_max([a, b, (np.zeros(0), np.zeros(0))])
    np.testing.assert_array_equal(t, _t(0, 1, 2, 3))
    np.testing.assert_array_equal(v, [1.0, 5.0, 4.0, 6.0])


def test_samples_out_of_time_order_give_the_same_steps():
    t = np.arange(0.0, 600.0, 15.0) + 1.0
    v = np.cumsum(np.linspace(0.5, 3.0, t.size))
    window = {"first_s": 60.0, "last_s": 600.0, "step_s": 60.0}
    order = np.random.default_rng(0).permutation(t.size)
    sorted_max, shuffled_max = (step_max(t[o], v[o], **window) for o in (slice(None), order))
    np.testing.assert_array_equal(sorted_max[0], shuffled_max[0])
    np.testing.assert_array_equal(sorted_max[1], shuffled_max[1])
    assert sorted_max[1].tolist() == [v[t <= e][t[t <= e] > e - 60].max() for e in sorted_max[0]]


def _by_step(t: np.ndarray, v: np.ndarray, *, counter: bool) -> tuple[list[float], list[float]]:
    """The module doc's rule, one evaluation step at a time (samples taken in time order)."""
    first, last, step, gap = 1_000.0, 1_000.0 + 60.0 * 400, 60.0, 150.0 + EPSILON_S
    order = np.argsort(t, kind="stable")
    pairs = []  # (step number, increase, dt) or (step number, value)
    if counter:
        for a, b in zip(range(len(t) - 1), range(1, len(t)), strict=True):
            dt = float(t[b] - t[a])
            if 0 < dt <= gap:
                dv = float(v[b] - v[a])
                pairs.append((float(t[b]), dv if dv >= 0 else float(v[b]), dt))
    else:
        pairs = [(float(t[i]), float(v[i]), 0.0) for i in order.tolist()]
    steps: dict[int, list[tuple[float, float]]] = {}
    for at, x, dt in pairs:
        k = math.ceil((at - first) / step - EPSILON_S)
        if 0 <= k <= math.floor((last - first) / step + EPSILON_S / step):
            steps.setdefault(k, []).append((x, dt))
    times = [first + k * step for k in sorted(steps)]
    if counter:
        values = [
            sum(x for x, _ in steps[k]) / sum(dt for _, dt in steps[k]) for k in sorted(steps)
        ]
    else:
        values = [max(x for x, _ in steps[k]) for k in sorted(steps)]
    return times, values


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from([60.0, 60.0, 15.0, 61.5, 300.0]), st.floats(0.0, 1e6)),
        min_size=2,
        max_size=60,
    ),
    st.floats(-600.0, 600.0),
)
def test_random_series_give_the_rule_step_by_step(steps, offset):
    """Regular scrapes, faster ones, holes and resets, in time order."""
    t = 1_000.0 + offset + np.cumsum([dt for dt, _ in steps], dtype=np.float64)
    v = np.array([value for _, value in steps], dtype=np.float64)
    window = {"first_s": 1_000.0, "last_s": 1_000.0 + 60.0 * 400, "step_s": 60.0}
    for counter in (True, False):
        want = _by_step(t, v, counter=counter)
        got = (
            counter_rates(t, v, max_gap_s=150.0, **window) if counter else step_max(t, v, **window)
        )
        assert got[0].tolist() == want[0]
        if counter:  # numpy sums a step's increases pairwise, the rule left to right
            np.testing.assert_allclose(got[1], want[1], rtol=1e-12, atol=0)
        else:
            assert got[1].tolist() == want[1]
