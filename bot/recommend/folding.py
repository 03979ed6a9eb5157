"""Steps 4 and 5 of the engine: the folding rules that turn estimates into requests and limits.

- ``request_move``: the full move of one request before noise control: ``off`` keeps,
  ``vertical`` follows the VPA (Tortoise's buffer and hysteresis, or HVPA blending; the OOM
  response, a leak), ``horizontal`` is right-sized (``tortoise.requests``);
- ``floors``: a value set by a floor (the VPA per-pod minimum, Tortoise's minimum request) says
  so and, with ``noise.floors_raise`` false, raises a request no further than usage needs;
- ``noise_control``: the largest node's allocatable, memory floor at the peak, OOM increase,
  rounding to the manifest grid, minChange, then the step limit;
- ``limit``: the limit that goes with the new request (``vpa.limits``, HVPA's gap, the OOM bump
  and the peak with its margin, a leak's growth until a restart).

The memory rules (OOM kills, leaks, the peak margin) are ``bot.recommend.memory``.

``docs/recommendations.md`` §2-§7 has every rule with its setting and its upstream value.
"""

from __future__ import annotations

import math

from bot.config.recommend import AdminSettings, RecommendSettings
from bot.model import (
    Explained,
    Number,
    Resource,
)
from bot.recommend import hvpa, memory, namespace, noise, units
from bot.recommend.estimate import (
    ResourceEstimate,
)
from bot.recommend.forecast import explain
from bot.recommend.inputs import ContainerInput, WorkloadInput
from bot.recommend.leak import Leak
from bot.recommend.rules import Rule
from bot.recommend.tortoise.hpa import HpaPart
from bot.recommend.tortoise.hpa_targets import target_current
from bot.recommend.tortoise.requests import (
    RequestBounds,
    from_milli,
    horizontal_request,
    milli,
    vertical_ideal,
    vertical_request,
)
from bot.recommend.vpa.limits import propose_limit


