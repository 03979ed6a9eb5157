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
    Number,
    Recommendation,
    Resource,
    ResourceRecommendation,
    Status,
)
from bot.recommend import hvpa, noise, units
from bot.recommend.changes import field_changes
from bot.recommend.estimate import (
    ContainerEstimate,
    ResourceEstimate,
    TooLittleData,
    estimate_container,
)
from bot.recommend.inputs import ContainerInput, WorkloadInput
from bot.recommend.leak import Leak
from bot.recommend.replay.bounds import choose as choose_bounds
from bot.recommend.replay.compare import proposed_values
from bot.recommend.replay.figures import Values, hpa_metrics, over_request_share, replica_path
from bot.recommend.replay.gate import ReplayContext, gate
from bot.recommend.replay.series import ReplaySeries
from bot.recommend.tortoise.hpa import HpaPart, recommend_hpa
from bot.recommend.tortoise.hpa_targets import NOT_EXPRESSIBLE, POD_LEVEL, target_current
from bot.recommend.tortoise.replicas import hour_of_week
from bot.recommend.tortoise.requests import (
    from_milli,
    horizontal_request,
    justify,
    milli,
    request_bounds,
    vertical_ideal,
    vertical_request,
)
from bot.recommend.vpa.aggregate import ReplayGrid
from bot.recommend.vpa.limits import propose_limit
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


def _request(
    container: ContainerInput,
    resource: Resource,
    est: ResourceEstimate,
    hpa_part: HpaPart,
    *,
    inp: WorkloadInput,
    settings: RecommendSettings,
) -> Explained:
    """The full move for one container resource: the recommended request before noise control
    and before the step limit (``_noise`` applies both, in that order)."""
    admin = settings.admin
    current = container.requests.get(resource)
    policy = container.policy(resource)
    if policy == "off" or current is None:
        return Explained(current, current, "policy.off", "policy off or no request: untouched")
    if hpa_part.frozen:
        return Explained(
            current, current, "tortoise.emergency.frozen", "emergency: requests frozen"
        )
    if policy == "horizontal" and inp.hpa is None:
        return Explained(
            current,
            current,
            "policy.horizontal_without_hpa",
            "horizontal policy but no HPA: untouched (the bot does not create HPAs)",
        )
    req_m, rec_m = milli(float(current), resource), milli(est.rec, resource)
    inputs: dict[str, Number | str | None] = {"rec": est.rec, "vpa_target": est.vpa.target}
    bounds = {
        "min_allocated": container.min_allocated.get(resource),
        "max_allocated": container.max_allocated.get(resource),
    }
    if settings.strategy == "hvpa" and policy == "vertical":
        replicas = inp.history.replicas
        now_replicas = int(replicas[-1]) if replicas.size else (inp.replicas or 1)
        hpa = inp.hpa
        weight = hvpa.vpa_weight(
            settings.hvpa.weight_based_scaling_intervals,
            now_replicas,
            now_replicas,
            hpa_min=(hpa.min_replicas or 1) if hpa else now_replicas,
            hpa_max=hpa.max_replicas if hpa else now_replicas,
        )
        value = hvpa.weighted_request(float(current), est.vpa.target, weight, resource)
        return Explained(
            current,
            value,
            "hvpa.weighted",
            f"current + trunc((VPA target − current) × {weight}/100)",
            inputs | {"vpa_weight": weight},
        )
    if policy == "vertical":
        ns = settings.noise
        if ns.vertical_from == "vpa_target":
            rec_m = milli(est.vpa.target, resource)
        buffer = (
            admin.buffer_ratio_on_vertical_resource
            if ns.vertical_buffer or ns.vertical_hysteresis
            else 0.0
        )
        bounded_oom = resource == "memory" and est.oom_floor > 0 and ns.oom_response == "bounded"
        if bounded_oom and est.leak is not None:
            leak = est.leak
            return Explained(
                current,
                current,
                "oom.leak",
                f"memory leak: the working set grew about "
                f"{units.amount(leak.bytes_per_day, resource)} a day until each OOM kill "
                f"({leak.grew} of {leak.lives} pod lives, {leak.kills} kills); the request is "
                "kept and the limit holds a set number of days of growth (fix the leak)",
                inputs | {"leak_bytes_per_day": leak.bytes_per_day, "oom_kills": leak.kills},
            )
        burstable = _burstable(container)
        if bounded_oom and burstable:
            # The limit takes the OOM bump (``_limit``); the request follows usage.
            new, rule, reason = vertical_ideal(req_m, rec_m, buffer, resource=resource)
        elif bounded_oom:
            rec_m = milli(max(est.vpa.target, est.oom_floor), resource)
            new, rule, reason = vertical_ideal(req_m, rec_m, buffer, resource=resource)
            rule = "oom.bounded"
            reason = (
                f"OOM kill in the window: max(VPA target {units.amount(est.vpa.target, resource)}"
                f", OOM bump {units.amount(est.oom_floor, resource)}) × (1 + {buffer:g}), once"
            )
            inputs |= {"oom_bump": est.oom_floor}
        elif settings.noise.vertical_hysteresis:
            new, rule, reason = vertical_request(req_m, rec_m, buffer, resource=resource)
        else:
            new, rule, reason = vertical_ideal(req_m, rec_m, buffer, resource=resource)
        if new is None:
            return Explained(current, current, rule, reason, inputs)
        value_m, clamp_rule = justify(
            req_m, new, resource, container.name, admin=admin, step_limit=False, **bounds
        )
        if clamp_rule and value_m != new:
            rule, reason = clamp_rule, f"{reason}; clamped ({clamp_rule})"
        usage = (est.rec_unfloored or est.rec) * (1 + buffer)
        if ns.vertical_from == "vpa_target":
            usage = (est.target_unfloored or est.vpa.target) * (1 + buffer)
        if bounded_oom and not burstable:
            usage = max(usage, est.oom_floor)
        result = Explained(current, from_milli(value_m, resource), rule, reason, inputs)
        return _floors(result, est, container, resource, settings, usage=usage)
    current_target = None
    if inp.hpa is not None:
        current_target, kind = target_current(inp, container.name, resource)
        if kind == "added":
            current_target = None
    proposal = horizontal_request(
        req_m,
        rec_m,
        current_target,
        hpa_part.context,
        resource=resource,
        container=container.name,
        admin=admin,
        step_limit=False,
        **bounds,
    )
    result = Explained(
        current, from_milli(proposal.milli, resource), proposal.rule, proposal.reason, inputs
    )
    unfloored = est.rec_unfloored or est.rec
    usage = unfloored * 100 / current_target if current_target else unfloored
    return _floors(result, est, container, resource, settings, usage=usage)


