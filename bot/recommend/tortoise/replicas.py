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

import functools
import math
from dataclasses import dataclass, field
from datetime import UTC, datetime
from operator import itemgetter
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import numpy as np

from bot.config.recommend import AdminSettings
from bot.model import HOURS_PER_WEEK, SECONDS_PER_HOUR, FloatArray
from bot.native import replicas as native_replicas
from bot.recommend.tortoise.constants import SLOT_DECAY_AGE_S, SLOT_DECAY_FACTOR, WEEKDAYS

QUARTER_HOUR_S = 900.0
"""Every UTC offset in use is a multiple of 15 minutes, so local time is constant within one."""


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
    return list(
        _labels(
            admin.range_of_min_max_replicas_recommendation_hours, admin.gathering_data_period_type
        )
    )


@functools.lru_cache(maxsize=64)
def _labels(width: int, period: str) -> tuple[str, ...]:
    hours = [f"{h:02d}-{h + width:02d}" for h in range(0, 24, width)]
    if period == "daily":
        return tuple(hours)
    return tuple(f"{day} {h}" for day in WEEKDAYS for h in hours)


def _hours(times_s: FloatArray, offset_s: float) -> np.ndarray:
    """Local hours since the epoch at a fixed UTC offset."""
    hours: np.ndarray = np.floor((times_s + offset_s) / SECONDS_PER_HOUR).astype(np.int64)
    return hours


def _fixed_offset_s(
    times_s: FloatArray, admin: AdminSettings, *, in_order: bool = False
) -> float | None:
    """The admin zone's UTC offset (s) when it is the same at the earliest and the latest
    time (finite; ``in_order``: the times never decrease, so those are the first and last)."""
    zone = _zone(admin.time_zone) or UTC
    low, high = (times_s[0], times_s[-1]) if in_order else (times_s.min(), times_s.max())
    first = datetime.fromtimestamp(float(low), tz=zone).utcoffset()
    last = datetime.fromtimestamp(float(high), tz=zone).utcoffset()
    return first.total_seconds() if first is not None and first == last else None


def _window_runs(
    times_s: FloatArray, offset_s: float, width: int
) -> tuple[np.ndarray, np.ndarray] | None:
    """For times in non-decreasing order at a fixed UTC offset: where each run of one slot
    window starts and that window (``local hour // width``), as ``replica_slots`` computes them
    per sample; None when the shortcut cannot be shown.

    The window never decreases along sorted times, so a binary search on the window edges finds
    the candidate starts, and the formula itself, applied to the two times around each, decides.
    """

    def window(x: FloatArray) -> np.ndarray:
        return _hours(x, offset_s) // width

    n = times_s.size
    w_first, w_last = window(times_s[[0, -1]]).tolist()
    ws = np.arange(w_first + 1, w_last + 1, dtype=np.int64)
    pos = np.searchsorted(times_s, ws * (width * float(SECONDS_PER_HOUR)) - offset_s)
    below = window(times_s[np.maximum(pos - 1, 0)])
    above = window(times_s[np.minimum(pos, n - 1)])
    if not bool(np.all((pos > 0) & (below < ws) & ((pos == n) | (above >= ws)))):
        return None
    nonempty = pos < np.append(pos[1:], n)
    starts = np.concatenate((np.zeros(1, dtype=np.intp), pos[nonempty]))
    return starts, np.concatenate((np.array([w_first], dtype=np.int64), ws[nonempty]))


def _zone(name: str) -> ZoneInfo | None:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return None


