"""Series reduced for charts: usage by hour of the week on a wall clock (numpy)."""

from __future__ import annotations

import math
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import numpy as np

from bot.model import HOURS_PER_WEEK, SECONDS_PER_HOUR, FloatArray

ZERO = timedelta(0)
SUNDAY_FIRST_EPOCH_WEEKDAY = 4
"""1970-01-01 was a Thursday: day 4 of a week that starts on Sunday."""


def zone(name: str) -> ZoneInfo:
    """The IANA time zone ``name``; UTC when it is unknown."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return ZoneInfo("UTC")


def hour_of_week(t_s: FloatArray, time_zone: str) -> np.ndarray:
    """Hour of the week of each time (0 = Sunday 00:00 … 167 = Saturday 23:00) on the
    wall clock of ``time_zone`` (UTC when the zone is unknown). The offset is looked up once
    per UTC hour."""
    if t_s.size == 0:
        return np.zeros(0, dtype=np.int64)
    clock = zone(time_zone)
    hours = np.floor(t_s / SECONDS_PER_HOUR).astype(np.int64)
    unique, inverse = np.unique(hours, return_inverse=True)
    offsets = np.array(
        [
            (
                datetime.fromtimestamp(float(h) * SECONDS_PER_HOUR, clock).utcoffset() or ZERO
            ).total_seconds()
            for h in unique.tolist()
        ]
    )
    local = np.floor((t_s + offsets[inverse.reshape(-1)]) / SECONDS_PER_HOUR).astype(np.int64)
    weekday = (local // 24 + SUNDAY_FIRST_EPOCH_WEEKDAY) % 7
    result: np.ndarray = weekday * 24 + local % 24
    return result


def week_profile(
    t_s: FloatArray, values: FloatArray, time_zone: str, *, percentile: float
) -> tuple[float, ...]:
    """168 values, Sunday 00:00 first in ``time_zone``: the ``percentile`` (100 = the peak) of
    ``values`` in each hour of the week; NaN for an hour without a sample."""
    slots = hour_of_week(t_s, time_zone)
    order = np.argsort(slots, kind="stable")
    edges = np.searchsorted(slots[order], np.arange(HOURS_PER_WEEK + 1))
    ordered = values[order]
    out = []
    for hour in range(HOURS_PER_WEEK):
        chunk = ordered[edges[hour] : edges[hour + 1]]
        out.append(float(np.percentile(chunk, percentile)) if chunk.size else math.nan)
    return tuple(out)