def _burstable(container: ContainerInput) -> bool:
    """A memory limit above the request: the limit, not the request, absorbs the peaks."""
    request, limit = container.requests.memory_bytes, container.limits.memory_bytes
    return bool(request and limit and limit > request)


def _floors(
    x: Explained,
    est: ResourceEstimate,
    container: ContainerInput,
    resource: Resource,
    settings: RecommendSettings,
    *,
    usage: float,
) -> Explained:
    """Floors that say so (bot rule ``floor.kept``).

    A value set by a floor, the VPA per-pod minimum (``rec`` above what the unfloored targets
    give) or Tortoise's minimum request (clamp ``tortoise.request.min``), is named as a floor
    in its reason and ``inputs.floor``. With ``noise.floors_raise`` false (the default), a floor
    never raises a request above ``max(current, usage)``, ``usage`` being the same rule on the
    unfloored VPA values (cores or bytes): the current value is kept (``floor.kept``) or the
    request rises to what usage needs (``floor.usage``). Upstream (``floors_raise: true``) lets
    the floor raise it.
    """
    current, proposed = x.current, x.proposed
    if current is None or proposed is None:
        return x
    admin = settings.admin
    floor: float | None = None
    what = ""
    floored = (
        est.target_unfloored is not None and est.vpa.target > est.target_unfloored * (1 + 1e-9)
        if settings.noise.vertical_from == "vpa_target" and x.inputs.get("vpa_target") is not None
        else est.rec_unfloored is not None and est.rec > est.rec_unfloored * (1 + 1e-9)
    )
    if floored:
        floor = est.pod_minimum
        what = f"the VPA per-pod minimum ({units.amount(floor, resource)} for this container)"
    elif x.rule == "tortoise.request.min":
        floor = float(
            request_bounds(
                0, resource, container.name, min_allocated=None, max_allocated=None, admin=admin
            )[0]
            / 1000
        )
        what = f"Tortoise's minimum request ({units.amount(floor, resource)})"
    if floor is None:
        return x
    usage = max(usage, float(container.min_allocated.get(resource) or 0.0))  # the user's own
    inputs = {**x.inputs, "floor": floor, "usage": usage}
    if proposed > current and not settings.noise.floors_raise:
        if usage <= current:
            return Explained(
                current,
                current,
                "floor.kept",
                f"kept: {what} would raise it to {units.amount(proposed, resource)}, but it "
                f"is a floor, not usage (usage asks for {units.amount(usage, resource)})",
                inputs,
            )
        if usage < proposed:
            return Explained(
                current,
                usage if resource == "cpu" else math.ceil(usage),
                "floor.usage",
                f"usage asks for {units.amount(usage, resource)}; {what} would raise it to "
                f"{units.amount(proposed, resource)}, but a floor raises a request no further "
                "than usage needs",
                inputs,
            )
    return Explained(current, proposed, x.rule, f"{x.reason}; floor: {what}", inputs)


