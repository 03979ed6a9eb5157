"""A memory leak, read from the working set between OOM kills.

A container leaks when its working set climbs steadily from each restart until the OOM kill
that ends the pod life, again and again: raising its memory only delays the next kill, and
chasing the kills (the VPA OOM bump after each) raises the request without end. The bot then
keeps the request and sizes the limit to hold ``noise.leak_hold_days`` of growth from where a
life starts, and says so (``oom.leak``, ``docs/recommendations.md`` §3): the same history gives
the same limit, so the proposal does not chase its own kills.

A *life* is a pod's span from its first sample (or an OOM kill) to the next OOM kill, at least
``MIN_LIFE_S`` long with ``MIN_SAMPLES`` samples. It *grew* when the median working set of its
last tenth is at least ``MIN_GROWTH`` × that of its first tenth (medians: a short spike at the
end of a life does not make a leak). A leak is at least ``MIN_LEAKING_LIVES`` lives that grew,
and at least ``LEAKING_SHARE`` of the lives ending in a kill.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bot.model import SECONDS_PER_DAY, SECONDS_PER_HOUR, FloatArray, IntArray

MIN_LIFE_S = 6.0 * SECONDS_PER_HOUR
"""A pod life shorter than this (a crash loop, a burst) says nothing about a leak."""

MIN_SAMPLES = 20
"""Working-set samples a life needs to be judged."""

MIN_GROWTH = 1.3
"""Median of the last tenth of a life over the median of its first tenth."""

MIN_LEAKING_LIVES = 2
"""Lives that grew until their OOM kill (one kill could be a one-off)."""

LEAKING_SHARE = 0.6
"""Share of the judged lives that must have grown."""


@dataclass(frozen=True, slots=True)
class Leak:
    """A leak: ``kills`` OOM kills, ``lives`` judged lives of which ``grew`` grew, at a median
    of ``bytes_per_day``."""

    kills: int
    lives: int
    grew: int
    bytes_per_day: float
    start_bytes: float
    """The highest median working set of the first tenth of a life: where a life starts."""


def find_leak(
    mem_t: FloatArray,
    mem_pod: IntArray,
    mem_bytes: FloatArray,
    oom_t: FloatArray,
    oom_pod: IntArray,
) -> Leak | None:
    """The leak in one container's samples (module doc), or None."""
    if oom_t.size < MIN_LEAKING_LIVES or mem_t.size == 0:
        return None
    lives = 0
    rates: list[float] = []
    starts_at: list[float] = []
    for pod in np.unique(oom_pod).tolist():
        mine = mem_pod == pod
        t, used = mem_t[mine], mem_bytes[mine]
        if t.size == 0:
            continue
        order = np.argsort(t, kind="stable")
        t, used = t[order], used[order]
        kills = np.sort(oom_t[oom_pod == pod])
        starts = np.concatenate(([t[0]], kills[:-1]))
        for start, end in zip(starts.tolist(), kills.tolist(), strict=True):
            life = used[(t >= start) & (t < end)]
            if end - start < MIN_LIFE_S or life.size < MIN_SAMPLES:
                continue
            tenth = max(1, life.size // 10)
            early = float(np.median(life[:tenth]))
            late = float(np.median(life[-tenth:]))
            lives += 1
            if early > 0 and late >= MIN_GROWTH * early:
                # The medians of the first and last tenths sit 0.9 of the life apart, the
                # first one a twentieth of the life after the restart.
                days = (end - start) / SECONDS_PER_DAY
                rate = (late - early) / (0.9 * days)
                rates.append(rate)
                starts_at.append(early - rate * 0.05 * days)
    if len(rates) < MIN_LEAKING_LIVES or len(rates) < LEAKING_SHARE * lives:
        return None
    return Leak(int(oom_t.size), lives, len(rates), float(np.median(rates)), max(starts_at))
