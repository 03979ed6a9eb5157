"""Emergency mode and the way back (``pkg/hpa/service.go``, ``ChangeHPAFromTortoiseRecommendation``).

In emergency, ``minReplicas = maxReplicas`` (after the caps). When emergency is lifted, each
proposal lowers minReplicas to ``trunc(min × ReplicaReductionFactor)`` (one step per upstream
15 s reconcile; the bot takes ``back_to_normal_steps_per_run`` steps per proposal) until the
recommended minimum is above the reduced value, which ends it. The phase lives in the
repository or pull request, not in memory: the caller passes it in.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from bot.model import EmergencyPhase
from bot.recommend.rules import Rule


@dataclass(frozen=True, slots=True)
class EmergencyOutcome:
    """The minReplicas to propose, the phase after this proposal, and why."""

    min_replicas: int
    phase: EmergencyPhase
    rule: Rule
    reason: str


def emergency_min_replicas(
    *,
    requested: bool,
    previous_phase: EmergencyPhase,
    current_min: int,
    recommended_min: int,
    capped_max: int,
    reduction_factor: float,
    steps: int,
) -> EmergencyOutcome | None:
    """What emergency mode does to minReplicas, or None when it is not involved."""
    if requested:
        return EmergencyOutcome(
            capped_max,
            "emergency",
            Rule.TORTOISE_EMERGENCY,
            "emergency mode: minReplicas = maxReplicas",
        )
    if previous_phase == "normal":
        return None
    reduced = current_min
    for _ in range(steps):
        reduced = math.trunc(reduced * reduction_factor)
    if recommended_min > reduced:
        return EmergencyOutcome(
            recommended_min,
            "normal",
            Rule.TORTOISE_BACK_TO_NORMAL_DONE,
            f"back to normal: trunc({current_min} × {reduction_factor:g}^{steps}) = {reduced} "
            f"is below the recommended {recommended_min}",
        )
    return EmergencyOutcome(
        reduced,
        "back-to-normal",
        Rule.TORTOISE_BACK_TO_NORMAL_STEP,
        f"leaving emergency: trunc({current_min} × {reduction_factor:g}^{steps}) = {reduced}",
    )