def _noise(
    raw: Explained,
    resource: Resource,
    est: ResourceEstimate,
    container: ContainerInput,
    settings: RecommendSettings,
    *,
    at_risk: str | None = None,
) -> Explained:
    """Memory floor at the peak, OOM increase, rounding to the manifest grid, minChange, then
    the step limit. Rounding and minChange judge the full move; the step limit
    (``admin.max_allowed_scaling_down_ratio`` with ``noise.step_limit``, Tortoise strategy
    only: HVPA's weight is its own damping) then bounds what one proposal asks for.
    ``at_risk``: why the current request is a measured risk (usage above it longer than
    ``noise.risk_minutes``): an increase then passes whatever minChange says."""
    ns = settings.noise
    current, proposed = raw.current, raw.proposed
    if (
        proposed is None
        or current is None
        or raw.rule in ("policy.off", "tortoise.emergency.frozen")
    ):
        return raw
    rule, reason = raw.rule, raw.reason
    inputs = dict(raw.inputs)
    cap = container.max_allocated.get(resource)
    forced = False
    if (
        resource == "memory"
        and est.usage is not None
        and ns.memory_floor_at_peak
        and proposed < est.usage.max
        and not (_burstable(container) and ns.oom_response == "bounded")
    ):
        proposed, rule = est.usage.max, "noise.memory_peak_floor"
        proposed = min(
            proposed, float(cap or math.inf), float(settings.admin.maximum_memory_request_bytes)
        )
        reason = f"raised to the observed working-set peak ({raw.reason})"
    bump_in_limit = _burstable(container) and ns.oom_response == "bounded"
    if (
        resource == "memory"
        and ns.oom_immediate_increase
        and est.oom_floor > 0
        and not bump_in_limit
    ):
        floor = est.oom_floor if not cap else min(est.oom_floor, float(cap))
        if proposed < floor and floor > current:
            proposed, rule, forced = floor, "oom.bump", True
            reason = "OOM kill in the window: max(request + 100 MiB, request × 1.2)"
        elif proposed > current:
            forced = True
    if at_risk is not None and proposed > current and not forced:
        forced = True
        reason = f"{reason}; {at_risk}"
    admin = settings.admin
    global_max = (
        admin.maximum_cpu_request_cores
        if resource == "cpu"
        else float(admin.maximum_memory_request_bytes)
    )
    ceiling = min(float(cap) if cap else math.inf, global_max)
    rounded = noise.round_up_to_step(float(proposed), resource, ns)
    if rounded > ceiling >= float(proposed):
        rounded = ceiling
    if noise.same_on_grid(float(current), rounded, resource, ns):
        return Explained(
            current,
            current,
            raw.rule if proposed == current else "noise.rounding",
            raw.reason
            if proposed == current
            else "differs from the current value only by rounding",
            inputs,
        )
    allowed, threshold = noise.passes_min_change(float(current), rounded, resource, ns)
    if not allowed and not forced:
        inputs |= {"unfiltered": rounded, "min_change": threshold, "unfiltered_rule": rule}
        return Explained(
            current,
            current,
            "noise.min_change",
            f"wants {units.describe(rounded, resource, float(current))}: a move of "
            f"{units.amount(abs(rounded - float(current)), resource)} is below minChange "
            f"{units.amount(threshold, resource)}",
            inputs,
        )
    ratio = (
        0.0
        if raw.rule == "hvpa.weighted" or not ns.step_limit
        else admin.max_allowed_scaling_down_ratio
    )
    stepped = min(noise.step_limited(float(current), rounded, resource, ratio, ns), ceiling)
    if stepped > rounded:
        inputs |= {"wanted": rounded, "wanted_rule": rule}
        rule = "tortoise.request.step_down"
        reason = (
            f"{reason}; wants {units.describe(rounded, resource, float(current))}, "
            f"step-limited to {units.describe(stepped, resource, float(current))}"
        )
        rounded = stepped
    value: Number = rounded if resource == "cpu" else int(rounded)
    return Explained(current, value, rule, reason, inputs)


