"""The replica slot replay (``replica_slots``) on random and spoiled histories: the slots of
the upstream rule applied one sample at a time (``_sequential``)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.config.recommend import AdminSettings
from bot.recommend.tortoise.replicas import replica_slots, slot_labels
from tests.recommend.test_tortoise import _sequential

T0 = 1_700_000_000.0
HOUR = 3600.0


def _alike(t: np.ndarray, r: np.ndarray, admin: AdminSettings) -> None:
    """``replica_slots`` of ``t``, ``r`` are the sequential rule's on the samples it keeps
    (finite, replicas >= 0), in time order; every other slot is missing."""
    table = replica_slots(t, r, admin)
    keep = np.isfinite(t) & np.isfinite(r) & (r >= 0)
    order = np.argsort(t[keep], kind="stable")
    want = _sequential(t[keep][order], r[keep][order], admin)
    assert table.values == want
    assert set(table.missing) == {s for s in slot_labels(admin) if s not in want}


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(st.floats(0.0, 3.0 * HOUR), st.floats(1.5, 40.0)),
        min_size=1,
        max_size=120,
    ),
    st.sampled_from([1, 2, 3, 4, 6, 8, 12, 24]),
    st.sampled_from(["daily", "weekly"]),
    st.sampled_from(["UTC", "Asia/Tokyo", "Asia/Kolkata", "America/St_Johns", "No/Such_Zone"]),
    st.sampled_from([0.5, 1.0]),
)
def test_random_histories_give_the_sequential_slots(gaps, width, period, zone, min_mult):
    """Gaps from seconds to hours (runs of one slot within and beyond 23 h of each other),
    fractional replicas, every slot width, both periods, zones with an offset. From 1.5
    replicas on (2 × 1.5 reaches MinimumMinReplicas), a larger count never has a smaller
    candidate, which the replay relies on (it takes the candidates of each run's largest count;
    below, the maxReplicas candidate of the floor, 12, exceeds that of 2 replicas, 4)."""
    t = T0 + np.cumsum([g for g, _ in gaps])
    r = np.array([x for _, x in gaps])
    admin = AdminSettings(
        range_of_min_max_replicas_recommendation_hours=width,
        gathering_data_period_type=period,
        time_zone=zone,
        min_replicas_recommendation_multiplier=min_mult,
    )
    _alike(t, r, admin)


@pytest.mark.parametrize("period", ["daily", "weekly"])
def test_four_weeks_of_minutes_give_the_sequential_slots(period):
    rng = np.random.default_rng(4)
    t = T0 + 60.0 * np.arange(28 * 1440)
    daily = 1.0 + 0.5 * np.sin(2 * np.pi * (t % 86400) / 86400)
    r = np.round(6 + 4 * daily + rng.integers(0, 3, t.size))
    r[10_000:10_500] = np.nan  # dropped: a gap
    _alike(t, r, AdminSettings(gathering_data_period_type=period))


def test_a_daylight_saving_change_gives_the_sequential_slots():
    march = 1_711_846_800.0 - 2 * 86400  # 2024-03-29, two days before Europe's change
    around = march + 600.0 * np.arange(5 * 144)
    _alike(around, np.full(around.size, 4.0), AdminSettings(time_zone="Europe/Berlin"))


@pytest.mark.parametrize("spoil", ["shuffled", "nan time", "negative replicas", "inf replicas"])
def test_a_spoiled_series_is_sorted_and_filtered_first(spoil):
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
