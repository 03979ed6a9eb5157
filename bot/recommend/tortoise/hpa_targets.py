"""The HPA half, targets: one target per horizontal container resource, as Tortoise manages
them (tortoise.md B4, C3, C4; ``pkg/hpa/service.go``,
``syncHPAMetricsWithTortoiseAutoscalingPolicy``).

C3 proposes ``100 − (rec − current)`` points of headroom, C4 limits a rise to +5 points per
24 h (``tortoise.utilization``); metrics are added for horizontal container resources the HPA
lacks (at 70 %), removed for resources no longer horizontal, and a pod-level ``Resource`` metric
is replaced by per-container ``ContainerResource`` metrics where the repository can express them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from bot.config.recommend import RecommendSettings
from bot.model import (
    POD_LEVEL,
    RESOURCES,
    Explained,
    HpaTargetRecommendation,
    Number,
    Resource,
)
from bot.recommend.estimate import Estimates, estimate_of
from bot.recommend.inputs import ContainerInput, WorkloadInput
from bot.recommend.rules import Rule
from bot.recommend.tortoise.constants import INITIAL_TARGET_PERCENT
from bot.recommend.tortoise.requests import milli
from bot.recommend.tortoise.utilization import apply_target_change_limits, recommend_target


def target_current(inp: WorkloadInput, container: str, resource: Resource) -> tuple[int, str]:
    """The target (percent) the HPA holds for ``container``'s ``resource`` and its kind: its own
    ``ContainerResource`` metric, else the pod-level ``Resource`` metric, else Tortoise's initial
    target for a metric to add (``"added"``)."""
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


def recommend_targets(
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
            current, kind = target_current(inp, container.name, resource)
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
                    Rule.HPA_CONTAINER_RESOURCE_UNSUPPORTED,
                    "skipped: the repository cannot express ContainerResource metrics here",
                    inputs,
                )
            elif hold or not complete or req_m <= 0:
                why = hold or "no request or estimate"
                value = Explained(current, current, Rule.TORTOISE_TARGET_HOLD, why, inputs)
            elif at_max:
                value = Explained(
                    current,
                    current,
                    Rule.TORTOISE_TARGET_AT_MAX_REPLICAS,
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
            Rule.TORTOISE_TARGET_MISSING_METRIC,
            f"no metric for this container (Tortoise would add one at "
            f"{INITIAL_TARGET_PERCENT}%); {NOT_EXPRESSIBLE}",
            inputs,
        )
    if not per_container:
        return Explained(
            None,
            None,
            Rule.TORTOISE_TARGET_MISSING_METRIC,
            f"no metric for this container: Tortoise would add one at "
            f"{INITIAL_TARGET_PERCENT}%; the HPA has no ContainerResource metric to add it "
            f"next to, add it by hand",
            inputs,
        )
    return Explained(
        None,
        INITIAL_TARGET_PERCENT,
        Rule.TORTOISE_TARGET_NEW_METRIC,
        f"new ContainerResource metric at Tortoise's initial {INITIAL_TARGET_PERCENT}% "
        f"(syncHPAMetricsWithTortoiseAutoscalingPolicy adds one for every horizontal "
        f"container resource the HPA lacks)",
        inputs,
    )


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
    added = sum(1 for t in targets if t.value.rule == Rule.TORTOISE_TARGET_NEW_METRIC)
    remaining = len(inp.hpa.targets) + inp.hpa.other_metrics + added - len(stale)
    out = []
    for name, resource, current, how in stale:
        inputs: dict[str, Number | str | None] = {"metric": "ContainerResource", "policy": how}
        why = f"{resource} of {name} is {how}"
        if not inp.container_resource_metrics:
            value = Explained(
                current,
                current,
                Rule.HPA_CONTAINER_RESOURCE_UNSUPPORTED,
                f"{why}: Tortoise would remove its ContainerResource metric; the repository "
                "cannot express ContainerResource metrics here, remove it by hand",
                inputs,
            )
        elif remaining <= 0:
            value = Explained(
                current,
                current,
                Rule.TORTOISE_TARGET_KEEP_LAST_METRIC,
                f"{why}, but no other metric would remain: Tortoise would disable the HPA "
                "(no metrics, minReplicas = maxReplicas = replicas); the bot keeps the metric, "
                "an HPA needs at least one",
                inputs,
            )
        else:
            value = Explained(
                current,
                None,
                Rule.TORTOISE_TARGET_REMOVE_METRIC,
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
            Rule.TORTOISE_TARGET_AT_MAX_REPLICAS,
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
