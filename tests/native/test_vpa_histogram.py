"""The compiled VPA histogram passes and their numpy twins: the same numbers to the bit."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot import native
from bot.config.recommend import VpaSettings
from bot.model import ContainerHistory, ResourceValues
from bot.native import vpa as native_vpa
from bot.recommend.tortoise.requests import sticky_max
from bot.recommend.vpa.aggregate import (
    ReplayGrid,
    _usage_of_counts,
    cpu_counters,
    memory_compiled,
    memory_peaks,
    replay_compiled,
    replay_rows,
    usage_compiled,
    usage_from_counts,
)
from bot.recommend.vpa.estimator import estimate
from bot.recommend.vpa.histogram import (
    CPU_OPTIONS,
    MEMORY_OPTIONS,
    HistogramOptions,
    _percentiles_2d,
    linear_options,
    percentiles,
)
from bot.recommend.vpa.recommender import TooLittleData, _cpu_whole, recommend_container
from bot.recommend.window import Window

DAY_S = 86400.0
T0 = 1_700_000_000.0


def _edge_values(options: HistogramOptions) -> np.ndarray:
    """Every bucket start and its two neighbouring doubles: where a bucket could be off."""
    s = options.starts
    near = np.unique(np.concatenate([s, np.nextafter(s, -np.inf), np.nextafter(s, np.inf)]))
    return near[near >= 0]


def _same_replay(
    values: np.ndarray,
    times: np.ndarray,
    options: HistogramOptions,
    grid: ReplayGrid,
    half_life_s: float = DAY_S,
    strict: bool = False,
) -> None:
    """``replay_compiled`` against ``replay_rows``, ``cpu_counters`` and ``usage_from_counts``
    (times in order: with the counters)."""
    compiled = replay_compiled(
        values,
        0.1,
        times,
        times,
        grid=grid,
        options=options,
        half_life_s=half_life_s,
        counters=True,
        times_sorted=True,
        strict=strict,
    )
    assert compiled is not None and compiled.counters is not None
    buckets = options.find_buckets(values)
    twin = replay_rows(
        values,
        0.1,
        times,
        None,
        grid=grid,
        options=options,
        half_life_s=half_life_s,
        buckets=buckets,
    )
    assert compiled.rows.first_bucket == twin.first_bucket
    assert np.array_equal(compiled.rows.used, twin.used)
    assert np.array_equal(compiled.rows.totals, twin.totals)
    assert compiled.rows.reference_s == twin.reference_s
    counters = cpu_counters(times, None, grid)
    assert np.array_equal(compiled.counters.counts, counters.counts)
    assert np.array_equal(compiled.counters.last_s, counters.last_s)
    assert compiled.counters.first_s == counters.first_s
    assert compiled.usage == usage_from_counts(values, options, buckets)
    assert compiled.usage == usage_from_counts(values, options)
    p = (0.5, 0.9, 0.95)
    assert np.array_equal(compiled.rows.percentiles(p), twin.percentiles(p))


def test_the_kernels_are_built_where_the_suite_runs():
    assert native.kernels() is not None
    assert native_vpa.bucket_counts(np.array([1.0]), starts=CPU_OPTIONS.starts) is not None


def test_switched_off_the_twins_run(monkeypatch):
    monkeypatch.setenv(native.SWITCH, "off")
    times = T0 + 60.0 * np.arange(10, dtype=np.float64)
    grid = ReplayGrid.covering(T0, T0 + 600, 120.0)
    assert (
        replay_compiled(
            np.ones(10), 1.0, times, times, grid=grid, options=CPU_OPTIONS, half_life_s=DAY_S
        )
        is None
    )
    assert usage_compiled(np.ones(10), MEMORY_OPTIONS) is None
    assert native_vpa.percentile_rows(np.ones((2, 3)), np.ones(2), (0.5,), 1e-10) is None


@pytest.mark.parametrize("options", [CPU_OPTIONS, MEMORY_OPTIONS], ids=["cpu", "memory"])
def test_every_bucket_edge_lands_alike(options):
    """The starts and their neighbours, in a shuffled order, over a few replay steps."""
    values = _edge_values(options)
    values = np.random.default_rng(3).permutation(values)
    times = T0 + 60.0 * np.arange(values.size)
    grid = ReplayGrid.covering(T0, float(times[-1]) + 60.0, 3600.0)
    _same_replay(values, times, options, grid)
    counts = native_vpa.bucket_counts(values, starts=options.starts)
    assert counts is not None
    assert np.array_equal(counts[0], np.bincount(options.find_buckets(values), minlength=176))


finite_values = st.one_of(
    st.floats(0.0, 5000.0),
    st.floats(0.0, 2e12),
    st.sampled_from([0.0, 0.01, 1e7, 5e-324, 1e300]),
)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(finite_values, st.floats(0.0, 7 * DAY_S)), min_size=1, max_size=120),
    st.sampled_from([600.0, 3600.0, 21600.0]),
    st.floats(-DAY_S, DAY_S),
    st.sampled_from([CPU_OPTIONS, MEMORY_OPTIONS]),
)
def test_random_series_replay_alike(rows, step_s, grid_shift, options):
    """Any values (zero, tiny, huge), times in order with repeats, a grid that starts before,
    at or after the first sample (every step clipped into range)."""
    values = np.array([v for v, _ in rows], dtype=np.float64)
    times = T0 + np.sort(np.array([t for _, t in rows], dtype=np.float64))
    grid = ReplayGrid.covering(T0 + grid_shift, float(times[-1]) + 1.0, step_s)
    _same_replay(values, times, options, grid)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(finite_values, st.floats(0.0, 7 * DAY_S)), min_size=1, max_size=60),
)
def test_steps_from_other_times_replay_alike(rows):
    """Memory peaks: the step from one time (window start, any order), the decay from another."""
    values = np.array([v for v, _ in rows], dtype=np.float64)
    starts = T0 + np.array([t for _, t in rows], dtype=np.float64)
    ends = starts + DAY_S
    grid = ReplayGrid.covering(T0, T0 + 8 * DAY_S, 21600.0)
    compiled = replay_compiled(
        values, 1.0, ends, starts, grid=grid, options=MEMORY_OPTIONS, half_life_s=DAY_S
    )
    twin = replay_rows(
        values,
        1.0,
        ends,
        grid.bins(starts),
        grid=grid,
        options=MEMORY_OPTIONS,
        half_life_s=DAY_S,
    )
    assert compiled is not None and compiled.counters is None
    assert compiled.rows.first_bucket == twin.first_bucket
    assert np.array_equal(compiled.rows.used, twin.used)
    assert np.array_equal(compiled.rows.totals, twin.totals)


@pytest.mark.parametrize("noise", [0.0, 0.3])
def test_two_weeks_of_minutes_replay_alike(noise):
    rng = np.random.default_rng(11)
    times = T0 + 60.0 * np.arange(14 * 1440)
    daily = 1.0 + 0.5 * np.sin(2 * np.pi * (times % DAY_S) / DAY_S)
    cpu = 0.4 * daily * rng.lognormal(0.0, noise, times.size) if noise else 0.4 * daily
    grid = ReplayGrid.covering(T0, float(times[-1]) + 60.0, 21600.0)
    _same_replay(cpu, times, CPU_OPTIONS, grid)
    memory = 6e8 * (0.9 + 0.1 * daily) * (1 + noise * rng.random(times.size))
    assert usage_compiled(memory, MEMORY_OPTIONS) == usage_from_counts(memory, MEMORY_OPTIONS)


def _stretches(rng: np.random.Generator) -> np.ndarray:
    """CPU usage in stretches of 200 samples: one value (a run in one bucket), noise (a new
    bucket at most samples), idle (bucket 0, below the guess table), two buckets in turn, above
    the last bucket start, on the bucket starts and their neighbours."""
    s = CPU_OPTIONS.starts
    edges = np.abs(np.nextafter(s[rng.integers(0, s.size, 200)], rng.choice([-1, 1], 200) * 9))
    return np.concatenate(
        [
            np.full(200, 0.3),
            0.5 * rng.lognormal(0.0, 0.3, 200),
            np.full(200, 0.0),
            1e-4 * rng.random(200),
            np.resize([0.3, 0.7], 200),
            np.full(200, 0.3),
            2000.0 + rng.random(200),
            edges,
            np.full(200, 5e-324),
        ]
    )


@pytest.mark.parametrize("half_life_s", [DAY_S, 60.0], ids=["day", "minute"])
@pytest.mark.parametrize("strict", [False, True])
def test_runs_in_one_bucket_and_noise_replay_alike(half_life_s, strict):
    """Long stretches of each kind in steps with gaps (steps without a sample, the first
    steps before the samples); with a half-life of a minute the older samples weigh exactly 0,
    so buckets only they reached have a zero sum and are not used."""
    values = _stretches(np.random.default_rng(4))
    times = T0 + 60.0 * np.arange(values.size, dtype=np.float64)
    times[900:] += 4 * 3600.0  # steps with no sample
    grid = ReplayGrid.covering(T0 - 3 * 3600.0, float(times[-1]) + 60.0, 3600.0)
    _same_replay(values, times, CPU_OPTIONS, grid, half_life_s=half_life_s, strict=strict)
    memory = values * 1e9
    _same_replay(memory, times, MEMORY_OPTIONS, grid, half_life_s=half_life_s, strict=strict)


@pytest.mark.parametrize("at", [0, 500, -1])
@pytest.mark.parametrize("bad", [math.nan, math.inf, -1.0, -0.0])
def test_a_bad_value_anywhere_in_order_goes_to_the_twin(bad, at):
    """Times in order (the counters' pass): one value it does not take, first, amid or last."""
    values = 0.5 * np.random.default_rng(1).lognormal(0.0, 0.3, 1000)
    values[at] = bad
    times = T0 + 60.0 * np.arange(values.size, dtype=np.float64)
    grid = ReplayGrid.covering(T0, float(times[-1]) + 60.0, 3600.0)
    kw: dict[str, Any] = {"grid": grid, "options": CPU_OPTIONS, "half_life_s": DAY_S}
    assert replay_compiled(values, 1.0, times, times, counters=True, **kw) is None
    late = T0 + 60.0 * np.arange(values.size, dtype=np.float64)
    late[at] += 90.0 if at == 0 else -90.0  # out of order
    good = np.ones(values.size)
    assert replay_compiled(good, 1.0, late, late, counters=True, **kw) is None
    same = T0 + 60.0 * np.arange(values.size, dtype=np.float64)
    same[at or 1] = same[(at or 1) - 1]  # a repeated time: only the strict pass refuses it
    assert replay_compiled(good, 1.0, same, same, counters=True, strict=True, **kw) is None
    assert replay_compiled(good, 1.0, same, same, counters=True, **kw) is not None


@pytest.mark.parametrize("bad", [math.nan, math.inf, -1.0])
def test_values_the_kernels_do_not_take_go_to_the_twins(bad):
    values = np.array([1.0, bad, 2.0])
    times = T0 + 60.0 * np.arange(3, dtype=np.float64)
    grid = ReplayGrid.covering(T0, T0 + 180, 60.0)
    assert (
        replay_compiled(
            values, 1.0, times, times, grid=grid, options=CPU_OPTIONS, half_life_s=DAY_S
        )
        is None
    )
    assert native_vpa.bucket_counts(values, starts=CPU_OPTIONS.starts) is None
    late = np.array([T0, T0 + 60, T0 + 30])  # the counters need times in order
    assert (
        replay_compiled(
            np.ones(3),
            1.0,
            late,
            late,
            grid=grid,
            options=CPU_OPTIONS,
            half_life_s=DAY_S,
            counters=True,
        )
        is None
    )
    linear = linear_options(10.0, 1.0, 1e-10)
    assert usage_compiled(np.ones(3), linear) is None


weights = st.one_of(st.just(0.0), st.floats(0.0, 1e-9), st.floats(0.0, 100.0))


@settings(max_examples=150, deadline=None)
@given(
    st.integers(1, 6),
    st.integers(1, 12),
    st.data(),
    st.lists(st.floats(0.0, 1.0), min_size=1, max_size=3),
    st.integers(0, 5),
)
def test_percentile_rows_alike(rows, cols, data, ps, first_bucket):
    """Rows with empty buckets, buckets lighter than epsilon (they still add to the running
    sum), empty rows, totals above or below the rows' sums; a slice of a wider array."""
    cells = data.draw(st.lists(weights, min_size=rows * cols, max_size=rows * cols))
    w = np.zeros((rows, cols + 3))
    w[:, 1 : cols + 1] = np.array(cells).reshape(rows, cols)
    view = w[:, 1 : cols + 1]
    totals = view.sum(axis=1) * data.draw(st.sampled_from([1.0, 0.5, 2.0]))
    p = tuple(ps)
    got = percentiles(view, totals, p, CPU_OPTIONS, first_bucket=first_bucket)
    want = _percentiles_2d(view, totals, p, CPU_OPTIONS, first_bucket=first_bucket)
    assert np.array_equal(got, want)
    one = percentiles(view, totals, p[0], CPU_OPTIONS)
    assert np.array_equal(one, _percentiles_2d(view, totals, p[0], CPU_OPTIONS))


def _twin(function, *args, **kwargs):
    """``function`` run with the kernels switched off."""
    with pytest.MonkeyPatch.context() as m:
        m.setenv(native.SWITCH, "off")
        return function(*args, **kwargs)


def _peaks_alike(t, p, v, interval_s: float) -> None:
    empty_f, empty_i = np.zeros(0), np.zeros(0, dtype=np.int64)
    kw: dict[str, Any] = {
        "oom_times_s": empty_f,
        "oom_pods": empty_i,
        "oom_request_bytes": empty_f,
        "interval_s": interval_s,
        "oom_bump_up_ratio": 1.2,
        "oom_min_bump_up_bytes": 1e8,
    }
    assert native_vpa.memory_peaks(t, p, v, interval_s) is not None
    got = memory_peaks(t, p, v, **kw)
    want = _twin(memory_peaks, t, p, v, **kw)
    for name in ("values", "window_start_s", "window_end_s", "oom_bumps"):
        assert np.array_equal(getattr(got, name), getattr(want, name)), name


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(st.floats(0.0, 10 * DAY_S), st.integers(0, 4), st.floats(0.0, 2e9)),
        min_size=1,
        max_size=60,
    ),
    st.sampled_from([3600.0, DAY_S, 7.0]),
    st.sampled_from([np.int32, np.int64]),
)
def test_memory_peaks_alike(rows, interval_s, pod_type):
    """Pods in order, each pod's times in order (repeats included), windows from each pod's
    first sample; times near window edges come from the short interval."""
    rows = sorted(rows, key=lambda r: (r[1], r[0]))
    t = T0 + np.array([r[0] for r in rows], dtype=np.float64)
    p = np.array([r[1] for r in rows], dtype=pod_type)
    v = np.array([r[2] for r in rows], dtype=np.float64)
    _peaks_alike(t, p, v, interval_s)


