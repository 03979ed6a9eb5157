"""VPA estimators, units, capping, aggregation, OOM and limits against upstream scenarios
(``logic/estimator_test.go``, ``logic/recommender_test.go``, ``model/types_test.go``,
``model/container_test.go``, ``utils/vpa/*_test.go``)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from bot.config.recommend import AdminSettings, LimitsSettings, VpaSettings
from bot.model import MIB
from bot.recommend.vpa.amounts import amount_from_value, round_up_to_scale, scale_amount
from bot.recommend.vpa.counters import confidence, cpu_counters
from bot.recommend.vpa.estimator import (
    cap_amounts,
    confidence_factor,
    estimate,
    pod_minimum_amount,
)
from bot.recommend.vpa.histogram import (
    CPU_OPTIONS,
    MEMORY_OPTIONS,
)
from bot.recommend.vpa.limits import proportional_limit, propose_limit
from bot.recommend.vpa.peaks import memory_peaks
from bot.recommend.vpa.replay import ReplayGrid, replay_rows
from bot.recommend.vpa.samples import accepted, sample_step_s

DAY_S = 86400.0
T0 = 1_700_006_400.0


def _rows(values, weights, options, times=None):
    values = np.asarray(values, dtype=np.float64)
    times = np.full(values.size, T0) if times is None else np.asarray(times, dtype=np.float64)
    grid = ReplayGrid(T0 - 1, 10.0, 1)
    return replay_rows(
        values,
        np.asarray(weights, dtype=np.float64),
        times,
        grid.bins(times),
        grid=grid,
        options=options,
        half_life_s=DAY_S,
    )


@pytest.mark.parametrize(
    ("cores", "millicores"),
    [
        (0.069946, 69),
        (0.61535112, 615),
        (0.0172071, 17),
        (0.00455, 4),
        (0.0123456789, 12),
        (0.00123456789, 1),
    ],
)
def test_cpu_amount_truncates(cores, millicores):
    # TestCPUAmountFromCores.
    assert amount_from_value(np.array([cores]), "cpu")[0] == millicores


@pytest.mark.parametrize(
    ("value", "scale", "expected"),
    [
        (100, 7, 105),
        (100, 10, 100),
        (0, 5, 0),
        (100, -5, 100),
        (100, 0, 100),
        (1231241, 13, 1231243),
        (1000, 3, 1002),
        (839_500_000, 134_217_728, 896 * MIB),
    ],
)
def test_round_up_to_scale(value, scale, expected):
    # TestRoundUpToScale and TestResourcesAsResourceList.
    assert round_up_to_scale(value, scale) == expected


def test_amounts_clamp_at_1e14_and_zero():
    assert scale_amount(np.array([5.0]), math.inf)[0] == 1e14
    assert scale_amount(np.array([-5.0]), 2.0)[0] == 0
    assert scale_amount(np.array([0.0]), math.inf)[0] == 0


def test_percentile_estimator():
    # TestPercentileEstimator: CPU 1, 2, 3 cores at P0.2 ~ 1 core; memory 1e9..3e9 at P0.5 ~ 2e9.
    cpu = _rows([1.0, 2.0, 3.0], [1.0, 1.0, 1.0], CPU_OPTIONS)
    assert cpu.percentiles((0.2,))[0, 0] == pytest.approx(1.0, rel=0.05)
    mem = _rows([1e9, 2e9, 3e9], [1.0, 1.0, 1.0], MEMORY_OPTIONS)
    assert mem.percentiles((0.5,))[0, 0] == pytest.approx(2e9, rel=0.05)


def test_confidence_multipliers():
    # TestConfidenceMultiplierNoHistory: no history gives 1e14 for the upper bound.
    assert confidence_factor(np.array([0.0]), 1.0, 1.0)[0] == math.inf
    assert scale_amount(np.array([500.0]), confidence_factor(np.array([0.0]), 1.0, 1.0))[0] == 1e14
    # Upper: 12 h -> ×3, 24 h -> ×2, one week -> ×1.14; lower at 60 min -> ×0.95 (approx).
    assert confidence_factor(np.array([0.5, 1.0, 7.0]), 1.0, 1.0).tolist() == pytest.approx(
        [3.0, 2.0, 8 / 7]
    )
    lower = confidence_factor(np.array([5 / 1440, 30 / 1440, 60 / 1440]), 0.001, -2.0)
    # (1 + 0.001/conf)^-2 at conf = 5/1440, 30/1440, 60/1440 (the docs round to 0.6/0.9/0.95).
    assert lower.tolist() == pytest.approx([0.6028, 0.9105, 0.9537], abs=1e-4)
    assert confidence_factor(np.array([0.0]), 0.001, -2.0)[0] == 0.0


def test_confidence_from_counters():
    # conf = min(span/24h, count/1440): 2 days at one sample per minute -> 2.
    t = T0 + 60.0 * np.arange(2 * 1440 + 1, dtype=np.float64)
    grid = ReplayGrid.covering(float(t[0]), float(t[-1]) + 1, 3600.0)
    conf = confidence(cpu_counters(t, grid.bins(t), grid), DAY_S)
    assert conf[-1] == pytest.approx(2.0)
    # Prometheus pitfall: hourly samples over 8 days give count/1440 = 192/1440.
    th = T0 + 3600.0 * np.arange(192, dtype=np.float64)
    grid = ReplayGrid.covering(float(th[0]), float(th[-1]) + 1, DAY_S)
    conf = confidence(cpu_counters(th, grid.bins(th), grid), DAY_S)
    assert conf[-1] == pytest.approx(192 / 1440)


def test_margin_then_chain():
    # TestMarginEstimator: 3.14 cores + 10 % = 3454 m (3140 + 314).
    x = amount_from_value(np.array([3.14]), "cpu")
    assert (x + scale_amount(x, 0.1))[0] == 3454
    y = amount_from_value(np.array([3.14e9]), "memory")
    assert (y + scale_amount(y, 0.1))[0] == 3.454e9


@pytest.mark.parametrize(
    ("n", "cpu_m", "mem_b"), [(1, 25, 262_144_000), (2, 12, 131_072_000)], ids=["one", "two"]
)
def test_pod_minimum_split_across_containers(n, cpu_m, mem_b):
    # TestMinResourcesApplied / TestMinResourcesSplitAcrossContainers.
    s = VpaSettings()
    assert pod_minimum_amount("cpu", s, n) == cpu_m
    assert pod_minimum_amount("memory", s, n) == mem_b
    rows = _rows([0.001], [1.0], CPU_OPTIONS)
    est = estimate(rows, np.array([1.0]), "cpu", s, n_containers=n)
    assert est.target[-1] == pytest.approx(cpu_m / 1000)
    mem_rows = _rows([1e6], [1.0], MEMORY_OPTIONS)
    est = estimate(mem_rows, np.array([1.0]), "memory", s, n_containers=n)
    assert est.target[-1] == mem_b


def test_capping_to_min_max_allowed():
    # TestRecommendationCappedToMinMaxPolicy: min 400/40000, max 450/45000.
    assert cap_amounts(np.array([300.0, 200.0, 500.0]), 400, 450).tolist() == [400, 400, 450]
    assert cap_amounts(np.array([50000.0, 43000, 55000]), 40000, 45000).tolist() == [
        45000,
        43000,
        45000,
    ]


def test_apply_vpa_policy_keeps_uncapped_target():
    # TestApplyVPAPolicy: maxAllowed 40m caps target and upper; uncappedTarget stays.
    rows = _rows([0.042] * 50, [1.0] * 50, CPU_OPTIONS)
    est = estimate(rows, np.array([7.0]), "cpu", VpaSettings(), n_containers=1, max_allowed=0.04)
    assert est.target[-1] == 0.04
    assert est.uncapped_target[-1] > 0.04
    assert est.capped_by == "maxAllowed"
    est = estimate(rows, np.array([7.0]), "cpu", VpaSettings(), n_containers=1, min_allowed=0.05)
    assert est.target[-1] == est.lower[-1] == 0.05
    assert est.capped_by == "minAllowed"
    glob = VpaSettings(max_allowed_cpu_cores=0.04)
    assert estimate(rows, np.array([7.0]), "cpu", glob, n_containers=1).target[-1] == 0.04


def test_estimate_full_chain_by_hand():
    # 0.5 core lands in bucket 25; its upper edge is start(26) = 0.5111 -> 511 m;
    # + trunc(511 × 0.15) = 76 -> 587 m target; upper 587 × (1 + 1/7) -> 670 m (conf 7).
    rows = _rows([0.5] * 10, [0.1] * 10, CPU_OPTIONS)
    est = estimate(rows, np.array([7.0]), "cpu", VpaSettings(), n_containers=1)
    assert est.target[-1] == 0.587
    assert est.upper[-1] == math.trunc(587 * (1 + 1 / 7)) / 1000
    assert est.lower[-1] == math.trunc(587 * (1 + 0.001 / 7) ** -2) / 1000


def test_cpu_samples_need_strictly_increasing_time_per_pod():
    t = np.array([10.0, 5.0, 7.0, 11.0, 10.0, 10.0])
    pod = np.array([0, 0, 0, 0, 1, 1], dtype=np.int32)
    v = np.array([1.0, 1, 1, 1, 1, -1])
    # Pod 0: 5 and 7 are not after 10; pod 1: the negative sample is dropped.
    assert accepted(t, pod, v, strict=True).tolist() == [True, False, False, True, True, False]
    # Memory accepts equal times.
    assert accepted(t, pod, np.ones(6), strict=False).tolist()[4:] == [True, True]


def _peaks(t, pod, v, oom=(), **kw):
    oom = list(oom)
    return memory_peaks(
        np.asarray(t, dtype=np.float64),
        np.asarray(pod, dtype=np.int32),
        np.asarray(v, dtype=np.float64),
        oom_times_s=np.array([o[0] for o in oom], dtype=np.float64),
        oom_pods=np.array([o[1] for o in oom], dtype=np.int32),
        oom_request_bytes=np.array([o[2] for o in oom], dtype=np.float64),
        interval_s=kw.get("interval_s", DAY_S),
        oom_bump_up_ratio=1.2,
        oom_min_bump_up_bytes=100 * MIB,
    )


def test_memory_one_peak_per_pod_and_window_at_window_end():
    # Windows start at each pod's first sample: pod 0 at T0 (two windows), pod 1 at T0 + 1 h.
    t = [T0, T0 + 3600, T0 + DAY_S + 5, T0 + 3600]
    peaks = _peaks(t, [0, 0, 0, 1], [2e9, 3e9, 1e9, 4e9])
    got = sorted(zip(peaks.window_end_s.tolist(), peaks.values.tolist(), strict=True))
    assert got == [(T0 + DAY_S, 3e9), (T0 + 3600 + DAY_S, 4e9), (T0 + 2 * DAY_S, 1e9)]


def test_oom_bump_uses_request_or_usage_peak_not_oom_peak():
    # used = max(request 500 MiB, peak 400 MiB) = 500 MiB; needed = max(600 MiB, 1.2 × 500 MiB).
    peaks = _peaks([T0, T0 + 60], [0, 0], [300 * MIB, 400 * MIB], [(T0 + 120, 0, 500 * MIB)])
    assert peaks.oom_bumps.tolist() == [600 * MIB]
    assert peaks.values.tolist() == [600 * MIB]
    # A second OOM in the same window bumps from the same usage, not from the first bump.
    peaks = _peaks(
        [T0, T0 + 60],
        [0, 0],
        [300 * MIB, 400 * MIB],
        [(T0 + 120, 0, 500 * MIB), (T0 + 180, 0, 500 * MIB)],
    )
    assert peaks.values.tolist() == [600 * MIB]
    # Large requests: the ratio wins: 1000 MiB × 1.2 = 1200 MiB > 1000 + 100 MiB.
    peaks = _peaks([T0], [0], [300 * MIB], [(T0 + 60, 0, 1000 * MIB)])
    assert peaks.oom_bumps.tolist() == [math.trunc(1000 * MIB * 1.2)]


def test_oom_without_usage_samples_opens_a_window():
    peaks = _peaks([], [], [], [(T0, 0, 100 * MIB)])
    assert peaks.values.tolist() == [200 * MIB]
    assert peaks.window_end_s.tolist() == [T0 + DAY_S]


@pytest.mark.parametrize(
    ("limit", "req", "rec", "expected"),
    [
        (2.0, 1.0, 10.0, 20.0),
        (None, 1.0, 10.0, None),
        (2.0, None, 10.0, 10.0),
        (2.0, 1.0, 0.0, None),
        (1.0, 1.0, 10.0, 10.0),
        (2.0, 1.5, 1.0, 1.333),
    ],
    ids=["ratio", "no-limit", "no-request", "no-rec", "equal", "non-integer"],
)
def test_proportional_cpu_limit(limit, req, rec, expected):
    # TestGetProportionalResourceLimitCPU.
    assert proportional_limit(limit, req, rec, "cpu").value == expected


def test_proportional_memory_limit_floors_whole_bytes():
    # TestGetProportionalResourceLimitMem: 200 × 100 / 150 = 133.
    assert proportional_limit(200.0, 150.0, 100.0, "memory").value == 133.0


def test_proportional_limit_saturates():
    out = proportional_limit(10e9, 0.001, 10e9, "cpu")
    assert out.rule == "limits.keep_ratio_capped"


def test_limit_policies_and_tortoise_multiplier():
    admin = AdminSettings()
    keep = LimitsSettings()
    assert propose_limit(2.0, 1.0, 0.5, "cpu", limits=keep, admin=admin).value == 1.0
    leave = LimitsSettings(policy="leave")
    assert propose_limit(2.0, 1.0, 0.5, "cpu", limits=leave, admin=admin).value == 2.0
    drop = LimitsSettings(policy="drop_cpu_limit")
    assert propose_limit(2.0, 1.0, 0.5, "cpu", limits=drop, admin=admin).value is None
    assert propose_limit(2e9, 1e9, 5e8, "memory", limits=drop, admin=admin).value == 1e9
    head = LimitsSettings(policy="fixed_headroom", cpu_headroom_fraction=0.5)
    assert propose_limit(2.0, 1.0, 0.4, "cpu", limits=head, admin=admin).value == pytest.approx(0.6)
    assert propose_limit(None, 1.0, 0.4, "cpu", limits=head, admin=admin).value is None
    # pkg/pod/pod_test.go: request 100m limit 200m (ratio 2 < multiplier 3), new 200m -> 600m.
    mult = AdminSettings(resource_limit_multiplier={"cpu": 3})
    assert propose_limit(0.2, 0.1, 0.2, "cpu", limits=keep, admin=mult).value == pytest.approx(0.6)
    # MinimumCPULimit 700m floors a computed 400m.
    floor = AdminSettings(minimum_cpu_limit_cores=0.7)
    assert propose_limit(0.2, 0.1, 0.2, "cpu", limits=keep, admin=floor).value == 0.7
    # A limit below its request in the manifest never yields a limit below the new request.
    assert propose_limit(0.5, 1.0, 2.0, "cpu", limits=keep, admin=admin).value == 2.0


def test_confidence_can_count_coarse_samples_per_minute():
    # 5-minute samples over 2 days: 576 samples -> count/1440 = 0.4; per minute: 2.0.
    t = T0 + 300.0 * np.arange(576 + 1, dtype=np.float64)
    pods = np.zeros(t.size, dtype=np.int32)
    grid = ReplayGrid.covering(float(t[0]), float(t[-1]) + 1, 3600.0)
    counters = cpu_counters(t, grid.bins(t), grid)
    assert confidence(counters, DAY_S)[-1] == pytest.approx(577 / 1440)
    assert sample_step_s(t, pods) == 300.0
    assert confidence(counters, DAY_S, samples_per_sample=5.0)[-1] == pytest.approx(2.0)
