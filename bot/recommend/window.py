"""The samples a recommendation reads: up to ``now`` and outside the excluded periods.

``WorkloadInput.excluded_intervals_s`` holds half-open ``[start, end)`` periods in unix seconds
(crash loops, emergency windows); a sample at a time after ``now_s`` or inside one of them is
left out, and a NaN time never passes. ``Window.all_kept`` answers for a whole series at once so
the usual case (nothing excluded, nothing late) costs no mask and no copy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bot.model import FloatArray


@dataclass(frozen=True, slots=True)
class Window:
    """``now_s`` (unix s) and the excluded ``[start, end)`` periods."""

    now_s: float
    excluded: tuple[tuple[float, float], ...] = ()

    def keep(self, times_s: FloatArray) -> np.ndarray:
        """True for each time at or before ``now_s`` and outside every excluded period."""
        mask = times_s <= self.now_s
        for start, end in self.excluded:
            mask &= ~((times_s >= start) & (times_s < end))
        return mask

    def all_kept(self, times_s: FloatArray, *, times_sorted: bool = False) -> bool:
        """``keep`` keeps every time: nothing excluded, none after ``now`` (NaN fails the test).
        ``times_sorted``: the times never decrease and hold no NaN (the last is the latest)."""
        if self.excluded or times_s.size == 0:
            return not self.excluded
        latest = times_s[-1] if times_sorted else np.maximum.reduce(times_s)
        return bool(latest <= self.now_s)


def select(mask: np.ndarray, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
    """The arrays restricted to ``mask``; no copy when every element is kept."""
    if bool(mask.all()):
        return arrays
    return tuple(a[mask] for a in arrays)
