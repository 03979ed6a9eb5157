"""The HPA controller walked step by step under an HPA's own ``behavior``.

The reference implementation of the model of ``controller.py``: one recommendation per step of
the history, then the rate policies applied at each controller sync of the step (``syncs_per_step``,
15 s apart), with the scale events of each direction remembered for the policies' periods.
Follows ``normalizeDesiredReplicasWithBehaviors`` in ``horizontal.go`` (kubernetes/kubernetes;
``hpa-controller.md`` §2):

* tolerance: a metric proposes the current replicas while its ratio is within
  ``[1 − scaleDown.tolerance, 1 + scaleUp.tolerance]``;
* stabilisation: the recommendation is the current replicas brought within the smallest
  recommendation of the last ``scaleUp.stabilizationWindowSeconds`` and the largest of the
  last ``scaleDown.stabilizationWindowSeconds``;
* rate: per direction, each policy's limit from the replicas at the start of its period
  (``Pods``: ± value; ``Percent``: up ``ceil(start × (1 + value/100))``, down
  ``int(start × (1 − value/100))``), the largest change of them (``selectPolicy: Max``), the
  smallest (``Min``) or none (``Disabled``);
* ``[minReplicas, maxReplicas]`` clamp in the direction of the change.

With ``DEFAULT_BEHAVIOR`` this is the default model ``replay_fast_reach`` vectorises;
``fast_expresses`` tells the behaviours the fast model replays as well (the others are always
walked here, whatever ``replay.hpa_model`` says).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from bot.model import DEFAULT_BEHAVIOR, HpaBehavior, ScalingRules
from bot.recommend.replay.controller import (
    SYNC_PERIOD_S,
    Floor,
    Metric,
    Model,
    WalkArea,
    _usable,
    _whole,
    floor_parts,
    replay_fast_reach,
    syncs_per_step,
    window_steps,
)

Event = tuple[float, float]
"""A scale event: when (s) and by how many replicas (positive)."""


def fast_expresses(behavior: HpaBehavior) -> bool:
    """Whether ``replay_fast_reach`` replays ``behavior`` as this walk does: the default
    policies and selection in both directions and no scale-up stabilisation; the scale-down
    window and the tolerances may be any (the fast model takes them as parameters)."""
    up, down = behavior.scale_up, behavior.scale_down
    default_up, default_down = DEFAULT_BEHAVIOR.scale_up, DEFAULT_BEHAVIOR.scale_down
    return up == replace(default_up, tolerance=up.tolerance) and down == replace(
        default_down, stabilization_s=down.stabilization_s, tolerance=down.tolerance
    )


def _changed(events: deque[Event], now: float, period_s: float) -> float:
    """Replicas added (or removed) by the events newer than ``now − period_s``."""
    return sum(change for at, change in events if at > now - period_s)


def up_limit(current: float, now: float, events: deque[Event], rules: ScalingRules) -> float:
    """The most replicas ``rules`` allow at ``now`` (``calculateScaleUpLimitWithScalingRules``),
    never below ``current``."""
    if rules.select == "Disabled" or not rules.policies:
        return current
    limits = []
    for p in rules.policies:
        start = current - _changed(events, now, p.period_s)
        if p.type == "Pods":
            limits.append(start + p.value)
        else:
            limits.append(float(math.ceil(start * (1.0 + p.value / 100.0))))
    limit = min(limits) if rules.select == "Min" else max(limits)
    return max(limit, current)


def down_limit(current: float, now: float, events: deque[Event], rules: ScalingRules) -> float:
    """The fewest replicas ``rules`` allow at ``now`` (``calculateScaleDownLimitWithBehaviors``),
    never above ``current``."""
    if rules.select == "Disabled" or not rules.policies:
        return current
    limits = []
    for p in rules.policies:
        start = current + _changed(events, now, p.period_s)
        if p.type == "Pods":
            limits.append(start - p.value)
        else:
            limits.append(float(int(start * (1.0 - p.value / 100.0))))
    limit = max(limits) if rules.select == "Min" else min(limits)
    return min(limit, current)


def _forget(events: deque[Event], now: float, rules: ScalingRules) -> None:
    """Drop the events no policy of ``rules`` looks back to any more."""
    longest = max((p.period_s for p in rules.policies), default=0)
    while events and events[0][0] <= now - longest:
        events.popleft()


def replay_exact_reach(
    metrics: Sequence[Metric],
    *,
    min_replicas: Floor,
    max_replicas: int,
    initial: int,
    step_s: float,
    behavior: HpaBehavior = DEFAULT_BEHAVIOR,
) -> tuple[np.ndarray, float]:
    """Replicas per step, the controller walked step by step (module doc; ``int64`` array),
    and its reach: the largest value the ``max_replicas`` clamp met (the start before the
    clamp, and every rise before it), so every maxReplicas no lower than the reach gives the
    same path. ``min_replicas``: one floor or one per step (``controller.Floor``); below a
    raised floor the replicas go straight to it."""
    usable = _usable(metrics)
    n = len(metrics[0].usage) if metrics else 0
    min_replicas, floors = floor_parts(min_replicas, n)
    floor_at = floors.tolist() if floors is not None else None
    start = max(initial, min_replicas)
    reach = float(start)
    replicas = float(min(start, max_replicas))
    out = np.full(n, int(replicas), dtype=np.int64)
    if not usable or n == 0:
        return out, reach
    columns = [(m.usage.tolist(), m.request, float(m.target_percent)) for m in usable]
    syncs = syncs_per_step(step_s)
    up, down = behavior.scale_up, behavior.scale_down
    up_width = window_steps(step_s, up.stabilization_s)
    down_width = window_steps(step_s, down.stabilization_s)
    up_recent: deque[float] = deque([replicas], maxlen=up_width)
    down_recent: deque[float] = deque([replicas], maxlen=down_width)
    low, high = 1.0 - down.tolerance, 1.0 + up.tolerance
    ups: deque[Event] = deque()
    downs: deque[Event] = deque()
    path = [replicas] * n  # Python floats: far cheaper to write one by one than numpy's
    for k in range(1, n):
        if floor_at is not None:
            min_replicas = int(floor_at[k])
            reach = max(reach, float(min_replicas))
            if replicas < min_replicas:  # straight to a raised floor
                replicas = float(min(min_replicas, max_replicas))
                path[k] = replicas
                continue
        desired = -1.0
        for usage, request, target in columns if replicas > 0 else ():
            value = usage[k]
            if math.isnan(value):  # no sample: the metric proposes nothing
                continue
            ratio = _whole(value * 100.0 / (replicas * request), math.floor) / target
            proposal = replicas if low <= ratio <= high else _whole(ratio * replicas, math.ceil)
            desired = max(desired, proposal)
        if desired < 0:  # no metric had a sample: nothing to act on
            desired = replicas
        if up_width > 1:
            up_recent.append(desired)
        down_recent.append(desired)
        # the replicas brought within [smallest of the up window, largest of the down window]
        # (``desired`` lies within both): up to the floor when rising, down to the ceiling
        if desired >= replicas:
            stabilised = desired if up_width == 1 else min(up_recent)
        else:
            stabilised = max(down_recent)
        if (stabilised <= replicas) if desired >= replicas else (stabilised >= replicas):
            path[k] = replicas
            continue
        rising = stabilised > replicas
        if not rising and replicas <= min_replicas:  # held at the floor
            path[k] = replicas
            continue
        for sync in range(syncs):
            now = k * step_s + sync * SYNC_PERIOD_S
            if stabilised > replicas:
                _forget(ups, now, up)
                wanted = min(stabilised, up_limit(replicas, now, ups, up))
                reach = max(reach, wanted)
                new = min(wanted, float(max_replicas))
            elif stabilised < replicas:
                _forget(downs, now, down)
                new = max(stabilised, down_limit(replicas, now, downs, down), float(min_replicas))
            else:
                break
            if new > replicas:
                ups.append((now, new - replicas))
            elif new < replicas:
                downs.append((now, replicas - new))
            elif (new >= max_replicas if rising else new <= min_replicas) or (
                (up if rising else down).select == "Disabled"
            ):
                break  # held by a bound or a disabled direction: no later sync moves it
            replicas = new  # unchanged while a policy holds it: a later sync may allow more
        path[k] = replicas
    return np.array(path).astype(np.int64), reach


def replay_reach(
    metrics: Sequence[Metric],
    *,
    min_replicas: Floor,
    max_replicas: int,
    initial: int,
    step_s: float,
    model: Model = "fast",
    behavior: HpaBehavior = DEFAULT_BEHAVIOR,
    area: WalkArea | None = None,
) -> tuple[np.ndarray, float]:
    """Replicas per step and the reach under one HPA configuration: ``replay_fast_reach`` when
    ``model`` is ``fast`` and it expresses ``behavior`` (``fast_expresses``), else this
    module's walk."""
    low, high = min_replicas, max_replicas
    if model == "fast" and fast_expresses(behavior):
        return replay_fast_reach(
            metrics,
            min_replicas=low,
            max_replicas=high,
            initial=initial,
            step_s=step_s,
            behavior=behavior,
            area=area,
        )
    return replay_exact_reach(
        metrics,
        min_replicas=low,
        max_replicas=high,
        initial=initial,
        step_s=step_s,
        behavior=behavior,
    )


def replay_replicas(
    metrics: Sequence[Metric],
    *,
    min_replicas: Floor,
    max_replicas: int,
    initial: int,
    step_s: float,
    model: Model = "fast",
    behavior: HpaBehavior = DEFAULT_BEHAVIOR,
) -> np.ndarray:
    """Replicas per step under one HPA configuration (``replay_reach`` without the reach).
    ``int64`` array."""
    path, _ = replay_reach(
        metrics,
        min_replicas=min_replicas,
        max_replicas=max_replicas,
        initial=initial,
        step_s=step_s,
        model=model,
        behavior=behavior,
    )
    return path
