"""Rule ``after_revert.floor``: after a merged revert, the next proposal for a field the revert
restored does not cut as deep as the pull request whose outcome regressed
(``docs/recommendations.md``, section 10; setting ``verify.after_revert_margin``).

For a field where more is safer (requests, limits, minReplicas, maxReplicas) the proposal is at
least ``regressed × (1 + margin)``; for an HPA utilization target (where less is safer) at most
``regressed × (1 − margin)``. A bound is rounded toward safety: replica counts, CPU (whole
millicores) and memory (whole bytes) up, targets down to a whole percent. A bound that reaches the current (restored) value keeps the current value: no change.
``regressed`` is the value the reverted pull request had set (``WorkloadInput.after_revert``,
read by the pipeline from the bot's pull requests); nothing is bounded without it.

A bound that lifts minReplicas above the proposed maxReplicas lifts maxReplicas to it, and one
that lifts a request above the proposed limit lifts the limit to it (a limit unset stays
unset): an HPA with ``minReplicas > maxReplicas`` or a container whose request exceeds its
limit is rejected by the API server.

The bound is applied to the draft before the replay gate and the budget, so the replay scores
the bounded values, and once more at the end, since a step after it may recompute a bounded
value (a limit that follows a request the gate held back, minReplicas lowered for cron floors).
"""

from __future__ import annotations

import math
from dataclasses import replace

from bot.model import (
    POD_LEVEL,
    RESOURCES,
    ContainerRecommendation,
    Explained,
    FieldId,
    HpaRecommendation,
    Number,
    Recommendation,
    ResourceRecommendation,
)
from bot.recommend import units
from bot.recommend.inputs import AfterRevert
from bot.recommend.rules import Rule

ROUNDING = 1e-6
"""Slack of the rounding of a bound, far below a replica, a millicore, a byte or a percent."""


def bound_of(field_id: FieldId, regressed: Number, margin: float) -> Number:
    """The bound of ``field_id`` after the revert of ``regressed``: ``regressed × (1 + margin)``
    rounded up (replicas to whole replicas, CPU to whole millicores, memory to whole bytes), an
    HPA target ``regressed × (1 − margin)`` rounded down to a whole percent. The ``ROUNDING``
    slack keeps a product that lands on a whole number (``0.1 × 1.2``) on it."""
    if field_id.is_hpa_target:
        return math.floor(regressed * (1 - margin) + ROUNDING)
    bound = regressed * (1 + margin)
    if field_id in (FieldId.HPA_MIN_REPLICAS, FieldId.HPA_MAX_REPLICAS):
        return math.ceil(bound - ROUNDING)
    if field_id.resource == "memory":
        return math.ceil(bound - ROUNDING)
    return math.ceil(bound * 1000 - ROUNDING) / 1000


def bounded(field_id: FieldId, proposed: Number, regressed: Number, margin: float) -> Number:
    """``proposed`` kept at least the bound (at most, for an HPA target: ``bound_of``)."""
    bound = bound_of(field_id, regressed, margin)
    return min(proposed, bound) if field_id.is_hpa_target else max(proposed, bound)


def _show(field_id: FieldId, value: Number) -> str:
    """``value`` in the unit of ``field_id``: ``120m``, ``360Mi``, ``64%``, ``6``."""
    resource = field_id.resource
    if field_id.is_request_or_limit and resource is not None:
        return units.amount(value, resource)
    return f"{value:g}%" if field_id.is_hpa_target else f"{value:g}"


