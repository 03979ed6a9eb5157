"""Tortoise rules against the upstream tests (``pkg/recommender/recommender_test.go``,
``pkg/hpa/service_test.go``, ``pkg/tortoise/tortoise_test.go``), restated as facts, plus the
seeds' istio-proxy example."""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pytest

from bot.config.recommend import AdminSettings
from bot.recommend.rules import Rule
from bot.recommend.tortoise.emergency import emergency_min_replicas
from bot.recommend.tortoise.replicas import (
    candidates,
    replica_slots,
    slot_index,
    slot_labels,
    update_slot,
)
from bot.recommend.tortoise.requests import (
    HorizontalContext,
    RequestBounds,
    horizontal_request,
    sticky_max,
    vertical_request,
)
from bot.recommend.tortoise.ruled import Ruled
from bot.recommend.tortoise.utilization import (
    apply_target_change_limits,
    recommend_target,
    usage_percent_ceil,
)

GI = 1024**3
MI = 1024**2
HOUR_S = 3600.0
DAY_S = 86400.0
WED_0900_JST = 1_700_006_400.0
"""2023-11-15T00:00Z = Wednesday 09:00 in Asia/Tokyo."""


def m(value: float) -> int:
    """Cores or bytes in milli-units."""
    return round(value * 1000)


# ----------------------------------------------------------------- replica slots (H2, C1, C2)


def test_slot_layout_and_lookup():
    admin = AdminSettings()
    labels = slot_labels(admin)
    assert len(labels) == 168
    assert labels[0] == "Sun 00-01"
    idx = slot_index(np.array([WED_0900_JST]), admin)
    assert labels[int(idx[0])] == "Wed 09-10"
    daily = AdminSettings(
        gathering_data_period_type="daily", range_of_min_max_replicas_recommendation_hours=3
    )
    assert slot_labels(daily)[3] == "09-12"
    assert slot_labels(daily)[int(slot_index(np.array([WED_0900_JST]), daily)[0])] == "09-12"


def test_slot_width_must_divide_24():
    with pytest.raises(ValueError, match="must divide 24"):
        AdminSettings(range_of_min_max_replicas_recommendation_hours=5)


@pytest.mark.parametrize(
    ("old", "age_h", "replicas", "expected"),
    [
        ((3, 9), 168, 10, (5, 20)),  # "replaced": 5 vs trunc(2.85)=2; 20 vs trunc(8.55)=8
        ((8, 30), 168, 10, (7, 28)),  # "not replaced": decay trunc(7.6)=7, trunc(28.5)=28
        ((8, 30), 0, 10, (8, 30)),  # "time-bias isn't applied": updated now
        ((0, 0), 168, 1, (3, 12)),  # "hit minimumMinReplicas": 1 -> 3; 2 -> 3 × 2/0.5 = 12
    ],
    ids=["replaced", "not-replaced", "no-time-bias", "minimum-min-replicas"],
)
def test_update_replicas_recommendation(old, age_h, replicas, expected):
    admin = AdminSettings()
    lo, hi = candidates(np.array([float(replicas)]), admin)
    now = WED_0900_JST
    got = (
        update_slot(old[0], now - age_h * HOUR_S, int(lo[0]), now),
        update_slot(old[1], now - age_h * HOUR_S, int(hi[0]), now),
    )
    assert got == expected


def test_max_floor_quirk_only_below_minimum():
    # maxCand < 3 only for r = 1: r = 2 gives max 4, not 12.
    lo, hi = candidates(np.array([1.0, 2.0, 7.0]), AdminSettings())
    assert lo.tolist() == [3, 3, 4]
    assert hi.tolist() == [12, 4, 14]


