"""The one entry point: ``recommend(inp, settings, now_s=...) -> Recommendation``.

Order, per workload (``docs/recommendations.md`` has the formulas):

1. skip a workload a live Tortoise manages; drop excluded periods and samples after ``now``;
2. per container: VPA histograms replayed on a time grid -> VPA estimate (target, bounds,
   uncapped target, confidence) and Tortoise's sticky maximum of the target (``rec``);
   no CPU or memory sample for a container -> ``gathering-data``, nothing proposed;
3. HPA: replica slots -> minReplicas/maxReplicas (maximum over the slots), emergency, and the
   per-container targets with the +5 / 24 h limits; metrics added and removed as Tortoise
   syncs them with the policies; missing slots hold the HPA (gathering);
4. requests per container resource: ``off`` keeps, ``vertical`` follows the VPA (Tortoise's
   buffer and hysteresis, or HVPA blending), ``horizontal`` is right-sized;
5. noise control (memory floor at the peak, OOM increase, rounding, minChange), then limits;
6. status: ``changes`` exactly when ``changes.field_changes`` is non-empty.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from bot.config.recommend import RecommendSettings
from bot.model import (
    RESOURCES,
    ContainerRecommendation,
    Explained,
    HpaRecommendation,
    HpaTarget,
    HpaTargetRecommendation,
    Note,
    Recommendation,
    Resource,
    ResourceRecommendation,
    Status,
)
from bot.recommend.changes import field_changes
from bot.recommend.estimate import (
    ContainerEstimate,
    TooLittleData,
    estimate_container,
)
from bot.recommend.folding import limit, noise_control, request_move
from bot.recommend.inputs import WorkloadInput
from bot.recommend.replay.bounds import choose as choose_bounds
from bot.recommend.replay.compare import proposed_values
from bot.recommend.replay.figures import Values, hpa_metrics, over_request_share, replica_path
from bot.recommend.replay.gate import ReplayContext, gate
from bot.recommend.replay.series import ReplaySeries
from bot.recommend.tortoise.hpa import HpaPart, recommend_hpa
from bot.recommend.tortoise.hpa_targets import NOT_EXPRESSIBLE, POD_LEVEL
from bot.recommend.tortoise.replicas import hour_of_week
from bot.recommend.vpa.aggregate import ReplayGrid
from bot.recommend.window import Window


def _first_cpu_time(inp: WorkloadInput, window: Window) -> float | None:
    firsts = []
    for container in inp.containers:
        ch = inp.history.containers.get(container.name)
        if ch is not None and ch.cpu_t.size:
            if window.all_kept(ch.cpu_t):
                firsts.append(float(ch.cpu_t.min()))
                continue
            t = ch.cpu_t[window.keep(ch.cpu_t)]
            if t.size:
                firsts.append(float(t.min()))
    return min(firsts) if firsts else None


def input_problems(inp: WorkloadInput) -> list[str]:
    """What makes ``inp`` unusable (mismatched series, duplicate containers), or nothing."""
    problems = []
    names = [c.name for c in inp.containers]
    if len(set(names)) != len(names):
        problems.append("duplicate container names")
    hist = inp.history
    if hist.replicas_t.shape != hist.replicas.shape:
        problems.append("replicas_t and replicas differ in length")
    for name, ch in hist.containers.items():
        for family, arrays in (
            ("cpu", (ch.cpu_t, ch.cpu_pod, ch.cpu_cores)),
            ("memory", (ch.mem_t, ch.mem_pod, ch.mem_bytes)),
            ("oom", (ch.oom_t, ch.oom_pod, ch.oom_request_bytes)),
        ):
            if len({a.shape for a in arrays}) != 1 or arrays[0].ndim != 1:
                problems.append(f"container {name}: the {family} series differ in length")
    return problems


def _gathering(inp: WorkloadInput, reasons: list[str]) -> Recommendation:
    containers = []
    for container in inp.containers:
        per = {}
        for resource in RESOURCES:
            req, lim = container.requests.get(resource), container.limits.get(resource)
            per[resource] = ResourceRecommendation(
                resource,
                container.policy(resource),
                Explained(req, None, "gathering-data", "too little history"),
                Explained(lim, None, "gathering-data", "too little history"),
            )
        containers.append(ContainerRecommendation(container.name, per["cpu"], per["memory"]))
    return Recommendation(inp.ref, "gathering-data", tuple(reasons), tuple(containers))


def recommend(inp: WorkloadInput, settings: RecommendSettings, *, now_s: float) -> Recommendation:
    """What the bot proposes for one workload at ``now_s`` (unix s); see the module doc."""
    if inp.managed_by_tortoise:
        return Recommendation(
            inp.ref,
            "skipped",
            ("a live Tortoise (mode not Off) manages this workload: the two would fight",),
        )
    if not inp.containers:
        return Recommendation(inp.ref, "error", ("no containers: nothing to recommend",))
    problems = input_problems(inp)
    if problems:
        return Recommendation(inp.ref, "error", tuple(problems))
    window = Window(now_s, inp.excluded_intervals_s)
    first = _first_cpu_time(inp, window)
    if first is None:
        return _gathering(inp, ["no CPU samples in the window"])
    grid = ReplayGrid.covering(first, now_s, settings.vpa.sticky_step_s)
    n_active = sum(
        1 for c in inp.containers if any(c.policy(r) != "off" for r in RESOURCES)
    ) or len(inp.containers)
    estimates: dict[str, ContainerEstimate] = {}
    missing = []
    for container in inp.containers:
        ch = inp.history.containers.get(container.name)
        if ch is None:
            missing.append(f"no history for container {container.name}")
            continue
        result = estimate_container(ch, container, grid, settings, window, n_containers=n_active)
        if isinstance(result, TooLittleData):
            missing.append(result.reason)
        else:
            estimates[container.name] = result
    if missing:
        return _gathering(inp, missing)

    context = ReplayContext.build(
        inp,
        settings,
        now_s=now_s,
        hours=lambda times: hour_of_week(times, settings.admin),
        time_zone=settings.admin.time_zone,
    )
    hpa_part = recommend_hpa(inp, settings, estimates, now_s)
    containers = []
    for container in inp.containers:
        per: dict[Resource, ResourceRecommendation] = {}
        for resource in RESOURCES:
            est = estimates[container.name][resource]
            request = noise_control(
                request_move(container, resource, est, hpa_part, inp=inp, settings=settings),
                resource,
                est,
                container,
                settings,
                at_risk=_at_risk(context, container.name, resource, settings),
            )
            per[resource] = ResourceRecommendation(
                resource,
                container.policy(resource),
                request,
                limit(
                    container,
                    resource,
                    request,
                    settings,
                    peak=est.usage.max if est.usage else None,
                    oom_bump=est.oom_floor,
                    leak=est.leak,
                ),
                est.usage,
                est.vpa,
            )
        containers.append(ContainerRecommendation(container.name, per["cpu"], per["memory"]))

    notes = tuple(inp.history.quality) + ((hpa_part.note,) if hpa_part.note else ())
    if (
        inp.hpa is not None
        and not inp.container_resource_metrics
        and any(t.container is None for t in inp.hpa.targets)
    ):
        notes += (Note("container-resource-unsupported", NOT_EXPRESSIBLE),)
    draft = Recommendation(
        inp.ref,
        "no-change",
        (),
        tuple(containers),
        hpa_part.recommendation if inp.hpa else None,
        notes,
    )
    if context is not None and inp.hpa is not None and _replays_bounds(inp, hpa_part, settings):
        draft = _replayed_targets(inp, draft, settings, context, now_s=now_s)
        draft = _replayed_bounds(inp, draft, settings, context)
    if context is not None and field_changes(draft):
        draft = _gated(inp, draft, settings, context)
    changes = field_changes(draft)
    reasons = [f"{c.field}{'/' + c.container if c.container else ''}: {c.reason}" for c in changes]
    status: Status
    if changes:
        status = "changes"
    elif hpa_part.gathering:
        status, reasons = "gathering-data", [hpa_part.gathering]
    else:
        status = "no-change"
    return Recommendation(
        inp.ref,
        status,
        tuple(reasons),
        draft.containers,
        draft.hpa,
        draft.notes,
        draft.replay if changes else None,
    )


def _at_risk(
    context: ReplayContext | None, container: str, resource: Resource, settings: RecommendSettings
) -> str | None:
    """Why the current request of ``container`` is a measured risk, or None: usage above it
    for more than ``noise.risk_minutes`` container-minutes of the window (CPU; memory without
    a limit), or an OOM kill (``noise_control`` then lets any increase through)."""
    if context is None:
        return None
    limit_minutes = settings.noise.risk_minutes
    if resource == "cpu":
        cpu = context.before.container_cpu(container)
        if cpu is not None and cpu.over_request_minutes > limit_minutes:
            return (
                f"usage above the current request for {cpu.over_request_minutes:.0f} "
                f"container-minutes of the window (more than {limit_minutes:g}): minChange "
                "does not hold an increase"
            )
        return None
    mem = context.before.container_memory(container)
    if mem is None:
        return None
    if mem.oom_kills:
        return f"{mem.oom_kills} OOM kill(s) at the current limit: minChange does not hold it"
    if mem.over_request_minutes is not None and mem.over_request_minutes > limit_minutes:
        return (
            f"working set above the current request for {mem.over_request_minutes:.0f} "
            "minutes (eviction risk): minChange does not hold an increase"
        )
    return None


REPLAYED_TARGET_RULES = frozenset(
    {
        "tortoise.target.headroom",
        "tortoise.target.fixed_point",
        "tortoise.target.keep",
        "tortoise.target.max",
        "tortoise.target.min",
        "tortoise.target.max_increase",
        "noise.target_min_points",
    }
)
"""Rules of a target Tortoise's formula computed: the replay may choose it instead."""