def test_two_weeks_of_memory_peaks_alike():
    rng = np.random.default_rng(5)
    t = np.concatenate([T0 + 60.0 * np.arange(14 * 1440), T0 + 7.5 + 60.0 * np.arange(7 * 1440)])
    p = np.repeat(np.array([0, 1], dtype=np.int32), [14 * 1440, 7 * 1440])
    v = 5e8 + 1e8 * rng.random(t.size)
    _peaks_alike(t, p, v, DAY_S)


@pytest.mark.parametrize("pod_type", [np.int32, np.int64])
def test_memory_peaks_with_usage_counts_alike(pod_type):
    """The one pass with bucket counts: runs in one bucket, noise, idle, the top bucket; two
    pods, windows of an hour."""
    v = _stretches(np.random.default_rng(6)) * 1e9
    t = T0 + 60.0 * np.arange(v.size, dtype=np.float64)
    p = (np.arange(v.size) >= 1000).astype(pod_type)
    got = memory_compiled(t, p, v, interval_s=3600.0, options=MEMORY_OPTIONS)
    assert got is not None
    kw: dict[str, Any] = {"oom_times_s": np.zeros(0), "oom_pods": np.zeros(0, dtype=np.int64)}
    kw |= {"oom_request_bytes": np.zeros(0), "interval_s": 3600.0, "oom_bump_up_ratio": 1.2}
    want = _twin(memory_peaks, t, p, v, oom_min_bump_up_bytes=1e8, **kw)
    for name in ("values", "window_start_s", "window_end_s"):
        assert np.array_equal(getattr(got.peaks, name), getattr(want, name)), name
    assert got.usage == usage_from_counts(v, MEMORY_OPTIONS)
    assert got.latest_s == t[-1]


