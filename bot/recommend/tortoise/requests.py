"""Container requests: vertical resources and right-sizing of horizontal ones
(``pkg/recommender/recommender.go``, ``updateVPARecommendation``, ``calculateBestNewSize``,
``justifyNewSize``).

All arithmetic is in milli-units as Go int64, as upstream: CPU in millicores, memory in
milli-bytes; float results truncate toward zero. ``rec`` is Tortoise's sticky maximum of the VPA
target (``sticky_max``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from bot.config.recommend import AdminSettings
from bot.model import Resource
from bot.recommend.rules import Rule
from bot.recommend.tortoise.constants import IMBALANCE_THRESHOLD, PREFERRED_MAX_GROWTH
from bot.recommend.tortoise.ruled import Ruled
from bot.recommend.units import amount


def milli(value: float, resource: Resource) -> int:
    """Cores or bytes to milli-units (``Quantity.MilliValue``)."""
    del resource
    return round(value * 1000)


def from_milli(value: int, resource: Resource) -> float:
    """Milli-units back to cores, or to whole bytes rounded up (upstream keeps milli-bytes)."""
    return value / 1000.0 if resource == "cpu" else float(math.ceil(value / 1000))


def sticky_max(targets: Sequence[float], uppers: Sequence[float]) -> float:
    """Tortoise's ``maxRecommendation``: kept while ``T < M < U``, else replaced by ``T``.

    Replayed over the VPA target/upper bound of each replay step, starting from 0
    (``pkg/tortoise/tortoise.go``, ``UpdateContainerRecommendationFromVPA``).
    """
    m = 0.0
    for t, u in zip(targets, uppers, strict=True):
        if not t < m < u:
            m = t
    return m


@dataclass(frozen=True, slots=True)
class RequestBounds:
    """What bounds one container resource's request in ``justifyNewSize``: the container's
    ``minAllocatedResources``/``maxAllocatedResources`` (cores or bytes, None = unset), the
    global and per-container minimums and maximums of ``admin``, and the step limit
    (``MaxAllowedScalingDownRatio``; ``step_limit=False`` leaves it out: the full move, which
    the engine's noise control judges before it limits the step, ``noise.step_limited``)."""

    resource: Resource
    container: str
    admin: AdminSettings
    min_allocated: float | None = None
    max_allocated: float | None = None
    step_limit: bool = True

    def floor_and_ceiling(self, old_milli: int) -> tuple[int, int]:
        """(floor, ceiling) of ``justifyNewSize`` in milli-units.

        floor = max(minAllocated, per-container or global minimum,
        trunc(old × MaxAllowedScalingDownRatio)); ceiling = maxAllocated when set, non-zero and
        <= the global maximum, else the global maximum. A container named in either
        per-container map takes its floor from that map (0 if absent). Deviation: the floor
        never exceeds the ceiling (upstream returns the floor when the new size is below both,
        e.g. a 3-core request with maxAllocated 2 stepping down to 2.4), so a proposal always
        lies within the allowed range.
        """
        admin, resource, container = self.admin, self.resource, self.container
        cpu_map = admin.minimum_cpu_request_per_container_cores
        mem_map = admin.minimum_memory_request_per_container_bytes
        if container in cpu_map or container in mem_map:
            global_min = (
                cpu_map.get(container, 0.0) if resource == "cpu" else mem_map.get(container, 0)
            )
        else:
            global_min = (
                admin.minimum_cpu_request_cores
                if resource == "cpu"
                else admin.minimum_memory_request_bytes
            )
        global_max = (
            admin.maximum_cpu_request_cores
            if resource == "cpu"
            else admin.maximum_memory_request_bytes
        )
        floor = max(milli(self.min_allocated or 0.0, resource), milli(global_min, resource))
        ceiling = milli(global_max, resource)
        if self.max_allocated and milli(self.max_allocated, resource) <= ceiling:
            ceiling = milli(self.max_allocated, resource)
        by_ratio = (
            math.trunc(old_milli * admin.max_allowed_scaling_down_ratio) if self.step_limit else 0
        )
        return min(max(floor, by_ratio), ceiling), ceiling

    def justify(self, old_milli: int, new_milli: int) -> tuple[int, Rule | None]:
        """``justifyNewSize``: the ceiling first, then the floor; returns (value, clamp rule)."""
        floor, ceiling = self.floor_and_ceiling(old_milli)
        if new_milli > ceiling:
            return ceiling, Rule.TORTOISE_REQUEST_MAX
        if new_milli < floor:
            by_ratio = (
                math.trunc(old_milli * self.admin.max_allowed_scaling_down_ratio)
                if self.step_limit
                else -1
            )
            return (
                floor,
                Rule.TORTOISE_REQUEST_STEP_DOWN if floor == by_ratio else Rule.TORTOISE_REQUEST_MIN,
            )
        return new_milli, None


def vertical_request(
    req_milli: int, rec_milli: int, buffer: float, *, resource: Resource
) -> tuple[int | None, str, str]:
    """Vertical policy: (new size before clamping or None to keep, rule, reason).

    ``ideal = rec × (1 + b)``; scale up when ``ideal > req`` to ``ideal × (1 + b)``; scale down
    when ``req/(1 + b) × (1 − b) > ideal`` to ``ideal``; otherwise keep (hysteresis band).
    Deviation: the scale-down result is ``ceil(ideal)`` where upstream truncates; with
    ``int64(ideal)`` the next run sees ``ideal > req`` and scales straight back up by 21 %
    (e.g. rec 2048 m: down to 2252 m, then up to 2478 m), a flip-flop a PR bot must not make.
    """
    ideal = round(rec_milli * (1 + buffer), 6)  # 100 × 1.1 is 110.00000000000001 in doubles
    if ideal > req_milli:
        return (
            math.trunc(ideal * (1 + buffer)),
            Rule.TORTOISE_VERTICAL_UP,
            f"VPA {amount(rec_milli / 1000, resource)} × (1 + {buffer:g})² (scale-up buffer)",
        )
    prev_ideal = req_milli / (1 + buffer)
    if prev_ideal * (1 - buffer) > ideal:
        return (
            math.ceil(ideal),
            Rule.TORTOISE_VERTICAL_DOWN,
            f"VPA × (1 + {buffer:g}): well below the current request",
        )
    return None, Rule.TORTOISE_VERTICAL_KEEP, "VPA within the hysteresis band of the request: kept"


def vertical_ideal(
    req_milli: int, rec_milli: int, buffer: float, *, resource: Resource
) -> tuple[int | None, str, str]:
    """Vertical policy without the hysteresis band (bot rule ``vertical.ideal``): the request
    is ``ceil(rec × (1 + b))`` whenever noise control lets the move through; ``None`` when it
    equals the current request. Upstream (``vertical_request``) scales up to ``rec × (1 + b)²``
    and keeps a request up to ``(1 + b)/(1 − b)`` × the ideal (about 1.34 × ``rec``)."""
    ideal = math.ceil(round(rec_milli * (1 + buffer), 6))
    if ideal == req_milli:
        return None, Rule.VERTICAL_IDEAL, "VPA × (1 + buffer) equals the request: kept"
    if not buffer:
        return ideal, Rule.VERTICAL_IDEAL, f"VPA target {amount(rec_milli / 1000, resource)}"
    return (
        ideal,
        Rule.VERTICAL_IDEAL,
        f"VPA {amount(rec_milli / 1000, resource)} × (1 + {buffer:g})",
    )


@dataclass(frozen=True, slots=True)
class HorizontalContext:
    """The per-workload facts the horizontal branches read (bot: fractions of time)."""

    scaled_up: bool
    """Growth at PreferredMaxReplicas fires this proposal (alpha flag)."""
    close_to_preferred: bool
    at_minimum: bool
    """At or below MinimumMinReplicas for the configured fraction of the time."""
    single_pair_or_at_hpa_min: bool


def horizontal_request(
    req_milli: int,
    rec_milli: int,
    target_percent: int | None,
    ctx: HorizontalContext,
    bounds: RequestBounds,
) -> Ruled:
    """Right-sizing of a horizontal resource: the first matching branch of
    ``calculateBestNewSize`` (growth at PreferredMax, close to PreferredMax, at the minimum,
    one pair or at the HPA minimum, no HPA target, multi-container rebalance, keep).

    The rebalance uses the **current** HPA target ``t``: when ``t × 0.9 > rec/req × 100`` the
    request becomes ``rec × 100 / t`` (the VPA usage then sits at the target), floored at
    ``MaxAllowedScalingDownRatio × old`` per proposal (unless ``bounds.step_limit`` is False).
    """

    def clamp(new: int, rule: Rule, reason: str) -> Ruled:
        value, clamp_rule = bounds.justify(req_milli, new)
        if clamp_rule and value != new:
            return Ruled(value, clamp_rule, f"{reason}; clamped ({clamp_rule})")
        return Ruled(value, rule, reason)

    if ctx.scaled_up:
        return clamp(
            math.trunc(req_milli * PREFERRED_MAX_GROWTH),
            Rule.TORTOISE_HORIZONTAL_GROW_AT_PREFERRED_MAX,
            f"at PreferredMaxReplicas: request × {PREFERRED_MAX_GROWTH}",
        )
    if ctx.close_to_preferred:
        return Ruled(
            req_milli,
            Rule.TORTOISE_HORIZONTAL_CLOSE_TO_PREFERRED_MAX,
            "replicas near PreferredMaxReplicas: shrinking would add replicas, kept",
        )
    if ctx.at_minimum:
        return clamp(
            min(req_milli, rec_milli),
            Rule.TORTOISE_HORIZONTAL_AT_MINIMUM,
            "replicas at MinimumMinReplicas: request shrinks to the VPA value",
        )
    if ctx.single_pair_or_at_hpa_min:
        return clamp(req_milli, Rule.TORTOISE_HORIZONTAL_KEEP, "one horizontal pair or at HPA min")
    if target_percent is None:
        return clamp(req_milli, Rule.TORTOISE_HORIZONTAL_KEEP, "no ContainerResource target")
    usage = (float(rec_milli) / float(req_milli)) * 100
    if target_percent * IMBALANCE_THRESHOLD > usage:
        return clamp(
            math.trunc(rec_milli * 100 / target_percent),
            Rule.TORTOISE_HORIZONTAL_REBALANCE,
            f"usage {usage:.0f}% < 0.9 × target {target_percent}%: request = VPA × 100 / target",
        )
    return clamp(req_milli, Rule.TORTOISE_HORIZONTAL_KEEP, f"usage {usage:.0f}% drives scaling")
