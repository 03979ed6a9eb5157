"""Replay figures on hand-made histories with known answers."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.model import MIB, HpaTarget, ResourceValues
from bot.recommend.replay import figures
from bot.recommend.replay.exact import replay_reach
from bot.recommend.replay.figures import _percentile_of, _percentile_of_counts, replay, replica_path
from bot.recommend.replay.series import ReplaySeries
from bot.recommend.replay.values import ContainerValues, HpaValues, Options, Values
from tests.recommend.factories import DAY_S, NOW_S, container_history, history, series


def _series(hist, *names: str) -> ReplaySeries:
    built = ReplaySeries.build(hist, names or tuple(hist.containers), now_s=NOW_S)
    assert built is not None
    return built


def _values(cpu=0.5, mem=512 * MIB, cpu_limit=None, mem_limit=None, hpa=None) -> Values:
    return Values(
        (ContainerValues("app", ResourceValues(cpu, mem), ResourceValues(cpu_limit, mem_limit)),),
        hpa,
    )


def _bursts(days: float, bursts: int, low: float, high: float) -> np.ndarray:
    """A working set at ``low`` with ``bursts`` separate runs of 10 samples at ``high``."""
    n = series(days).size
    mem = np.full(n, low)
    for start in np.linspace(100, n - 100, bursts).astype(int):
        mem[start : start + 10] = high
    return mem


def test_a_load_above_a_candidate_limit_gives_one_oom_episode_per_run():
    mem = _bursts(2, 5, 300 * MIB, 700 * MIB)
    replayed = _series(history(container_history("app", 0.2, mem, days=2), days=2))
    current = _values(mem_limit=1024 * MIB)
    lower = _values(mem_limit=600 * MIB)
    assert replay(replayed, current).memory[0].oom_kills == 0
    figures = replay(replayed, lower, recorded=current)
    assert figures.memory[0].oom_kills == 5
    assert figures.memory[0].peak_bytes == 700 * MIB
    assert figures.memory[0].headroom_percent == (600 - 700) / 600 * 100


def test_a_recorded_kill_between_scrapes_counts_at_a_limit_no_higher():
    kill_at = NOW_S - DAY_S
    hist = history(
        container_history("app", 0.2, 300 * MIB, days=2, oom=[(kill_at, 0, 512 * MIB)]), days=2
    )
    replayed = _series(hist)
    current = _values(mem_limit=512 * MIB)
    assert replay(replayed, current).memory[0].oom_kills == 1
    assert replay(replayed, _values(mem_limit=400 * MIB), recorded=current).memory[0].oom_kills == 1
    higher = replay(replayed, _values(mem_limit=800 * MIB), recorded=current)
    assert higher.memory[0].oom_kills == 0


def test_a_kill_seen_in_the_samples_is_not_counted_twice():
    mem = _bursts(2, 1, 300 * MIB, 600 * MIB)
    t = series(2)
    kill_at = float(t[np.argmax(mem > 500 * MIB)] + 9 * 60)  # the run's last sample
    hist = history(
        container_history("app", 0.2, mem, days=2, oom=[(kill_at, 0, 512 * MIB)]), days=2
    )
    figures = replay(_series(hist), _values(mem_limit=512 * MIB))
    assert figures.memory[0].oom_kills == 1


def test_without_a_memory_limit_minutes_above_the_request_are_eviction_risk():
    mem = _bursts(1, 3, 300 * MIB, 700 * MIB)  # 3 runs of 10 one-minute samples
    figures = replay(
        _series(history(container_history("app", 0.2, mem, days=1), days=1)), _values()
    )
    assert figures.memory[0].oom_kills is None
    assert figures.memory[0].over_request_minutes == 30.0


def test_cpu_minutes_over_request_and_limit():
    cpu = np.where(np.arange(series(1).size) % 4 == 0, 0.8, 0.2)  # 1 minute in 4 at 0.8 core
    replayed = _series(history(container_history("app", cpu, 300 * MIB, days=1), days=1))
    detail = Options(slots=np.zeros(replayed.steps, dtype=np.intp))  # as a report asks
    figures = replay(replayed, _values(cpu=0.5, cpu_limit=0.6), options=detail)
    c = figures.cpu[0]
    assert c.container_minutes == 1440.0
    assert c.over_request_minutes == 360.0
    assert c.over_limit_minutes == 360.0
    assert c.p95_percent == 160.0
    assert replay(replayed, _values(cpu=1.0)).cpu[0].over_request_minutes == 0.0


def test_cost_counts_replicas():
    hist = history(container_history("app", 0.2, 300 * MIB, days=1), replicas=3, days=1)
    figures = replay(_series(hist), _values(cpu=0.5, mem=1024 * MIB))
    hours = figures.window_s / 3600
    assert figures.replicas.mean == 3.0
    assert not figures.replicas.replayed
    assert np.isclose(figures.core_hours, 3 * 0.5 * hours)
    assert np.isclose(figures.gib_hours, 3 * 1.0 * hours)


def test_an_hpa_is_replayed_and_its_shortfall_counted_at_max_replicas():
    days = 1
    n = series(days).size
    demand = np.where(np.arange(n) < n // 2, 1.0, 4.0)  # cores of one pod at 1 replica
    # The history has one pod: its usage is the whole demand.
    hist = history(container_history("app", demand, 300 * MIB, days=days), replicas=1, days=days)
    replayed = _series(hist)
    target = (HpaTarget("cpu", 50, "app"),)
    roomy = replay(replayed, _values(cpu=0.5, hpa=HpaValues(1, 20, target)))
    assert roomy.replicas.replayed
    assert roomy.replicas.max == 16.0  # 4 cores / (0.5 × 50 %)
    # Two steps short: the first (the recorded single pod does the work of four) and the
    # step whose twelve new pods are still starting.
    assert roomy.replicas.shortfall_minutes == 2.0
    tight = replay(replayed, _values(cpu=0.5, hpa=HpaValues(1, 6, target)))
    assert tight.replicas.max == 6.0
    assert tight.replicas.shortfall_minutes is not None
    assert tight.replicas.shortfall_minutes >= n // 2 - 1
    # Each pod carries demand / replicas: 4 cores on 6 pods is 0.67 core, above the request.
    assert tight.cpu[0].over_request_minutes >= n // 2 * 6 - 6
    # With room, only while added pods start (60 s, one step) do the serving ones carry the
    # load above their requests: the first step (1 pod, 1 core), the next (the 3 added pods
    # starting: 1 pod, 1 core) and the jump (12 starting: 4 pods at 1 core each), 1 + 1 + 4.
    assert roomy.cpu[0].over_request_minutes == 6.0
    instant = replay(
        replayed, _values(cpu=0.5, hpa=HpaValues(1, 20, target)), options=Options(pod_startup_s=0)
    )
    assert instant.cpu[0].over_request_minutes == 1.0  # the first step only


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    cpu=st.floats(0.05, 2.0),
    mem_mib=st.integers(64, 2048),
    limit=st.none() | st.integers(100, 4096),
    hpa_min=st.integers(1, 4),
    target=st.integers(30, 95),
    pods=st.integers(1, 3),
)
def test_proposed_equal_to_current_gives_identical_figures(
    seed, cpu, mem_mib, limit, hpa_min, target, pods
):
    rng = np.random.default_rng(seed)
    n = series(1).size
    usage = rng.lognormal(-1.5, 0.5, n * pods)
    mem = rng.uniform(100, 900, n * pods) * MIB
    hist = history(
        container_history("app", usage, mem, days=1, pods=pods),
        replicas=rng.integers(1, 6, series(1, 300.0).size).astype(float),
        days=1,
    )
    replayed = _series(hist)
    hpa = HpaValues(hpa_min, hpa_min + 5, (HpaTarget("cpu", target, "app"),))
    a = _values(cpu=cpu, mem=mem_mib * MIB, mem_limit=limit and limit * MIB, hpa=hpa)
    b = _values(cpu=cpu, mem=mem_mib * MIB, mem_limit=limit and limit * MIB, hpa=hpa)
    assert replay(replayed, a) == replay(replayed, b, recorded=a)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(0, 60), min_size=1, max_size=400),
    st.sampled_from([0.0, 5.0, 50.0, 95.0, 99.0, 100.0]),
)
def test_the_percentile_of_replica_counts_is_numpys(counts, q):
    values = np.array(counts, dtype=np.float64)
    assert _percentile_of_counts(values, q) == float(np.percentile(values, q))


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.floats(0.0, 1e6), min_size=1, max_size=300)
    | st.lists(st.sampled_from([0.0, 0.25, 0.5, 2.0]), min_size=1, max_size=300),
    st.sampled_from([0, 5, 50, 95, 99, 100]),
)
def test_the_percentile_of_usage_is_numpys(usage, q):
    values = np.array(usage, dtype=np.float64)
    assert _percentile_of(values.copy(), q, scratch=True) == float(np.percentile(values, q))


def test_a_replica_path_is_replayed_once_per_set_of_values_it_depends_on():
    built = _series(
        history(container_history("app", 0.6, 300 * MIB, days=1, pods=3), replicas=3.0, days=1)
    )
    hpa = HpaValues(1, 10, (HpaTarget("cpu", 60, "app"),))
    first = replica_path(built, _values(cpu=0.5, hpa=hpa), Options())
    # the memory request and the limits do not move the HPA: the same path, not replayed again
    same = _values(cpu=0.5, mem=256 * MIB, cpu_limit=2.0, hpa=hpa)
    assert replica_path(built, same, Options()) is first
    other = replica_path(built, _values(cpu=0.25, hpa=hpa), Options())
    assert other is not first
    assert other.replicas.mean() > first.replicas.mean()


def test_one_sample_per_step_builds_the_grid_the_general_path_builds():
    cpu = 0.2 + 0.1 * np.sin(np.arange(series(1).size) / 50.0)
    aligned = container_history("app", cpu, 300 * MIB, days=1)
    # one unusable sample more (NaN usage) takes every family through the masked path
    padded = replace(
        aligned,
        cpu_t=np.append(aligned.cpu_t, NOW_S - 30.0),
        cpu_pod=np.append(aligned.cpu_pod, 0),
        cpu_cores=np.append(aligned.cpu_cores, np.nan),
        mem_t=np.append(aligned.mem_t, NOW_S + 60.0),
        mem_pod=np.append(aligned.mem_pod, 0),
        mem_bytes=np.append(aligned.mem_bytes, 1.0),
    )
    replicas = 2.0 + (np.arange(series(1, 60.0).size) % 7 == 0)
    gap = replicas.copy()
    gap[7] = np.nan  # an unknown count carries the one before: 2
    replicas[7] = 2.0
    fast = _series(history(aligned, replicas=replicas, days=1, replica_step_s=60.0))
    general = _series(history(padded, replicas=gap, days=1, replica_step_s=60.0))
    assert fast.steps == general.steps == series(1).size
    assert np.array_equal(fast.containers["app"].cpu_mean, cpu)
    assert np.array_equal(fast.containers["app"].cpu_mean, general.containers["app"].cpu_mean)
    assert np.array_equal(fast.replicas, general.replicas)
    assert np.array_equal(fast.containers["app"].mem_bytes, general.containers["app"].mem_bytes)


def test_a_looser_max_replicas_takes_the_path_already_replayed(monkeypatch):
    load = np.tile(0.3 + 0.2 * np.sin(np.arange(series(1).size) / 90.0), 3)
    hist = history(container_history("app", load, 300 * MIB, days=1, pods=3), replicas=3.0, days=1)
    built, fresh = _series(hist), _series(hist)
    target = (HpaTarget("cpu", 60, "app"),)
    wide = replica_path(built, _values(hpa=HpaValues(1, 60, target)), Options())
    peak = int(wide.replicas.max())
    assert 1 < peak < 59
    replays: list[int] = []

    def counted(*args, **kwargs):
        replays.append(1)
        return replay_reach(*args, **kwargs)

    monkeypatch.setattr(figures, "replay_reach", counted)
    for high in (peak + 1, 59):
        values = _values(hpa=HpaValues(1, high, target))
        reused = replica_path(built, values, Options())
        assert np.array_equal(reused.replicas, wide.replicas)
        assert not replays  # taken from the wider replay, not replayed
        again = replica_path(fresh, values, Options())
        assert np.array_equal(reused.replicas, again.replicas)
        assert np.array_equal(reused.short, again.short)
        replays.clear()


@settings(max_examples=40, deadline=None)
@given(
    st.integers(0, 2**32 - 1),
    st.integers(1024, 25_000),
    st.sampled_from(["lognormal", "ascending", "descending", "constant", "few", "stride"]),
    st.sampled_from([50, 90, 95, 99]),
)
def test_the_percentile_of_a_long_series_is_numpys(seed, n, shape, q):
    """Long series take the threshold from a strided sample; one that misleads it (every 16th
    value the largest) falls back to the whole partial sort with the same answer."""
    rng = np.random.default_rng(seed)
    if shape == "lognormal":
        values = rng.lognormal(0.0, 0.4, n)
    elif shape in ("ascending", "descending"):
        values = np.sort(rng.random(n))
        values = values if shape == "ascending" else values[::-1].copy()
    elif shape == "constant":
        values = np.full(n, 0.25)
    elif shape == "few":
        values = rng.choice([0.0, 0.5, 2.0], n)
    else:
        values = np.where(np.arange(n) % 16 == 0, 9.0, rng.random(n))
    assert _percentile_of(values.copy(), q, scratch=True) == float(np.percentile(values, q))


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.floats(allow_nan=True, allow_infinity=True)
        | st.integers(0, 10**6).map(lambda k: (k + 0.5) / 100)
        | st.tuples(st.integers(0, 40_000), st.integers(1, 400)).map(lambda p: p[0] / p[1]),
        max_size=60,
    )
)
def test_rounding_to_hundredths_is_pythons(values):
    """Means of replica counts, exact halves of a hundredth, any float (huge, tiny, NaN, ±inf)."""
    array = np.array(values, dtype=np.float64)
    got = figures.rounded_2(array)
    want = tuple(round(x, 2) for x in array.tolist())
    assert [g if g == g else "nan" for g in got] == [w if w == w else "nan" for w in want]
