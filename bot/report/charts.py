"""Series reduced for charts: usage by hour of the week on a wall clock (numpy; the hours are
``bot.clock``'s, those of the replica slots)."""

from __future__ import annotations

import math

import numpy as np

from bot.clock import hour_of_week
from bot.model import HOURS_PER_WEEK, FloatArray


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
