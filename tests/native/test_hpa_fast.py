"""The compiled fast model of the HPA controller and its numpy twin: the same replicas and
reach to the bit."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot import native
from bot.native import hpa
from bot.recommend.replay.controller import Metric, Scratch, replay_fast_reach


def _both(metrics: list[Metric], step_s: float, **kw: int) -> None:
    compiled = replay_fast_reach(metrics, step_s=step_s, scratch=Scratch(), **kw)
    with pytest.MonkeyPatch.context() as m:
        m.setenv(native.SWITCH, "off")
        twin = replay_fast_reach(metrics, step_s=step_s, scratch=Scratch(), **kw)
    assert np.array_equal(compiled[0], twin[0])
    assert compiled[1] == twin[1]


usage_values = st.one_of(
    st.floats(0.0, 60.0), st.sampled_from([float("nan"), float("inf"), 0.0, 1.5, 1e300])
)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(usage_values, usage_values), min_size=1, max_size=80),
    st.lists(st.tuples(st.floats(0.01, 4.0), st.integers(1, 200)), min_size=2, max_size=2),
    st.integers(0, 6),
    st.integers(0, 60),
    st.integers(0, 15),
    st.sampled_from([15.0, 30.0, 60.0, 120.0, 600.0]),
)
def test_the_compiled_fast_model_is_its_twin(rows, shapes, low, span, initial, step_s):
    """Random loads with gaps (NaN), infinite and huge loads, one or two metrics, bounds in or
    out of order (the twin alone then), any start and step."""
    columns = np.array(rows, dtype=np.float64).T
    metrics = [Metric(columns[i], r, t) for i, (r, t) in enumerate(shapes)]
    for chosen in (metrics[:1], metrics):
        _both(chosen, step_s, min_replicas=low, max_replicas=low + span, initial=initial)
    _both(metrics, step_s, min_replicas=low + span, max_replicas=low, initial=initial)


@pytest.mark.parametrize("noise", [0.0, 0.01, 0.3])
@pytest.mark.parametrize("bounds", [(2, 25), (1, 6), (8, 8)])
def test_two_weeks_of_a_daily_load_give_the_same_path(noise, bounds):
    """Runs held in the tolerance band and broken out of it, rises at the scale-up limit,
    both clamps."""
    rng = np.random.default_rng(11)
    steps = np.arange(14 * 1440)
    load = (3.0 + 2.5 * np.sin(steps / 1440 * 2 * np.pi)) * (
        1 + noise * rng.standard_normal(steps.size)
    )
    load[rng.integers(0, steps.size, 50)] = np.nan
    load[9000:9030] *= 8.0  # a burst the rate limit slows
    metrics = [Metric(np.abs(load), 0.5, 60), Metric(np.abs(load) * 0.3, 0.125, 80)]
    low, high = bounds
    _both(metrics, 60.0, min_replicas=low, max_replicas=high, initial=4)
    _both(metrics[:1], 60.0, min_replicas=low, max_replicas=high, initial=30)


def test_the_kernel_takes_only_what_it_reads_whole():
    kw: dict[str, Any] = {
        "min_replicas": 1,
        "max_replicas": 9,
        "start": 2.0,
        "reach": 2.0,
        "syncs": 4,
    }
    scratch = (np.empty(10), np.empty(10), np.empty(10))
    with pytest.raises(ValueError, match="one length"):
        hpa.fast(
            [np.ones(10), np.ones(9)],
            [0.5] * 2,
            [50.0] * 2,
            [1.0] * 2,
            window=5,
            scratch=scratch,
            **kw,
        )
    with pytest.raises(ValueError, match="scratch"):
        hpa.fast(
            [np.ones(10)],
            [0.5],
            [50.0],
            [1.0],
            window=5,
            scratch=(np.empty(9), np.empty(10), np.empty(10)),
            **kw,
        )
    # refused, the numpy model runs: one step, a window beyond the bound, bounds out of order
    assert (
        hpa.fast([np.ones(1)], [0.5], [50.0], [1.0], window=5, scratch=(np.empty(1),) * 3, **kw)
        is None
    )
    assert (
        hpa.fast(
            [np.ones(10)], [0.5], [50.0], [1.0], window=hpa.WINDOW_MAX + 1, scratch=scratch, **kw
        )
        is None
    )
    assert (
        hpa.fast(
            [np.ones(10)],
            [0.5],
            [50.0],
            [1.0],
            window=5,
            scratch=scratch,
            **{**kw, "min_replicas": 10},
        )
        is None
    )