def request_move(
    container: ContainerInput,
    resource: Resource,
    est: ResourceEstimate,
    hpa_part: HpaPart,
    *,
    inp: WorkloadInput,
    settings: RecommendSettings,
) -> Explained:
    """The full move for one container resource: the recommended request before noise control
    and before the step limit (``noise_control`` applies both, in that order)."""
    admin = settings.admin
    current = container.requests.get(resource)
    policy = container.policy(resource)
    if policy == "off":
        return Explained(current, current, Rule.POLICY_OFF, "policy off or no request: untouched")
    if hpa_part.frozen:
        return Explained(
            current, current, Rule.TORTOISE_EMERGENCY_FROZEN, "emergency: requests frozen"
        )
    if current is None:
        return _add_missing(container, resource, est, admin)
    if policy == "horizontal" and inp.hpa is None:
        return Explained(
            current,
            current,
            Rule.POLICY_HORIZONTAL_WITHOUT_HPA,
            "horizontal policy but no HPA: untouched (the bot does not create HPAs)",
        )
    req_m, rec_m = milli(float(current), resource), milli(est.rec, resource)
    inputs: dict[str, Number | str | None] = {"rec": est.rec, "vpa_target": est.vpa.target}
    bounds = RequestBounds(
        resource,
        container.name,
        admin,
        container.min_allocated.get(resource),
        container.max_allocated.get(resource),
        step_limit=False,
    )
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
            Rule.HVPA_WEIGHTED,
            f"current + trunc((VPA target − current) × {weight}/100)",
            inputs | {"vpa_weight": weight},
        )
    if policy == "vertical":
        ns = settings.noise
        base = est.rec
        if ns.vertical_from == "vpa_target":
            base = est.vpa.target
            rec_m = milli(base, resource)
        forecast = est.forecast
        lift = forecast.lift(base) if forecast is not None else None
        if lift is not None:
            rec_m = math.ceil(round(lift.value * 1000, 6))  # the coming cycle (``forecast``)
        buffer = (
            admin.buffer_ratio_on_vertical_resource
            if ns.vertical_buffer or ns.vertical_hysteresis
            else 0.0
        )
        bounded_oom = resource == "memory" and est.oom_floor > 0 and ns.oom_response != "stacked"
        burstable = memory.is_burstable(container)
        if bounded_oom and est.leak is not None:
            new, rule, reason, extra = memory.leak_request(float(current), est.leak, settings)
            inputs |= extra
        elif bounded_oom and ns.oom_response == "raise":
            new, rule, reason = memory.oom_raise(float(current), est, buffer)
            inputs |= {"oom_bump": est.oom_floor}
        elif bounded_oom and burstable:
            # The limit takes the OOM bump (``limit``); the request follows usage.
            new, rule, reason = vertical_ideal(req_m, rec_m, buffer, resource=resource)
        elif bounded_oom:
            rec_m = milli(max(est.vpa.target, est.oom_floor), resource)
            new, rule, reason = vertical_ideal(req_m, rec_m, buffer, resource=resource)
            rule = Rule.OOM_BOUNDED
            reason = (
                f"OOM kill in the window: max(VPA target {units.amount(est.vpa.target, resource)}"
                f", OOM bump {units.amount(est.oom_floor, resource)}) × (1 + {buffer:g}), once"
            )
            inputs |= {"oom_bump": est.oom_floor}
        elif settings.noise.vertical_hysteresis:
            new, rule, reason = vertical_request(req_m, rec_m, buffer, resource=resource)
        else:
            new, rule, reason = vertical_ideal(req_m, rec_m, buffer, resource=resource)
        if lift is not None and forecast is not None:
            label = "VPA target" if ns.vertical_from == "vpa_target" else "Tortoise rec"
            text, more = explain(forecast, lift, base_label=label, resource=resource)
            inputs |= more
            if rule == Rule.VERTICAL_IDEAL and new is not None:
                rule = Rule.FORECAST_TREND if lift.growth > 1 else Rule.FORECAST_CYCLE
                reason = f"{text} × (1 + {buffer:g})" if buffer else text
            else:
                reason = f"{reason}; VPA = {text}"
        if new is None or (new == req_m and rule == Rule.OOM_RAISE):
            return Explained(current, current, rule, reason, inputs)
        value_m, clamp_rule = bounds.justify(req_m, new)
        if clamp_rule and value_m != new:
            rule, reason = clamp_rule, f"{reason}; clamped ({clamp_rule})"
        if rule in memory.LEAK_RULES:  # a quantile of usage: no floor to name
            return Explained(current, from_milli(value_m, resource), rule, reason, inputs)
        usage = est.rec_unfloored or est.rec
        if ns.vertical_from == "vpa_target":
            usage = est.target_unfloored or est.vpa.target
        usage_lift = forecast.lift(usage) if forecast is not None else None
        usage = (usage_lift.value if usage_lift is not None else usage) * (1 + buffer)
        if bounded_oom and (not burstable or ns.oom_response == "raise"):
            usage = max(usage, est.oom_floor)
        result = Explained(current, from_milli(value_m, resource), rule, reason, inputs)
        return floors(result, est, container, resource, settings, usage=usage)
    current_target = None
    if inp.hpa is not None:
        current_target, kind = target_current(inp, container.name, resource)
        if kind == "added":
            current_target = None
    proposal = horizontal_request(req_m, rec_m, current_target, hpa_part.context, bounds)
    result = Explained(
        current, from_milli(proposal.value, resource), proposal.rule, proposal.reason, inputs
    )
    unfloored = est.rec_unfloored or est.rec
    usage = unfloored * 100 / current_target if current_target else unfloored
    return floors(result, est, container, resource, settings, usage=usage)


