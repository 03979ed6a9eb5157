"""Wall-clock hours of epoch times in an IANA time zone, vectorised with numpy: the one clock of
the replica slots (``recommend``) and of the week charts (``report``).

Units: times are seconds since 1970-01-01T00:00Z (floats; any order); a zone is an IANA name
(``Asia/Tokyo``), UTC when unknown (as upstream Tortoise ignores a zone it cannot load).

* ``utc_offsets_s``: the zone's UTC offset (seconds) at each time, as ``zoneinfo`` gives it at
  that instant (``datetime.fromtimestamp(t, zone).utcoffset()``: the new offset from the
  transition's second on);
* ``local_hours``: ``floor((t + offset(t)) / 3600)``, whole hours of the local wall clock since
  1970-01-01T00:00 local (int64);
* ``hour_of_week``: ``(local_hours + 96) mod 168``, 0 = Sunday 00:00 … 167 = Saturday 23:00
  (1970-01-01 was a Thursday, 96 hours after a Sunday's start).

The offset is looked up at the start of each UTC day of the times' span (of each day that holds
a time, and the day after it, when the times lie far apart); within a day whose two ends differ,
the second of the change is found by bisection. This is exact while a zone changes its offset
at most once a day: in the tz database the closest changes since 1970 are seven days apart.
Non-finite times get offset 0.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import numpy as np

from bot.model import HOURS_PER_WEEK, SECONDS_PER_DAY, SECONDS_PER_HOUR, FloatArray

SUNDAY_FIRST_EPOCH_HOURS = 4 * 24
"""1970-01-01 was a Thursday: day 4 of a week that starts on Sunday."""


def zone(name: str) -> ZoneInfo:
    """The IANA time zone ``name``; UTC when it is unknown."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return ZoneInfo("UTC")


def _offset_s(clock: ZoneInfo, at_s: int) -> float:
    """The UTC offset (s) of ``clock`` at the whole second ``at_s``."""
    offset = datetime.fromtimestamp(at_s, clock).utcoffset()
    return offset.total_seconds() if offset is not None else 0.0


def _change_s(clock: ZoneInfo, low_s: int, high_s: int) -> int:
    """The first whole second in ``(low_s, high_s]`` with the offset of ``high_s`` (one change
    between them)."""
    after = _offset_s(clock, high_s)
    while high_s - low_s > 1:
        middle = (low_s + high_s) // 2
        if _offset_s(clock, middle) == after:
            high_s = middle
        else:
            low_s = middle
    return high_s


def _offsets(times_s: FloatArray, time_zone: str) -> float | FloatArray:
    """``utc_offsets_s``, or the one offset of every finite time as a float."""
    finite = np.isfinite(times_s)
    t = times_s if bool(finite.all()) else times_s[finite]
    if t.size == 0:
        return 0.0
    first = math.floor(float(t.min()) / SECONDS_PER_DAY)
    last = math.floor(float(t.max()) / SECONDS_PER_DAY)
    if last - first <= 2 * t.size:  # every day of the span, and the one after
        edges = list(range(first, last + 2))
    else:  # a few times far apart: the days that hold one, and the days after them
        day = np.floor(t / SECONDS_PER_DAY)
        edges = np.unique(np.concatenate((day, day + 1))).astype(np.int64).tolist()
    clock = zone(time_zone)
    starts = [d * SECONDS_PER_DAY for d in edges]
    at_edge = [_offset_s(clock, s) for s in starts]
    changes: list[int] = []  # the offset from each change on: a step function of the time
    values = [at_edge[0]]
    for i in range(len(edges) - 1):
        if at_edge[i] != at_edge[i + 1]:
            adjacent = edges[i + 1] == edges[i] + 1  # else no time lies between them
            changes.append(
                _change_s(clock, starts[i], starts[i + 1]) if adjacent else starts[i + 1]
            )
            values.append(at_edge[i + 1])
    if not changes:
        return values[0]
    offsets: FloatArray = np.array(values)[np.searchsorted(changes, t, side="right")]
    if t is times_s:
        return offsets
    out = np.zeros(times_s.shape)
    out[finite] = offsets
    return out


def utc_offsets_s(times_s: FloatArray, time_zone: str) -> FloatArray:
    """The UTC offset (s) of ``time_zone`` at each time (module doc)."""
    offsets = _offsets(times_s, time_zone)
    if isinstance(offsets, float):
        return np.where(np.isfinite(times_s), offsets, 0.0)
    return offsets


def local_hours(times_s: FloatArray, time_zone: str) -> np.ndarray:
    """Whole hours of the wall clock of ``time_zone`` since 1970-01-01T00:00 local, per time
    (int64; module doc)."""
    local = np.add(times_s, _offsets(times_s, time_zone))
    local /= SECONDS_PER_HOUR
    hours: np.ndarray = np.floor(local, out=local).astype(np.int64)
    return hours


def hour_of_week(times_s: FloatArray, time_zone: str) -> np.ndarray:
    """Hour of the week of each time on the wall clock of ``time_zone`` (0 = Sunday 00:00 …
    167 = Saturday 23:00; ``intp``): with floor division and modulo, ``(hours // 24 + 4) % 7 ×
    24 + hours % 24 = (hours + 96) % 168``, before 1970 too."""
    hours = local_hours(times_s, time_zone)
    hours += SUNDAY_FIRST_EPOCH_HOURS
    out: np.ndarray = np.remainder(hours, HOURS_PER_WEEK, out=hours).astype(np.intp)
    return out


MAX_NOW_AFTER_HISTORY_S = 86_400.0
"""How far after the last recorded time a ``now`` given with a history may lie (1 day)."""


def now_outside_history(now_s: float, first_s: float, last_s: float) -> str | None:
    """Why ``now_s`` cannot be planned at with a history recorded from ``first_s`` to
    ``last_s`` (unix seconds), or None: a ``now`` before the history, or more than
    ``MAX_NOW_AFTER_HISTORY_S`` after it, would recommend from data that is not there (a far
    future one once spent a minute and 19.5 GB on hour slots and still proposed changes from
    years-old samples)."""
    if not math.isfinite(now_s):
        return "now must be a finite time"
    if now_s < first_s:
        return f"now ({_iso(now_s)}) is before the history's first time ({_iso(first_s)})"
    if now_s > last_s + MAX_NOW_AFTER_HISTORY_S:
        return (
            f"now ({_iso(now_s)}) is {(now_s - last_s) / 86_400:.1f} days after the history's "
            f"last time ({_iso(last_s)}): at most {MAX_NOW_AFTER_HISTORY_S / 86_400:g} day; "
            "give the time the history was recorded up to"
        )
    return None


def _iso(t_s: float) -> str:
    try:
        return datetime.fromtimestamp(t_s, UTC).isoformat().replace("+00:00", "Z")
    except (OverflowError, OSError, ValueError):
        return f"{t_s:g} s"