def _replicas(days: float, value_for_day, step_s: float = 300.0):
    t = WED_0900_JST - days * DAY_S + step_s * np.arange(int(days * DAY_S / step_s))
    r = np.array([value_for_day(int((x - t[0]) // DAY_S)) for x in t], dtype=np.float64)
    return t, r


def test_replay_keeps_running_max_and_decays_once_per_occurrence():
    admin = AdminSettings()
    # Week 1 at 20 replicas, week 2 at 10: each weekly slot decays once.
    t, r = _replicas(14, lambda day: 20.0 if day < 7 else 10.0)
    table = replica_slots(t, r, admin)
    assert not table.missing
    # min: max(ceil(10 × 0.5) = 5, trunc(10 × 0.95) = 9) = 9; max: max(20, trunc(40 × 0.95)) = 38.
    assert set(table.values.values()) == {(9, 38)}


def test_replay_daily_mode_never_decays_with_wide_slots():
    # Daily slots of 3 h: consecutive occurrences are 21 h apart (< 23 h): values only go up.
    admin = AdminSettings(
        gathering_data_period_type="daily", range_of_min_max_replicas_recommendation_hours=3
    )
    t, r = _replicas(4, lambda day: 20.0 if day < 2 else 10.0)
    table = replica_slots(t, r, admin)
    assert set(table.values.values()) == {(10, 40)}


def test_replay_names_missing_slots_and_gaps_are_not_zero():
    t, r = _replicas(3, lambda day: 10.0)
    table = replica_slots(t, r, AdminSettings())
    assert len(table.missing) == 168 - 72
    assert "Sun 00-01" in table.missing
    assert set(table.values.values()) == {(5, 20)}


# ----------------------------------------------------------------- sticky max (A7)


@pytest.mark.parametrize(
    ("m0", "t", "u", "expected"),
    [(5, 5, 8, 5), (5, 8, 10, 8), (5, 2, 6, 5), (5, 2, 3, 2)],
    ids=["equal", "higher-target", "kept", "upper-dropped"],
)
def test_sticky_max(m0, t, u, expected):
    # TestService_updateUpperRecommendation: seed M with a first step (T = U = M... kept by
    # replaying M as the first target with a wide upper bound).
    assert sticky_max([m0, t], [m0 * 100, u]) == expected


# ----------------------------------------------------------------- target utilisation (H1, C8)

H1 = AdminSettings(
    maximum_target_resource_utilization=90,
    minimum_target_resource_utilization=40,
    hpa_target_utilization_max_increase=50,
    hpa_target_utilization_update_interval_s=3600,
)


def test_target_from_usage_and_current():
    # app memory: rec 4Gi, req 5Gi, cur 60: upper 80 -> 100 - (80 - 60) = 80.
    assert recommend_target(m(4 * GI), m(5 * GI), 60, H1).value == 80
    # istio-proxy CPU: rec 0.6, req 1, cur 50: upper 60 -> 90 (= max).
    assert recommend_target(m(0.6), m(1.0), 50, H1).value == 90
    # Hit the minimum: req 100Gi, rec 90Gi, cur 20 -> 30 -> 40.
    out = recommend_target(m(90 * GI), m(100 * GI), 20, H1)
    assert (out.value, out.rule) == (40, "tortoise.target.min")


def test_target_keeps_current_when_usage_is_below_it_then_clamps():
    # cur 50 > upper 30: keep 50, then the default clamp [65, 90] lifts it to 65.
    assert recommend_target(m(0.3), m(1.0), 50, AdminSettings()).value == 65
    assert recommend_target(m(0.3), m(1.0), 95, AdminSettings()).value == 90


def test_usage_ratio_division_first():
    # 550/1000 × 100 = 55.00000000000001 in IEEE doubles: ceil gives 56.
    assert usage_percent_ceil(550, 1000) == 56


def test_target_increase_cap_and_interval():
    now = WED_0900_JST
    p = Ruled(80, Rule.TORTOISE_TARGET_HEADROOM, "")
    # istio-proxy 10 -> 80 with MaxIncrease 50: 60.
    assert apply_target_change_limits(10, p, last_changed_s=None, now_s=now, admin=H1).value == 60
    # Last change 1 min ago, interval 1 h: unchanged.
    held = apply_target_change_limits(50, p, last_changed_s=now - 60, now_s=now, admin=H1)
    assert (held.value, held.rule) == (50, "tortoise.target.interval")
    # Decreases are written in full (after the interval).
    down = Ruled(40, Rule.TORTOISE_TARGET_MIN, "")
    assert (
        apply_target_change_limits(60, down, last_changed_s=None, now_s=now, admin=H1).value == 40
    )
    # Default +5 per change.
    assert (
        apply_target_change_limits(
            60, p, last_changed_s=now - 2 * DAY_S, now_s=now, admin=AdminSettings()
        ).value
        == 65
    )


# ----------------------------------------------------------------- requests (H3, D2-D6)

H3 = AdminSettings(
    minimum_cpu_request_cores=0.005,
    minimum_memory_request_bytes=5 * MI,
    minimum_cpu_request_per_container_cores={"istio-proxy": 0.007},
    minimum_memory_request_per_container_bytes={"istio-proxy": 7 * MI},
    maximum_cpu_request_cores=1.0,
    maximum_memory_request_bytes=GI,
    max_allowed_scaling_down_ratio=0.0,
    buffer_ratio_on_vertical_resource=0.0,
)

NOTHING = HorizontalContext(False, False, False, False)


def _h(req, rec, target, ctx, resource="cpu", container="test-container", admin=H3, **kw):
    bounds = RequestBounds(
        resource,
        container,
        admin,
        kw.get("min_allocated"),
        kw.get("max_allocated"),
        step_limit=kw.get("step_limit", True),
    )
    out = horizontal_request(m(req), m(rec), target, ctx, bounds)
    return out.value


def test_growth_at_preferred_max():
    # H3 #1: ×1.3 when the growth step fires; #2-#5: otherwise unchanged.
    grow = HorizontalContext(True, False, False, False)
    assert _h(0.5, 0.5, 20, grow) == m(0.65)
    assert _h(500 * MI, 500 * MI, 20, grow, "memory") == pytest.approx(m(650 * MI), abs=1)
    close = HorizontalContext(False, True, False, False)
    assert _h(0.5, 0.4, 20, close) == m(0.5)


def test_keep_is_clamped_to_the_global_maximum():
    # H3 #7: rec = req = 1500m, one keep branch, clamped to MaximumCPURequest 1000m.
    assert _h(1.5, 1.5, 20, NOTHING) == m(1.0)
    # H3 #8: rec = req = 15m with minAllocated 100m -> 100m.
    assert _h(0.015, 0.015, 20, NOTHING, min_allocated=0.1) == m(0.1)


def test_at_minimum_shrinks_to_the_vpa_value():
    # H3 #9: at the minimum: min(req 130m, rec 120m) = 120m.
    at_min = HorizontalContext(False, False, True, False)
    assert _h(0.13, 0.12, 80, at_min) == m(0.12)
    assert _h(0.13, 0.2, 80, at_min) == m(0.13)  # never grows here


@pytest.mark.parametrize(
    ("req", "rec", "buffer", "expected"),
    [
        (0.13, 0.12, 0.0, 0.12),  # H3 #10: buffer 0 -> rec
        (0.13, 0.12, 0.1, 0.145),  # H3 #11: ideal 132 > 130 -> 132 × 1.1 = 145.2 -> 145m
        (0.145, 0.1, 0.1, 0.11),  # H3 #12 CPU: 110 < 145/1.1 × 0.9 = 118.6 -> 110m
    ],
    ids=["no-buffer", "scale-up", "scale-down"],
)
def test_vertical_requests(req, rec, buffer, expected):
    new, _rule, _reason = vertical_request(m(req), m(rec), buffer, resource="cpu")
    assert new == m(expected)


def test_vertical_hysteresis_band_keeps_memory():
    # H3 #12 memory: ideal 121Mi is not below 145.2/1.1 × 0.9 = 118.8Mi -> kept.
    new, rule, _ = vertical_request(m(145.2 * MI), m(110 * MI), 0.1, resource="memory")
    assert new is None
    assert rule == "tortoise.vertical.keep"
    # H3 #11 memory: 120Mi × 1.21 = 145.2Mi in milli-bytes.
    new, _, reason = vertical_request(m(130 * MI), m(120 * MI), 0.1, resource="memory")
    assert new == pytest.approx(m(145.2 * MI), abs=1)
    assert reason == "VPA 120Mi × (1 + 0.1)² (scale-up buffer)"


@pytest.mark.parametrize(
    ("container", "old", "new", "admin", "bounds", "expected"),
    [
        ("c", 0.13, 0.5, H3, {"max_allocated": 0.3}, 0.3),  # #13 maxAllocated
        (
            "c",
            0.13,
            0.5,
            H3.model_copy(update={"maximum_cpu_request_cores": 0.3}),
            {"max_allocated": 1.0},
            0.3,
        ),  # #14 the smaller ceiling wins
        ("c", 0.13, 0.01, H3, {"min_allocated": 0.1}, 0.1),  # #15 minAllocated
        ("c", 0.13, 0.002, H3, {"min_allocated": 0.001}, 0.005),  # #16 global minimum
        ("istio-proxy", 0.13, 0.002, H3, {}, 0.007),  # #17 per-container minimum
        (
            "istio-proxy",
            0.1,
            0.002,
            H3.model_copy(update={"max_allowed_scaling_down_ratio": 0.8}),
            {},
            0.08,
        ),  # #18 at most 20 % down per step
    ],
    ids=["max-allocated", "global-max", "min-allocated", "global-min", "per-container", "ratio"],
)
def test_justify_new_size(container, old, new, admin, bounds, expected):
    limits = RequestBounds("cpu", container, admin, **bounds)
    value, _ = limits.justify(m(old), m(new))
    assert value == m(expected)


def test_justify_per_container_map_quirk():
    # A name only in the CPU map has a memory floor of 0, not MinimumMemoryRequest.
    admin = H3.model_copy(update={"minimum_memory_request_per_container_bytes": {}})
    value, _ = RequestBounds("memory", "istio-proxy", admin).justify(m(100 * MI), m(1 * MI))
    assert value == m(1 * MI)


def test_multi_container_rebalance():
    # H3 #19: targets container 80, container2 70; replicas between the thresholds.
    admin = H3.model_copy(
        update={"maximum_cpu_request_cores": 10.0, "maximum_memory_request_bytes": 100 * GI}
    )
    kw = {"admin": admin, "min_allocated": None}
    assert _h(1.0, 0.08, 80, NOTHING, **kw) == m(0.1)  # 8 % < 72 -> 80 × 100/80 = 100m
    assert _h(10 * GI, 9 * GI, 80, NOTHING, "memory", **kw) == m(10 * GI)  # 90 % >= 72
    assert _h(1.0, 0.8, 70, NOTHING, container="container2", **kw) == m(1.0)  # 80 % >= 63
    # 0.7Gi at 70 %: 7 % < 63 -> 0.7Gi × 100/70 = 1Gi.
    got = _h(10 * GI, 0.7 * GI, 70, NOTHING, "memory", container="container2", **kw)
    assert got == pytest.approx(m(GI), abs=1)
    # H3 #20: close to PreferredMax -> unchanged.
    close = HorizontalContext(False, True, False, False)
    assert _h(1.0, 0.08, 80, close, **kw) == m(1.0)


def test_istio_proxy_example_from_the_seeds():
    # app 10 cores at 80 %, istio-proxy 5 cores using 2 (40 %), both targets 80 %.
    admin = AdminSettings(max_allowed_scaling_down_ratio=0.0)
    # Without the step limit: 2 × 100 / 80 = 2.5 cores, computed from the current target.
    assert _h(5.0, 2.0, 80, NOTHING, admin=admin) == m(2.5)
    # The busy app container (80 % >= 72 %) is not touched.
    assert _h(
        10.0, 8.0, 80, NOTHING, admin=admin.model_copy(update={"maximum_cpu_request_cores": 10.0})
    ) == m(10.0)
    # Default step limit 0.8 (upstream justifyNewSize): 5 -> 4 per proposal; the engine asks
    # for the full move and applies this limit after noise control.
    assert _h(5.0, 2.0, 80, NOTHING, admin=AdminSettings()) == m(4.0)
    assert _h(5.0, 2.0, 80, NOTHING, admin=AdminSettings(), step_limit=False) == m(2.5)


# ----------------------------------------------------------------- emergency (E1, E2, C8)


def test_emergency_sets_min_to_max():
    out = emergency_min_replicas(
        requested=True,
        previous_phase="normal",
        current_min=1,
        recommended_min=3,
        capped_max=6,
        reduction_factor=0.95,
        steps=1,
    )
    assert out is not None
    assert (out.min_replicas, out.phase) == (6, "emergency")


def test_back_to_normal_steps_then_finishes():
    kw: dict[str, Any] = {
        "requested": False,
        "recommended_min": 3,
        "capped_max": 6,
        "reduction_factor": 0.95,
    }
    step = emergency_min_replicas(previous_phase="emergency", current_min=6, steps=1, **kw)
    assert step is not None
    assert (step.min_replicas, step.phase) == (5, "back-to-normal")
    done = emergency_min_replicas(previous_phase="back-to-normal", current_min=1, steps=1, **kw)
    assert done is not None
    assert (done.min_replicas, done.phase) == (3, "normal")
    assert emergency_min_replicas(previous_phase="normal", current_min=6, steps=1, **kw) is None


def test_back_to_normal_sequence_from_100():
    seq, current = [100], 100
    while True:
        out = emergency_min_replicas(
            requested=False,
            previous_phase="back-to-normal",
            current_min=current,
            recommended_min=17,
            capped_max=100,
            reduction_factor=0.95,
            steps=1,
        )
        assert out is not None
        current = out.min_replicas
        seq.append(current)
        if out.phase == "normal":
            break
    assert seq[:10] == [100, 95, 90, 85, 80, 76, 72, 68, 64, 60]
    # At 18 -> 17 (trunc(17.1), not below 17); at 17 trunc(16.15) = 16 < 17: finished at 17.
    assert seq[-3:] == [18, 17, 17]
    assert all(math.trunc(a * 0.95) == b for a, b in itertools.pairwise(seq[:-1]))


def _sequential(t, r, admin):
    """Upstream, literally: one ``updateReplicasRecommendation`` per sample in time order."""
    labels = slot_labels(admin)
    slots = slot_index(t, admin)
    lo_c, hi_c = candidates(r, admin)
    state: dict[str, tuple[int, int, float]] = {}
    for s, lo, hi, x in zip(slots.tolist(), lo_c.tolist(), hi_c.tolist(), t.tolist(), strict=True):
        label = labels[s]
        old_lo, old_hi, updated = state.get(label, (0, 0, None))
        state[label] = (
            update_slot(old_lo, updated, lo, x),
            update_slot(old_hi, updated, hi, x),
            x,
        )
    return {k: (v[0], v[1]) for k, v in state.items()}


@pytest.mark.parametrize(
    ("period", "hours", "zone"),
    [
        ("weekly", 1, "Asia/Tokyo"),
        ("daily", 1, "UTC"),
        ("daily", 3, "Europe/Berlin"),
        ("weekly", 2, "America/New_York"),
    ],
)
@pytest.mark.parametrize("seed", [1, 2])
def test_vectorised_replay_equals_the_sequential_upstream_rule(period, hours, zone, seed):
    admin = AdminSettings(
        gathering_data_period_type=period,
        range_of_min_max_replicas_recommendation_hours=hours,
        time_zone=zone,
    )
    rng = np.random.default_rng(seed)
    # 17 days across a DST change (2023-10-29 Europe, 2023-11-05 US), with random gaps.
    t = 1_698_000_000.0 + np.cumsum(
        rng.choice([60.0, 300.0, 3600.0, 30000.0], 6000, p=[0.6, 0.3, 0.09, 0.01])
    )
    r = np.round(rng.gamma(2.0, 6.0, t.size))
    table = replica_slots(t, r, admin)
    assert table.values == _sequential(t, r, admin)
