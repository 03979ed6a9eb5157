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
from dataclasses import dataclass, field
from operator import itemgetter

import numpy as np

from bot.clock import local_hours
from bot.config.recommend import AdminSettings
from bot.model import FloatArray
from bot.recommend.tortoise.constants import SLOT_DECAY_AGE_S, SLOT_DECAY_FACTOR, WEEKDAYS


@dataclass(frozen=True, slots=True)
class SlotTable:
    """Per slot label (``Mon 09-10`` or ``09-10``): the (minReplicas, maxReplicas) it asks for."""

    values: dict[str, tuple[int, int]]
    missing: tuple[str, ...]
    """Slots never observed (value 0 upstream: still gathering data)."""
    max_min: int = field(init=False)
    """The largest minReplicas over the slots (0 without any)."""
    max_max: int = field(init=False)
    """The largest maxReplicas over the slots (0 without any)."""

    def __post_init__(self) -> None:
        pairs = self.values.values()
        object.__setattr__(self, "max_min", max(map(itemgetter(0), pairs), default=0))
        object.__setattr__(self, "max_max", max(map(itemgetter(1), pairs), default=0))


def slot_labels(admin: AdminSettings) -> list[str]:
    """Labels of every slot in upstream order (weekday Sunday first, then hour)."""
    width = admin.range_of_min_max_replicas_recommendation_hours
    hours = [f"{h:02d}-{h + width:02d}" for h in range(0, 24, width)]
    if admin.gathering_data_period_type == "daily":
        return hours
    return [f"{day} {h}" for day in WEEKDAYS for h in hours]


