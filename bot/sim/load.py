"""Load shapes: the CPU demand of one service over time, in cores, from a seeded generator.

``demand_cores(t) = peak * (night + (1 - night) * diurnal(t)) * weekly(t) * slow(t) * trend(t)
* levels(t) * periodic(t) * bursts(t)`` with ``diurnal`` a raised cosine peaking at 15:00 UTC and
lowest at 03:00 (0 all day on a holiday: the night level), ``weekly`` the weekday's factor
(``weekday_factors``, else ``weekend_fraction`` on Saturdays and Sundays), ``slow`` an hourly
random walk of relative size ``noise_fraction``, ``trend`` equal to ``1 + growth_per_day * days
since the first sample``, ``levels`` the product of the level changes passed, ``periodic`` the
factor of a periodic job while it runs, and ``bursts`` a few short multiplicative spikes
(overlapping ones do not compound).
"""

from __future__ import annotations

import numpy as np

from bot.model import SECONDS_PER_DAY, SECONDS_PER_HOUR, FloatArray
from bot.sim.spec import ServiceSpec

PEAK_HOUR_UTC = 15.0
"""Hour of the day (UTC) at which the diurnal cycle peaks."""

UNIX_EPOCH_WEEKDAY = 3
"""1970-01-01 was a Thursday (Monday = 0)."""

BURST_STEPS = (3, 15)
"""A burst lasts between these many samples (inclusive, exclusive)."""


def diurnal_fraction(t_s: FloatArray) -> FloatArray:
    """0..1 raised cosine of the hour of day: 1 at ``PEAK_HOUR_UTC``, 0 twelve hours later."""
    hour = (t_s % SECONDS_PER_DAY) / SECONDS_PER_HOUR
    return 0.5 + 0.5 * np.cos(2 * np.pi * (hour - PEAK_HOUR_UTC) / 24.0)


def weekday(t_s: FloatArray) -> FloatArray:
    """Day of week of each timestamp, Monday = 0 ... Sunday = 6 (UTC)."""
    return (np.floor(t_s / SECONDS_PER_DAY) + UNIX_EPOCH_WEEKDAY) % 7


def _levels(spec: ServiceSpec, t_s: FloatArray) -> FloatArray:
    """Product of the level changes passed at each timestamp (1 before the first)."""
    out = np.ones(len(t_s))
    for change in spec.level_changes:
        if len(t_s):
            out[t_s >= t_s[0] + change.day * SECONDS_PER_DAY] *= change.factor
    return out


def _periodic(spec: ServiceSpec, t_s: FloatArray) -> FloatArray:
    """``periodic_burst.factor`` while its job runs, else 1."""
    burst = spec.periodic_burst
    if burst is None:
        return np.ones(len(t_s))
    period_s = burst.period_hours * SECONDS_PER_HOUR
    into = (t_s - burst.phase_hours * SECONDS_PER_HOUR) % period_s
    return np.where(into < burst.minutes * 60.0, burst.factor, 1.0)


def demand_cores(spec: ServiceSpec, t_s: FloatArray, rng: np.random.Generator) -> FloatArray:
    """CPU demand of the whole service at each timestamp, in cores (formula in the module doc)."""
    cycle = diurnal_fraction(t_s)
    if len(t_s) and spec.holidays:
        calendar_day = np.floor(t_s / SECONDS_PER_DAY)
        off = np.floor((t_s[0] + np.asarray(spec.holidays) * SECONDS_PER_DAY) / SECONDS_PER_DAY)
        cycle = np.where(np.isin(calendar_day, off), 0.0, cycle)
    level = spec.night_fraction + (1 - spec.night_fraction) * cycle
    if spec.weekday_factors:
        weekly = np.asarray(spec.weekday_factors)[weekday(t_s).astype(np.int64)]
    else:
        weekly = np.where(weekday(t_s) >= 5, spec.weekend_fraction, 1.0)
    level = level * _levels(spec, t_s) * _periodic(spec, t_s)
    hours = int(np.ceil((t_s[-1] - t_s[0]) / SECONDS_PER_HOUR)) + 2 if len(t_s) else 2
    walk = 1.0 + spec.noise_fraction * rng.standard_normal(hours)
    slow = np.interp((t_s - t_s[0]) / SECONDS_PER_HOUR, np.arange(hours), walk) if len(t_s) else t_s
    trend = 1.0 + spec.growth_per_day * (t_s - t_s[0]) / SECONDS_PER_DAY if len(t_s) else t_s
    out = spec.peak_cores * level * weekly * np.clip(slow, 0.2, None) * trend
    days = len(t_s) * (t_s[1] - t_s[0]) / SECONDS_PER_DAY if len(t_s) > 1 else 0.0
    bursts = np.ones(len(t_s))
    for _ in range(int(rng.poisson(spec.burst_per_day * days))):
        at = int(rng.integers(0, len(t_s)))
        # Overlapping bursts do not multiply (two 8x bursts are not a 64x one).
        bursts[at : at + int(rng.integers(*BURST_STEPS))] = spec.burst_factor
    return np.asarray(out * bursts, dtype=np.float64)