def local_hours(times_s: FloatArray, admin: AdminSettings) -> np.ndarray:
    """Local wall-clock hours since 1970-01-01T00:00 in the admin time zone, per time.

    An unknown zone is ignored upstream (UTC is kept); so here. A window without an offset
    change is plain arithmetic; otherwise each quarter hour is converted once.
    """
    if times_s.size == 0:
        return np.zeros(0, dtype=np.int64)
    offset_s = _fixed_offset_s(times_s, admin)
    if offset_s is not None:
        return _hours(times_s, offset_s)
    zone = _zone(admin.time_zone) or UTC
    quarters, inverse = np.unique(np.floor(times_s / QUARTER_HOUR_S), return_inverse=True)
    hours = np.empty(quarters.size, dtype=np.int64)
    for i, q in enumerate(quarters.tolist()):
        local = datetime.fromtimestamp(q * QUARTER_HOUR_S, tz=zone).replace(tzinfo=UTC)
        hours[i] = int(local.timestamp() // SECONDS_PER_HOUR)
    return hours[inverse.reshape(-1)]


def slot_of_hours(hours: np.ndarray, admin: AdminSettings) -> np.ndarray:
    """Slot index of local hours: weekday (Sunday first) × slots per day + hour // width."""
    width = admin.range_of_min_max_replicas_recommendation_hours
    hour_slot = (hours % 24) // width
    if admin.gathering_data_period_type == "daily":
        return hour_slot.astype(np.intp)
    weekday: np.ndarray = (hours // 24 + 4) % 7  # 1970-01-01 was a Thursday (Sunday = 0)
    slots: np.ndarray = weekday * (24 // width) + hour_slot
    return slots.astype(np.intp)


def hour_of_week(times_s: FloatArray, admin: AdminSettings) -> np.ndarray:
    """Hour of the week (0..167, Sunday 00 first) of each time in the admin time zone."""
    hours = local_hours(times_s, admin)
    # weekday × 24 + hour of the day, Sunday first (1970-01-01 was a Thursday, day 4): with
    # floor division and modulo, (hours // 24 + 4) % 7 × 24 + hours % 24 = (hours + 96) % 168.
    hours += 4 * 24
    out: np.ndarray = np.remainder(hours, HOURS_PER_WEEK, out=hours).astype(np.intp)
    return out


def slot_index(times_s: FloatArray, admin: AdminSettings) -> np.ndarray:
    """Slot of each time (``findSlotInReplicasRecommendation``)."""
    return slot_of_hours(local_hours(times_s, admin), admin)


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


def _slots_compiled(
    t: FloatArray, r: FloatArray, offset_s: float, admin: AdminSettings, labels: tuple[str, ...]
) -> SlotTable | None:
    """``replica_slots`` of finite times in order at one UTC offset (finite replicas >= 0) in
    one compiled pass (``bot.native.replicas``, the same slots), or None to run it."""
    found = native_replicas.slots(
        t,
        r,
        offset_s=offset_s,
        width=admin.range_of_min_max_replicas_recommendation_hours,
        daily=admin.gathering_data_period_type == "daily",
        n_slots=len(labels),
        min_multiplier=admin.min_replicas_recommendation_multiplier,
        max_multiplier=admin.max_replicas_recommendation_multiplier,
        floor=admin.minimum_min_replicas,
        max_floor=_max_floor(admin),
        decay_age_s=SLOT_DECAY_AGE_S,
        decay_factor=SLOT_DECAY_FACTOR,
    )
    if found is None:
        return None
    lo, hi, seen = found
    if bool(seen.all()):  # every slot observed: the common case, without a test per slot
        pairs_all = zip(lo.tolist(), hi.tolist(), strict=True)
        return SlotTable(dict(zip(labels, pairs_all, strict=True)), ())
    pairs = zip(labels, seen.tolist(), lo.tolist(), hi.tolist(), strict=True)
    values = {label: (low, high) for label, was_seen, low, high in pairs if was_seen}
    return SlotTable(values, tuple(label for label in labels if label not in values))


def replica_slots(times_s: FloatArray, replicas: FloatArray, admin: AdminSettings) -> SlotTable:
    """Replay the replica history into the slot table (see module doc)."""
    labels = _labels(
        admin.range_of_min_max_replicas_recommendation_hours, admin.gathering_data_period_type
    )
    tried = bool(
        times_s.size
        and replicas.size == times_s.size
        and all(math.isfinite(x) for x in (float(times_s[0]), float(times_s[-1])))
    )
    if tried:
        # The usual series, finite and in time order, straight into the compiled pass, which
        # refuses any other (the checks below then sort and filter it).
        offset_s = _fixed_offset_s(times_s, admin, in_order=True)
        compiled = (
            None
            if offset_s is None
            else _slots_compiled(times_s, replicas, offset_s, admin, labels)
        )
        if compiled is not None:
            return compiled
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
        offset_s = _fixed_offset_s(t, admin)
        # the very arrays the compiled pass refused above (or no kernel): not again
        again = not (tried and t is times_s and r is replicas)
        compiled = (
            _slots_compiled(t, r, offset_s, admin, labels)
            if offset_s is not None and again
            else None
        )
        if compiled is not None:
            return compiled
        runs = None if offset_s is None else _window_runs(t, offset_s, width)
        if runs is not None:
            starts, run_window = runs
        else:
            window = local_hours(t, admin) // width
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
