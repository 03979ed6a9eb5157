"""The compiled step values (rates of counters, step maxima of gauges) and their numpy twins:
the same doubles to the bit where the kernels answer, the twins elsewhere."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot import native
from bot.metrics.raw import counter_rates, step_max
from bot.native import rates

WINDOW = {"first_s": 1_000.0, "last_s": 1_000.0 + 60.0 * 400, "step_s": 60.0}
KW = {"first_s": 1_000.0, "step_s": 60.0}


def _both(fn, t, v, **kw):
    """The function's answer with the kernels and without: the same bytes."""
    with np.errstate(invalid="ignore"):  # inf - inf in the twins
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv(native.SWITCH, "off")
            twin = fn(t, v, **kw)
        compiled = fn(t, v, **kw)
    assert compiled[0].tobytes() == twin[0].tobytes()
    assert compiled[1].tobytes() == twin[1].tobytes()
    return compiled


def _counter(t, v):
    return _both(counter_rates, t, v, max_gap_s=150.0, **WINDOW)


def _gauge(t, v):
    return _both(step_max, t, v, **WINDOW)


def test_the_kernels_take_a_regular_series():
    """One scrape per step, a reset, a gap and samples out of the window: the usual case."""
    t = 1_000.0 + 60.0 * np.arange(-5, 420) + 0.25
    t = np.delete(t, [30, 31, 32])  # a hole longer than the rate window
    v = np.cumsum(np.linspace(0.1, 3.0, len(t)))
    v[200:] -= v[199]  # a counter reset
    assert rates.counter_rates(t, v, **KW, steps=400, max_gap_s=150.0 + 1e-6) is not None
    assert rates.step_max(t, v, **KW, steps=400) is not None
    times, rate = _counter(t, v)
    assert 380 < len(times) < 400 and np.all(rate >= 0)
    times, peak = _gauge(t, v)
    assert len(times) == 398 and np.isin(peak, v).all()  # 401 steps, 3 missing


def test_other_layouts_go_to_the_twins():
    t = 1_000.0 + np.array([0.0, 10.0, 20.0, 80.0, 70.0, 140.0])  # two per step, then back
    v = np.array([1.0, 2.0, 4.0, 5.0, 9.0, 10.0])
    assert rates.step_max(t, v, **KW, steps=400) is None
    assert rates.counter_rates(t, v, **KW, steps=400, max_gap_s=150.0) is None
    assert rates.step_max(np.array([np.nan]), np.array([1.0]), **KW, steps=400) is None
    assert rates.step_max(t.astype(np.float32), v, **KW, steps=400) is None
    assert rates.step_max(t, v, **KW, steps=2**63) is None
    _counter(t, v)
    _gauge(t, v)


values = st.one_of(
    st.floats(-1e6, 1e9), st.just(float("nan")), st.just(float("inf")), st.just(-0.0)
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from([60.0, 60.0, 60.0, 15.0, 0.0, 61.5, 300.0, -30.0]), values),
        max_size=60,
    ),
    st.floats(-600.0, 600.0),
)
def test_random_series_give_the_twins_numbers(steps, offset):
    """Regular scrapes, faster ones, repeats, holes, going back, resets, NaN and infinities."""
    t = 1_000.0 + offset + np.cumsum([dt for dt, _ in steps], dtype=np.float64)
    v = np.array([value for _, value in steps], dtype=np.float64)
    _counter(t, v)
    _gauge(t, v)
    _counter(t, np.cumsum(np.abs(np.nan_to_num(v)) % 1e3))


def test_two_weeks_of_a_container_alike():
    rng = np.random.default_rng(3)
    n = 14 * 1440
    t = 1_767_225_600.0 + 60.0 * np.arange(n) + 7.25 + rng.integers(0, 3, n) / 1000
    usage = np.cumsum(np.abs(rng.normal(0.3, 0.2, n)) * 60)
    window = {"first_s": 1_767_225_600.0, "last_s": float(t[-1]), "step_s": 60.0}
    for fn, kw in ((counter_rates, {"max_gap_s": 150.0}), (step_max, {})):
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv(native.SWITCH, "off")
            twin = fn(t, usage, **window, **kw)
        compiled = fn(t, usage, **window, **kw)
        assert len(compiled[0]) > n - 5
        assert compiled[0].tobytes() == twin[0].tobytes()
        assert compiled[1].tobytes() == twin[1].tobytes()
