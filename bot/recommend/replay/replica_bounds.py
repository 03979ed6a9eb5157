"""minReplicas and maxReplicas chosen by replay (``replicas.min_replicas`` / ``max_replicas``:
``replay``): the replayed peak × ``max_replicas_headroom`` and the lowest floor with no more
capacity shortfall than the current one (``replay.bounds.choose``), said in words.
"""

from __future__ import annotations

import math
from dataclasses import replace

from bot.config.recommend import RecommendSettings
from bot.model import Explained, HpaRecommendation, Recommendation
from bot.recommend.inputs import WorkloadInput
from bot.recommend.replay.bounds import choose as choose_bounds
from bot.recommend.replay.compare import proposed_values
from bot.recommend.replay.context import ReplayContext
from bot.recommend.rules import Rule
from bot.recommend.tortoise.hpa import HpaPart


def replays_bounds(inp: WorkloadInput, hpa_part: HpaPart, settings: RecommendSettings) -> bool:
    """Whether minReplicas/maxReplicas come from the replay: a replica rule says so, the HPA
    is not gathering data, and no emergency (or its way back) is in progress."""
    rules = settings.replicas
    return (
        "replay" in (rules.min_replicas, rules.max_replicas)
        and hpa_part.gathering is None
        and not hpa_part.frozen
        and not inp.emergency.requested
    )


def replayed_bounds(
    inp: WorkloadInput, draft: Recommendation, settings: RecommendSettings, context: ReplayContext
) -> Recommendation:
    """minReplicas and maxReplicas of ``draft`` chosen by replay (``replay.bounds``), for the
    rules set to ``replay``; the slot values stay in ``inputs.slot_min`` / ``slot_max``."""
    assert inp.hpa is not None and draft.hpa is not None
    admin, rules = settings.admin, settings.replicas
    cur_min = inp.hpa.min_replicas if inp.hpa.min_replicas is not None else 1
    cur_max = inp.hpa.max_replicas
    ceiling = admin.maximum_max_replicas
    if settings.max_replicas is not None:
        ceiling = min(ceiling, settings.max_replicas)
    proposal = proposed_values(context.now, draft)
    bounds = choose_bounds(
        context.series,
        proposal,
        current_min=cur_min,
        current_max=cur_max,
        minimum_min=admin.minimum_min_replicas,
        ceiling=ceiling,
        headroom=rules.max_replicas_headroom,
        keep_fraction=rules.max_replicas_keep_fraction,
        options=context.options,
        cut_fraction=rules.max_replicas_cut_fraction,
    )
    if bounds is None:
        return draft
    hpa = draft.hpa
    low, high = hpa.min_replicas, hpa.max_replicas
    if rules.max_replicas == "replay":
        hours = ", ".join(bounds.peak_hours)
        at = f" ({hours}, {bounds.time_zone})" if hours else ""
        if bounds.max_kept:
            reason = (
                f"kept: the replayed peak is {bounds.peak} pods{at}; × "
                f"{rules.max_replicas_headroom:g} = {math.ceil(bounds.peak * rules.max_replicas_headroom)}"
                f" is within {rules.max_replicas_keep_fraction:.0%} of {cur_max}"
            )
        else:
            reason = (
                f"replayed peak {bounds.peak} pods{at} × {rules.max_replicas_headroom:g}, "
                "rounded up"
            )
            if bounds.wanted_max == ceiling:
                reason += f", capped at {ceiling}"
        inputs = {**high.inputs, "peak": bounds.peak, "hours": hours or None}
        rule = Rule.TORTOISE_REPLICAS_MAX_BY_REPLAY
        if bounds.max_stepped:
            fraction = rules.max_replicas_cut_fraction
            rule = Rule.REPLAY_MAX_REPLICAS_STEP
            reason = (
                f"step toward {bounds.wanted_max} = {reason}: {cur_max} → {bounds.max_replicas} "
                f"= ceil({cur_max} × {1 - fraction:g}), at most {fraction:.0%} less a pull "
                "request"
            )
            inputs |= {"wanted": bounds.wanted_max, "cut_fraction": fraction}
        high = Explained(cur_max, bounds.max_replicas, rule, reason, inputs)
    if rules.min_replicas == "replay":
        floor_hours = ", ".join(bounds.floor_hours)
        shortfall = (
            f"{bounds.shortfall_minutes:g} min of replayed capacity shortfall "
            f"(the current floor {cur_min}: {bounds.baseline_minutes:g} min)"
        )
        if bounds.at_minimum:
            reason = (
                f"the lowest floor allowed, min(current {cur_min}, minimum_min_replicas "
                f"{admin.minimum_min_replicas}) = {bounds.lowest} (a floor, not usage): {shortfall}"
            )
        else:
            reason = f"the lowest floor with no more shortfall than the current one: {shortfall}"
            if floor_hours:
                reason += f"; one pod less adds shortfall on {floor_hours} ({bounds.time_zone})"
        inputs = {
            **low.inputs,
            "shortfall_minutes": bounds.shortfall_minutes,
            "baseline_minutes": bounds.baseline_minutes,
            "hours": floor_hours or None,
        }
        if bounds.at_minimum:
            inputs["floor"] = bounds.lowest
        low = Explained(
            cur_min, bounds.min_replicas, Rule.TORTOISE_REPLICAS_MIN_BY_REPLAY, reason, inputs
        )
    if high.proposed is not None and low.proposed is not None and high.proposed < low.proposed:
        high = replace(high, proposed=low.proposed)
    return replace(draft, hpa=HpaRecommendation(low, high, hpa.targets, hpa.slots))
