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
from collections.abc import Sequence
from dataclasses import dataclass, replace

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
    Estimates,
    ResourceEstimate,
    TooLittleData,
    estimate_container,
    estimate_of,
)
from bot.recommend.inputs import ContainerInput, WorkloadInput
from bot.recommend.leak import Leak
from bot.recommend.replay.bounds import choose as choose_bounds
from bot.recommend.replay.compare import proposed_values
from bot.recommend.replay.figures import Values, hpa_metrics, over_request_share, replica_path
from bot.recommend.replay.gate import ReplayContext, gate
from bot.recommend.replay.series import ReplaySeries
from bot.recommend.tortoise.constants import (
    CLOSE_TO_PREFERRED_FRACTION,
    INITIAL_TARGET_PERCENT,
)
from bot.recommend.tortoise.emergency import emergency_min_replicas
from bot.recommend.tortoise.replicas import hour_of_week, replica_slots, slot_labels
from bot.recommend.tortoise.requests import (
    HorizontalContext,
    from_milli,
    horizontal_request,
    justify,
    milli,
    request_bounds,
    vertical_ideal,
    vertical_request,
)
from bot.recommend.tortoise.utilization import apply_target_change_limits, recommend_target
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


@dataclass(frozen=True, slots=True)
class _HpaPart:
    recommendation: HpaRecommendation
    context: HorizontalContext
    gathering: str | None
    frozen: bool
    """Emergency or back-to-normal: requests and targets are frozen (upstream C7)."""
    note: Note | None = None


def _fraction(mask: np.ndarray) -> float:
    return np.count_nonzero(mask) / mask.size if mask.size else 0.0


def _hpa_target_current(inp: WorkloadInput, container: str, resource: Resource) -> tuple[int, str]:
    assert inp.hpa is not None
    pod_level = None
    for target in inp.hpa.targets:
        if target.resource != resource:
            continue
        if target.container == container:
            return target.utilization_percent, "ContainerResource"
        if target.container is None:
            pod_level = target.utilization_percent
    if pod_level is not None:
        return pod_level, "Resource"
    return INITIAL_TARGET_PERCENT, "added"