def _limit(
    container: ContainerInput,
    resource: Resource,
    request: Explained,
    settings: RecommendSettings,
    *,
    peak: float | None = None,
    oom_bump: float = 0.0,
    leak: Leak | None = None,
) -> Explained:
    current = container.limits.get(resource)
    orig_request = container.requests.get(resource)
    if request.rule in ("policy.off", "tortoise.emergency.frozen"):
        return Explained(current, current, request.rule, "limit untouched")
    if request.rule == "oom.leak" and leak is not None:
        days = settings.noise.leak_hold_days
        held = math.ceil(leak.start_bytes + leak.bytes_per_day * days)
        if current is not None and held <= current:
            return Explained(current, current, "oom.leak", "memory leak: the limit is kept")
        return Explained(
            current,
            held,
            "oom.leak",
            f"memory leak: the limit holds {days:g} days of growth, the working set at a "
            f"restart {units.amount(leak.start_bytes, resource)} + {days:g} × "
            f"{units.amount(leak.bytes_per_day, resource)}",
            {"leak_bytes_per_day": leak.bytes_per_day, "start_bytes": leak.start_bytes},
        )
    new_request = request.proposed
    if settings.strategy == "hvpa" and request.rule == "hvpa.weighted" and new_request is not None:
        params = settings.hvpa.limits_requests_gap_scale_params.get(resource)
        gap_limit = hvpa.scaled_limit(
            current,
            float(orig_request) if orig_request else None,
            float(new_request),
            params,
            resource,
        )
        return Explained(current, gap_limit, "hvpa.limits_gap", "limitsRequestsGapScaleParams")
    proposal = propose_limit(
        current,
        float(orig_request) if orig_request is not None else None,
        float(new_request) if new_request is not None else None,
        resource,
        limits=settings.limits,
        admin=settings.admin,
        peak=peak,
    )
    value: Number | None = proposal.value
    rule, reason = proposal.rule, proposal.reason
    if (
        value is not None
        and resource == "memory"
        and _burstable(container)
        and settings.noise.oom_response == "bounded"
    ):
        # The limit absorbs the peaks of a burstable container: never below the observed
        # peak, and after an OOM kill at least the VPA OOM bump.
        if oom_bump > value:
            value, rule = oom_bump, "oom.limit_bump"
            reason = (
                f"OOM kill in the window: limit raised to the VPA OOM bump, max(used + 100Mi, "
                f"used × 1.2) = {units.amount(oom_bump, resource)}"
            )
        if peak is not None and settings.noise.memory_floor_at_peak and value < peak:
            value, rule = peak, "noise.memory_peak_floor"
            reason = f"not below the observed working-set peak {units.amount(peak, resource)}"
    if value is not None and resource == "memory":
        value = math.ceil(value)
    if value is not None and current is not None and math.isclose(value, current, rel_tol=1e-9):
        value = current
    return Explained(current, value, rule, reason)


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
            request = _noise(
                _request(container, resource, est, hpa_part, inp=inp, settings=settings),
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
                _limit(
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
    a limit), or an OOM kill (``_noise`` then lets any increase through)."""
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
        return _limit(by_name[container], resource, request, settings)

    return gate(inp, draft, settings, context=context, limit_of=limit_of)
