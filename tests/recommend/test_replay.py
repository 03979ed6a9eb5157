"""The replayed VPA histograms, their counters, percentiles, usage and memory peaks against
plain references: one histogram per replay step filled sample by sample, counts and maxima over
masks, a dictionary of window peaks; and the container chain on layouts that leave its
shortcuts, against the same history with those samples removed."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.config.recommend import VpaSettings
from bot.model import ContainerHistory, ResourceValues
from bot.recommend.vpa.constants import GO_ZERO_TIME_UNIX_S
from bot.recommend.vpa.counters import cpu_counters
from bot.recommend.vpa.histogram import (
    CPU_OPTIONS,
    MEMORY_OPTIONS,
    Histogram,
    HistogramOptions,
    final_reference_s,
    percentiles,
)
from bot.recommend.vpa.peaks import memory_peaks
from bot.recommend.vpa.recommender import ContainerVpa, recommend_container
from bot.recommend.vpa.replay import ReplayGrid, replay_rows
from bot.recommend.vpa.usage import usage_from_counts
from bot.recommend.window import Window

DAY_S = 86400.0
T0 = 1_700_000_000.0


def _edge_values(options: HistogramOptions) -> np.ndarray:
    """Every bucket start and its two neighbouring doubles: where a bucket could be off."""
    s = options.starts
    near = np.unique(np.concatenate([s, np.nextafter(s, -np.inf), np.nextafter(s, np.inf)]))
    return near[near >= 0]


def _same_as_reference(
    values: np.ndarray,
    times: np.ndarray,
    options: HistogramOptions,
    grid: ReplayGrid,
    half_life_s: float = DAY_S,
    step_times: np.ndarray | None = None,
) -> None:
    """``replay_rows`` against one histogram per step filled with every sample up to it
    (weight ``0.1 × 2^((t - ref)/half_life)``), the counters against counts and maxima over
    the same masks, and the usage from the bucket counts against the order statistics."""
    steps_of = grid.bins(times if step_times is None else step_times)
    rows = replay_rows(
        values, 0.1, times, steps_of.copy(), grid=grid, options=options, half_life_s=half_life_s
    )
    ref = final_reference_s(times, GO_ZERO_TIME_UNIX_S, half_life_s)
    assert rows.reference_s == ref
    weights = 0.1 * np.exp2((times - ref) / half_life_s)
    full = rows.weights
    kept = {p: rows.percentiles((p,))[0] for p in (0.5, 0.9, 0.95)}
    for s in range(grid.steps):
        upto = steps_of <= s
        want = Histogram.empty(options).add(values[upto], weights[upto])
        np.testing.assert_allclose(full[s], want.weights, rtol=1e-10, atol=0)
        assert rows.totals[s] == pytest.approx(want.total_weight, rel=1e-10, abs=0)
        # the percentiles of the kept columns are those of the whole row
        whole = Histogram(options, full[s], float(rows.totals[s]))
        for p in (0.5, 0.9, 0.95):
            assert kept[p][s] == whole.percentile(p)
    assert not rows.used.size or bool(rows.used[-1, [0, -1]].all())  # no empty outer column
    if step_times is not None:
        return
    counters = cpu_counters(times, steps_of, grid)
    assert counters.first_s == times.min()
    for s in range(grid.steps):
        upto = steps_of <= s
        assert counters.counts[s] == upto.sum()
        assert counters.last_s[s] == (times[upto].max() if upto.any() else -np.inf)
    buckets = options.find_buckets(values)
    assert usage_from_counts(values, options, buckets) == usage_from_counts(values, options)


@pytest.mark.parametrize("options", [CPU_OPTIONS, MEMORY_OPTIONS], ids=["cpu", "memory"])
def test_every_bucket_edge_lands_in_the_bucket_of_the_last_start_at_or_below_it(options):
    """The starts and their neighbours, in a shuffled order, over a few replay steps."""
    values = np.random.default_rng(3).permutation(_edge_values(options))
    last_start = np.searchsorted(options.starts, values, side="right") - 1
    assert np.array_equal(options.find_buckets(values), last_start)
    times = T0 + 60.0 * np.arange(values.size)
    grid = ReplayGrid.covering(T0, float(times[-1]) + 60.0, 3600.0)
    _same_as_reference(values, times, options, grid)


finite_values = st.one_of(
    st.floats(0.0, 5000.0),
    st.floats(0.0, 2e12),
    st.sampled_from([0.0, 0.01, 1e7, 5e-324, 1e300]),
)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.tuples(finite_values, st.floats(0.0, 7 * DAY_S)), min_size=1, max_size=120),
    st.sampled_from([600.0, 3600.0, 21600.0]),
    st.floats(-DAY_S, DAY_S),
    st.sampled_from([CPU_OPTIONS, MEMORY_OPTIONS]),
)
def test_random_series_replay_as_the_reference(rows, step_s, grid_shift, options):
    """Any values (zero, tiny, huge), times in order with repeats, a grid that starts before,
    at or after the first sample (every step clipped into range)."""
    values = np.array([v for v, _ in rows], dtype=np.float64)
    times = T0 + np.sort(np.array([t for _, t in rows], dtype=np.float64))
    grid = ReplayGrid.covering(T0 + grid_shift, float(times[-1]) + 1.0, step_s)
    _same_as_reference(values, times, options, grid)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(finite_values, st.floats(0.0, 7 * DAY_S)), min_size=1, max_size=60))
def test_steps_from_other_times_replay_as_the_reference(rows):
    """Memory peaks: the step from one time (window start, any order), the decay from another."""
    values = np.array([v for v, _ in rows], dtype=np.float64)
    starts = T0 + np.array([t for _, t in rows], dtype=np.float64)
    grid = ReplayGrid.covering(T0, T0 + 8 * DAY_S, 21600.0)
    _same_as_reference(values, starts + DAY_S, MEMORY_OPTIONS, grid, step_times=starts)


def _stretches(rng: np.random.Generator) -> np.ndarray:
    """CPU usage in stretches of 200 samples: one value, noise, idle (bucket 0), tiny values,
    two buckets in turn, above the last bucket start, bucket starts and their neighbours, the
    smallest double."""
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
def test_stretches_with_gaps_replay_as_the_reference(half_life_s):
    """Steps without a sample and steps before the samples; with a half-life of a minute the
    older samples weigh exactly 0."""
    values = _stretches(np.random.default_rng(4))
    times = T0 + 60.0 * np.arange(values.size, dtype=np.float64)
    times[900:] += 4 * 3600.0
    grid = ReplayGrid.covering(T0 - 3 * 3600.0, float(times[-1]) + 60.0, 3600.0)
    _same_as_reference(values, times, CPU_OPTIONS, grid, half_life_s=half_life_s)
    _same_as_reference(values * 1e9, times, MEMORY_OPTIONS, grid, half_life_s=half_life_s)


@pytest.mark.parametrize("noise", [0.0, 0.3])
def test_two_weeks_of_minutes_give_one_usage_either_way(noise):
    """The usage percentiles from bucket counts and from order statistics agree."""
    rng = np.random.default_rng(11)
    times = T0 + 60.0 * np.arange(14 * 1440)
    daily = 1.0 + 0.5 * np.sin(2 * np.pi * (times % DAY_S) / DAY_S)
    for values, options in (
        (0.4 * daily * (rng.lognormal(0.0, noise, times.size) if noise else 1.0), CPU_OPTIONS),
        (6e8 * (0.9 + 0.1 * daily) * (1 + noise * rng.random(times.size)), MEMORY_OPTIONS),
    ):
        by_counts = usage_from_counts(values, options, options.find_buckets(values))
        assert by_counts == usage_from_counts(values, options)
        assert by_counts is not None and by_counts.samples == times.size


weights = st.one_of(st.just(0.0), st.floats(0.0, 1e-9), st.floats(0.0, 100.0))


@settings(max_examples=150, deadline=None)
@given(
    st.integers(1, 6),
    st.integers(1, 12),
    st.data(),
    st.lists(st.floats(0.0, 1.0), min_size=1, max_size=3),
    st.integers(0, 5),
)
def test_percentile_rows_are_each_rows_percentile(rows, cols, data, ps, first_bucket):
    """Rows with empty buckets, buckets lighter than epsilon (they still add to the running
    sum), empty rows, totals above or below the rows' sums; a slice of a wider array standing
    for the buckets from ``first_bucket`` on."""
    cells = data.draw(st.lists(weights, min_size=rows * cols, max_size=rows * cols))
    w = np.zeros((rows, cols + 3))
    w[:, 1 : cols + 1] = np.array(cells).reshape(rows, cols)
    view = w[:, 1 : cols + 1]
    totals = view.sum(axis=1) * data.draw(st.sampled_from([1.0, 0.5, 2.0]))
    p = tuple(ps)
    got = percentiles(view, totals, p, CPU_OPTIONS, first_bucket=first_bucket)
    assert got.shape == (len(p), rows)
    for r in range(rows):
        full = np.zeros(CPU_OPTIONS.num_buckets)
        full[first_bucket : first_bucket + cols] = view[r]
        hist = Histogram(CPU_OPTIONS, full, float(totals[r]))
        assert got[:, r].tolist() == [hist.percentile(q) for q in p]
    one = percentiles(view, totals, p[0], CPU_OPTIONS, first_bucket=first_bucket)
    assert np.array_equal(one, got[0])


def _reference_peaks(t: np.ndarray, p: np.ndarray, v: np.ndarray, interval_s: float) -> list:
    """(window end, window start, peak) of each pod and window, by window end (ties: pod,
    then window), for samples grouped by pod in time order."""
    first: dict[int, float] = {}
    peak: dict[tuple[int, int], float] = {}
    for time, pod, value in zip(t.tolist(), p.tolist(), v.tolist(), strict=True):
        t0 = first.setdefault(pod, time)
        key = (pod, math.floor((time - t0) / interval_s))
        peak[key] = max(peak.get(key, -1.0), value)
    rows = []
    for (pod, k), value in sorted(peak.items()):
        start = first[pod] + k * interval_s
        rows.append((start + interval_s, start, value))
    return sorted(rows, key=lambda row: row[0])


def _peaks_as_reference(t, p, v, interval_s: float) -> None:
    empty_f, empty_i = np.zeros(0), np.zeros(0, dtype=np.int32)
    got = memory_peaks(
        t,
        p,
        v,
        oom_times_s=empty_f,
        oom_pods=empty_i,
        oom_request_bytes=empty_f,
        interval_s=interval_s,
        oom_bump_up_ratio=1.2,
        oom_min_bump_up_bytes=1e8,
    )
    rows = list(zip(got.window_end_s, got.window_start_s, got.values, strict=True))
    assert [tuple(map(float, row)) for row in rows] == _reference_peaks(t, p, v, interval_s)
    assert got.oom_bumps.size == 0


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
def test_memory_peaks_as_the_reference(rows, interval_s, pod_type):
    """Pods in order, each pod's times in order (repeats included), windows from each pod's
    first sample; times near window edges come from the short interval."""
    rows = sorted(rows, key=lambda r: (r[1], r[0]))
    t = T0 + np.array([r[0] for r in rows], dtype=np.float64)
    p = np.array([r[1] for r in rows], dtype=pod_type)
    v = np.array([r[2] for r in rows], dtype=np.float64)
    _peaks_as_reference(t, p, v, interval_s)


def test_two_weeks_of_memory_peaks_as_the_reference():
    rng = np.random.default_rng(5)
    t = np.concatenate([T0 + 60.0 * np.arange(14 * 1440), T0 + 7.5 + 60.0 * np.arange(7 * 1440)])
    p = np.repeat(np.array([0, 1], dtype=np.int32), [14 * 1440, 7 * 1440])
    v = 5e8 + 1e8 * rng.random(t.size)
    _peaks_as_reference(t, p, v, DAY_S)


def _container_vpa(ch: ContainerHistory, window: Window, grid: ReplayGrid) -> ContainerVpa:
    vpa = recommend_container(
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
    assert isinstance(vpa, ContainerVpa)
    return vpa


def _history(keep: np.ndarray | None = None, **kw: Any) -> ContainerHistory:
    """Two pods over two days of one-minute samples (``keep``: only those samples)."""
    rng = np.random.default_rng(2)
    t = T0 + 60.0 * np.arange(2 * 1440, dtype=np.float64)
    series: dict[str, Any] = {
        "cpu_t": t,
        "cpu_pod": (np.arange(t.size) >= 1440).astype(np.int32),
        "cpu_cores": 0.3 * rng.lognormal(0.0, 0.3, t.size),
        "mem_t": t,
        "mem_pod": (np.arange(t.size) >= 1440).astype(np.int32),
        "mem_bytes": 4e8 + 1e8 * rng.random(t.size),
    }
    series |= kw
    if keep is not None:
        series = {name: array[keep] for name, array in series.items()}
    return ContainerHistory("app", **series)


def _same_vpa(got: ContainerVpa, want: ContainerVpa) -> None:
    assert got.usage == want.usage and got.oom_bump_bytes == want.oom_bump_bytes
    for res in ("cpu", "memory"):
        for name in ("target", "lower", "upper", "uncapped_target", "unfloored_target"):
            a, b = getattr(got.rows[res], name), getattr(want.rows[res], name)
            assert np.array_equal(a, b), (res, name)
        assert np.array_equal(got.rows[res].confidence, want.rows[res].confidence)


NOW = T0 + 2 * DAY_S
GRID = ReplayGrid.covering(T0, NOW, 21600.0)


def test_samples_after_now_count_as_absent():
    late = T0 + 60.0 * np.arange(2 * 1440, dtype=np.float64)
    late[-5:] += 3600.0
    got = _container_vpa(_history(cpu_t=late, mem_t=late), Window(NOW), GRID)
    _same_vpa(got, _container_vpa(_history(late <= NOW), Window(NOW), GRID))


def test_an_excluded_period_counts_as_absent():
    t = T0 + 60.0 * np.arange(2 * 1440, dtype=np.float64)
    excluded = (T0 + 3600.0, T0 + 7200.0)
    got = _container_vpa(_history(), Window(NOW, (excluded,)), GRID)
    outside = (t < excluded[0]) | (t >= excluded[1])
    _same_vpa(got, _container_vpa(_history(outside), Window(NOW), GRID))


def test_nan_samples_count_as_absent_and_pod_indices_of_any_width_alike():
    plain = _history()
    cpu, mem = plain.cpu_cores.copy(), plain.mem_bytes.copy()
    cpu[[3, 9]] = (-0.0, math.nan)
    mem[[3, 9]] = (-0.0, math.nan)
    got = _container_vpa(_history(cpu_cores=cpu, mem_bytes=mem), Window(NOW), GRID)
    clean = np.isfinite(cpu) & np.isfinite(mem)
    _same_vpa(got, _container_vpa(_history(clean, cpu_cores=cpu, mem_bytes=mem), Window(NOW), GRID))
    wide = _history(cpu_pod=plain.cpu_pod.astype(np.int64), mem_pod=plain.mem_pod.astype(np.int64))
    _same_vpa(_container_vpa(wide, Window(NOW), GRID), _container_vpa(plain, Window(NOW), GRID))
