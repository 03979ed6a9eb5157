"""HPA targets moved in bounded steps toward the replayed target (bot rule
``replay.target_step``, ``replicas.target_step_points``).

The replay finds the target ``X`` in one search (``replay.targets``); writing it in one pull
request moves scaling by up to 25 points at once (60 → 90 %, where with the HPA's 10 %
tolerance the pods reach their request before it scales). Instead a target moves at most
``p = replicas.target_step_points`` points per pull request, up or down:

    next = start + sign(X − start) × min(p, |X − start|),  steps = ceil(|X − start| / p)

and never to a value whose replay shows more capacity shortfall than today's: the stepped
value is replayed with the proposal's other values, and while its shortfall exceeds
``max(today's, the proposal's at the current target)`` (a shortfall the other values bring is
not the target's) it steps back toward the current target one point at a time, at worst to
the current target. The next run starts from the merged value and continues. ``p = 0``: ``X``
in one step, unchecked (the one-step rule).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class TargetStep:
    """One pull request's move of a target from ``start`` toward ``wanted`` (percent).

    ``value``: the target to propose; ``steps``: how many steps of ``points`` reach ``wanted``
    from ``start`` (this one is the first); ``stepped``: the step before any hold; where it
    was held lower, ``held_minutes`` is the stepped value's replayed shortfall and
    ``limit_minutes`` the most allowed (minutes).
    """

    start: int
    wanted: int
    points: int
    value: int
    steps: int
    stepped: int
    held_minutes: float | None = None
    limit_minutes: float | None = None

    @property
    def held(self) -> bool:
        """Whether the step was held lower than ``stepped`` for capacity shortfall."""
        return self.held_minutes is not None

    def inputs(self) -> dict[str, int | float | None]:
        """The numbers the reason names, for ``Explained.inputs`` (the step count is
        ``ceil(|replayed_target − current| / step)``)."""
        out: dict[str, int | float | None] = {"replayed_target": self.wanted, "step": self.points}
        if self.held:
            out |= {
                "step_shortfall_minutes": self.held_minutes,
                "allowed_minutes": self.limit_minutes,
            }
        return out

    def reason(self) -> str:
        """Words for the step, the replayed target ``wanted`` named (its rule:
        ``tortoise.target.by_replay``)."""
        if self.held:
            where = "kept" if self.value == self.start else f"held at {self.value}%"
            return (
                f"{where}: {self.stepped}% shows {self.held_minutes:g} min of replayed "
                f"shortfall, over the {self.limit_minutes:g} min allowed; toward the replay's "
                f"{self.wanted}%"
            )
        return (
            f"step 1 of {self.steps} toward the replay's {self.wanted}%: {self.start} → "
            f"{self.value}%, at most {self.points} points a pull request; the next run continues"
        )


def next_step(start: int, wanted: int, points: int) -> tuple[int, int]:
    """``(next value, steps)``: ``start`` moved at most ``points`` toward ``wanted`` and the
    number of such steps to reach it, ``ceil(|wanted − start| / points)``; ``points`` 0:
    ``(wanted, 1)``. ``next_step(60, 90, 10) == (70, 3)``, ``next_step(85, 90, 10) == (90, 1)``."""
    gap = wanted - start
    if points <= 0 or gap == 0:
        return wanted, 1 if gap else 0
    move = min(points, abs(gap))
    return start + (move if gap > 0 else -move), math.ceil(abs(gap) / points)


def step_target(
    start: int,
    wanted: int,
    points: int,
    *,
    shortfall: Callable[[int], float],
    today_minutes: float,
    min_points: int = 0,
) -> TargetStep:
    """The move of one target this pull request (module doc). ``shortfall(percent)``: the
    replayed capacity shortfall (minutes) with the target at ``percent`` and the other values
    as proposed; ``today_minutes``: the current values' shortfall; a step is at least
    ``min_points`` (``noise.target_min_points``), and a value held back to less than that
    from ``start`` stays at ``start``."""
    if points > 0:
        points = max(points, min_points)
    stepped, steps = next_step(start, wanted, points)
    step = TargetStep(start, wanted, points, stepped, steps, stepped)
    if points <= 0 or stepped == start:
        return step
    minutes = shortfall(stepped)
    if minutes <= today_minutes:
        return step
    limit = max(today_minutes, shortfall(start))
    if minutes <= limit:
        return step
    direction = 1 if stepped > start else -1
    value = stepped - direction
    while value != start and shortfall(value) > limit:
        value -= direction
    if abs(value - start) < min_points:
        value = start
    return TargetStep(start, wanted, points, value, steps, stepped, minutes, limit)
