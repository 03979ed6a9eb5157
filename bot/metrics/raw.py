"""Raw samples to step-aligned values on the client, the same numbers range queries give.

In ``query_mode: raw`` the source asks for raw samples (an instant query of a range vector: no
per-step evaluation on the server, about 3x less server time, no 11,000-point limit) and does
here what ``rate()`` and ``max_over_time()`` would have done at each evaluation time ``e``
(``e = first + k * step``), over the half-open step ``(e - step, e]``:

- CPU, per raw counter series: for consecutive samples ``(t0, v0), (t1, v1)`` with
  ``t1 - t0 <= max_gap_s`` (the rate window: a longer hole has no rate, as ``rate()`` has no
  two samples then), ``increase = v1 - v0``, or ``v1`` after a counter reset (``v1 < v0``,
  ``promql/functions.go``, ``extrapolatedRate``); the value at ``e`` is
  ``sum(increase) / sum(t1 - t0)`` over the pairs whose ``t1`` falls in ``(e - step, e]``.
  With one scrape per step this equals ``rate(x[step])`` at ``e`` exactly; with faster scrapes it
  is the mean rate over the step, without ``rate()``'s extrapolation to the window edges.
- memory: the highest sample in ``(e - step, e]`` (``max_over_time``).

Several raw series for one (pod, container) (a restarted container gets a new cAdvisor series)
are combined by taking the maximum per evaluation time, as ``max by`` does.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from bot.model import FloatArray

Index = np.ndarray[tuple[int], np.dtype[np.int64]]
"""Step numbers of samples."""

Mask = np.ndarray[tuple[int], np.dtype[np.bool_]]

EPSILON_S = 1e-6
"""Tolerance on timestamps (Prometheus stores milliseconds)."""


def _last_step(first_s: float, last_s: float, step_s: float) -> int:
    """The number of the last evaluation step."""
    return math.floor((last_s - first_s) / step_s + EPSILON_S / step_s)


def _buckets(t: FloatArray, first_s: float, last_s: float, step_s: float) -> tuple[Index, Mask]:
    at = np.subtract(t, first_s)  # ceil((t − first) / step − ε), in one buffer
    at /= step_s
    at -= EPSILON_S
    index = np.ceil(at, out=at).astype(np.int64)
    steps = _last_step(first_s, last_s, step_s)
    inside = (index >= 0) & (index <= steps)
    return index, inside


def _runs(index: Index, *arrays: FloatArray) -> tuple[Index, Index | None, list[FloatArray]]:
    """(distinct step indices, where each run starts, ``arrays``) with equal indices adjacent:
    already so for samples in time order (one pass), else after a stable sort. ``starts`` is
    ``None`` when every index is distinct and in order (one sample per step, the usual case):
    then the arrays are the per-step values as they are."""
    step = np.diff(index)
    if bool(np.all(step > 0)):
        return index, None, list(arrays)
    if not bool(np.all(step >= 0)):
        order = np.argsort(index, kind="stable")
        index, arrays = index[order], tuple(a[order] for a in arrays)
    starts = np.flatnonzero(np.concatenate(([True], index[1:] != index[:-1])))
    return index[starts], starts, list(arrays)


def counter_rates(
    t: FloatArray,
    v: FloatArray,
    *,
    first_s: float,
    last_s: float,
    step_s: float,
    max_gap_s: float,
) -> tuple[FloatArray, FloatArray]:
    """(evaluation times, rate per second) of one counter series (formula in the module doc)."""
    if len(t) < 2:
        return np.zeros(0), np.zeros(0)
    dt = np.diff(t)
    dv = np.diff(v)
    grew = dv >= 0
    increase = dv if bool(grew.all()) else np.where(grew, dv, v[1:])
    ok = (dt > 0) & (dt <= max_gap_s + EPSILON_S)
    index, inside = _buckets(t[1:], first_s, last_s, step_s)
    keep = ok & inside
    if not bool(keep.all()):
        index, increase, dt = index[keep], increase[keep], dt[keep]
    if not len(index):
        return np.zeros(0), np.zeros(0)
    unique, starts, (increase, dt) = _runs(index, increase, dt)
    if starts is not None:
        increase, dt = np.add.reduceat(increase, starts), np.add.reduceat(dt, starts)
    rate = increase / dt
    times = first_s + unique * step_s
    return times.astype(np.float64, copy=False), rate.astype(np.float64, copy=False)


def step_max(
    t: FloatArray, v: FloatArray, *, first_s: float, last_s: float, step_s: float
) -> tuple[FloatArray, FloatArray]:
    """(evaluation times, highest sample of each step) of one gauge series."""
    index, inside = _buckets(t, first_s, last_s, step_s)
    values = v
    if not bool(inside.all()):
        index, values = index[inside], v[inside]
    if not len(index):
        return np.zeros(0), np.zeros(0)
    unique, starts, (values,) = _runs(index, values)
    times = (first_s + unique * step_s).astype(np.float64, copy=False)
    if starts is not None:
        values = np.maximum.reduceat(values, starts)
    return times, values.astype(np.float64, copy=False)


def combine_max(parts: Sequence[tuple[FloatArray, FloatArray]]) -> tuple[FloatArray, FloatArray]:
    """Several step-aligned series of one (pod, container) as one: the maximum per time."""
    parts = [p for p in parts if len(p[0])]
    if not parts:
        return np.zeros(0), np.zeros(0)
    if len(parts) == 1:
        return parts[0]
    t = np.concatenate([p[0] for p in parts])
    v = np.concatenate([p[1] for p in parts])
    order = np.lexsort((v, t))
    t, v = t[order], v[order]
    last = np.append(t[1:] != t[:-1], True)  # the highest value of each time sorts last
    return t[last], v[last]
