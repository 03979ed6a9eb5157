"""minReplicas and maxReplicas chosen by replaying the HPA on the history.

A manifest holds one minReplicas, where Tortoise moves it every hour; folding the hourly values
by their maximum lets one busy hour set the floor for every night. Instead (bot rules, upstream's
maximum over the slots stays available as ``replicas.min_replicas: slots``):

* ``maxReplicas`` (``tortoise.replicas.max_by_replay``): the HPA replayed with the proposed
  requests and targets and no ceiling (``admin.maximum_max_replicas``); its peak ``P`` ×
  ``replicas.max_replicas_headroom``, rounded up, at least minReplicas, capped by the workload's
  ``max_replicas`` and ``admin.maximum_max_replicas``. The current value stays while the
  replayed one is within ``replicas.max_replicas_keep_fraction`` of it and the current value is
  at least ``P``. A cut is bounded (``replay.max_replicas_step``): at least
  ``ceil(current × (1 − f))``, ``f = replicas.max_replicas_cut_fraction`` (0 or 1: unbounded;
  never above the ceiling), since peaks outside the window (month end, holidays) are not in the
  history; the next run continues from the merged value. Increases are not bounded.
* ``minReplicas`` (``tortoise.replicas.min_by_replay``): the lowest value, from
  ``min(current, admin.minimum_min_replicas)`` up to the current one, whose replayed capacity
  shortfall (``figures.replica_path``) is no worse than the current floor's, under the proposed
  requests, targets and maxReplicas (a binary search: a higher floor never adds shortfall).

Each value carries the hours of the week that drive it: where the peak happens, and where one
pod less on the floor would add shortfall.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, replace

import numpy as np

from bot.recommend.replay.figures import ReplicaPath, replica_path
from bot.recommend.replay.series import ReplaySeries
from bot.recommend.replay.values import Options, Values

WEEKDAYS = ("Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat")
"""Hour-of-week labels start on Sunday, as Tortoise's slots."""

DRIVING_HOURS = 3
"""How many hours of the week a reason names."""


@dataclass(frozen=True, slots=True)
class Bounds:
    """The replayed choice of minReplicas and maxReplicas, with what drives each.

    ``peak``: replayed peak replicas without a ceiling; ``peak_hours`` / ``floor_hours``: the
    hours of the week (``Tue 14``) at the peak, and where one pod less on the floor adds
    shortfall; ``shortfall_minutes``: at the chosen floor; ``baseline_minutes``: at the current
    floor; ``at_minimum``: the floor is the lowest allowed value (a floor, not usage);
    ``wanted_max``: the replayed maxReplicas before the bound on a cut (``max_replicas``
    differs from it when the cut was bounded).
    """

    min_replicas: int
    max_replicas: int
    peak: int
    peak_hours: tuple[str, ...]
    floor_hours: tuple[str, ...]
    shortfall_minutes: float
    baseline_minutes: float
    lowest: int
    at_minimum: bool
    max_kept: bool
    time_zone: str = "UTC"
    wanted_max: int | None = None

    @property
    def max_stepped(self) -> bool:
        """Whether the cut of maxReplicas was bounded (a step toward ``wanted_max``)."""
        return self.wanted_max is not None and self.wanted_max != self.max_replicas


def hour_label(hour_of_week: int) -> str:
    """``Tue 14`` for hour 62 of the week (Sunday 00 first)."""
    return f"{WEEKDAYS[hour_of_week // 24 % 7]} {hour_of_week % 24:02d}"


def _hours(mask: np.ndarray, slots: np.ndarray | None) -> tuple[str, ...]:
    """The hours of the week holding the most steps of ``mask``, most first."""
    if slots is None or not mask.any():
        return ()
    counts = Counter(slots[mask].tolist())
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return tuple(hour_label(int(h)) for h, _ in ranked[:DRIVING_HOURS])


def bounded_cut(current: int, wanted: int, fraction: float, ceiling: int) -> int:
    """maxReplicas after a cut of at most ``fraction`` of ``current``: ``max(wanted,
    min(ceil(current × (1 − fraction)), ceiling))``; ``wanted`` itself for an increase or with
    ``fraction`` 0 or 1 (off). ``bounded_cut(20, 9, 0.25, 100) == 15``."""
    if wanted >= current or not 0 < fraction < 1:
        return wanted
    step = math.ceil(current * (1 - fraction) - 1e-9)  # 10 × 0.7 is 7.000000000000001
    return max(wanted, min(step, ceiling))


def choose(
    series: ReplaySeries,
    proposal: Values,
    *,
    current_min: int,
    current_max: int,
    minimum_min: int,
    ceiling: int,
    headroom: float,
    keep_fraction: float,
    options: Options,
    cut_fraction: float = 0.0,
) -> Bounds | None:
    """minReplicas and maxReplicas for ``proposal`` (module doc); None without an HPA to replay."""
    hpa = proposal.hpa
    if hpa is None:
        return None
    plain = replace(options, slots=None)

    def walk(low: int, high: int) -> ReplicaPath:
        values = replace(proposal, hpa=replace(hpa, min_replicas=low, max_replicas=high))
        return replica_path(series, values, plain)

    lowest = max(1, min(current_min, minimum_min))
    free = walk(lowest, ceiling)
    if not free.replayed:
        return None
    peak = int(free.replicas.max()) if free.replicas.size else current_max
    wanted_max = min(max(math.ceil(peak * headroom), current_min, 1), ceiling)
    kept = peak <= current_max and abs(wanted_max - current_max) <= keep_fraction * current_max
    max_replicas = (
        current_max if kept else bounded_cut(current_max, wanted_max, cut_fraction, ceiling)
    )
    baseline = walk(current_min, max_replicas)
    low, high = lowest, max(current_min, lowest)
    chosen = baseline
    while low < high:
        mid = (low + high) // 2
        trial = walk(mid, max_replicas)  # the full model: shortfall lives in the details
        if trial.shortfall_steps <= baseline.shortfall_steps:
            high, chosen = mid, trial
        else:
            low = mid + 1
    if high == current_min:
        chosen = baseline
    floor_hours: tuple[str, ...] = ()
    if high > lowest:
        below = walk(high - 1, max_replicas)
        floor_hours = _hours(below.short & ~chosen.short, options.slots)
    minutes = series.step_s / 60.0
    return Bounds(
        min_replicas=high,
        max_replicas=max(max_replicas, high),
        peak=peak,
        peak_hours=_hours(free.replicas >= peak, options.slots),
        floor_hours=floor_hours,
        shortfall_minutes=chosen.shortfall_steps * minutes,
        baseline_minutes=baseline.shortfall_steps * minutes,
        lowest=lowest,
        at_minimum=high == lowest,
        max_kept=kept,
        time_zone=options.time_zone,
        wanted_max=max(max_replicas if kept else wanted_max, high),
    )