def _read_only(a: np.ndarray) -> np.ndarray:
    b = a.copy()
    b.setflags(write=False)
    return b


def test_read_only_inputs_and_outputs_in_one_buffer():
    """The wrappers take the addresses of read-only arrays another way, and hand back views
    of one output buffer: the same numbers, and the views do not overlap."""
    rng = np.random.default_rng(8)
    t = T0 + 60.0 * np.arange(500, dtype=np.float64)
    v, w = rng.random(500), rng.random(500)
    kw: dict[str, Any] = {"start_s": T0, "step_s": 3600.0, "steps": 9, "counters": True}
    a = native_vpa.replay(t, v, w, starts=CPU_OPTIONS.starts, **kw)
    b = native_vpa.replay(
        _read_only(t), _read_only(v), _read_only(w), starts=CPU_OPTIONS.starts, **kw
    )
    assert a is not None and b is not None and (a.lo, a.hi, a.top) == (b.lo, b.hi, b.top)
    for name in ("cum", "totals", "counts", "step_counts", "last_s"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert a.step_counts is not None and a.last_s is not None
    views = [a.cum, a.totals, a.counts, a.step_counts, a.last_s]
    assert not any(np.shares_memory(x, y) for i, x in enumerate(views) for y in views[:i])
    # a weight scale is the weights multiplied first, in order and out of order
    for counters in (True, False):
        kw["counters"] = counters
        scaled = native_vpa.replay(t, v, w, starts=CPU_OPTIONS.starts, scale=0.1, **kw)
        first = native_vpa.replay(t, v, w * 0.1, starts=CPU_OPTIONS.starts, **kw)
        assert scaled is not None and first is not None
        assert np.array_equal(scaled.cum, first.cum) and np.array_equal(scaled.totals, first.totals)
    pods = np.zeros(500, dtype=np.int32)
    c = native_vpa.memory_peaks(t, pods, v * 1e9, 3600.0, MEMORY_OPTIONS.starts)
    d = native_vpa.memory_peaks(_read_only(t), _read_only(pods), _read_only(v * 1e9), 3600.0)
    assert c is not None and d is not None and c.counts is not None and d.counts is None
    for name in ("peak", "pod", "window", "t0"):
        assert np.array_equal(getattr(c, name), getattr(d, name)), name
    assert c.latest_s == d.latest_s == t[-1] and c.top == float(v.max() * 1e9)
    assert c.counts.sum() == 500 and np.array_equal(c.window, np.arange(9))


def test_memory_peaks_refuse_what_the_twin_handles():
    t = T0 + 60.0 * np.arange(4, dtype=np.float64)
    ones = np.ones(4)
    assert native_vpa.memory_peaks(t, np.array([0, 1, 0, 1]), ones, DAY_S) is None
    assert native_vpa.memory_peaks(t[::-1].copy(), np.zeros(4, dtype=np.int64), ones, DAY_S) is None
    assert native_vpa.memory_peaks(t, np.zeros(4, dtype=np.int64), -ones, DAY_S) is None
    assert native_vpa.memory_peaks(t, np.zeros(4, dtype=np.int16), ones, DAY_S) is None


def _estimates_alike(histogram, conf, resource, **kw) -> None:
    ran = []
    compiled = native_vpa.estimate

    def spy(*args, **kwargs):
        ran.append(compiled(*args, **kwargs))
        return ran[-1]

    with pytest.MonkeyPatch.context() as m:
        m.setattr(native_vpa, "estimate", spy)
        got = estimate(histogram, conf, resource, VpaSettings(), **kw)
    assert ran and ran[0] is not None  # the kernel gave these numbers
    want = _twin(estimate, histogram, conf, resource, VpaSettings(), **kw)
    for name in ("target", "lower", "upper", "uncapped_target", "unfloored_target"):
        assert np.array_equal(getattr(got, name), getattr(want, name)), name
    assert got.capped_by == want.capped_by
    # Tortoise's sticky maxima, computed in the same pass, are the twin's over the twin's rows
    assert want.sticky is None and want.unfloored_target is not None and got.sticky is not None
    upper = want.upper.tolist()
    assert got.sticky == (
        sticky_max(want.target.tolist(), upper),
        sticky_max(want.unfloored_target.tolist(), upper),
    )


@settings(max_examples=120, deadline=None)
@given(
    st.lists(st.tuples(st.floats(0.0, 80.0), st.floats(0.0, 3 * DAY_S)), min_size=1, max_size=80),
    st.sampled_from(["cpu", "memory"]),
    st.sampled_from([None, 0.0001, 0.5, 3.0, 2e9]),
    st.sampled_from([None, 0.2, 1.0, 8e8]),
    st.integers(1, 4),
    st.sampled_from([0.0, 0.01, 1.0, 30.0]),
)
def test_estimates_alike(rows, resource, low, high, n_containers, conf_scale):
    """The estimator chain over replayed rows: empty early steps, confidence 0 (infinite and
    zero factors), minAllowed/maxAllowed raising or lowering, several containers."""
    values = np.array([v for v, _ in rows], dtype=np.float64)
    if resource == "memory":
        values = values * 5e7
    times = T0 + np.sort(np.array([t for _, t in rows], dtype=np.float64))
    options = CPU_OPTIONS if resource == "cpu" else MEMORY_OPTIONS
    grid = ReplayGrid.covering(T0 - DAY_S, float(times[-1]) + 1.0, 21600.0)
    histogram = replay_rows(values, 1.0, times, None, grid=grid, options=options, half_life_s=DAY_S)
    conf = np.linspace(0.0, conf_scale, grid.steps)
    _estimates_alike(
        histogram, conf, resource, n_containers=n_containers, min_allowed=low, max_allowed=high
    )


def _container_vpa(ch: ContainerHistory, window: Window, grid: ReplayGrid):
    return recommend_container(
        ch,
        grid,
        VpaSettings(),
        window,
        name="app",
        n_containers=2,
        min_history_s=3600.0,
        declared_memory_bytes=500_000_000,
        min_allowed=ResourceValues(None, None),
        max_allowed=ResourceValues(None, None),
    )


def _histories() -> list[tuple[str, ContainerHistory, Window]]:
    """Two pods over two days, and the layouts that leave the one-pass shortcuts: samples
    after now, an excluded period, an OOM kill, pods interleaved, repeated times, -0.0 and NaN
    values."""
    rng = np.random.default_rng(2)
    t = T0 + 60.0 * np.arange(2 * 1440, dtype=np.float64)
    pods = (np.arange(t.size) >= 1440).astype(np.int64)
    cpu = 0.3 * rng.lognormal(0.0, 0.3, t.size)
    mem = 4e8 + 1e8 * rng.random(t.size)
    now = float(t[-1]) + 60.0

    def ch(**kw) -> ContainerHistory:
        base = {
            "cpu_t": t,
            "cpu_pod": pods,
            "cpu_cores": cpu,
            "mem_t": t,
            "mem_pod": pods,
            "mem_bytes": mem,
        }
        return ContainerHistory("app", **{**base, **kw})

    late, bad_cpu, bad_mem = t.copy(), cpu.copy(), mem.copy()
    late[-5:] += 3600.0
    bad_cpu[[3, 9]] = (-0.0, math.nan)
    bad_mem[[4, 7]] = (-0.0, math.nan)
    same = t.copy()
    same[10] = same[9]
    oom = {"oom_t": t[[700]], "oom_pod": pods[[700]], "oom_request_bytes": np.array([4.5e8])}
    return [
        ("plain", ch(), Window(now)),
        ("after now", ch(cpu_t=late, mem_t=late), Window(now)),
        ("excluded", ch(), Window(now, ((T0 + 3600.0, T0 + 7200.0),))),
        ("oom", ch(**oom), Window(now)),
        (
            "interleaved",
            ch(cpu_pod=np.arange(t.size) % 2, mem_pod=np.arange(t.size) % 2),
            Window(now),
        ),
        ("repeated time", ch(cpu_t=same, mem_t=same), Window(now)),
        ("dirty values", ch(cpu_cores=bad_cpu, mem_bytes=bad_mem), Window(now)),
        (
            "int32 pods",
            ch(cpu_pod=pods.astype(np.int32), mem_pod=pods.astype(np.int32)),
            Window(now),
        ),
    ]


@pytest.mark.parametrize("case", _histories(), ids=lambda c: c[0])
def test_the_container_chain_is_its_twin(case):
    """``recommend_container`` with the kernels (one pass where the layout allows) and
    without them: every row, usage, peak and sample the same."""
    _, ch, window = case
    grid = ReplayGrid.covering(float(ch.cpu_t[0]), window.now_s, 21600.0)
    got = _container_vpa(ch, window, grid)
    want = _twin(_container_vpa, ch, window, grid)
    assert type(got) is type(want)
    if isinstance(want, TooLittleData):
        assert got == want
        return
    assert got.usage == want.usage and got.oom_bump_bytes == want.oom_bump_bytes
    for res in ("cpu", "memory"):
        for name in ("target", "lower", "upper", "uncapped_target", "unfloored_target"):
            a, b = getattr(got.rows[res], name), getattr(want.rows[res], name)
            assert np.array_equal(a, b), (res, name)
        assert np.array_equal(got.rows[res].confidence, want.rows[res].confidence)
    for name in ("times_s", "pods", "used_bytes", "oom_times_s", "oom_pods"):
        a, b = getattr(got.memory, name), getattr(want.memory, name)
        assert np.array_equal(a, b, equal_nan=True), name


def test_a_clean_history_takes_the_one_pass_shortcuts():
    """The layout of the first case is what the shortcuts exist for; the others leave them."""
    cases = {name: (ch, window) for name, ch, window in _histories()}
    ch, window = cases["plain"]
    grid = ReplayGrid.covering(float(ch.cpu_t[0]), window.now_s, 21600.0)
    assert _cpu_whole(ch, grid, VpaSettings(), window) is not None
    kw: dict[str, Any] = {"interval_s": DAY_S, "options": MEMORY_OPTIONS}
    assert memory_compiled(ch.mem_t, ch.mem_pod, ch.mem_bytes, **kw) is not None
    for name in ("after now", "excluded", "repeated time", "dirty values"):
        ch, window = cases[name]
        assert _cpu_whole(ch, grid, VpaSettings(), window) is None, name
    ch, _ = cases["dirty values"]
    assert memory_compiled(ch.mem_t, ch.mem_pod, ch.mem_bytes, **kw) is None


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.integers(0, 175), st.integers(0, 10**9) | st.integers(0, 3), max_size=40))
def test_usage_percentiles_of_counts_alike(counted):
    """The buckets the observed usage percentiles land in: sparse, single, tied and huge
    counts (none counted: the twin alone)."""
    counts = np.zeros(CPU_OPTIONS.num_buckets, dtype=np.int64)
    for bucket, count in counted.items():
        counts[bucket] = count
    got = _usage_of_counts(counts, 1e9, CPU_OPTIONS)
    want = _twin(_usage_of_counts, counts, 1e9, CPU_OPTIONS)
    assert got == want
    if counts.sum():
        assert native_vpa.usage_buckets(counts, np.array([0.5, 0.9, 0.99])) is not None
