"""The HPA controller replay: known replica paths, both implementations, their agreement."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.recommend.replay.controller import (
    Metric,
    WalkArea,
    _rate_limited,
    _up_limits,
    _up_limits_float,
    replay_fast_reach,
    scale_up_limit,
    window_steps,
)
from bot.recommend.replay.exact import replay_exact_reach, replay_replicas
from bot.recommend.replay.series import ReplaySeries
from bot.sim import ClusterSpec, simulate

replay_exact = partial(replay_replicas, model="exact")
replay_fast = partial(replay_replicas, model="fast")
BOTH = pytest.mark.parametrize("walk", [replay_exact, replay_fast], ids=["exact", "fast"])


def _usage(*pieces: tuple[int, float]) -> np.ndarray:
    """A piecewise-constant total usage: ``(steps, cores)`` pieces one after another."""
    return np.concatenate([np.full(n, value) for n, value in pieces])


@BOTH
def test_step_load_gives_the_controllers_replica_path(walk):
    # request 0.5 core at a 50 % target: one pod per 0.25 core of demand.
    usage = _usage((10, 1.0), (10, 3.0), (10, 1.0))
    path = walk([Metric(usage, 0.5, 50)], min_replicas=2, max_replicas=20, initial=4, step_s=60)
    # Up at once to ceil(300 % / 50 % × 4) = 12 when the demand triples; down to
    # ceil(33 % / 50 % × 12) = 8 ... only after the 300 s window holds nothing higher: the
    # recommendations of steps 20..24 are all 4 (util 16 % at 12 pods, 0.32 × 12 → 4).
    expected = [4] * 10 + [12] * 10 + [12] * 4 + [4] * 6
    assert path.tolist() == expected


@BOTH
def test_utilisation_within_the_tolerance_keeps_the_replicas(walk):
    # 4 pods × 0.5 core at 50 % = 1.0 core; 1.08 cores is 54 %: ratio 1.08 <= 1.1.
    usage = _usage((5, 1.0), (20, 1.08), (5, 1.2))
    path = walk([Metric(usage, 0.5, 50)], min_replicas=1, max_replicas=20, initial=4, step_s=60)
    assert path[:25].tolist() == [4] * 25
    assert path[25] == 5  # 60 % at 4 pods: ratio 1.2, ceil(1.2 × 4) = 5


@BOTH
def test_scale_up_rate_limit_compounds_over_the_syncs_of_a_step(walk):
    usage = _usage((2, 0.1), (4, 50.0))
    path = walk([Metric(usage, 0.1, 100)], min_replicas=1, max_replicas=600, initial=1, step_s=60)
    # 4 syncs per minute from 1 pod: 1 -> 5 -> 10 -> 20 -> 40; then 40 -> ... -> 640 >= 500.
    assert scale_up_limit(1, 4) == 40
    assert path[:3].tolist() == [1, 1, 40]
    if walk is replay_exact:
        assert path[3:].tolist() == [500, 500, 500]
    else:  # somewhere in the tolerance band of 500 pods, and held there
        assert 500 / 1.1 <= path[3] <= 500 / 0.9
        assert len(set(path[3:].tolist())) == 1


@BOTH
def test_min_and_max_clamp(walk):
    usage = _usage((5, 0.01), (5, 100.0))
    path = walk([Metric(usage, 0.5, 50)], min_replicas=3, max_replicas=7, initial=1, step_s=60)
    assert path.tolist() == [3] * 5 + [7] * 5


@BOTH
def test_the_most_demanding_metric_wins(walk):
    cpu = _usage((10, 1.0))
    memory = _usage((10, 8.0))
    metrics = [Metric(cpu, 0.5, 50), Metric(memory, 1.0, 80)]  # cpu wants 4, memory 10
    path = walk(metrics, min_replicas=1, max_replicas=20, initial=4, step_s=60)
    assert path[1:].tolist() == [10] * 9


@BOTH
def test_a_metric_without_samples_proposes_nothing(walk):
    usage = np.full(10, np.nan)
    path = walk([Metric(usage, 0.5, 50)], min_replicas=1, max_replicas=20, initial=4, step_s=60)
    assert path.tolist() == [4] * 10


def test_window_covers_the_last_300_seconds():
    assert window_steps(60) == 5
    assert window_steps(300) == 1
    assert window_steps(30) == 10


def _sim_metrics(seed: int) -> list[tuple[list[Metric], int, int, int]]:
    cluster = simulate(ClusterSpec.generate(seed=seed, services=6, days=7))
    out = []
    for service in cluster.services:
        if service.spec.hpa is None:
            continue
        history = cluster.expected_history(service.ref)
        app = service.spec.containers[0]
        series = ReplaySeries.build(history, (app.name,), now_s=history.end_s)
        assert series is not None
        for request in (app.cpu_request_cores, app.cpu_request_cores / 2):
            metric = Metric(series.demand(app.name), request, service.spec.hpa.target_cpu_percent)
            out.append(([metric], service.spec.hpa.min_replicas, 40, int(history.replicas[0])))
    return out


def test_fast_stays_within_two_percent_of_exact_on_simulated_services():
    cases = _sim_metrics(1) + _sim_metrics(2)
    assert len(cases) >= 4
    for metrics, low, high, initial in cases:
        exact = replay_exact(
            metrics, min_replicas=low, max_replicas=high, initial=initial, step_s=60
        )
        fast = replay_fast(metrics, min_replicas=low, max_replicas=high, initial=initial, step_s=60)
        assert abs(fast.mean() / exact.mean() - 1) < 0.02
        assert abs(int(fast.max()) - int(exact.max())) <= 1


def test_replay_is_deterministic_and_picks_the_model():
    metrics, low, high, initial = _sim_metrics(3)[0]

    def run(walk=replay_replicas, **extra):
        return walk(
            metrics, min_replicas=low, max_replicas=high, initial=initial, step_s=60, **extra
        )

    fast = run()
    assert np.array_equal(fast, run())
    assert np.array_equal(fast, run(replay_fast))
    assert np.array_equal(run(model="exact"), run(replay_exact))


@given(st.lists(st.integers(0, 500), min_size=1, max_size=50), st.integers(1, 8))
def test_the_scale_up_limits_of_a_path_are_those_of_each_count(counts, syncs):
    limits = _up_limits(np.array(counts, dtype=np.float64), syncs)
    assert limits.tolist() == [scale_up_limit(c, syncs) for c in counts]
    floats = _up_limits_float(np.array(counts, dtype=np.float64), syncs)
    assert floats.tolist() == [float(scale_up_limit(c, syncs)) for c in counts]


@given(
    st.lists(st.floats(0.0, 40.0), min_size=2, max_size=60),
    st.integers(1, 6),
    st.integers(1, 40),
    st.integers(1, 12),
)
def test_any_max_replicas_above_the_reach_gives_the_same_fast_path(usage, low, high, initial):
    metrics = [Metric(np.array(usage), 0.5, 60)]
    kw = {"min_replicas": low, "initial": initial, "step_s": 60.0}
    path, reach = replay_fast_reach(metrics, max_replicas=low + high, **kw)
    assert np.array_equal(path, replay_fast(metrics, max_replicas=low + high, **kw))
    if reach <= low + high:
        for higher in (int(reach), int(reach) + 1, low + high + 7):
            if higher >= low:
                assert np.array_equal(replay_fast(metrics, max_replicas=higher, **kw), path)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(0, 400) | st.integers(0, 6), min_size=0, max_size=60),
    st.integers(1, 8),
)
def test_the_rate_limit_is_the_step_by_step_limit(path, syncs):
    """Rises within and beyond what the Pods policy alone allows, and flat runs (replica
    counts are never negative): each step at most ``scale_up_limit`` of the step before."""
    want = list(path)
    for k in range(1, len(want)):
        want[k] = min(want[k], scale_up_limit(want[k - 1], syncs))
    assert _rate_limited(np.array(path, dtype=np.int64), syncs).tolist() == want


extreme_usage = st.one_of(
    st.floats(-3.0, 60.0),
    st.floats(1e10, 1e20),
    st.sampled_from([float("nan"), float("inf"), -0.0, 0.0, 2.0**52, 9.0e18, -1e300]),
)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(extreme_usage, extreme_usage), min_size=1, max_size=60),
    st.integers(0, 6),
    st.integers(0, 60),
    st.integers(0, 15),
    st.sampled_from([15.0, 60.0, 100.0, 600.0]),
)
def test_both_models_keep_the_bounds_on_any_load(rows, low, span, initial, step_s):
    """Negative, signed-zero, huge, infinite and missing loads, one or two metrics: every step
    within ``[minReplicas, maxReplicas]``, the first at the clamped start, and a reach no lower
    than any step (``max_replicas`` above the reach gives the same path)."""
    columns = np.array(rows, dtype=np.float64).T
    metrics = [Metric(columns[0], 0.5, 60), Metric(columns[1], 0.25, 80)]
    kw = {"min_replicas": low, "max_replicas": low + span, "initial": initial, "step_s": step_s}
    for chosen in (metrics[:1], metrics):
        for walk in (replay_fast_reach, replay_exact_reach):
            with np.errstate(all="ignore"):
                path, reach = walk(chosen, **kw)
            assert path.dtype == np.int64 and path.size == columns.shape[1]
            assert path[0] == min(max(initial, low), low + span)
            assert ((path >= low) & (path <= low + span)).all()
            assert reach >= path.max()


def test_a_walk_area_shared_by_walks_gives_each_walk_its_fresh_path():
    """Walks over one series in one ``WalkArea`` give what each gives alone, and the paths
    returned do not change when the area is walked again."""
    rng = np.random.default_rng(3)
    usage = 4.0 * (1.0 + 0.5 * np.sin(np.arange(3000) / 200.0)) * rng.lognormal(0.0, 0.3, 3000)
    other = np.where(rng.random(3000) < 0.05, np.nan, usage[::-1] * 2.0)
    area = WalkArea.of(3000)
    runs = [
        ([Metric(usage, 0.5, 70)], 2, 30),
        ([Metric(usage, 0.5, 70), Metric(other, 1.0, 60)], 1, 12),
        ([Metric(usage, 0.25, 50)], 3, 200),
    ]
    kept = []
    for metrics, low, high in runs:
        walk = partial(replay_fast_reach, min_replicas=low, max_replicas=high, initial=5, step_s=60)
        shared, reach = walk(metrics, area=area)
        alone, alone_reach = walk(metrics)
        assert np.array_equal(shared, alone) and reach == alone_reach
        assert len(set(shared.tolist())) > 3  # the path moves
        kept.append((shared.copy(), shared))
    assert all(np.array_equal(copy, path) for copy, path in kept)
    with pytest.raises(ValueError, match="3000 steps"):
        replay_fast_reach(
            [Metric(usage[:10], 0.5, 70)],
            min_replicas=1,
            max_replicas=9,
            initial=1,
            step_s=60,
            area=area,
        )
