"""The compiled replica slot replay and its numpy twin: the same slots to the integer."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot import native
from bot.config.recommend import AdminSettings
from bot.native import replicas as native_replicas
from bot.recommend.tortoise.replicas import replica_slots

T0 = 1_700_000_000.0
HOUR = 3600.0


def _alike(t: np.ndarray, r: np.ndarray, admin: AdminSettings) -> None:
    got = replica_slots(t, r, admin)
    with pytest.MonkeyPatch.context() as m:
        m.setenv(native.SWITCH, "off")
        want = replica_slots(t, r, admin)
    assert got.values == want.values
    assert got.missing == want.missing


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.floats(0.0, 3.0 * HOUR), st.floats(0.0, 40.0)), min_size=1, max_size=120),
    st.sampled_from([1, 2, 3, 4, 6, 8, 12, 24]),
    st.sampled_from(["daily", "weekly"]),
    st.sampled_from(["UTC", "Asia/Tokyo", "Asia/Kolkata", "No/Such_Zone"]),
    st.sampled_from([0.5, 1.0]),
)
def test_random_histories_give_the_same_slots(gaps, width, period, zone, min_mult):
    """Gaps from seconds to hours (runs of one slot within and beyond 23 h of each other),
    fractional and zero replicas, every slot width, both periods, zones with an offset."""
    t = T0 + np.cumsum([g for g, _ in gaps])
    r = np.array([x for _, x in gaps])
    admin = AdminSettings(
        range_of_min_max_replicas_recommendation_hours=width,
        gathering_data_period_type=period,
        time_zone=zone,
        min_replicas_recommendation_multiplier=min_mult,
    )
    assert (
        native_replicas.slots(
            t,
            r,
            offset_s=0.0,
            width=width,
            daily=period == "daily",
            n_slots=24 // width * (1 if period == "daily" else 7),
            min_multiplier=min_mult,
            max_multiplier=2.0,
            floor=3,
            max_floor=12,
            decay_age_s=23 * HOUR,
            decay_factor=0.95,
        )
        is not None
    )
    _alike(t, r, admin)


@pytest.mark.parametrize("period", ["daily", "weekly"])
def test_four_weeks_of_minutes_give_the_same_slots(period):
    rng = np.random.default_rng(4)
    t = T0 + 60.0 * np.arange(28 * 1440)
    daily = 1.0 + 0.5 * np.sin(2 * np.pi * (t % 86400) / 86400)
    r = np.round(6 + 4 * daily + rng.integers(0, 3, t.size))
    r[10_000:10_500] = np.nan  # dropped by the filter: a gap
    _alike(t, r, AdminSettings(gathering_data_period_type=period))


def test_times_out_of_order_or_a_daylight_saving_change_run_the_twin():
    t = T0 + HOUR * np.array([0.0, 2.0, 1.0])
    args: dict[str, Any] = {
        "offset_s": 0.0,
        "width": 1,
        "daily": True,
        "n_slots": 24,
        "min_multiplier": 0.5,
        "max_multiplier": 2.0,
        "floor": 3,
        "max_floor": 12,
        "decay_age_s": 82800.0,
        "decay_factor": 0.95,
    }
    assert native_replicas.slots(t, np.ones(3), **args) is None
    assert native_replicas.slots(np.sort(t), np.array([1.0, np.nan, 1.0]), **args) is None
    # Over a daylight saving change the offset is not fixed: the twin converts each quarter hour.
    march = 1_711_846_800.0 - 2 * 86400  # 2024-03-29, two days before Europe's change
    around = march + 600.0 * np.arange(5 * 144)
    _alike(around, np.full(around.size, 4.0), AdminSettings(time_zone="Europe/Berlin"))


@pytest.mark.parametrize("spoil", ["shuffled", "nan time", "negative replicas", "inf replicas"])
def test_a_series_the_kernel_refuses_whole_is_sorted_and_filtered_first(spoil):
    """``replica_slots`` hands the raw series to the kernel first; one it refuses (out of
    order, a time or a count it does not take) gives the twin's slots all the same."""
    rng = np.random.default_rng(7)
    t = T0 + 60.0 * np.arange(3 * 1440)
    r = np.round(4 + 3 * rng.random(t.size))
    if spoil == "shuffled":
        order = rng.permutation(t.size)
        t, r = t[order], r[order]
    elif spoil == "nan time":
        t[100] = np.nan
    else:
        r[2000] = -1.0 if spoil == "negative replicas" else np.inf
    _alike(t, r, AdminSettings())
