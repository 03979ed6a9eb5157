"""What the namespace and the runtime already say bounds a proposal: the LimitRange's bounds on
requests and limits, so that a merged proposal is never refused at admission, and a memory
limit that keeps room for an explicit JVM heap or ``GOMEMLIMIT``.

Requests (``noise_control`` in ``folding``, the same clamp as ``node.max_allocatable``):

- ``request_cap``: the lowest of the largest node's allocatable (``node.max_allocatable``), the
  LimitRange ``type: Container`` ``max`` (``limitrange.max``), its ``default`` limit for a
  container without a limit (admission gives it that limit, and a request may not exceed its
  limit: ``limitrange.default_limit``) and its ``type: Pod`` ``max`` less the other containers'
  limits (``limitrange.pod_max``);
- ``request_floor``: the LimitRange ``min`` (``limitrange.min``).

Limits (``bound_limit``, after ``folding.limit``): a memory limit that moves never goes below
the explicit heap + ``limits.jvm_non_heap_bytes`` or ``GOMEMLIMIT`` × (1 +
``limits.gomemlimit_headroom``) (``runtime.heap``); then no limit above ``request ×
maxLimitRequestRatio`` (``limitrange.max_ratio``), the LimitRange ``max`` or the Pod room, nor
below its ``min``: admission wins over the heap, and the note says so (``notes``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from bot.config.recommend import RecommendSettings
from bot.model import (
    RESOURCES,
    ContainerRecommendation,
    Explained,
    Note,
    Number,
    Resource,
    RuntimeMemory,
)
from bot.recommend import units
from bot.recommend.inputs import ContainerInput, WorkloadInput
from bot.recommend.rules import Rule

HEAP_KINDS = ("max_heap", "initial_heap")


@dataclass(frozen=True, slots=True)
class Bound:
    """One bound on a value: cores or bytes, the rule that names it, what it is in words and
    the key its value is recorded under in ``Explained.inputs``."""

    value: float
    rule: Rule
    what: str
    key: str


def request_cap(container: ContainerInput, resource: Resource) -> Bound | None:
    """The lowest ceiling on ``container``'s ``resource`` request (see module doc); the node's
    first on a tie."""
    caps = []
    allocatable = container.max_allocatable.get(resource)
    if allocatable:
        caps.append(
            Bound(
                float(allocatable),
                Rule.NODE_MAX_ALLOCATABLE,
                "the largest node's allocatable",
                "max_allocatable",
            )
        )
    caps += _limit_caps(container, resource)
    lr = container.limit_range
    default = lr.default_limit.get(resource) if lr is not None else None
    if lr is not None and default is not None and container.limits.get(resource) is None:
        caps.append(
            Bound(
                float(default),
                Rule.LIMITRANGE_DEFAULT_LIMIT,
                f"the default limit of LimitRange {lr.name} (the container sets none)",
                "limit_range_default_limit",
            )
        )
    return min(caps, key=lambda c: c.value) if caps else None


def _limit_caps(container: ContainerInput, resource: Resource) -> list[Bound]:
    """The LimitRange's ceilings on a limit (and so on a request): ``max`` and the Pod room."""
    lr = container.limit_range
    if lr is None:
        return []
    caps = []
    high = lr.max.get(resource)
    if high is not None:
        caps.append(
            Bound(float(high), Rule.LIMITRANGE_MAX, f"LimitRange {lr.name} max", "limit_range_max")
        )
    room = container.pod_room.get(resource)
    if room is not None:
        caps.append(
            Bound(
                float(room),
                Rule.LIMITRANGE_POD_MAX,
                f"LimitRange {lr.name} type Pod max less the other containers' limits",
                "limit_range_pod_room",
            )
        )
    return caps


def limit_ceiling(container: ContainerInput, resource: Resource) -> float:
    """The LimitRange's lowest ceiling on ``container``'s ``resource`` limit (``max``, the Pod
    room; ``math.inf`` without one): what the replay gate may never hold a limit above."""
    return min((c.value for c in _limit_caps(container, resource)), default=math.inf)


def request_floor(container: ContainerInput, resource: Resource) -> Bound | None:
    """The LimitRange ``min`` of ``container``'s ``resource`` request, None without one."""
    lr = container.limit_range
    low = lr.min.get(resource) if lr is not None else None
    if lr is None or low is None:
        return None
    return Bound(float(low), Rule.LIMITRANGE_MIN, f"LimitRange {lr.name} min", "limit_range_min")


def clamp_request(value: Number, container: ContainerInput, resource: Resource) -> Number:
    """``value`` within the request's LimitRange floor and every cap (a request added where
    there was none, ``policy.add_missing``)."""
    out = float(value)
    floor = request_floor(container, resource)
    if floor is not None:
        out = max(out, floor.value)
    cap = request_cap(container, resource)
    if cap is not None:
        out = min(out, cap.value)
    return out if resource == "cpu" else math.ceil(out)


def runtime_floor(container: ContainerInput, settings: RecommendSettings) -> tuple[float, str]:
    """The lowest memory limit the container's explicit heap or ``GOMEMLIMIT`` leaves room in
    (bytes), with why; ``(0, "")`` without one."""
    best, why = 0.0, ""
    limits = settings.limits
    for setting in container.runtime:
        if setting.value is None:
            continue
        if setting.kind in HEAP_KINDS:
            floor = setting.value + limits.jvm_non_heap_bytes
            text = (
                f"{setting.source} {setting.text} + non-heap "
                f"{units.amount(limits.jvm_non_heap_bytes, 'memory')}"
            )
        elif setting.kind == "gomemlimit":
            floor = setting.value * (1 + limits.gomemlimit_headroom)
            text = f"{setting.source} {setting.text} × (1 + {limits.gomemlimit_headroom:g})"
        else:
            continue
        if floor > best:
            best, why = floor, text
    return best, why


