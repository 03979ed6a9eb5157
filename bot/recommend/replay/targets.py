"""HPA targets chosen by replay (bot rule ``tortoise.target.by_replay``, ``replicas.target:
replay``) and raised targets that change no replica left out (``replay.target_no_effect``).

The target is the highest percent in ``[minimum, maximum]_target_resource_utilization`` at which
the replayed pods run above their requests in at most ``replay.max_extra_over_request`` of their
minutes and whose capacity shortfall stays within what the gate allows (the current HPA's, or
``replay.max_extra_shortfall`` × the window where that is more): a binary search on the gate's own controller model
(``figures.over_request_share``, ``figures.replica_path``), so the gate does not hold back the
target it finds.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from bot.config.recommend import RecommendSettings
from bot.model import (
    POD_LEVEL,
    SECONDS_PER_HOUR,
    Explained,
    HpaTarget,
    HpaTargetRecommendation,
    Recommendation,
    Resource,
)
from bot.recommend.inputs import WorkloadInput
from bot.recommend.replay.compare import allowed_shortfall, proposed_values
from bot.recommend.replay.context import ReplayContext
from bot.recommend.replay.figures import over_request_share, replica_path
from bot.recommend.replay.series import ReplaySeries
from bot.recommend.replay.target_steps import step_target
from bot.recommend.replay.values import Values, hpa_metrics
from bot.recommend.rules import Rule
from bot.recommend.tortoise.hpa_targets import NOT_EXPRESSIBLE

REPLAYED_TARGET_RULES = frozenset(
    {
        Rule.TORTOISE_TARGET_HEADROOM,
        Rule.TORTOISE_TARGET_KEEP,
        Rule.TORTOISE_TARGET_MAX,
        Rule.TORTOISE_TARGET_MIN,
        Rule.TORTOISE_TARGET_MAX_INCREASE,
        Rule.NOISE_TARGET_MIN_POINTS,
    }
)
"""Rules of a target Tortoise's formula computed: the replay may choose it instead."""