def _replayed_targets(
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
    above their requests in at most ``replay.max_extra_over_request`` of their minutes, the
    other values as proposed. Tortoise's formula (``100 − (usage − current)``, +5 points a
    day) moves toward that point one proposal at a time and overshoots when the metrics
    interact; the replay finds it in one, and the same history finds it again. A move below
    ``noise.target_min_points`` is not proposed; one change per
    ``admin.hpa_target_utilization_update_interval_s`` as upstream. A raised target that
    changes no replica in the replay is not proposed (``replay.target_no_effect``)."""
    if draft.hpa is None:
        return draft
    rules, admin = settings.replicas, settings.admin
    proposal = proposed_values(context.now, draft)
    plain = replace(context.options, slots=None)
    quick = replace(plain, model="quick")
    drives = _driving_metrics(context.series, proposal)
    lo = admin.minimum_target_resource_utilization
    hi = admin.maximum_target_resource_utilization
    allowance = settings.replay.max_extra_over_request
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

            def over(percent: int, t: HpaTargetRecommendation = t) -> float:
                trial = _with_target(proposal, t.container, t.resource, percent)
                name = t.container if t.container != POD_LEVEL else None
                return over_request_share(context.series, trial, name, quick)

            low, high = lo, hi
            if over(low) > allowance:
                high = low
            while low < high:
                mid = (low + high + 1) // 2
                if over(mid) <= allowance:
                    low = mid
                else:
                    high = mid - 1
            chosen = low  # on the quick model; the gate replays the proposal in full
            key = (t.container, t.resource)
            last = inp.target_changed_s.get(key)
            interval = admin.hpa_target_utilization_update_interval_s
            inputs = {**value.inputs, "replayed_target": chosen}
            if chosen != start and abs(chosen - start) < settings.noise.target_min_points:
                value = Explained(
                    start,
                    start,
                    "noise.target_min_points",
                    f"the replay puts it at {chosen}%, a move below "
                    f"{settings.noise.target_min_points} points: kept",
                    inputs,
                )
            elif chosen != start and last is not None and now_s - last < interval:
                value = Explained(
                    start,
                    start,
                    "tortoise.target.interval",
                    f"the replay puts it at {chosen}%; changed {(now_s - last) / 3600:.1f} h "
                    f"ago, at most one change per {interval / 3600:g} h",
                    inputs,
                )
            else:
                prefix = value.reason.split(";")[0] + "; " if value.inputs.get("replaces") else ""
                suffix = f"; {NOT_EXPRESSIBLE}" if NOT_EXPRESSIBLE in value.reason else ""
                value = Explained(
                    start,
                    chosen,
                    "tortoise.target.by_replay",
                    f"{prefix}the highest target at which the replayed pods run above their "
                    f"request at most {allowance:.0%} of the time (range {lo}–{hi}%){suffix}",
                    inputs,
                )
        if (
            rules.skip_targets_without_effect
            and (t.container, t.resource) not in drives
            and value.proposed is not None
            and value.current is not None
            and value.proposed > value.current
            and value.inputs.get("metric") != "Resource"
        ):
            alone = _with_target(proposal, t.container, t.resource, int(value.proposed))
            same = _with_target(proposal, t.container, t.resource, int(value.current))
            if np.array_equal(
                replica_path(context.series, alone, plain).replicas,
                replica_path(context.series, same, plain).replicas,
            ):
                value = Explained(
                    value.current,
                    value.current,
                    "replay.target_no_effect",
                    f"wants {value.proposed}%; this metric does not drive the HPA in the replay "
                    "(the same replicas at either target): kept",
                    {**value.inputs, "wanted": value.proposed},
                )
        out.append(HpaTargetRecommendation(t.container, t.resource, value))
    return replace(draft, hpa=replace(draft.hpa, targets=tuple(out)))


def _driving_metrics(series: ReplaySeries, values: Values) -> set[tuple[str, str]]:
    """The HPA metrics ``(container or *, resource)`` whose need at their target is the
    largest at some step: the others never decide the replica count (their targets can be
    raised without effect, which ``_replayed_targets`` then confirms by replay)."""
    metrics = hpa_metrics(series, values)
    if len(metrics) < 2:
        return {(t.container or POD_LEVEL, t.resource) for _, t in metrics}
    with np.errstate(invalid="ignore", divide="ignore"):
        needs = np.vstack([m.usage * 100.0 / (m.request * m.target_percent) for m, _ in metrics])
    top = np.argmax(np.where(np.isfinite(needs), needs, -np.inf), axis=0)
    seen = set(np.flatnonzero(np.bincount(top, minlength=len(metrics))).tolist())
    return {(t.container or POD_LEVEL, t.resource) for i, (_, t) in enumerate(metrics) if i in seen}


def _with_target(values: Values, container: str, resource: Resource, percent: int) -> Values:
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


def _replays_bounds(inp: WorkloadInput, hpa_part: HpaPart, settings: RecommendSettings) -> bool:
    """Whether minReplicas/maxReplicas come from the replay: a replica rule says so, the HPA
    is not gathering data, and no emergency (or its way back) is in progress."""
    rules = settings.replicas
    return (
        "replay" in (rules.min_replicas, rules.max_replicas)
        and hpa_part.gathering is None
        and not hpa_part.frozen
        and not inp.emergency.requested
    )


def _replayed_bounds(
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
            if bounds.max_replicas == ceiling:
                reason += f", capped at {ceiling}"
        high = Explained(
            cur_max,
            bounds.max_replicas,
            "tortoise.replicas.max_by_replay",
            reason,
            {**high.inputs, "peak": bounds.peak, "hours": hours or None},
        )
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
            cur_min, bounds.min_replicas, "tortoise.replicas.min_by_replay", reason, inputs
        )
    if high.proposed is not None and low.proposed is not None and high.proposed < low.proposed:
        high = replace(high, proposed=low.proposed)
    return replace(draft, hpa=HpaRecommendation(low, high, hpa.targets, hpa.slots))


def _gated(
    inp: WorkloadInput, draft: Recommendation, settings: RecommendSettings, context: ReplayContext
) -> Recommendation:
    """``draft`` replayed on the history and, with ``replay.gate: on``, backed off where the
    replay shows it worse than the current values (``bot.recommend.replay.gate``)."""
    by_name = {c.name: c for c in inp.containers}

    def limit_of(container: str, resource: Resource, request: Explained) -> Explained:
        return limit(by_name[container], resource, request, settings)

    return gate(inp, draft, settings, context=context, limit_of=limit_of)
