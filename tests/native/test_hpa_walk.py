"""The compiled HPA walk and fast model and their twins (Python, numpy): built here, and the
same replicas and reach to the bit."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot import native
from bot.native import hpa
from bot.recommend.replay.controller import (
    Metric,
    Scratch,
    _rate_limited,
    replay_exact_reach,
    replay_fast_reach,
    syncs_per_step,
    walk_in_python,
    window_steps,
)


def test_the_kernels_are_built_where_the_suite_runs():
    """``scripts/setup`` installs a C compiler and builds them; without it the twins run (and
    this fails, so a setup that lost the build is seen)."""
    assert native.library_path() is not None
    assert native.kernels() is not None


def test_switched_off_the_twins_run(monkeypatch):
    monkeypatch.setenv(native.SWITCH, "off")
    assert native.kernels() is None
    metrics = [Metric(np.array([1.0, 3.0, 3.0]), 0.5, 50)]
    kw = {"min_replicas": 1, "max_replicas": 9, "initial": 2, "syncs": 4, "window": 5}
    assert hpa.walk([m.usage for m in metrics], [0.5], [50.0], **kw) is None


def _both(metrics: list[Metric], step_s: float, **kw: int) -> None:
    compiled = replay_exact_reach(metrics, step_s=step_s, **kw)
    twin = walk_in_python(metrics, len(metrics[0].usage), step_s=step_s, **kw)
    assert np.array_equal(compiled[0], twin[0])
    assert compiled[1] == twin[1]
    walked = hpa.walk(
        [m.usage for m in metrics],
        [m.request for m in metrics],
        [float(m.target_percent) for m in metrics],
        syncs=syncs_per_step(step_s),
        window=window_steps(step_s),
        **kw,
    )
    assert walked is not None and np.array_equal(walked[0], twin[0])
    _fast_alike(metrics, step_s, **kw)


def _fast_alike(metrics: list[Metric], step_s: float, **kw: int) -> None:
    """The fast model compiled and in numpy (``TORTOISE_BOT_NATIVE=off``)."""
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
def test_the_compiled_walk_is_its_twin(rows, shapes, low, span, initial, step_s):
    """Every path, reach and bound the twin gives, the kernel gives: random loads with gaps
    (NaN), infinite and huge loads, one or two metrics, bounds in or out of order (the fast
    model's numpy twin alone then), any start and step."""
    columns = np.array(rows, dtype=np.float64).T
    metrics = [Metric(columns[i], r, t) for i, (r, t) in enumerate(shapes)]
    for chosen in (metrics[:1], metrics):
        _both(chosen, step_s, min_replicas=low, max_replicas=low + span, initial=initial)
    _both(metrics, step_s, min_replicas=low + span, max_replicas=low, initial=initial)


extreme_usage = st.one_of(
    st.floats(-3.0, 60.0),
    st.floats(1e10, 1e20),  # quotients near 2^52 and past 9e18: where the paired steps stop
    st.sampled_from([float("nan"), float("inf"), -0.0, 0.0, 2.0**52, 9.0e18, -1e300]),
)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(extreme_usage, min_size=1, max_size=41),
    st.floats(0.01, 4.0),
    st.integers(1, 200),
    st.integers(0, 6),
    st.integers(0, 60),
    st.integers(0, 15),
    st.sampled_from([15.0, 60.0, 100.0, 150.0, 300.0, 600.0]),
)
def test_one_metrics_fast_model_is_its_twin_at_the_edges(
    usage, request, target, low, span, initial, step_s
):
    """One metric (its steps go two at a time in the kernel): negative, signed-zero, huge and
    missing loads, odd and even lengths, stabilisation windows of 1 to 20 steps."""
    metric = [Metric(np.array(usage, dtype=np.float64), request, target)]
    _fast_alike(metric, step_s, min_replicas=low, max_replicas=low + span, initial=initial)


@pytest.mark.parametrize("noise", [0.0, 0.01, 0.3])
@pytest.mark.parametrize("bounds", [(2, 25), (1, 6), (8, 8)])
def test_two_weeks_of_a_daily_load_walk_alike(noise, bounds):
    """Runs held in the tolerance band and broken out of it, rises at the scale-up limit,
    both clamps."""
    rng = np.random.default_rng(7)
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


@pytest.mark.parametrize("step_s", [0.5, 15.0, 60.0])
def test_a_long_stabilisation_window_walks_alike(step_s):
    """Windows of 600, 20 and 5 steps."""
    rng = np.random.default_rng(5)
    load = 2.0 + np.abs(np.cumsum(rng.standard_normal(3000))) * 0.05
    _both([Metric(load, 0.25, 70)], step_s, min_replicas=1, max_replicas=40, initial=3)


def test_the_kernel_is_never_handed_arrays_it_would_read_past():
    kw = {"min_replicas": 1, "max_replicas": 9, "initial": 2, "syncs": 4, "window": 5}
    with pytest.raises(ValueError, match="one length"):
        hpa.walk([np.ones(10), np.ones(9)], [0.5, 0.5], [50.0, 50.0], **kw)
    with pytest.raises(ValueError, match="one length"):
        hpa.walk([np.ones(10)], [0.5, 0.5], [50.0], **kw)
    fast: dict[str, Any] = {**kw, "start": 2.0, "reach": 2.0}
    del fast["initial"]
    one = ([0.5], [50.0], [1.0])
    with pytest.raises(ValueError, match="one length"):
        hpa.fast(
            [np.ones(10), np.ones(9)],
            [0.5] * 2,
            [50.0] * 2,
            [1.0] * 2,
            **fast,
            scratch=_scratch(10),
        )
    with pytest.raises(ValueError, match="one length"):
        hpa.fast([np.ones(10)], [0.5] * 2, [50.0], [1.0], **fast, scratch=_scratch(10))
    with pytest.raises(ValueError, match="scratch"):
        hpa.fast([np.ones(10)], *one, **fast, scratch=_scratch(9))
    # refused (the numpy model then): one step, a window beyond the bound, bounds out of order
    assert hpa.fast([np.ones(1)], *one, **fast, scratch=_scratch(1)) is None
    long_window = {**fast, "window": hpa.WINDOW_MAX + 1}
    assert hpa.fast([np.ones(10)], *one, **long_window, scratch=_scratch(10)) is None
    assert (
        hpa.fast([np.ones(10)], *one, **{**fast, "min_replicas": 10}, scratch=_scratch(10)) is None
    )


def _scratch(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return np.empty(n), np.empty(n), np.empty(n)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(0, 400) | st.integers(0, 6), min_size=0, max_size=60),
    st.integers(1, 8),
)
def test_the_compiled_rate_limit_is_its_twin(path, syncs):
    """Rises within and beyond what the Pods policy alone allows, and flat runs (replica
    counts are never negative)."""
    compiled = np.array(path, dtype=np.int64)
    assert hpa.rate_limit(compiled, syncs) or len(path) < 2
    with pytest.MonkeyPatch.context() as switched:
        switched.setenv(native.SWITCH, "off")
        twin = _rate_limited(np.array(path, dtype=np.int64), syncs)
    assert np.array_equal(compiled, twin)


def test_a_kernel_declared_twice_with_other_types_is_refused():
    import ctypes

    first = native.kernel(
        "tb_rate_limit", ctypes.c_int, [ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64]
    )
    assert first is not None
    with pytest.raises(TypeError, match="other types"):
        native.kernel("tb_rate_limit", ctypes.c_int, [ctypes.c_void_p, ctypes.c_int64])
    assert (
        native.kernel(
            "tb_rate_limit", ctypes.c_int, [ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64]
        )
        is first
    )
