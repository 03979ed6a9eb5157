"""The one clock (``bot.clock``): zoneinfo's offset at each instant, the hour of the week, and
the week chart and the replica slots reading the same hours across daylight saving changes."""

from __future__ import annotations

from datetime import datetime

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.clock import hour_of_week, local_hours, utc_offsets_s, zone
from bot.config.recommend import AdminSettings
from bot.recommend.tortoise.replicas import slot_index
from bot.report.charts import week_profile

ZONES = [
    "UTC",
    "Asia/Tokyo",
    "Asia/Kolkata",
    "Europe/Berlin",
    "America/New_York",
    "America/St_Johns",  # changes at :30 UTC (and at 00:01 local until 2011)
    "America/Goose_Bay",  # changes at 00:01 local in the 1980s and 1990s
    "Australia/Lord_Howe",  # a 30-minute change
    "Not/AZone",
]


def _zoneinfo_offsets(times: np.ndarray, name: str) -> list[float]:
    clock = zone(name)
    offsets = [datetime.fromtimestamp(t, clock).utcoffset() for t in times.tolist()]
    return [o.total_seconds() if o is not None else 0.0 for o in offsets]


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.floats(0.0, 4.1e9), min_size=1, max_size=40),
    st.sampled_from(ZONES),
    st.booleans(),
)
def test_offsets_are_zoneinfos_at_each_instant(times, name, dense):
    """Times anywhere from 1970 to 2100, or packed into a few days around each."""
    t = np.array(times)
    if dense:
        t = np.sort(t[0] + np.abs(t - t[0]) % (5 * 86400.0))
    assert utc_offsets_s(t, name).tolist() == _zoneinfo_offsets(t, name)


@pytest.mark.parametrize("name", ZONES)
@pytest.mark.parametrize("year_start", [1_300_000_000.0, 1_700_000_000.0])
def test_a_year_of_minutes_gets_zoneinfos_offsets(name, year_start):
    """Every change of a year, seconds before and after it included."""
    t = year_start + 61.0 * np.arange(366 * 1440 * 60 // 61)
    want = _zoneinfo_offsets(t, name)
    assert utc_offsets_s(t, name).tolist() == want
    assert local_hours(t, name).tolist() == np.floor((t + want) / 3600).astype(int).tolist()


def test_the_hour_after_a_half_hour_change_is_read_at_its_own_offset():
    """St. John's left standard time at 2023-03-12 05:30 UTC (02:00 NST to 03:00 NDT): the 30
    minutes after it are 03:xx local, not 02:xx (an offset read at the start of the UTC hour)."""
    change = 1_678_599_000.0
    t = change + np.array([-60.0, 0.0, 60.0, 1740.0, 1800.0])
    hours = local_hours(t, "America/St_Johns") % 24
    assert hours.tolist() == [1, 3, 3, 3, 3]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.floats(-3e9, 3e9), min_size=1, max_size=50),
    st.sampled_from(["UTC", "Asia/Kolkata", "America/St_Johns", "Europe/Berlin"]),
)
def test_hour_of_week_is_the_weekday_and_the_hour(times, name):
    """Sunday 00 is 0, before 1970 too (floor division and modulo)."""
    t = np.array(times)
    hours = local_hours(t, name)
    assert hour_of_week(t, name).tolist() == (((hours // 24 + 4) % 7) * 24 + hours % 24).tolist()


@pytest.mark.parametrize(
    ("name", "change_s"),
    [
        ("Europe/Berlin", 1_711_846_800.0),  # 2024-03-31 01:00 UTC
        ("Europe/Berlin", 1_729_990_800.0),  # 2024-10-27 01:00 UTC
        ("America/St_Johns", 1_678_599_000.0),  # 2023-03-12 05:30 UTC
        ("Australia/Lord_Howe", 1_712_415_600.0),  # 2024-04-06 15:00 UTC, 30 minutes back
    ],
)
def test_the_week_chart_and_the_replica_slots_read_the_same_hours(name, change_s):
    """Weekly one-hour slots are the hours of the week: the chart of each step's slot puts
    every slot in its own hour, across the change."""
    t = change_s + 60.0 * np.arange(-3 * 1440, 3 * 1440)
    slots = slot_index(t, AdminSettings(time_zone=name)).astype(np.float64)
    assert slots.tolist() == hour_of_week(t, name).tolist()
    for percentile in (0.0, 100.0):
        chart = np.array(week_profile(t, slots, name, percentile=percentile))
        seen = ~np.isnan(chart)
        assert chart[seen].tolist() == np.flatnonzero(seen).tolist()