def _bound(
    field_id: FieldId, value: Explained, regressed: Number | None, after: AfterRevert
) -> Explained:
    """``value`` bounded by the rule (``value`` itself when the bound does not move it)."""
    proposed = value.proposed
    if regressed is None or not isinstance(proposed, int | float) or not value.changed:
        return value
    new = bounded(field_id, proposed, regressed, after.margin)
    if new == proposed:
        return value
    target = field_id.is_hpa_target
    bound = bound_of(field_id, regressed, after.margin)
    figures = (
        f"{_show(field_id, regressed)} × (1 {'−' if target else '+'} {after.margin:g}) = "
        f"{_show(field_id, bound)}"
    )
    current = value.current
    reaches = current is not None and (new <= current if target else new >= current)
    reason = (
        f"kept: after revert #{after.revert}, the bound {figures} (#{after.reverted}'s value, "
        "whose outcome regressed) reaches the current value"
        if reaches
        else f"after revert #{after.revert}: no cut as deep as #{after.reverted}'s, whose "
        f"outcome regressed: {'at most' if target else 'at least'} {figures}"
    )
    return Explained(
        current,
        current if reaches else new,
        Rule.AFTER_REVERT_FLOOR.value,
        reason,
        {
            "regressed": regressed,
            "margin_fraction": after.margin,
            "bound": bound,
            "wanted": proposed,
            "wanted_rule": str(value.rule),
            "reverted": f"#{after.reverted}",
            "revert": f"#{after.revert}",
        },
    )


def _at_least(value: Explained, floor: Number, what: str, after: AfterRevert) -> Explained:
    """``value`` raised to ``floor`` where it would end below it (its proposal, else its
    current value): a bound on ``what`` (minReplicas, a request) must not leave the value that
    has to stay above it (maxReplicas, the limit) beneath it."""
    effective = value.proposed if value.proposed is not None else value.current
    if effective is None or effective >= floor:
        return value
    return Explained(
        value.current,
        floor,
        Rule.AFTER_REVERT_FLOOR.value,
        f"after revert #{after.revert}: raised to the bounded {what}, which it may not be below",
        {"bounded": floor, "wanted": effective, "wanted_rule": str(value.rule)},
    )


def _containers(rec: Recommendation, after: AfterRevert) -> tuple[ContainerRecommendation, ...]:
    out = []
    for container in rec.containers:
        per: dict[str, ResourceRecommendation] = {}
        for resource in RESOURCES:
            rr = container.resource(resource)
            request_id, limit_id = FieldId.request(resource), FieldId.limit(resource)
            request = _bound(request_id, rr.request, after.value(container.name, request_id), after)
            limit = _bound(limit_id, rr.limit, after.value(container.name, limit_id), after)
            floor = request.proposed if request.proposed is not None else request.current
            if request is not rr.request and floor is not None:
                limit = _at_least(limit, floor, f"{resource} request", after)
            same = request is rr.request and limit is rr.limit
            per[resource] = rr if same else replace(rr, request=request, limit=limit)
        if per["cpu"] is container.cpu and per["memory"] is container.memory:
            out.append(container)
        else:
            out.append(replace(container, cpu=per["cpu"], memory=per["memory"]))
    return tuple(out)


def _hpa(hpa: HpaRecommendation, after: AfterRevert) -> HpaRecommendation:
    low, high = FieldId.HPA_MIN_REPLICAS, FieldId.HPA_MAX_REPLICAS
    minimum = _bound(low, hpa.min_replicas, after.value(None, low), after)
    maximum = _bound(high, hpa.max_replicas, after.value(None, high), after)
    if minimum is not hpa.min_replicas and minimum.proposed is not None:
        maximum = _at_least(maximum, minimum.proposed, "minReplicas", after)
    targets = []
    for target in hpa.targets:
        field_id = FieldId.hpa_target(target.resource)
        container = None if target.container == POD_LEVEL else target.container
        value = _bound(field_id, target.value, after.value(container, field_id), after)
        targets.append(target if value is target.value else replace(target, value=value))
    return replace(hpa, min_replicas=minimum, max_replicas=maximum, targets=tuple(targets))


def with_after_revert(after: AfterRevert | None, rec: Recommendation) -> Recommendation:
    """``rec`` with every restored field bounded (see the module doc); ``rec`` itself when
    nothing was reverted or no bound moves a value."""
    if after is None or not after.values:
        return rec
    containers = _containers(rec, after)
    hpa = _hpa(rec.hpa, after) if rec.hpa is not None else None
    moved = containers != rec.containers or hpa != rec.hpa
    return replace(rec, containers=containers, hpa=hpa) if moved else rec


__all__ = ["bound_of", "bounded", "with_after_revert"]
