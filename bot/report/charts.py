"""Series reduced for charts: usage by hour of the day or of the week, peak replicas per weekday
(numpy)."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import numpy as np

from bot.model import FloatArray

SECONDS_PER_HOUR = 3600
SECONDS_PER_DAY = 86400
EPOCH_WEEKDAY = 3
"""1970-01-01 was a Thursday (Monday = 0)."""
ZERO = timedelta(0)


def hourly_profile(
    t_s: FloatArray, values: FloatArray, *, percentile: float = 90.0
) -> tuple[float, ...]:
    """24 values: the ``percentile`` of ``values`` per UTC hour of day (0.0 for an empty hour)."""
    hours = ((t_s % SECONDS_PER_DAY) // SECONDS_PER_HOUR).astype(np.int64)
    out = []
    for hour in range(24):
        chunk = values[hours == hour]
        out.append(float(np.percentile(chunk, percentile)) if chunk.size else 0.0)
    return tuple(out)


def weekday_peaks(t_s: FloatArray, replicas: FloatArray) -> tuple[float, ...]:
    """7 values, Monday..Sunday: the maximum replica count seen on that UTC weekday (0.0 if none)."""
    days = ((t_s // SECONDS_PER_DAY).astype(np.int64) + EPOCH_WEEKDAY) % 7
    return tuple(float(replicas[days == d].max()) if np.any(days == d) else 0.0 for d in range(7))


HOURS_PER_WEEK = 168
SUNDAY_FIRST_EPOCH_WEEKDAY = 4
"""1970-01-01 was a Thursday: day 4 of a week that starts on Sunday."""


def _zone(name: str) -> tzinfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return UTC


def hour_of_week(t_s: FloatArray, time_zone: str) -> np.ndarray:
    """Hour of the week of each time (0 = Sunday 00:00 … 167 = Saturday 23:00) on the
    wall clock of ``time_zone`` (UTC when the zone is unknown). The offset is looked up once
    per UTC hour."""
    if t_s.size == 0:
        return np.zeros(0, dtype=np.int64)
    zone = _zone(time_zone)
    hours = np.floor(t_s / SECONDS_PER_HOUR).astype(np.int64)
    unique, inverse = np.unique(hours, return_inverse=True)
    offsets = np.array(
        [
            (
                datetime.fromtimestamp(float(h) * SECONDS_PER_HOUR, zone).utcoffset() or ZERO
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
