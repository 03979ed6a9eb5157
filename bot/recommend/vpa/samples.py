"""Which usage samples the VPA recommender accepts, and what a series' order allows
(``model/container.go``: ``addCPUSample``, ``addMemorySample``).

A sample is dropped when its value is negative or NaN, or when its time is not after (CPU) or
is before (memory) the latest accepted time of the same pod. ``sample_order`` checks a whole
series in a few reductions so that a clean one, grouped by pod and in time order (the usual
case), is used as it is, without masks or copies.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bot.model import FloatArray, IntArray


@dataclass(frozen=True, slots=True)
class SampleOrder:
    """What one series' layout allows: shortcuts that give the same results."""

    clean: bool
    """Every value finite and >= 0, every time finite."""
    all_accepted: bool
    """``accepted`` keeps every sample: clean values, grouped by pod, in time order per pod."""
    sorted: bool
    """Times never decrease over the whole series (NaN-free)."""
    one_pod: bool = False
    """Every sample is of one pod (False: not known)."""


def _clean(times_s: FloatArray, values: FloatArray, *, times_sorted: bool = False) -> bool:
    """Every value finite and >= 0 and every time finite; NaN propagates through min/max.
    Sorted times (a NaN fails every comparison) are finite when both ends are."""
    if values.size == 0:
        return True
    if not (bool(values.min() >= 0) and bool(np.isfinite(values.max()))):
        return False
    if times_sorted:
        return bool(np.isfinite(times_s[0])) and bool(np.isfinite(times_s[-1]))
    return bool(np.isfinite(times_s.min())) and bool(np.isfinite(times_s.max()))


def sample_order(
    times_s: FloatArray, pods: IntArray, values: FloatArray, *, strict: bool
) -> SampleOrder:
    """``SampleOrder`` of one series in a few passes (``accepted`` rules, see there)."""
    n = times_s.size
    if n < 2:
        clean = _clean(times_s, values)
        return SampleOrder(clean, clean, clean)
    later = times_s[1:] > times_s[:-1] if strict else times_s[1:] >= times_s[:-1]
    in_time_order = bool(later.all())
    clean = _clean(times_s, values, times_sorted=in_time_order)
    if not clean:
        return SampleOrder(False, False, False)
    if in_time_order:
        grouped = bool(pods.min() == pods.max())
        return SampleOrder(True, grouped or bool(np.all(pods[1:] >= pods[:-1])), True, grouped)
    same_pod = pods[1:] == pods[:-1]
    ok = bool(np.all(pods[1:] >= pods[:-1])) and bool(np.all(later | ~same_pod))
    return SampleOrder(True, ok, False)


def accepted(
    times_s: FloatArray, pods: IntArray, values: FloatArray, *, strict: bool
) -> np.ndarray:
    """Which samples the recommender accepts, in the given order.

    A sample is dropped when its value is negative or NaN, or when its time is not after
    (``strict``: CPU, ``addCPUSample``) or is before (memory, ``addMemorySample``) the latest
    accepted time of the same pod.
    """
    n = times_s.size
    if n >= 2 and sample_order(times_s, pods, values, strict=strict).all_accepted:
        return np.ones(n, dtype=bool)  # grouped by pod and in time order: the common case
    ok = np.isfinite(values) & (values >= 0) & np.isfinite(times_s)
    if n < 2:
        return ok
    order = np.argsort(pods, kind="stable")
    t = times_s[order]
    p = pods[order].astype(np.float64)
    span = float(t.max() - t.min()) + 1.0
    key = p * span + (t - t.min())
    key = np.where(ok[order], key, -np.inf)
    prev = np.maximum.accumulate(np.concatenate(([-np.inf], key[:-1])))
    good = key > prev if strict else key >= prev
    out = np.empty(n, dtype=bool)
    out[order] = good
    return out & ok


def sample_step_s(times_s: FloatArray, pods: IntArray, *, one_pod: bool = False) -> float:
    """The typical time between two samples of one pod (median), in seconds; 60 if unknown.
    ``one_pod``: every sample is known to be of one pod."""
    if times_s.size < 2:
        return 60.0
    diffs = np.diff(times_s)
    if one_pod or int(pods.min()) == int(pods.max()):
        shortest, longest = float(diffs.min()), float(diffs.max())
        if shortest == longest and shortest > 0:
            return shortest  # one pod sampled at a regular step: the median is that step
        steps = diffs
    else:
        steps = diffs[pods[1:] == pods[:-1]]
    steps = steps[steps > 0]
    return float(np.median(steps)) if steps.size else 60.0
