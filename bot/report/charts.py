"""Series reduced for charts: usage by hour of day and peak replicas per weekday (numpy)."""

from __future__ import annotations

import numpy as np

from bot.model import FloatArray

SECONDS_PER_HOUR = 3600
SECONDS_PER_DAY = 86400
EPOCH_WEEKDAY = 3
"""1970-01-01 was a Thursday (Monday = 0)."""


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