def floors(
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
    elif x.rule == Rule.TORTOISE_REQUEST_MIN:
        floor = float(RequestBounds(resource, container.name, admin).floor_and_ceiling(0)[0] / 1000)
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
                Rule.FLOOR_KEPT,
                f"kept: {what} would raise it to {units.amount(proposed, resource)}, but it "
                f"is a floor, not usage (usage asks for {units.amount(usage, resource)})",
                inputs,
            )
        if usage < proposed:
            return Explained(
                current,
                usage if resource == "cpu" else math.ceil(usage),
                Rule.FLOOR_USAGE,
                f"usage asks for {units.amount(usage, resource)}; {what} would raise it to "
                f"{units.amount(proposed, resource)}, but a floor raises a request no further "
                "than usage needs",
                inputs,
            )
    return Explained(current, proposed, x.rule, f"{x.reason}; floor: {what}", inputs)


def _add_missing(
    container: ContainerInput, resource: Resource, est: ResourceEstimate, admin: AdminSettings
) -> Explained:
    """A request for a container resource that has none (``requests.add_missing``): the VPA
    target within the container's bounds and the global minimum and maximum."""
    bounds = RequestBounds(
        resource,
        container.name,
        admin,
        container.min_allocated.get(resource),
        container.max_allocated.get(resource),
        step_limit=False,
    )
    floor, ceiling = bounds.floor_and_ceiling(0)
    value = from_milli(min(max(milli(est.vpa.target, resource), floor), ceiling), resource)
    value = namespace.clamp_request(value, container, resource)  # what admission accepts
    return Explained(
        None,
        value,
        Rule.POLICY_ADD_MISSING,
        f"no request: one added at the VPA target {units.amount(est.vpa.target, resource)} "
        "(within the bounds)",
        {"vpa_target": est.vpa.target},
    )


def noise_control(
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
        or raw.rule in (Rule.POLICY_OFF, Rule.TORTOISE_EMERGENCY_FROZEN)
    ):
        return raw
    rule, reason = raw.rule, raw.reason
    inputs = dict(raw.inputs)
    bound = namespace.request_cap(container, resource)  # node, LimitRange
    allocatable = bound.value if bound is not None else None
    caps = [float(c) for c in (container.max_allocated.get(resource), allocatable) if c]
    cap = min(caps) if caps else None
    forced = False
    wanted = float(proposed)  # before any cap: what the rules below ask for
    floor_at_peak = (
        memory.request_peak_floor(container, est, settings)
        if resource == "memory" and raw.rule not in memory.LEAK_RULES
        else None
    )
    if floor_at_peak is not None and proposed < floor_at_peak[0]:
        floor_value, rule, why = floor_at_peak
        wanted = floor_value
        proposed = min(
            floor_value, float(cap or math.inf), float(settings.admin.maximum_memory_request_bytes)
        )
        forced = rule != Rule.NOISE_MEMORY_PEAK_FLOOR and proposed > current
        reason = f"{why} ({raw.reason})"
    bump_in_limit = memory.is_burstable(container) and ns.oom_response == "bounded"
    if (
        resource == "memory"
        and ns.oom_immediate_increase
        and est.oom_floor > 0
        and not bump_in_limit
        and raw.rule not in memory.LEAK_RULES  # a leak is not chased with the request
    ):
        floor = est.oom_floor if not cap else min(est.oom_floor, cap)
        if proposed < floor and floor > current:
            proposed, rule, forced = floor, Rule.OOM_BUMP, True
            wanted = max(wanted, est.oom_floor)
            reason = "OOM kill in the window: max(request + 100 MiB, request × 1.2)"
        elif proposed > current:
            forced = True
    wanted = max(wanted, float(proposed))
    if bound is not None and proposed >= bound.value and wanted > bound.value:
        proposed, rule = bound.value, bound.rule
        forced = forced or proposed < current
        reason = (
            f"{reason}; wants {units.amount(wanted, resource)}, clamped to {bound.what} "
            f"{units.amount(bound.value, resource)}"
        )
        inputs |= {"unclamped": wanted, bound.key: bound.value}
    low = namespace.request_floor(container, resource)
    if low is not None and proposed < low.value and (bound is None or low.value <= bound.value):
        proposed, rule = low.value, low.rule
        reason = f"{reason}; raised to {low.what} {units.amount(low.value, resource)}"
        inputs |= {low.key: low.value}
    if at_risk is not None and proposed > current and not forced and rule not in memory.LEAK_RULES:
        forced = True
        reason = f"{reason}; {at_risk}"
    admin = settings.admin
    global_max = (
        admin.maximum_cpu_request_cores
        if resource == "cpu"
        else float(admin.maximum_memory_request_bytes)
    )
    ceiling = min(cap or math.inf, global_max)
    rounded = noise.round_up_to_step(float(proposed), resource, ns)
    if rounded > ceiling >= float(proposed):
        rounded = ceiling
    if noise.same_on_grid(float(current), rounded, resource, ns):
        return Explained(
            current,
            current,
            raw.rule if proposed == current else Rule.NOISE_ROUNDING,
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
            Rule.NOISE_MIN_CHANGE,
            f"wants {units.describe(rounded, resource, float(current))}: a move of "
            f"{units.amount(abs(rounded - float(current)), resource)} is below minChange "
            f"{units.amount(threshold, resource)}",
            inputs,
        )
    ratio = (
        0.0
        if raw.rule == Rule.HVPA_WEIGHTED or not ns.step_limit
        else admin.max_allowed_scaling_down_ratio
    )
    stepped = min(noise.step_limited(float(current), rounded, resource, ratio, ns), ceiling)
    if stepped > rounded:
        inputs |= {"wanted": rounded, "wanted_rule": rule}
        rule = Rule.TORTOISE_REQUEST_STEP_DOWN
        reason = (
            f"{reason}; wants {units.describe(rounded, resource, float(current))}, "
            f"step-limited to {units.describe(stepped, resource, float(current))}"
        )
        rounded = stepped
    value: Number = rounded if resource == "cpu" else int(rounded)
    return Explained(current, value, rule, reason, inputs)


