"""The Kubernetes HorizontalPodAutoscaler controller, replayed on a recorded demand series.

One controller decision per step of the history (``step_s``, usually 60 s), on the total
demand of each metric (cores or bytes summed over the pods; the load is taken as conserved
whatever the replica count). Sources: ``pkg/controller/podautoscaler/replica_calculator.go``
(``GetResourceReplicas``), ``metrics/utilization.go`` and ``horizontal.go``
(``normalizeDesiredReplicasWithBehaviors``) in kubernetes/kubernetes; ``hpa-controller.md``.

Per step ``k``, with ``R`` the replicas of the step before:

* each metric ``m`` (a ``ContainerResource`` target on one container, or a pod-level
  ``Resource`` target on the sum of the pod's requests): ``util = int(usage × 100 /
  (R × request))`` (integer percent, truncated), ``ratio = util / target``; within the
  tolerance (``0.9 <= ratio <= 1.1``) the metric proposes ``R``, else ``ceil(ratio × R)``;
* ``desired`` is the largest proposal (the controller's maximum over metrics);
* stabilisation (the defaults of ``behavior``): scaling up takes ``desired`` at once; scaling
  down takes the largest ``desired`` of the last ``DOWNSCALE_STABILIZATION_S`` (300 s), never
  above ``R``;
* rate: up by at most ``max(2 × R, R + 4)`` per 15 s sync (the default ``Percent 100`` and
  ``Pods 4`` policies, ``selectPolicy: Max``), compounded over the syncs of one step; down
  unlimited (``Percent 100`` per 15 s);
* at zero replicas nothing scales (the controller disables scaling there);
* ``[minReplicas, maxReplicas]`` clamp; the first step starts from the recorded replicas,
  clamped.

These are the defaults; an HPA's own ``behavior`` (``HpaBehavior``: its windows, policies,
``selectPolicy`` and tolerances) replaces them, as ``exact.py`` tells.

Two implementations of this one model. ``exact.replay_exact_reach`` walks the steps one by one
(the reference, about 20 ms per two weeks of one-minute steps). ``replay_fast_reach`` is vectorised
with numpy (its doc): it judges the tolerance against a starting path instead of the
replicas of the step before, then keeps the replicas wherever the load stays in the tolerance
band. They agree on step loads, clean ramps and flat loads; on the simulator's services and
noisy series their pod-hours differ by 1.3 % at most (``tests/recommend/replay``).
Both also tell their reach, the largest value the maxReplicas clamp met: any maxReplicas
at or above it gives the same path, which the search for replica bounds reuses.
``replay_fast_reach`` works in a ``WalkArea`` its caller passes (one per series, shared by the
walks over it) instead of fresh arrays of the series' length at every walk.

The floor may vary per step (``Floor``: an array the length of the series): a KEDA ``cron``
trigger is an External metric that proposes its ``desiredReplicas`` between its ``start`` and
``end`` and 1 outside them (kedacore/keda ``pkg/scalers/cron_scaler.go``, ``GetMetricsAndActivity``;
keda-docs ``scalers/cron.md``); the HPA takes the largest proposal of its metrics, so the
trigger keeps at least that many replicas during its hours: a floor for those steps
(``bot.recommend.keda_cron``). Below a raised floor the controller goes straight to it
(``horizontal.go``: "Current number of replicas below Spec.MinReplicas"); when it drops, the
replicas fall as the metrics and the stabilisation allow. A constant array gives the scalar's
path exactly (the walks take it as that scalar).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, TypeAlias

import numpy as np

from bot.model import DEFAULT_BEHAVIOR, FloatArray, HpaBehavior

TOLERANCE = DEFAULT_BEHAVIOR.scale_up.tolerance
"""``--horizontal-pod-autoscaler-tolerance``: no scaling while ``|ratio − 1| <= 0.1`` (an
HPA's ``behavior`` may declare its own, ``HpaBehavior``)."""

DOWNSCALE_STABILIZATION_S = float(DEFAULT_BEHAVIOR.scale_down.stabilization_s)
"""``behavior.scaleDown.stabilizationWindowSeconds`` default (the controller flag, 5 min)."""

SYNC_PERIOD_S = 15.0
"""``--horizontal-pod-autoscaler-sync-period``: one decision per 15 s."""

SCALE_UP_PODS = 4
"""Default scale-up policy ``Pods 4`` per 15 s."""

SCALE_UP_PERCENT = 100
"""Default scale-up policy ``Percent 100`` per 15 s (double): ``_up_limits_float`` relies on
it."""

FAST_START_UTILISATION = 1.0 + TOLERANCE / 2
"""``replay_fast_reach`` starts from the path that keeps utilisation at this multiple of the target
(the middle of the tolerance band on the side the stabilisation window leans to; with an HPA's
own scale-up tolerance, the middle of that): on the
simulator's services and noisy series, its pod-hours are within 1.3 % of the exact
walk's (0.8 % on average; starting at the target itself: 3 %)."""

Floor: TypeAlias = int | np.ndarray
"""``minReplicas``: one value, or one whole count per step of the series (``floor_parts``)."""


def floor_parts(min_replicas: Floor, steps: int) -> tuple[int, np.ndarray | None]:
    """``min_replicas`` as (its first value, its per-step array or None when it is one value
    or an array of one value). Raises ``ValueError`` on an array not ``steps`` long."""
    if isinstance(min_replicas, (int, np.integer)):
        return int(min_replicas), None
    floor = np.asarray(min_replicas)
    if floor.size != steps:
        raise ValueError(f"a floor of {floor.size} steps, a series of {steps}")
    if steps == 0:
        return 0, None
    first = int(floor[0])
    if bool((floor == first).all()):
        return first, None
    return first, floor.astype(np.float64)


Model: TypeAlias = Literal["fast", "exact"]
"""Which implementation replays the controller."""


@dataclass(frozen=True, slots=True)
class Metric:
    """One HPA resource metric on a demand series.

    ``usage``: total usage of the metric's containers per step (cores or bytes, summed over
    pods; NaN where unknown); ``request``: the per-pod request it is measured against (the
    container's, or the sum of the pod's containers for a pod-level ``Resource`` metric);
    ``target_percent``: ``averageUtilization``.
    """

    usage: FloatArray
    request: float
    target_percent: int


FLOAT_ROWS, INT_ROWS, FLAG_ROWS = 8, 3, 4
"""Rows of a ``WalkArea``: step-length arrays ``replay_fast_reach`` needs at once."""

_NEED, _EACH, _PATH, _PASSED, _BELOW, _RATIO, _SPARE, _RECENT = range(FLOAT_ROWS)
_RUN, _COUNT, _BASE = range(INT_ROWS)
_NEW_RUN, _BREAKS, _TEST, _TEST_TOO = range(FLAG_ROWS)


@dataclass(frozen=True, slots=True)
class WalkArea:
    """Scratch arrays for ``replay_fast_reach`` over series of ``steps`` steps: ``floats``
    (``FLOAT_ROWS × steps`` float64), ``ints`` (``INT_ROWS × steps`` int64) and ``flags``
    (``FLAG_ROWS × steps`` bool); about 1.8 MB at two weeks of one-minute steps.

    Owned by the caller and passed to each walk, which overwrites it and returns nothing that
    points into it: its key is the series it was made for (``ReplaySeries.walk_area``, one per
    series) and its bound those rows; it lives as long as that series (one workload's replay).
    Reusing it spares every walk the mapping of about a dozen fresh arrays of the series'
    length (each faulted in page by page, more time than their arithmetic)."""

    floats: FloatArray
    ints: np.ndarray
    flags: np.ndarray

    @classmethod
    def of(cls, steps: int) -> WalkArea:
        """An area for series of ``steps`` steps (not initialised: each walk writes first)."""
        return cls(
            np.empty((FLOAT_ROWS, steps)),
            np.empty((INT_ROWS, steps), dtype=np.int64),
            np.empty((FLAG_ROWS, steps), dtype=np.bool_),
        )

    @property
    def steps(self) -> int:
        return int(self.floats.shape[1])


def syncs_per_step(step_s: float) -> int:
    """Controller syncs within one step of the history (at least one)."""
    return max(1, round(step_s / SYNC_PERIOD_S))


def window_steps(step_s: float, seconds: float = DOWNSCALE_STABILIZATION_S) -> int:
    """Recommendations newer than ``now − seconds`` (a stabilisation window) at a step of
    ``step_s``, the step's own included: the window length in steps (at least 1)."""
    return max(1, math.ceil(seconds / step_s - 1e-9))


def scale_up_limit(replicas: int, syncs: int) -> int:
    """Highest replica count reachable from ``replicas`` in ``syncs`` syncs (default policies)."""
    for _ in range(syncs):
        replicas = max(replicas + SCALE_UP_PODS, replicas * (100 + SCALE_UP_PERCENT) // 100)
    return replicas


def _up_limits(replicas: np.ndarray, syncs: int, out: np.ndarray | None = None) -> np.ndarray:
    """``scale_up_limit`` of each (whole, non-negative) replica count: from ``SCALE_UP_PODS``
    pods on, doubling allows more than ``+SCALE_UP_PODS``, so the limit is ``R × 2^syncs``;
    below, a table of ``scale_up_limit``. Written into ``out`` (int64, the size of
    ``replicas``) when given."""
    if out is None:
        out = np.empty(replicas.size, dtype=np.int64)
    np.maximum(replicas, 0, out=out, casting="unsafe")  # whole counts: as ``astype(np.int64)``
    few = out < SCALE_UP_PODS
    small = None
    if few.any():
        table = np.array([scale_up_limit(r, syncs) for r in range(SCALE_UP_PODS)])
        small = table[out[few]]
    out *= ((100 + SCALE_UP_PERCENT) // 100) ** syncs
    if small is not None:
        out[few] = small
    return out


def _usable(metrics: Sequence[Metric]) -> list[Metric]:
    return [m for m in metrics if m.request > 0 and m.target_percent > 0]


def _whole(x: float, rounding: Callable[[float], int]) -> float:
    """``rounding(x)`` as a float; an infinity stays itself (as ``np.floor`` and ``np.ceil``)."""
    return float(rounding(x)) if math.isfinite(x) else x


def window_max(values: np.ndarray, width: int, out: np.ndarray | None = None) -> np.ndarray:
    """``max(values[k − width + 1 .. k])`` per ``k`` (shorter at the start): one vectorised
    maximum per lag of the window (5 at one-minute steps; a reduction over
    ``sliding_window_view`` is about 40× slower at these widths). Written into ``out`` (the
    size of ``values``, not overlapping it) when given."""
    if out is None:
        out = values.copy()
    else:
        np.copyto(out, values)
    for lag in range(1, width):
        np.maximum(out[lag:], values[:-lag], out=out[lag:])
    return out


def _up_limits_float(
    replicas: FloatArray,
    syncs: int,
    out: FloatArray | None = None,
    spare: FloatArray | None = None,
) -> FloatArray:
    """``_up_limits`` of whole replica counts held as floats, as floats (exact: the counts
    and their limits are far below 2**53). The first sync allows ``max(R + 4, 2R)``; from
    then on the count is at least ``SCALE_UP_PODS``, where doubling allows more, so each
    further sync doubles it. Written into ``out``, with ``spare`` overwritten (both the size
    of ``replicas``), when given."""
    counts = np.maximum(replicas, 0.0, out=spare)
    first: FloatArray = np.multiply(counts, 2.0, out=out)
    counts += float(SCALE_UP_PODS)
    np.maximum(counts, first, out=first)
    first *= float(2 ** (syncs - 1))
    return first


def _step(
    previous: FloatArray,
    usable: Sequence[Metric],
    *,
    min_replicas: float | FloatArray,
    max_replicas: int,
    syncs: int,
    window: int,
    seed: int,
    out: FloatArray,
    area: WalkArea,
    band: tuple[float, float] = (1.0 - TOLERANCE, 1.0 + TOLERANCE),
) -> float:
    """The step rule for every step at once, given the replicas of the step before each
    (whole numbers within ``[min_replicas, max_replicas]`` where those are in order), written
    into ``out``; returns the largest value the ``max_replicas`` clamp met (infinite where that
    is not tracked). ``min_replicas``: one floor or one per step of ``out``. ``band``: the
    ratios within the tolerance. Works in the rows ``_BELOW``, ``_RATIO``, ``_SPARE``, ``_RECENT``,
    ``_TEST`` and ``_TEST_TOO`` of ``area``."""
    prev = previous
    size = prev.size
    desired = out  # the largest proposal of the metrics, then the stabilised replicas
    below, ratio = area.floats[_BELOW, :size], area.floats[_RATIO, :size]
    proposal, within = area.floats[_SPARE, :size], area.flags[_TEST, :size]
    under = area.flags[_TEST_TOO, :size]
    with np.errstate(invalid="ignore", divide="ignore"):
        for i, m in enumerate(usable):
            np.multiply(m.usage[1:], 100.0, out=ratio)
            ratio /= np.multiply(prev, m.request, out=below)
            np.floor(ratio, out=ratio)
            ratio /= m.target_percent
            np.greater_equal(ratio, band[0], out=within)
            within &= np.less_equal(ratio, band[1], out=under)
            ratio *= prev
            np.ceil(ratio, out=ratio)
            into = desired if i == 0 else proposal
            np.copyto(into, ratio)
            np.copyto(into, prev, where=within)  # R within the tolerance
            if i > 0:
                np.fmax(desired, proposal, out=desired)
        # no sample in any metric (NaN): nothing to act on (``min`` is NaN with any NaN)
        if not desired.min(initial=0.0) >= 0:
            known = desired >= 0
            np.copyto(desired, prev, where=~known)
    # the largest desired of the window
    recent = window_max(desired, window, out=area.floats[_RECENT, :size])
    np.maximum(recent[: window - 1], float(seed), out=recent[: window - 1])  # the seed before
    # scaling up (or not at all) takes ``desired`` at once, down the largest of the window but
    # never above the replicas before (``min(recent, max(desired, prev))``)
    stabilised = proposal
    np.maximum(desired, prev, out=stabilised)
    np.minimum(stabilised, recent, out=stabilised)
    np.copyto(stabilised, desired, where=np.greater_equal(desired, prev, out=within))
    up = _up_limits_float(prev, syncs, out=recent, spare=below)
    if float(np.max(min_replicas)) <= max_replicas:
        # ``prev`` lies within the bounds and below ``up``: rising is capped by both upper
        # limits, falling by the floor, and an unchanged value passes both
        np.minimum(stabilised, up, out=stabilised)
        reach = float(stabilised.max()) if stabilised.size else -math.inf
        np.minimum(stabilised, float(max_replicas), out=stabilised)
        np.maximum(stabilised, min_replicas, out=out)
        return reach
    up_to = np.minimum(np.minimum(stabilised, float(max_replicas)), up)
    down_to = np.maximum(stabilised, min_replicas)
    out[:] = np.where(stabilised > prev, up_to, np.where(stabilised < prev, down_to, prev))
    return math.inf


def replay_fast_reach(
    metrics: Sequence[Metric],
    *,
    min_replicas: Floor,
    max_replicas: int,
    initial: int,
    step_s: float,
    behavior: HpaBehavior = DEFAULT_BEHAVIOR,
    area: WalkArea | None = None,
) -> tuple[np.ndarray, float]:
    """Replicas per step, vectorised (``int64`` array), and its reach: the largest value the
    ``max_replicas`` clamp met. The clamp changed nothing below it, so every maxReplicas no
    lower than the reach gives this same path. ``area``: where to work, for series of this
    length (None: a fresh one); the path returned is the walk's own. ``behavior``: its
    tolerances and scale-down window are used; its policies are taken as the defaults
    (``exact.fast_expresses`` tells when that holds; ``exact.replay_reach`` walks the other
    behaviours step by step instead).

    1. A starting path: each step's need at ``FAST_START_UTILISATION`` of the target, held
       over the stabilisation window (steps without a sample keep the start value).
    2. One pass of the step rule, each step taking the path's previous step as the replicas
       before it (``_step``).
    3. Holds: along each run of one value of the starting path, the replicas the pass found at
       the run's first step stay as long as every metric stays within the tolerance of them
       (what the controller does while the load sits in the band).
    4. The scale-up rate limit (``_rate_limited``).

    A floor per step (``min_replicas`` an array, module doc) joins the starting path and the
    step rule, and lifts the result to it after the holds and the rate limit (the controller
    goes straight to a raised floor).
    """
    usable = _usable(metrics)
    n = len(metrics[0].usage) if metrics else 0
    first, floors = floor_parts(min_replicas, n)
    start = min(max(initial, first), max_replicas)
    reach = float(max(initial, first))  # the start before the clamp
    if floors is not None:
        reach = max(reach, float(floors.max()))
        np.minimum(floors, float(max_replicas), out=floors)  # the ceiling wins, as in a step
    if not usable or n == 0:
        return np.full(n, start, dtype=np.int64), reach
    if area is None:
        area = WalkArea.of(n)
    elif area.steps != n:
        raise ValueError(f"a walk area for {area.steps} steps, a series of {n}")
    floats, ints, flags = area.floats, area.ints, area.flags
    down = behavior.scale_down
    window, syncs = window_steps(step_s, down.stabilization_s), syncs_per_step(step_s)
    band = (1.0 - down.tolerance, 1.0 + behavior.scale_up.tolerance)
    utilisation = 1.0 + behavior.scale_up.tolerance / 2
    need = each = floats[_NEED]
    with np.errstate(invalid="ignore"):
        for i, m in enumerate(usable):
            scale = 100.0 / (m.request * m.target_percent * utilisation)
            np.multiply(m.usage, scale, out=each)
            np.ceil(each, out=each)
            if i == 0:
                each = floats[_EACH]
            else:
                np.fmax(need, each, out=need)
        finite = bool(np.isfinite(need.min())) and bool(np.isfinite(need.max()))
    if not finite:
        np.copyto(need, float(start), where=~np.isfinite(need))
    np.maximum(need, float(first) if floors is None else floors, out=need)  # the floor, then
    # the ceiling (np.clip)
    reach = max(reach, float(need.max()))
    np.minimum(need, float(max_replicas), out=need)
    path = window_max(need, window, out=floats[_PATH])
    path[0] = start
    passed = floats[_PASSED]
    passed[0] = float(start)
    stepped = _step(
        path[:-1],
        usable,
        min_replicas=float(first) if floors is None else floors[1:],
        max_replicas=max_replicas,
        syncs=syncs,
        window=window,
        seed=start,
        out=passed[1:],
        area=area,
        band=band,
    )
    new_run = flags[_NEW_RUN]
    new_run[0] = True
    np.not_equal(path[1:], path[:-1], out=new_run[1:])
    firsts = np.flatnonzero(new_run)
    run = np.cumsum(new_run, out=ints[_RUN])  # the run of each step, counted from 1
    run -= 1
    held = np.take(passed[firsts], run, out=floats[_SPARE])  # each run's first value along it
    breaks, beyond = flags[_BREAKS], flags[_TEST]
    breaks[:] = False
    ratio, below = floats[_RATIO], floats[_BELOW]
    with np.errstate(invalid="ignore", divide="ignore"):
        for m in usable:
            np.multiply(m.usage, 100.0, out=ratio)  # floor(usage × 100 / (held × request))
            ratio /= np.multiply(held, m.request, out=below)
            np.floor(ratio, out=ratio)
            ratio /= m.target_percent  # … / target beyond the tolerance (NaN: no sample)
            breaks |= np.less(ratio, band[0], out=beyond)
            breaks |= np.greater(ratio, band[1], out=beyond)
    # held from each run's first step up to the first break at or after it: while the breaks
    # counted up to the step are those counted before the run's first step
    counted = np.cumsum(breaks, out=ints[_COUNT])
    before_run = counted[firsts] - breaks[firsts]
    unbroken = np.equal(counted, np.take(before_run, run, out=ints[_BASE]), out=beyond)
    np.copyto(passed, held, where=unbroken)
    if floors is None:
        return _rate_limited(passed.astype(np.int64), syncs, ints[_BASE]), max(reach, stepped)
    np.maximum(passed, floors, out=passed)
    limited = _rate_limited(passed.astype(np.int64), syncs, ints[_BASE])
    return np.maximum(limited, floors.astype(np.int64)), max(reach, stepped)


def _rate_limited(path: np.ndarray, syncs: int, spare: np.ndarray | None = None) -> np.ndarray:
    """``path`` with every rise faster than the scale-up policies allow slowed to the policy
    limit (in place; such rises are rare, so the walk is over them only). ``spare``: an int64
    array at least the size of ``path`` to work in (None: fresh ones)."""
    if path.size < 2:
        return path
    rows = spare[: path.size - 1] if spare is not None else None
    rises = np.subtract(path[1:], path[:-1], out=rows)
    if int(rises.max()) <= SCALE_UP_PODS * syncs:
        return path  # every rise is within what the Pods policy alone allows
    limit = _up_limits(path[:-1], syncs, out=rows)
    for first in (np.flatnonzero(path[1:] > limit) + 1).tolist():
        k = first
        while k < path.size and path[k] > scale_up_limit(int(path[k - 1]), syncs):
            path[k] = scale_up_limit(int(path[k - 1]), syncs)
            k += 1
    return path
