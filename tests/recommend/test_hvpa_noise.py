"""HVPA blending and noise control (gardener/hvpa-controller ``controllers/hvpa_controller.go``
and ``controllers/hvpa_controller_test.go``; vpa-hvpa.md part C10)."""

from __future__ import annotations

import pytest

from bot.config.recommend import ChangeThreshold, GapParams, NoiseSettings, WeightInterval
from bot.recommend import hvpa, noise


def _intervals(*specs: tuple[float, int, int]) -> tuple[WeightInterval, ...]:
    return tuple(
        WeightInterval(vpa_weight=w, start_replica_count=s, last_replica_count=e)
        for w, s, e in specs
    )


@pytest.mark.parametrize(
    ("current", "desired", "expected"), [(2, 2, 30), (3, 3, 80)], ids=["first-match", "second"]
)
def test_first_matching_interval_wins(current, desired, expected):
    intervals = _intervals((30, 1, 2), (80, 2, 3))
    assert hvpa.vpa_weight(intervals, current, desired, hpa_min=1, hpa_max=3) == expected


@pytest.mark.parametrize(
    ("desired", "expected"), [(5, 60), (3, 0), (4, 100)], ids=["out", "in", "steady"]
)
def test_weight_100_looks_forward_or_back(desired, expected):
    intervals = _intervals((0, 1, 3), (100, 4, 4), (60, 5, 10))
    assert hvpa.vpa_weight(intervals, 4, desired, hpa_min=1, hpa_max=10) == expected


def test_no_interval_is_pure_hpa_and_zero_bounds_default_to_hpa_range():
    assert hvpa.vpa_weight(_intervals((50, 1, 2)), 7, 7, hpa_min=1, hpa_max=10) == 0
    assert hvpa.vpa_weight(_intervals((50, 0, 0)), 7, 7, hpa_min=1, hpa_max=10) == 50


def test_seed_fractional_weight_reads_as_percent():
    assert WeightInterval(vpa_weight=0.6).vpa_weight == 60
    assert WeightInterval(vpa_weight=60).vpa_weight == 60


def test_weighted_replicas_ceil_out_floor_in():
    # 4 -> 10 at hpaWeight 50 -> ceil(7) = 7; 10 -> 4 at hpaWeight 25 -> floor(8.5) = 8.
    assert hvpa.weighted_replicas(4, 10, 50) == 7
    assert hvpa.weighted_replicas(10, 4, 25) == 8


def test_weighted_requests():
    # CPU: 1000m + trunc((1500 - 1000) × 33/100) = 1165m.
    assert hvpa.weighted_request(1.0, 1.5, 33, "cpu") == 1.165
    # Memory: trunc((3e8 - 1e8) × 50 / 100) = 1e8 -> 2e8; 1e8 + 1001 ... rounds up to 1000 B.
    assert hvpa.weighted_request(1e8, 3e8, 50, "memory") == 2e8
    assert hvpa.weighted_request(1e8, 1e8 + 2003, 50, "memory") == 1e8 + 2000
    # Scale down truncates toward zero: 1000 + trunc(-333.3) = 667m.
    assert hvpa.weighted_request(1.0, 0.0, 33, "cpu") == 0.67


def test_min_change_threshold():
    # Doc example: current 200M, {value 100M, percentage 80} -> min(160M, 100M) = 100M.
    t = ChangeThreshold(value=100e6, percentage=80)
    assert hvpa.min_change_threshold(200e6, t, "memory") == 100e6
    assert hvpa.min_change_threshold(200e6, ChangeThreshold(), "memory") == 200_000_000
    assert hvpa.min_change_threshold(1.0, ChangeThreshold(), "cpu") == 0.2
    assert hvpa.min_change_threshold(1.0, ChangeThreshold(percentage=10), "cpu") == 0.1
    # A zero current request makes a percentage threshold 0: any change passes.
    assert hvpa.min_change_threshold(0.0, ChangeThreshold(percentage=10), "cpu") == 0.0


def test_min_change_equality_passes():
    ns = NoiseSettings(proportional=False)  # HVPA's 200m
    assert noise.passes_min_change(1.0, 1.2, "cpu", ns)[0]
    assert not noise.passes_min_change(1.0, 1.199, "cpu", ns)[0]
    assert noise.passes_min_change(1.0, 0.8, "cpu", ns)[0]


@pytest.mark.parametrize(
    ("current", "proposed", "resource", "passes", "threshold"),
    [
        (0.2, 0.16, "cpu", True, 0.02),  # a 200m sidecar may move by 40m
        (0.2, 0.185, "cpu", False, 0.02),
        (4.0, 3.96, "cpu", False, 0.4),  # a 4-core service does not churn by 40m
        (4.0, 3.6, "cpu", True, 0.4),
        (0.05, 0.04, "cpu", True, 0.01),  # the 10m floor
        (64 * 2**20, 60 * 2**20, "memory", False, 16 * 2**20),  # the 16 MiB floor
        (2 * 2**30, 1.8 * 2**30, "memory", True, 0.2 * 2**30),
    ],
)
def test_proportional_min_change(current, proposed, resource, passes, threshold):
    allowed, limit = noise.passes_min_change(current, proposed, resource, NoiseSettings())
    assert allowed is passes
    assert limit == pytest.approx(threshold)


def test_rounding_only_is_no_change():
    ns = NoiseSettings()
    assert noise.round_up_to_step(0.1234, "cpu", ns) == 0.124
    assert noise.round_up_to_step(100 * 1024 * 1024 + 1, "memory", ns) == 101 * 1024 * 1024
    assert noise.same_on_grid(100.0 * 1024 * 1024, 100 * 1024 * 1024 - 5, "memory", ns)
    assert not noise.same_on_grid(0.1, 0.1011, "cpu", ns)


@pytest.mark.parametrize(
    ("limit", "req", "weighted", "params", "expected"),
    [
        (None, 1.0, 2.0, None, None),
        (1.0, 1.0, 2.0, None, 2.0),
        (3.0, 1.0, 2.0, None, 6.0),
        (3.0, 1.0, 2.0, GapParams(value=0.5, percentage=10), 2.5),
        (3.0, 1.0, 2.0, GapParams(value=0.1, percentage=50), 3.0),
    ],
    ids=["no-limit", "equal", "proportional", "value-wins", "percentage-wins"],
)
def test_limits_requests_gap(limit, req, weighted, params, expected):
    assert hvpa.scaled_limit(limit, req, weighted, params, "cpu") == expected


def test_memory_gap_limit_rounds_up_to_1000_bytes():
    # 3e8 × (1e8 + 1) / 1e8 = 300,000,003 bytes -> up to a multiple of 1000.
    assert hvpa.scaled_limit(3e8, 1e8, 1e8 + 1, None, "memory") == 300_001_000