def limit(
    container: ContainerInput,
    resource: Resource,
    request: Explained,
    settings: RecommendSettings,
    *,
    peak: float | None = None,
    oom_bump: float = 0.0,
    leak: Leak | None = None,
) -> Explained:
    """The limit of ``container``'s ``resource`` that goes with the folded ``request``: kept
    where the request is; a leak's (``memory.leak_limit``); HVPA's gap scaling; else
    ``vpa.limits.propose_limit`` (``limits`` settings), then for memory the floors of
    ``memory.limit_floors`` (the OOM bump, the observed ``peak`` in bytes and its margin)."""
    current = container.limits.get(resource)
    orig_request = container.requests.get(resource)
    if request.rule in (Rule.POLICY_OFF, Rule.TORTOISE_EMERGENCY_FROZEN, Rule.POLICY_ADD_MISSING):
        return Explained(current, current, request.rule, "limit untouched")
    if leak is not None and resource == "memory" and settings.noise.oom_response != "stacked":
        return memory.leak_limit(current, request, leak, settings)
    new_request = request.proposed
    if (
        settings.strategy == "hvpa"
        and request.rule == Rule.HVPA_WEIGHTED
        and new_request is not None
    ):
        params = settings.hvpa.limits_requests_gap_scale_params.get(resource)
        gap_limit = hvpa.scaled_limit(
            current,
            float(orig_request) if orig_request else None,
            float(new_request),
            params,
            resource,
        )
        return Explained(current, gap_limit, Rule.HVPA_LIMITS_GAP, "limitsRequestsGapScaleParams")
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
    if value is not None and resource == "memory":
        value, rule, reason = memory.limit_floors(
            value, rule, reason, container, settings, peak=peak, oom_bump=oom_bump
        )
    if value is not None and resource == "memory":
        value = math.ceil(value)
    if value is not None and current is not None and math.isclose(value, current, rel_tol=1e-9):
        value = current
    return Explained(current, value, rule, reason)