def bound_limit(
    container: ContainerInput,
    resource: Resource,
    request: Explained,
    limit: Explained,
    settings: RecommendSettings,
) -> Explained:
    """``limit`` within what the runtime needs and the LimitRange admits (see module doc); a
    limit that does not move, or none, is left as it is."""
    value = limit.proposed
    if value is None or value == limit.current:
        return limit
    out = float(value)
    rule, reason = limit.rule, limit.reason
    inputs = dict(limit.inputs)
    if resource == "memory":
        floor, why = runtime_floor(container, settings)
        if out < floor:
            out, rule = floor, Rule.RUNTIME_HEAP
            reason = f"{reason}; not below {why} = {units.amount(floor, 'memory')}"
            inputs |= {"runtime_floor": floor}
    lr = container.limit_range
    new_request = request.proposed
    caps = _limit_caps(container, resource)
    ratio = lr.max_ratio.get(resource) if lr is not None else None
    if lr is not None and ratio is not None and new_request:
        caps.append(
            Bound(
                float(new_request) * ratio,
                Rule.LIMITRANGE_MAX_RATIO,
                f"request × LimitRange {lr.name} maxLimitRequestRatio {ratio:g}",
                "limit_range_ratio_cap",
            )
        )
    cap = min(caps, key=lambda c: c.value) if caps else None
    if cap is not None and out > cap.value:
        reason = (
            f"{reason}; wants {units.amount(out, resource)}, clamped to {cap.what} "
            f"{units.amount(cap.value, resource)}"
        )
        out, rule = cap.value, cap.rule
        inputs |= {cap.key: cap.value}
    floor_bound = request_floor(container, resource)
    if floor_bound is not None and out < floor_bound.value:
        out, rule = floor_bound.value, floor_bound.rule
        reason = f"{reason}; raised to {floor_bound.what} {units.amount(out, resource)}"
    if new_request is not None and out < float(new_request):
        out = float(new_request)  # a limit below its request is refused as well
    proposed: Number = out if resource == "cpu" else math.ceil(out)
    if proposed == limit.proposed:
        return limit
    return Explained(limit.current, proposed, rule, reason, inputs)


def notes(inp: WorkloadInput, containers: Sequence[ContainerRecommendation]) -> tuple[Note, ...]:
    """What the LimitRange gives a container without a request, and each runtime memory
    setting with the limit it meets: the heap a ``MaxRAMPercentage`` implies, a heap or
    ``GOMEMLIMIT`` to change with a moved limit, one the limit cannot hold, one from
    ``valueFrom``."""
    out: list[Note] = []
    by_name = {c.name: c for c in containers}
    for container in inp.containers:
        lr = container.limit_range
        for resource in RESOURCES:
            if lr is None or container.requests.get(resource) is not None:
                continue
            given = lr.default_request.get(resource) or lr.default_limit.get(resource)
            if given is not None:
                out.append(
                    Note(
                        "limit-range-default",
                        f"no {resource} request in the manifest: LimitRange {lr.name} gives it "
                        f"{units.amount(float(given), resource)} at admission",
                        container.name,
                    )
                )
        rec = by_name.get(container.name)
        limit = rec.memory.limit if rec is not None else None
        for setting in container.runtime:
            out.append(Note("runtime-memory", _runtime_text(setting, limit), container.name))
    return tuple(out)


def _runtime_text(setting: RuntimeMemory, limit: Explained | None) -> str:
    """One runtime setting against the memory limit (current -> proposed)."""
    where = f"{setting.source}: {setting.text}"
    if setting.value is None:
        return f"{where}: its value is unknown to the repository; check it against the limit"
    current = float(limit.current) if limit is not None and limit.current else None
    proposed = float(limit.proposed) if limit is not None and limit.proposed else None
    moved = proposed is not None and proposed != current
    if setting.kind == "max_ram_percentage":
        share = setting.value / 100
        now = f"heap {units.amount(current * share, 'memory')} at the limit" if current else ""
        if moved and proposed is not None:
            return (
                f"{where}: {now} {units.amount(current or 0, 'memory')}, heap "
                f"{units.amount(proposed * share, 'memory')} at the proposed "
                f"{units.amount(proposed, 'memory')}; it follows the limit"
            ).replace(":  ", ": ")
        return f"{where}: {now or 'no memory limit: the heap follows the node memory'}"
    value = units.amount(setting.value, "memory")
    if current is None and proposed is None:
        return f"{where} ({value}): no memory limit"
    if not moved and current is not None and setting.value >= current:
        return f"{where} ({value}) does not fit the memory limit {units.amount(current, 'memory')}"
    if not moved:
        return f"{where} ({value}) under the memory limit {units.amount(current or 0, 'memory')}"
    assert proposed is not None
    if limit is not None and limit.rule == Rule.RUNTIME_HEAP:
        return (
            f"{where} ({value}) holds the memory limit at {units.amount(proposed, 'memory')} "
            f"(from {units.amount(current or 0, 'memory')}): lower the limit further only with it"
        )
    if proposed <= setting.value:
        return (
            f"{where} ({value}) does not fit the proposed limit "
            f"{units.amount(proposed, 'memory')}: lower it with the limit"
        )
    if current:
        share = setting.value / current
        return (
            f"{where} ({value}) is {share:.0%} of the limit {units.amount(current, 'memory')}; "
            f"at the proposed {units.amount(proposed, 'memory')} the same share is "
            f"{units.amount(proposed * share, 'memory')}: change it with the limit"
        )
    return f"{where} ({value}); proposed limit {units.amount(proposed, 'memory')}"
