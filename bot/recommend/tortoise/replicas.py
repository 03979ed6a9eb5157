"""minReplicas and maxReplicas per time slot, rebuilt from the replica history.

Upstream (``pkg/recommender/recommender.go``, ``updateHPAMinMaxReplicasRecommendations`` and
``updateReplicasRecommendation``; ``pkg/tortoise/tortoise.go``, ``initializeMinMaxReplicas``)
samples the Deployment's desired replicas ``r`` every 15 s and keeps, per slot (weekly: the same
hour on the same weekday; daily: the same hour):

* candidates ``min = ceil(r × 0.5)`` floored at MinimumMinReplicas, ``max = ceil(r × 2)``; when
  ``max < MinimumMinReplicas`` it becomes ``int(MinimumMinReplicas × 2 / 0.5)`` (12);
* ``slot = max(candidate, slot)`` within one occurrence of the slot; at the first sample of a
  later occurrence (previous update >= 23 h old) the old value first becomes ``trunc(v × 0.95)``.

The bot replays the history in time order (gaps are no samples, not zeros). A manifest holds one
minReplicas, so the proposal is the maximum over the slots; every slot's pair is reported.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import numpy as np

from bot.config.recommend import AdminSettings
from bot.model import FloatArray
from bot.recommend.tortoise.constants import SLOT_DECAY_AGE_S, SLOT_DECAY_FACTOR, WEEKDAYS

QUARTER_HOUR_S = 900.0
"""Every UTC offset in use is a multiple of 15 minutes, so local time is constant within one."""


@dataclass(frozen=True, slots=True)
class SlotTable:
    """Per slot label (``Mon 09-10`` or ``09-10``): the (minReplicas, maxReplicas) it asks for."""

    values: dict[str, tuple[int, int]]
    missing: tuple[str, ...]
    """Slots never observed (value 0 upstream: still gathering data)."""

    @property
    def max_min(self) -> int:
        return max((v[0] for v in self.values.values()), default=0)

    @property
    def max_max(self) -> int:
        return max((v[1] for v in self.values.values()), default=0)


def slot_labels(admin: AdminSettings) -> list[str]:
    """Labels of every slot in upstream order (weekday Sunday first, then hour)."""
    width = admin.range_of_min_max_replicas_recommendation_hours
    hours = [f"{h:02d}-{h + width:02d}" for h in range(0, 24, width)]
    if admin.gathering_data_period_type == "daily":
        return hours
    return [f"{day} {h}" for day in WEEKDAYS for h in hours]


def _zone(name: str) -> ZoneInfo | None:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return None


def slot_index(times_s: FloatArray, admin: AdminSettings) -> np.ndarray:
    """Slot of each time in the admin time zone (``findSlotInReplicasRecommendation``).

    An unknown zone is ignored upstream (UTC is kept); so here.
    """
    if times_s.size == 0:
        return np.zeros(0, dtype=np.intp)
    zone = _zone(admin.time_zone) or UTC
    width = admin.range_of_min_max_replicas_recommendation_hours
    per_day = 24 // width
    quarters, inverse = np.unique(np.floor(times_s / QUARTER_HOUR_S), return_inverse=True)
    slot_of_quarter = np.empty(quarters.size, dtype=np.intp)
    for i, q in enumerate(quarters.tolist()):
        local = datetime.fromtimestamp(q * QUARTER_HOUR_S, tz=zone)
        hour_slot = local.hour // width
        if admin.gathering_data_period_type == "daily":
            slot_of_quarter[i] = hour_slot
        else:
            weekday = (local.weekday() + 1) % 7  # Python Monday=0 -> Go Sunday=0
            slot_of_quarter[i] = weekday * per_day + hour_slot
    return slot_of_quarter[inverse.reshape(-1)]


def candidates(replicas: FloatArray, admin: AdminSettings) -> tuple[np.ndarray, np.ndarray]:
    """Per-sample (min, max) candidates with the MinimumMinReplicas floors (see module doc)."""
    floor = admin.minimum_min_replicas
    min_c = np.ceil(replicas * admin.min_replicas_recommendation_multiplier).astype(np.int64)
    max_c = np.ceil(replicas * admin.max_replicas_recommendation_multiplier).astype(np.int64)
    min_c = np.where(min_c < floor, floor, min_c)
    max_floor = int(
        floor
        * admin.max_replicas_recommendation_multiplier
        / admin.min_replicas_recommendation_multiplier
    )
    max_c = np.where(max_c < floor, max_floor, max_c)
    return min_c, max_c


def update_slot(old: int, old_updated_s: float | None, candidate: int, now_s: float) -> int:
    """One upstream update: ``max(candidate, old or trunc(old × 0.95) when >= 23 h old)``."""
    biased = old
    if old_updated_s is not None and now_s - old_updated_s >= SLOT_DECAY_AGE_S:
        biased = math.trunc(old * SLOT_DECAY_FACTOR)
    return max(candidate, biased)


def replica_slots(times_s: FloatArray, replicas: FloatArray, admin: AdminSettings) -> SlotTable:
    """Replay the replica history into the slot table (see module doc)."""
    labels = slot_labels(admin)
    ok = np.isfinite(times_s) & np.isfinite(replicas) & (replicas >= 0)
    t, r = times_s[ok], replicas[ok]
    order = np.argsort(t, kind="stable")
    t, r = t[order], r[order]
    slots = slot_index(t, admin)
    min_c, max_c = candidates(r, admin)
    values: dict[str, tuple[int, int]] = {}
    if t.size:
        by_slot = np.lexsort((t, slots))
        s_sorted, t_sorted = slots[by_slot], t[by_slot]
        new_run = np.ones(t.size, dtype=bool)
        new_run[1:] = (s_sorted[1:] != s_sorted[:-1]) | (
            t_sorted[1:] - t_sorted[:-1] >= SLOT_DECAY_AGE_S
        )
        starts = np.flatnonzero(new_run)
        run_min = np.maximum.reduceat(min_c[by_slot], starts)
        run_max = np.maximum.reduceat(max_c[by_slot], starts)
        run_slot = s_sorted[starts]
        for slot, lo, hi, first_run in zip(
            run_slot.tolist(),
            run_min.tolist(),
            run_max.tolist(),
            np.r_[True, run_slot[1:] != run_slot[:-1]].tolist(),
            strict=True,
        ):
            label = labels[slot]
            if first_run:
                values[label] = (lo, hi)
            else:
                old_lo, old_hi = values[label]
                values[label] = (
                    max(lo, math.trunc(old_lo * SLOT_DECAY_FACTOR)),
                    max(hi, math.trunc(old_hi * SLOT_DECAY_FACTOR)),
                )
    missing = tuple(label for label in labels if label not in values)
    return SlotTable({label: values[label] for label in labels if label in values}, missing)
