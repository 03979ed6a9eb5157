"""A memory leak, read from the working set between OOM kills.

A container leaks when its working set climbs steadily from each restart until the OOM kill
that ends the pod life, again and again: raising its memory only delays the next kill, and
chasing the kills (the VPA OOM bump after each) raises the request without end. The bot then
sizes the request to cover the working set in all but ``noise.leak_over_request_share`` of the
minutes (``covering_bytes``) and the limit to hold the growth until the pods' restart cadence
(``restart_cadence_s``), and says so (``oom.leak_quantile``, ``oom.leak_cadence``,
``docs/recommendations.md`` §2): the same history gives the same values, so the proposal does
not chase its own kills.

The *restart cadence* is the longest lifetime (first to last sample) of a pod that ended before
the window did (its last sample more than ``ENDED_GAP_S`` before the container's last one) other
than by an OOM kill: a rollout, an eviction, a scheduled restart. Lives that end in an OOM kill do not count: their
length is set by the limit itself, and a limit sized on it with a margin would rise by that
margin every proposal. None when no pod ended in the window (only the kills restart it).

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

ENDED_GAP_S = SECONDS_PER_HOUR
"""A pod whose last sample is more than this before the container's last one has ended."""


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
    restart_cadence_s: float | None = None
    """The longest lifetime of a pod that ended in the window (module doc), or None."""
    kill_spacing_s: float = 0.0
    """The longest judged life that ended in an OOM kill (seconds)."""
    covering_bytes: float | None = None
    """The ``1 − over_request_share`` quantile of the window's working-set samples."""


def find_leak(
    mem_t: FloatArray,
    mem_pod: IntArray,
    mem_bytes: FloatArray,
    oom_t: FloatArray,
    oom_pod: IntArray,
    *,
    over_request_share: float | None = None,
) -> Leak | None:
    """The leak in one container's samples (module doc), or None; ``covering_bytes`` with
    ``over_request_share`` (numpy's linear quantile of every sample of the window)."""
    if oom_t.size < MIN_LEAKING_LIVES or mem_t.size == 0:
        return None
    lives = 0
    rates: list[float] = []
    starts_at: list[float] = []
    spacing = 0.0
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
            spacing = max(spacing, end - start)
            if early > 0 and late >= MIN_GROWTH * early:
                # The medians of the first and last tenths sit 0.9 of the life apart, the
                # first one a twentieth of the life after the restart.
                days = (end - start) / SECONDS_PER_DAY
                rate = (late - early) / (0.9 * days)
                rates.append(rate)
                starts_at.append(early - rate * 0.05 * days)
    if len(rates) < MIN_LEAKING_LIVES or len(rates) < LEAKING_SHARE * lives:
        return None
    covering = (
        float(np.quantile(mem_bytes, 1.0 - over_request_share))
        if over_request_share is not None
        else None
    )
    return Leak(
        int(oom_t.size),
        lives,
        len(rates),
        float(np.median(rates)),
        max(starts_at),
        restart_cadence(mem_t, mem_pod, oom_t, oom_pod),
        spacing,
        covering,
    )


def restart_cadence(
    mem_t: FloatArray, mem_pod: IntArray, oom_t: FloatArray, oom_pod: IntArray
) -> float | None:
    """The longest lifetime (s) of a pod whose samples end more than ``ENDED_GAP_S`` before the
    container's last sample, not in an OOM kill (none within ``ENDED_GAP_S`` of its last
    sample); None when no pod ended so (every pod lasts to the end of the window or is killed)."""
    pods, inverse = np.unique(mem_pod, return_inverse=True)
    first = np.full(pods.size, np.inf)
    last = np.full(pods.size, -np.inf)
    np.minimum.at(first, inverse, mem_t)
    np.maximum.at(last, inverse, mem_t)
    ended = last < float(mem_t.max()) - ENDED_GAP_S
    for i in np.flatnonzero(ended).tolist():
        kills = oom_t[oom_pod == pods[i]]
        if bool((np.abs(kills - last[i]) <= ENDED_GAP_S).any()):
            ended[i] = False  # its kill ended it
    return float((last - first)[ended].max()) if ended.any() else None