def slot_of_hours(hours: np.ndarray, admin: AdminSettings) -> np.ndarray:
    """Slot index of local hours: weekday (Sunday first) × slots per day + hour // width."""
    width = admin.range_of_min_max_replicas_recommendation_hours
    hour_slot = (hours % 24) // width
    if admin.gathering_data_period_type == "daily":
        return hour_slot.astype(np.intp)
    weekday: np.ndarray = (hours // 24 + 4) % 7  # 1970-01-01 was a Thursday (Sunday = 0)
    slots: np.ndarray = weekday * (24 // width) + hour_slot
    return slots.astype(np.intp)


def slot_index(times_s: FloatArray, admin: AdminSettings) -> np.ndarray:
    """Slot of each time (``findSlotInReplicasRecommendation``) on the wall clock of the admin
    time zone (``bot.clock``)."""
    return slot_of_hours(local_hours(times_s, admin.time_zone), admin)


def candidates(replicas: FloatArray, admin: AdminSettings) -> tuple[np.ndarray, np.ndarray]:
    """Per-sample (min, max) candidates with the MinimumMinReplicas floors (see module doc)."""
    floor = admin.minimum_min_replicas
    min_c = np.ceil(replicas * admin.min_replicas_recommendation_multiplier).astype(np.int64)
    max_c = np.ceil(replicas * admin.max_replicas_recommendation_multiplier).astype(np.int64)
    min_c = np.where(min_c < floor, floor, min_c)
    max_c = np.where(max_c < floor, _max_floor(admin), max_c)
    return min_c, max_c


def update_slot(old: int, old_updated_s: float | None, candidate: int, now_s: float) -> int:
    """One upstream update: ``max(candidate, old or trunc(old × 0.95) when >= 23 h old)``."""
    biased = old
    if old_updated_s is not None and now_s - old_updated_s >= SLOT_DECAY_AGE_S:
        biased = math.trunc(old * SLOT_DECAY_FACTOR)
    return max(candidate, biased)


def _max_floor(admin: AdminSettings) -> int:
    """The maxReplicas candidate below MinimumMinReplicas (see module doc)."""
    return int(
        admin.minimum_min_replicas
        * admin.max_replicas_recommendation_multiplier
        / admin.min_replicas_recommendation_multiplier
    )


def replica_slots(times_s: FloatArray, replicas: FloatArray, admin: AdminSettings) -> SlotTable:
    """Replay the replica history into the slot table (see module doc)."""
    labels = slot_labels(admin)
    if times_s.size == 0 or (
        bool(np.isfinite(times_s.min()))
        and bool(np.isfinite(times_s.max()))
        and bool(replicas.min() >= 0)
        and bool(np.isfinite(replicas.max()))
    ):
        t, r = times_s, replicas  # all finite and >= 0 (NaN fails these reductions)
    else:
        ok = np.isfinite(times_s) & np.isfinite(replicas) & (replicas >= 0)
        t, r = times_s[ok], replicas[ok]
    if t.size > 1 and not bool(np.all(t[1:] >= t[:-1])):
        order = np.argsort(t, kind="stable")
        t, r = t[order], r[order]
    values: dict[str, tuple[int, int]] = {}
    if t.size:
        # One run per occurrence of a slot: consecutive samples in the same local slot window.
        width = admin.range_of_min_max_replicas_recommendation_hours
        window = local_hours(t, admin.time_zone) // width
        starts = np.flatnonzero(np.r_[True, window[1:] != window[:-1]])
        run_window = window[starts]
        ends = np.append(starts[1:] - 1, t.size - 1)
        # ceil(r × m) is monotone in r: the run's largest candidate is that of its largest r.
        run_min, run_max = candidates(np.maximum.reduceat(r, starts), admin)
        run_slot = slot_of_hours(run_window * width, admin)
        first_t, last_t = t[starts], t[ends]
        order = np.argsort(run_slot, kind="stable")
        run_slot, run_min, run_max = run_slot[order], run_min[order], run_max[order]
        first_t, last_t = first_t[order], last_t[order]
        same_slot = np.concatenate(([False], run_slot[1:] == run_slot[:-1]))
        # A later run of the same slot starts a new occurrence (decay) when the slot's previous
        # update is >= 23 h old; otherwise it continues the same running maximum.
        decays = same_slot & np.concatenate(
            ([False], first_t[1:] - last_t[:-1] >= SLOT_DECAY_AGE_S)
        )
        first_run = ~same_slot
        occurrence = np.cumsum(decays | first_run) - 1
        occurrence -= np.maximum.accumulate(np.where(first_run, occurrence, 0))
        cur_lo = np.zeros(len(labels), dtype=np.int64)
        cur_hi = np.zeros(len(labels), dtype=np.int64)
        for j in range(int(occurrence.max()) + 1):
            sel = occurrence == j
            slots_j = run_slot[sel]
            if j:
                # Runs of one slot within one occurrence: merge them first (no decay).
                lo_j, hi_j = run_min[sel], run_max[sel]
                uniq, inv = np.unique(slots_j, return_inverse=True)
                lo_m = np.zeros(uniq.size, dtype=np.int64)
                hi_m = np.zeros(uniq.size, dtype=np.int64)
                np.maximum.at(lo_m, inv, lo_j)
                np.maximum.at(hi_m, inv, hi_j)
                decayed_lo = np.trunc(cur_lo[uniq] * SLOT_DECAY_FACTOR).astype(np.int64)
                decayed_hi = np.trunc(cur_hi[uniq] * SLOT_DECAY_FACTOR).astype(np.int64)
                cur_lo[uniq] = np.maximum(lo_m, decayed_lo)
                cur_hi[uniq] = np.maximum(hi_m, decayed_hi)
            else:
                np.maximum.at(cur_lo, slots_j, run_min[sel])
                np.maximum.at(cur_hi, slots_j, run_max[sel])
        seen = np.zeros(len(labels), dtype=bool)
        seen[run_slot] = True
        pairs = zip(labels, seen.tolist(), cur_lo.tolist(), cur_hi.tolist(), strict=True)
        values = {label: (lo, hi) for label, was_seen, lo, hi in pairs if was_seen}
    missing = tuple(label for label in labels if label not in values)
    return SlotTable(values, missing)
