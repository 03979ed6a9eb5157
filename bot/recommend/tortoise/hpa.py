"""The HPA half, replicas: minReplicas/maxReplicas from the replica slots, the emergency, and
the context Tortoise's request formulas read (``pkg/hpa/service.go``, tortoise.md C1, C2, C5-C7).

``recommend_hpa`` computes, from the replica history in the window:

- the horizontal context (scaled up to ``preferred_max_replicas``, close to it, at the minimum,
  a single horizontal pair or at the HPA minimum), each true when the replicas spend at least
  ``right_sizing.bound_time_fraction`` of the window there;
- maxReplicas: the maximum over the slots of ``ceil(replicas × max multiplier)``, capped by the
  workload's ``max_replicas`` and ``maximum_max_replicas``; minReplicas: the maximum over the
  slots of ``ceil(replicas × min multiplier)``, at most ``maximum_min_replicas``, then the
  emergency and its way back (``emergency.emergency_min_replicas``);
- the targets (``hpa_targets.recommend_targets``), held while data is gathered or in emergency.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bot.config.recommend import RecommendSettings
from bot.model import RESOURCES, Explained, HpaRecommendation, Note
from bot.recommend.estimate import Estimates
from bot.recommend.inputs import WorkloadInput
from bot.recommend.rules import Rule
from bot.recommend.tortoise.constants import CLOSE_TO_PREFERRED_FRACTION
from bot.recommend.tortoise.emergency import emergency_min_replicas
from bot.recommend.tortoise.hpa_targets import recommend_targets
from bot.recommend.tortoise.replicas import replica_slots, slot_labels
from bot.recommend.tortoise.requests import HorizontalContext
from bot.recommend.window import Window


@dataclass(frozen=True, slots=True)
class HpaPart:
    """The HPA half of one workload: its proposal and what the request formulas read of it."""

    recommendation: HpaRecommendation
    context: HorizontalContext
    gathering: str | None
    frozen: bool
    """Emergency or back-to-normal: requests and targets are frozen (upstream C7)."""
    note: Note | None = None


def _fraction(mask: np.ndarray) -> float:
    return np.count_nonzero(mask) / mask.size if mask.size else 0.0


def recommend_hpa(
    inp: WorkloadInput,
    settings: RecommendSettings,
    estimates: Estimates,
    now_s: float,
) -> HpaPart:
    """minReplicas, maxReplicas and the targets of ``inp``'s HPA at ``now_s`` (see the module
    doc), with the horizontal context even without an HPA."""
    admin = settings.admin
    hist = inp.history
    r = hist.replicas
    window = Window(now_s, inp.excluded_intervals_s)
    if window.all_kept(hist.replicas_t) and (
        r.size == 0
        or (bool(np.isfinite(np.minimum.reduce(r))) and bool(np.isfinite(np.maximum.reduce(r))))
    ):
        t = hist.replicas_t
    else:
        keep = window.keep(hist.replicas_t) & np.isfinite(r)
        t, r = hist.replicas_t[keep], r[keep]
    hpa = inp.hpa
    hpa_min = (hpa.min_replicas if hpa and hpa.min_replicas is not None else 1) if hpa else 1
    frac = settings.right_sizing.bound_time_fraction
    pairs = sum(1 for c in inp.containers for res in RESOURCES if c.policy(res) == "horizontal")
    close_at = int(admin.preferred_max_replicas * CLOSE_TO_PREFERRED_FRACTION)
    context = HorizontalContext(
        scaled_up=admin.vertical_scaling_based_on_preferred_max_replicas
        and _fraction((r >= admin.preferred_max_replicas) & (r > hpa_min)) >= frac,
        close_to_preferred=_fraction(r > close_at) >= frac,
        at_minimum=_fraction(r <= admin.minimum_min_replicas) >= frac,
        single_pair_or_at_hpa_min=pairs < 2 or _fraction(r == hpa_min) >= frac,
    )
    if hpa is None:
        empty = Explained(None, None, Rule.HPA_NONE, "no HorizontalPodAutoscaler")
        return HpaPart(HpaRecommendation(empty, empty), context, None, False)

    slots = replica_slots(t, r, admin)
    cur_min, cur_max = hpa.min_replicas, hpa.max_replicas
    gathering = None
    frozen = inp.emergency.requested or inp.emergency.previous_phase != "normal"
    note = None
    if slots.missing and not inp.emergency.requested:
        total = len(slot_labels(admin))
        gathering = (
            f"replica history covers {total - len(slots.missing)} of {total} time slots "
            f"(missing e.g. {', '.join(slots.missing[:3])})"
        )
        min_x = Explained(cur_min, cur_min, Rule.TORTOISE_GATHERING_DATA, gathering)
        max_x = Explained(cur_max, cur_max, Rule.TORTOISE_GATHERING_DATA, gathering)
    else:
        # In emergency with slots still unobserved: the observed slots, else the current max.
        slot_max = slots.max_max or cur_max
        capped_max, max_rule, max_reason = (
            slot_max,
            Rule.TORTOISE_REPLICAS_MAX,
            (
                f"max over {len(slots.values)} slots of ceil(replicas × "
                f"{admin.max_replicas_recommendation_multiplier:g})"
            ),
        )
        if settings.max_replicas is not None and capped_max > settings.max_replicas:
            capped_max, max_rule = settings.max_replicas, Rule.TORTOISE_REPLICAS_MAX_WORKLOAD_CAP
            max_reason = f"slot max {slot_max} capped by the workload's max_replicas"
        if capped_max > admin.maximum_max_replicas:
            capped_max, max_rule = admin.maximum_max_replicas, Rule.TORTOISE_REPLICAS_MAX_GLOBAL_CAP
            max_reason = f"slot max {slot_max} capped by maximum_max_replicas"
        rec_min = min(slots.max_min, admin.maximum_min_replicas)
        min_rule = (
            Rule.TORTOISE_REPLICAS_MIN
            if rec_min == slots.max_min
            else Rule.TORTOISE_REPLICAS_MIN_CAP
        )
        min_reason = (
            f"max over {len(slots.values)} slots of ceil(replicas × "
            f"{admin.min_replicas_recommendation_multiplier:g}), at most maximum_min_replicas"
        )
        proposed_min = rec_min
        outcome = emergency_min_replicas(
            requested=inp.emergency.requested,
            previous_phase=inp.emergency.previous_phase,
            current_min=cur_min if cur_min is not None else 1,
            recommended_min=rec_min,
            capped_max=capped_max,
            reduction_factor=admin.replica_reduction_factor,
            steps=settings.back_to_normal_steps_per_run,
        )
        phase = "normal"
        if outcome is not None:
            proposed_min, min_rule, min_reason, phase = (
                outcome.min_replicas,
                outcome.rule,
                outcome.reason,
                outcome.phase,
            )
        if proposed_min > capped_max:
            note = Note(
                "min-above-max",
                f"minReplicas {proposed_min} above maxReplicas {capped_max}: maxReplicas raised",
            )
            capped_max, max_rule = proposed_min, Rule.TORTOISE_REPLICAS_MAX_RAISED_TO_MIN
            max_reason = "raised to minReplicas (upstream does not check min <= max)"
        min_x = Explained(
            cur_min, proposed_min, min_rule, min_reason, {"phase": phase, "slot_min": slots.max_min}
        )
        max_x = Explained(cur_max, capped_max, max_rule, max_reason, {"slot_max": slot_max})

    at_max = r.size > 0 and float(r[-1]) >= admin.maximum_max_replicas
    hold = "emergency: targets frozen" if frozen else gathering
    targets = recommend_targets(inp, settings, estimates, now_s=now_s, hold=hold, at_max=at_max)
    rec = HpaRecommendation(min_x, max_x, targets, dict(slots.values))
    return HpaPart(rec, context, gathering, frozen, note)