def _hpa_part(
    inp: WorkloadInput,
    settings: RecommendSettings,
    estimates: Estimates,
    now_s: float,
) -> _HpaPart:
    admin = settings.admin
    hist = inp.history
    r = hist.replicas
    window = Window(now_s, inp.excluded_intervals_s)
    if window.all_kept(hist.replicas_t) and (
        r.size == 0 or (bool(np.isfinite(r.min())) and bool(np.isfinite(r.max())))
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
        empty = Explained(None, None, "hpa.none", "no HorizontalPodAutoscaler")
        return _HpaPart(HpaRecommendation(empty, empty), context, None, False)

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
        min_x = Explained(cur_min, cur_min, "tortoise.gathering_data", gathering)
        max_x = Explained(cur_max, cur_max, "tortoise.gathering_data", gathering)
    else:
        # In emergency with slots still unobserved: the observed slots, else the current max.
        slot_max = slots.max_max or cur_max
        capped_max, max_rule, max_reason = (
            slot_max,
            "tortoise.replicas.max",
            (
                f"max over {len(slots.values)} slots of ceil(replicas × "
                f"{admin.max_replicas_recommendation_multiplier:g})"
            ),
        )
        if settings.max_replicas is not None and capped_max > settings.max_replicas:
            capped_max, max_rule = settings.max_replicas, "tortoise.replicas.max_workload_cap"
            max_reason = f"slot max {slot_max} capped by the workload's max_replicas"
        if capped_max > admin.maximum_max_replicas:
            capped_max, max_rule = admin.maximum_max_replicas, "tortoise.replicas.max_global_cap"
            max_reason = f"slot max {slot_max} capped by maximum_max_replicas"
        rec_min = min(slots.max_min, admin.maximum_min_replicas)
        min_rule = (
            "tortoise.replicas.min" if rec_min == slots.max_min else "tortoise.replicas.min_cap"
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
            capped_max, max_rule = proposed_min, "tortoise.replicas.max_raised_to_min"
            max_reason = "raised to minReplicas (upstream does not check min <= max)"
        min_x = Explained(
            cur_min, proposed_min, min_rule, min_reason, {"phase": phase, "slot_min": slots.max_min}
        )
        max_x = Explained(cur_max, capped_max, max_rule, max_reason, {"slot_max": slot_max})

    at_max = r.size > 0 and float(r[-1]) >= admin.maximum_max_replicas
    hold = "emergency: targets frozen" if frozen else gathering
    targets = _targets(inp, settings, estimates, now_s=now_s, hold=hold, at_max=at_max)
    rec = HpaRecommendation(min_x, max_x, targets, dict(slots.values))
    return _HpaPart(rec, context, gathering, frozen, note)


POD_LEVEL = "*"
"""``HpaTargetRecommendation.container`` of a pod-level ``Resource`` metric."""


def _target_value(
    current: int,
    rec_m: int,
    req_m: int,
    key: tuple[str, Resource],
    inputs: dict[str, Number | str | None],
    *,
    inp: WorkloadInput,
    settings: RecommendSettings,
    now_s: float,
) -> Explained:
    """C3 then C4: the proposed target with the +5 / 24 h limits (upstream; with
    ``replicas.target: replay`` the replay then chooses, ``_replayed_targets``)."""
    admin = settings.admin
    proposal = recommend_target(rec_m, req_m, current, admin)
    limited = apply_target_change_limits(
        current,
        proposal,
        last_changed_s=inp.target_changed_s.get(key),
        now_s=now_s,
        admin=admin,
    )
    inputs = inputs | {"unlimited": proposal.value}
    return Explained(current, limited.value, limited.rule, limited.reason, inputs)


def _targets(
    inp: WorkloadInput,
    settings: RecommendSettings,
    estimates: Estimates,
    *,
    now_s: float,
    hold: str | None,
    at_max: bool,
) -> tuple[HpaTargetRecommendation, ...]:
    """HPA targets as Tortoise manages them (C3, C4), one per horizontal (container, resource).

    Where the HPA scales a resource on the pod-level ``Resource`` metric, Tortoise replaces it by
    one ``ContainerResource`` metric per horizontal container
    (``pkg/hpa/service.go: syncHPAMetricsWithTortoiseAutoscalingPolicy``). The bot does the same
    when the repository can express such metrics (``WorkloadInput.container_resource_metrics``):
    each container's target starts from the pod-level target it replaces (not from Tortoise's
    70 % for a new metric, which would move scaling for no reason) and goes through C3/C4; the
    proposal carries ``inputs["metric"] = "Resource"`` and is written even when the number stays,
    since the metric itself changes. When any container lacks an estimate or request, or the
    targets are held, the pod-level target is kept as one value. Where the repository cannot
    express ``ContainerResource`` (a Helm chart without it, ``autoscaling/v1``), the pod-level
    target is tuned with the same formula from the pod's summed VPA values and requests
    (container ``*``) and the reason says so. A horizontal container without any metric gets a
    new ``ContainerResource`` metric at Tortoise's initial 70 % (``_added``); the
    ``ContainerResource`` metric of a resource no longer horizontal is removed (``_removed``).
    """
    targets = []
    pod_level_done: set[Resource] = set()
    replaced = {
        resource
        for resource in RESOURCES
        if _replaces_pod_level(inp, estimates, resource, hold=hold)
    }
    for container in inp.containers:
        for resource in RESOURCES:
            if container.policy(resource) != "horizontal":
                continue
            current, kind = _hpa_target_current(inp, container.name, resource)
            name = container.name
            inputs: dict[str, Number | str | None] = {"metric": kind}
            if kind == "Resource" and resource in replaced:
                targets.append(
                    HpaTargetRecommendation(
                        name,
                        resource,
                        _replacement(
                            inp,
                            container,
                            resource,
                            current,
                            estimates,
                            settings=settings,
                            now_s=now_s,
                            at_max=at_max,
                        ),
                    )
                )
                continue
            if kind == "Resource":
                if resource in pod_level_done:
                    continue
                pod_level_done.add(resource)
                name = POD_LEVEL
                pairs = [
                    (estimate_of(estimates, c.name, resource), c.requests.get(resource))
                    for c in inp.containers
                    if c.requests.get(resource)
                ]
                complete = all(est is not None for est, _ in pairs)
                rec_m = sum(milli(e.rec, resource) for e, _ in pairs if e is not None)
                req_m = sum(milli(float(q or 0), resource) for _, q in pairs)
            else:
                est = estimate_of(estimates, name, resource)
                req = container.requests.get(resource)
                complete = est is not None and bool(req)
                rec_m = milli(est.rec, resource) if est is not None else 0
                req_m = milli(float(req or 0), resource)
            if kind == "added":
                value = _added(inp, resource, replaced, inputs)
            elif not inp.container_resource_metrics and kind == "ContainerResource":
                value = Explained(
                    current,
                    current,
                    "hpa.container_resource_unsupported",
                    "skipped: the repository cannot express ContainerResource metrics here",
                    inputs,
                )
            elif hold or not complete or req_m <= 0:
                why = hold or "no request or estimate"
                value = Explained(current, current, "tortoise.target.hold", why, inputs)
            elif at_max:
                value = Explained(
                    current,
                    current,
                    "tortoise.target.at_max_replicas",
                    "replicas at maximum_max_replicas: no target recommendation",
                    inputs,
                )
            else:
                inputs |= {"rec": rec_m / 1000, "request": req_m / 1000}
                value = _target_value(
                    current,
                    rec_m,
                    req_m,
                    (name, resource),
                    inputs,
                    inp=inp,
                    settings=settings,
                    now_s=now_s,
                )
                if kind == "Resource" and not inp.container_resource_metrics:
                    value = replace(value, reason=f"{value.reason}; {NOT_EXPRESSIBLE}")
            targets.append(HpaTargetRecommendation(name, resource, value))
    return (*targets, *_removed(inp, targets))


NOT_EXPRESSIBLE = "ContainerResource not expressible here: the pod-level Resource target is tuned"
"""Reason suffix (and note) where the repository cannot hold per-container HPA metrics."""


def _added(
    inp: WorkloadInput,
    resource: Resource,
    replaced: set[Resource],
    inputs: dict[str, Number | str | None],
) -> Explained:
    """A horizontal container resource the HPA has no metric for. Tortoise adds a
    ``ContainerResource`` metric at ``INITIAL_TARGET_PERCENT`` (tortoise.md B4,
    ``pkg/hpa/service.go: syncHPAMetricsWithTortoiseAutoscalingPolicy``); the bot proposes the
    same (current None) where the HPA already scales on ``ContainerResource`` metrics or its
    pod-level metric is being replaced by them, and the repository can express them. Otherwise
    the gap is reported with no proposal."""
    assert inp.hpa is not None
    per_container = replaced or any(t.container is not None for t in inp.hpa.targets)
    if not inp.container_resource_metrics:
        return Explained(
            None,
            None,
            "tortoise.target.missing_metric",
            f"no metric for this container (Tortoise would add one at "
            f"{INITIAL_TARGET_PERCENT}%); {NOT_EXPRESSIBLE}",
            inputs,
        )
    if not per_container:
        return Explained(
            None,
            None,
            "tortoise.target.missing_metric",
            f"no metric for this container: Tortoise would add one at "
            f"{INITIAL_TARGET_PERCENT}%; the HPA has no ContainerResource metric to add it "
            f"next to, add it by hand",
            inputs,
        )
    return Explained(
        None,
        INITIAL_TARGET_PERCENT,
        "tortoise.target.new_metric",
        f"new ContainerResource metric at Tortoise's initial {INITIAL_TARGET_PERCENT}% "
        f"(syncHPAMetricsWithTortoiseAutoscalingPolicy adds one for every horizontal "
        f"container resource the HPA lacks)",
        inputs,
    )


REMOVE_METRIC = "tortoise.target.remove_metric"
"""Rule of a ``ContainerResource`` metric removed because its resource is not horizontal."""


def _removed(
    inp: WorkloadInput, targets: Sequence[HpaTargetRecommendation]
) -> list[HpaTargetRecommendation]:
    """``ContainerResource`` metrics of a (container, resource) whose policy is not horizontal
    (vertical, or off): Tortoise removes them
    (``pkg/hpa/service.go: syncHPAMetricsWithTortoiseAutoscalingPolicy``, tortoise.md A5), and
    so does the bot: proposed None (``REMOVE_METRIC``). Only containers of the workload count (a
    metric naming a container the manifest does not declare, such as an injected sidecar, is
    left alone); pod-level ``Resource`` metrics and every other metric type are never touched.

    Guard: an HPA keeps at least one metric. Where no metric would remain (counting the
    metrics added in this proposal), Tortoise "disables" the HPA (``disableHPA``: metrics nil,
    min = max = replicas); the bot cannot write an HPA without metrics, so it keeps them all
    (``tortoise.target.keep_last_metric``) and says why. Where the repository cannot express
    ``ContainerResource`` metrics, the metric is kept with a skip reason."""
    assert inp.hpa is not None
    stale: list[tuple[str, Resource, int, str]] = []
    for target in inp.hpa.targets:
        container = inp.container(target.container) if target.container is not None else None
        if container is not None and container.policy(target.resource) != "horizontal":
            stale.append(
                (
                    container.name,
                    target.resource,
                    target.utilization_percent,
                    container.policy(target.resource),
                )
            )
    added = sum(1 for t in targets if t.value.rule == "tortoise.target.new_metric")
    remaining = len(inp.hpa.targets) + inp.hpa.other_metrics + added - len(stale)
    out = []
    for name, resource, current, how in stale:
        inputs: dict[str, Number | str | None] = {"metric": "ContainerResource", "policy": how}
        why = f"{resource} of {name} is {how}"
        if not inp.container_resource_metrics:
            value = Explained(
                current,
                current,
                "hpa.container_resource_unsupported",
                f"{why}: Tortoise would remove its ContainerResource metric; the repository "
                "cannot express ContainerResource metrics here, remove it by hand",
                inputs,
            )
        elif remaining <= 0:
            value = Explained(
                current,
                current,
                "tortoise.target.keep_last_metric",
                f"{why}, but no other metric would remain: Tortoise would disable the HPA "
                "(no metrics, minReplicas = maxReplicas = replicas); the bot keeps the metric, "
                "an HPA needs at least one",
                inputs,
            )
        else:
            value = Explained(
                current,
                None,
                REMOVE_METRIC,
                f"{why}: ContainerResource metric removed, as Tortoise does "
                "(syncHPAMetricsWithTortoiseAutoscalingPolicy)",
                inputs,
            )
        out.append(HpaTargetRecommendation(name, resource, value))
    return out


def _horizontal(inp: WorkloadInput, resource: Resource) -> list[ContainerInput]:
    return [c for c in inp.containers if c.policy(resource) == "horizontal"]


def _replaces_pod_level(
    inp: WorkloadInput,
    estimates: Estimates,
    resource: Resource,
    *,
    hold: str | None,
) -> bool:
    """Whether the pod-level ``Resource`` metric of ``resource`` becomes per-container metrics:
    the repository can express them, the HPA scales on it, nothing holds the targets, and every
    horizontal container has a request and an estimate (a partial set would stop scaling on the
    others)."""
    if hold or inp.hpa is None or not inp.container_resource_metrics:
        return False
    if not any(t.resource == resource and t.container is None for t in inp.hpa.targets):
        return False
    horizontal = _horizontal(inp, resource)
    return bool(horizontal) and all(
        c.requests.get(resource) and estimate_of(estimates, c.name, resource) is not None
        for c in horizontal
    )


def _replacement(
    inp: WorkloadInput,
    container: ContainerInput,
    resource: Resource,
    pod_target: int,
    estimates: Estimates,
    *,
    settings: RecommendSettings,
    now_s: float,
    at_max: bool,
) -> Explained:
    """One container's ``ContainerResource`` target replacing the pod-level ``Resource`` target
    ``pod_target``: C3/C4 from that starting point (tortoise.md B4 starts a new metric at 70 %;
    the bot starts from the value the pod scaled on and says so)."""
    est = estimates[container.name][resource]
    req_m = milli(float(container.requests.get(resource) or 0), resource)
    rec_m = milli(est.rec, resource)
    inputs: dict[str, Number | str | None] = {
        "metric": "Resource",
        "replaces": pod_target,
        "rec": rec_m / 1000,
        "request": req_m / 1000,
    }
    start = (
        f"replaces the pod-level Resource metric, starting from its target {pod_target}% "
        f"(Tortoise starts a new metric at {INITIAL_TARGET_PERCENT}%)"
    )
    if at_max:
        return Explained(
            pod_target,
            pod_target,
            "tortoise.target.at_max_replicas",
            f"{start}; replicas at maximum_max_replicas: target kept",
            inputs,
        )
    key = (container.name, resource)
    if key not in inp.target_changed_s and (POD_LEVEL, resource) in inp.target_changed_s:
        inp = replace(
            inp,
            target_changed_s={
                **inp.target_changed_s,
                key: inp.target_changed_s[(POD_LEVEL, resource)],
            },
        )
    value = _target_value(
        pod_target, rec_m, req_m, key, inputs, inp=inp, settings=settings, now_s=now_s
    )
    return replace(value, reason=f"{start}; {value.reason}")


def _request(
    container: ContainerInput,
    resource: Resource,
    est: ResourceEstimate,
    hpa_part: _HpaPart,
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
        current_target, kind = _hpa_target_current(inp, container.name, resource)
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
    hpa_part = _hpa_part(inp, settings, estimates, now_s)
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


def _replays_bounds(inp: WorkloadInput, hpa_part: _HpaPart, settings: RecommendSettings) -> bool:
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