def replayed_targets(
    inp: WorkloadInput,
    draft: Recommendation,
    settings: RecommendSettings,
    context: ReplayContext,
    *,
    now_s: float,
) -> Recommendation:
    """HPA targets chosen by replay (bot rule ``tortoise.target.by_replay``, with
    ``replicas.target: replay``): the highest target in [minimum, maximum target utilisation]
    at which the replayed pods of the container (all containers for a pod-level metric) run
    above their requests in at most ``replay.max_extra_over_request`` of their minutes, with no
    more capacity shortfall than the gate allows, the other values as proposed. Tortoise's
    formula (``100 − (usage − current)``, +5 points a day) moves toward that point one proposal
    at a time and overshoots when the metrics interact; the replay finds it in one, and the
    same history finds it again. The target then moves toward it at most
    ``replicas.target_step_points`` per pull request, never to a value with more replayed
    capacity shortfall than today's (``replay.target_step``, ``replay.target_steps``; each
    step checked with the targets decided before it). A move below
    ``noise.target_min_points`` is not proposed; one change per
    ``admin.hpa_target_utilization_update_interval_s`` as upstream. A raised target that
    changes no replica in the replay is not proposed (``replay.target_no_effect``)."""
    if draft.hpa is None:
        return draft
    rules, admin = settings.replicas, settings.admin
    proposal = proposed_values(context.now, draft)
    plain = replace(context.options, slots=None)
    drives = driving_metrics(context.series, proposal)
    lo = admin.minimum_target_resource_utilization
    hi = admin.maximum_target_resource_utilization
    allowance = settings.replay.max_extra_over_request
    allowed_short = allowed_shortfall(
        context.before.replicas.shortfall_minutes,
        context.series.window_s,
        settings.replay.max_extra_shortfall,
    )
    stepped = today_bounds(proposal, context.now)  # and the targets decided so far
    out = []
    for t in draft.hpa.targets:
        value = t.value
        start = value.current if value.current is not None else value.inputs.get("replaces")
        replays = (
            rules.target == "replay"
            and value.rule in REPLAYED_TARGET_RULES
            and isinstance(start, int)
            and proposal.hpa is not None
        )
        if replays:
            assert isinstance(start, int)

            def passes(percent: int, t: HpaTargetRecommendation = t) -> bool:
                trial = with_target(proposal, t.container, t.resource, percent)
                name = t.container if t.container != POD_LEVEL else None
                if over_request_share(context.series, trial, name, plain) > allowance:
                    return False
                walk = replica_path(context.series, trial, plain)  # remembered: no new replay
                return walk.shortfall_steps * context.series.step_s / 60.0 <= allowed_short

            low, high = lo, hi
            if not passes(low):
                high = low
            while low < high:
                mid = (low + high + 1) // 2
                if passes(mid):
                    low = mid
                else:
                    high = mid - 1
            chosen = low
            key = (t.container, t.resource)
            last = inp.target_changed_s.get(key)
            interval = admin.hpa_target_utilization_update_interval_s
            inputs = {**value.inputs, "replayed_target": chosen}
            if chosen != start and abs(chosen - start) < settings.noise.target_min_points:
                value = Explained(
                    start,
                    start,
                    Rule.NOISE_TARGET_MIN_POINTS,
                    f"the replay puts it at {chosen}%, a move below "
                    f"{settings.noise.target_min_points} points: kept",
                    inputs,
                )
            elif chosen != start and last is not None and now_s - last < interval:
                value = Explained(
                    start,
                    start,
                    Rule.TORTOISE_TARGET_INTERVAL,
                    f"the replay puts it at {chosen}%; changed {(now_s - last) / SECONDS_PER_HOUR:.1f} h "
                    f"ago, at most one change per {interval / SECONDS_PER_HOUR:g} h",
                    inputs,
                )
            else:
                prefix = value.reason.split(";")[0] + "; " if value.inputs.get("replaces") else ""
                suffix = f"; {NOT_EXPRESSIBLE}" if NOT_EXPRESSIBLE in value.reason else ""
                replayed = (
                    f"the highest target at which the replayed pods run above their "
                    f"request at most {allowance:.0%} of the time, with no more capacity "
                    f"shortfall than the gate allows (range {lo}–{hi}%)"
                )

                def shortfall(
                    percent: int, t: HpaTargetRecommendation = t, others: Values = stepped
                ) -> float:
                    trial = with_target(others, t.container, t.resource, percent)
                    walk = replica_path(context.series, trial, plain)
                    return walk.shortfall_steps * context.series.step_s / 60.0

                step = step_target(
                    start,
                    chosen,
                    rules.target_step_points,
                    shortfall=shortfall,
                    today_minutes=context.before.replicas.shortfall_minutes or 0.0,
                    min_points=settings.noise.target_min_points,
                )
                if step.value == chosen and not step.held:
                    value = Explained(
                        start,
                        chosen,
                        Rule.TORTOISE_TARGET_BY_REPLAY,
                        prefix + replayed + suffix,
                        inputs,
                    )
                else:
                    value = Explained(
                        start,
                        step.value,
                        Rule.REPLAY_TARGET_STEP,
                        prefix + step.reason() + suffix,
                        {**inputs, **step.inputs()},
                    )
                if value.proposed is not None and stepped.hpa is not None:
                    stepped = with_target(stepped, t.container, t.resource, int(value.proposed))
        if (
            rules.skip_targets_without_effect
            and (t.container, t.resource) not in drives
            and value.proposed is not None
            and value.current is not None
            and value.proposed > value.current
            and value.inputs.get("metric") != "Resource"
        ):
            alone = with_target(proposal, t.container, t.resource, int(value.proposed))
            same = with_target(proposal, t.container, t.resource, int(value.current))
            if np.array_equal(
                replica_path(context.series, alone, plain).replicas,
                replica_path(context.series, same, plain).replicas,
            ):
                value = Explained(
                    value.current,
                    value.current,
                    Rule.REPLAY_TARGET_NO_EFFECT,
                    f"wants {value.proposed}%; this metric does not drive the HPA in the replay "
                    "(the same replicas at either target): kept",
                    {**value.inputs, "wanted": value.proposed},
                )
        out.append(HpaTargetRecommendation(t.container, t.resource, value))
    return replace(draft, hpa=replace(draft.hpa, targets=tuple(out)))


def today_bounds(values: Values, now: Values) -> Values:
    """``values`` with today's minReplicas and maxReplicas: a target step is judged before the
    replica rules choose theirs (they keep the floor's shortfall and move the cap by the
    replayed peak), not against the slots' values of the draft."""
    if values.hpa is None or now.hpa is None:
        return values
    bounds = replace(
        values.hpa, min_replicas=now.hpa.min_replicas, max_replicas=now.hpa.max_replicas
    )
    return replace(values, hpa=bounds)


def driving_metrics(series: ReplaySeries, values: Values) -> set[tuple[str, str]]:
    """The HPA metrics ``(container or *, resource)`` whose need at their target is the
    largest at some step: the others never decide the replica count (their targets can be
    raised without effect, which ``replayed_targets`` then confirms by replay)."""
    metrics = hpa_metrics(series, values)
    if len(metrics) < 2:
        return {(t.container or POD_LEVEL, t.resource) for _, t in metrics}
    with np.errstate(invalid="ignore", divide="ignore"):
        needs = np.vstack([m.usage * 100.0 / (m.request * m.target_percent) for m, _ in metrics])
    top = np.argmax(np.where(np.isfinite(needs), needs, -np.inf), axis=0)
    seen = set(np.flatnonzero(np.bincount(top, minlength=len(metrics))).tolist())
    return {(t.container or POD_LEVEL, t.resource) for i, (_, t) in enumerate(metrics) if i in seen}


def with_target(values: Values, container: str, resource: Resource, percent: int) -> Values:
    """``values`` with one HPA target (``*``: pod-level) set to ``percent``."""
    assert values.hpa is not None
    name = None if container == POD_LEVEL else container
    targets = tuple(
        HpaTarget(t.resource, percent, t.container)
        if t.container == name and t.resource == resource
        else t
        for t in values.hpa.targets
    )
    return replace(values, hpa=replace(values.hpa, targets=targets))
