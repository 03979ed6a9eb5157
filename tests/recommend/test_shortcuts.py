"""The engine's shortcuts for clean, ordered series give exactly what the general paths give
(hypothesis): step bounds, CPU counters, memory window peaks, order-statistic usage
percentiles and the sampling step."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.recommend.vpa.counters import cpu_counters
from bot.recommend.vpa.histogram import CPU_OPTIONS, MEMORY_OPTIONS, percentiles
from bot.recommend.vpa.peaks import memory_peaks
from bot.recommend.vpa.replay import ReplayGrid
from bot.recommend.vpa.samples import SampleOrder, sample_order, sample_step_s
from bot.recommend.vpa.usage import USAGE_PERCENTILES, _usage_of_counts, usage_from_counts

T0 = 1_700_006_400.0
SHORT = settings(max_examples=60, deadline=None)

# Offsets that land on replay-step and window edges as well as between them.
offsets = st.lists(
    st.one_of(
        st.integers(min_value=0, max_value=40).map(lambda k: k * 3600.0),
        st.floats(min_value=0, max_value=40 * 3600.0),
        st.integers(min_value=0, max_value=40).map(lambda k: np.nextafter(k * 3600.0, -1.0)),
    ),
    min_size=1,
    max_size=200,
)


def _sorted_times(offs: list[float]) -> np.ndarray:
    return np.sort(T0 + np.array(offs, dtype=np.float64))


@SHORT
@given(offsets, st.sampled_from([600.0, 3600.0, 7200.0, 21600.0]), st.floats(-5000, 5000))
def test_step_bounds_give_the_steps_of_every_time(offs, step_s, shift):
    t = _sorted_times(offs)
    grid = ReplayGrid.covering(float(t[0]) + shift, float(t[-1]) + 3600.0, step_s)
    bounds = grid.step_bounds(t)
    assert bounds is not None
    assert grid.bins(t, bounds).tolist() == grid.bins(t).tolist()
    fast = cpu_counters(t, grid.bins(t), grid, bounds)
    slow = cpu_counters(t, grid.bins(t), grid)
    assert fast.counts.tolist() == slow.counts.tolist()
    assert fast.last_s.tolist() == slow.last_s.tolist()
    assert fast.first_s == slow.first_s


@SHORT
@given(
    st.sampled_from([15.0, 60.0, 300.0, 0.1]),
    st.integers(min_value=2, max_value=300),
    st.lists(st.floats(min_value=-5.0, max_value=5.0), max_size=4),
    st.booleans(),
)
def test_a_regular_step_is_the_median_step(step_s, n, jitter, two_pods):
    t = T0 + step_s * np.arange(n, dtype=np.float64)
    t[: len(jitter)] += np.array(jitter[:n])
    pods = (np.arange(n) >= n // 2).astype(np.int32) if two_pods else np.zeros(n, np.int32)
    steps = np.diff(t)[pods[1:] == pods[:-1]]
    steps = steps[steps > 0]
    assert sample_step_s(t, pods) == (float(np.median(steps)) if steps.size else 60.0)


usage_values = st.lists(
    st.one_of(
        st.floats(min_value=0, max_value=3e12),
        st.sampled_from([0.0, 1e7, 1.05e7, 2.05e7, 1e12, 0.01, 0.0105, 5.0, 1000.0, -3.0]),
        st.floats(min_value=0, max_value=2000.0),
    ),
    min_size=1,
    max_size=300,
)


@SHORT
@given(usage_values)
def test_usage_from_order_statistics_is_the_histogram_usage(values):
    v = np.array(values, dtype=np.float64)
    for options in (CPU_OPTIONS, MEMORY_OPTIONS):
        assert usage_from_counts(v, options) == usage_from_counts(
            v, options, options.find_buckets(v)
        )


@SHORT
@given(st.dictionaries(st.integers(0, 175), st.integers(0, 10**6), max_size=40))
def test_usage_of_counts_is_the_percentiles_of_the_counts(counted):
    """Any bucket counts (sparse, single, huge) give the general ``percentiles``' buckets."""
    counts = np.zeros(CPU_OPTIONS.num_buckets, dtype=np.int64)
    for bucket, count in counted.items():
        counts[bucket] = count
    got = _usage_of_counts(counts, 1e9, CPU_OPTIONS)
    want = percentiles(
        counts.astype(np.float64), np.array([float(counts.sum())]), USAGE_PERCENTILES, CPU_OPTIONS
    )[:, 0].tolist()
    assert [got.p50, got.p90, got.p99] == want
    assert got.samples == int(counts.sum())


@SHORT
@given(
    st.lists(st.integers(min_value=0, max_value=3 * 86400 // 60), min_size=1, max_size=300),
    st.lists(st.integers(min_value=0, max_value=3), min_size=1, max_size=300),
    st.sampled_from([3600.0, 7200.0, 86400.0]),
    st.integers(min_value=0, max_value=2**16),
)
def test_memory_peaks_in_order_are_the_general_peaks(minutes, pod_sizes, interval_s, seed):
    rng = np.random.default_rng(seed)
    t = T0 + 60.0 * np.sort(np.array(minutes, dtype=np.float64))
    pods = np.sort(rng.integers(0, len(pod_sizes), t.size)).astype(np.int32)
    # Times in order within each pod: sort within each pod's run.
    t = np.concatenate([np.sort(rng.permutation(t)[pods == p]) for p in np.unique(pods)])
    v = rng.uniform(0, 4e9, t.size)
    v[rng.integers(0, t.size, 3)] = 0.0
    order = sample_order(t, pods, v, strict=False)
    assert order.all_accepted
    none = np.zeros(0)
    kw = {
        "oom_times_s": none,
        "oom_pods": np.zeros(0, dtype=np.int32),
        "oom_request_bytes": none,
        "interval_s": interval_s,
        "oom_bump_up_ratio": 1.2,
        "oom_min_bump_up_bytes": 100 * 1024 * 1024,
    }
    fast = memory_peaks(t, pods, v, order=order, **kw)
    slow = memory_peaks(t, pods, v, order=SampleOrder(True, False, False), **kw)
    for a, b in (
        (fast.values, slow.values),
        (fast.window_start_s, slow.window_start_s),
        (fast.window_end_s, slow.window_end_s),
        (fast.oom_bumps, slow.oom_bumps),
    ):
        assert a.tolist() == b.tolist()
