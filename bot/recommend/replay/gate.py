"""The replay gate: a proposal the replay shows worse than the current values is backed off.

``gate(inp, draft, settings)`` replays the current values and the draft's proposal on the
workload's history (``figures.replay``) and compares them (``compare.findings``). With
``replay.gate: on``, each finding is cleared by moving the fields behind it back toward their
current values, one group at a time in the order below, each only as far as the replay needs
(a binary search over the share of the move given back, to the nearest value on the manifest
grid; at worst the current value):

* ``oom`` in a container: its memory limit, then its memory request;
* ``eviction``: its memory request;
* ``cpu`` in a container: its CPU request, then the HPA targets, minReplicas, maxReplicas, then
  the other horizontal containers' CPU requests;
* ``shortfall``: maxReplicas, the HPA targets, minReplicas, then the horizontal requests.

A group that cannot clear the finding alone goes back to its current values and the next group
is tried. A field held back gets rule ``replay.gate``, the wanted value in
``inputs.wanted`` and a reason naming the finding; a request's limit follows the held request.
``report-only`` replays and reports the findings without backing off; ``off`` replays (the
figures are still shown) without looking for findings.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from bot.config.recommend import RecommendSettings
from bot.model import (
    ContainerRecommendation,
    Explained,
    FieldId,
    GateFinding,
    HpaRecommendation,
    HpaTargetRecommendation,
    Number,
    Recommendation,
    ReplayComparison,
    ReplayFigures,
    Resource,
)
from bot.recommend import namespace, units
from bot.recommend.inputs import ContainerInput, WorkloadInput
from bot.recommend.noise import passes_min_change
from bot.recommend.replay.compare import findings, proposed_values
from bot.recommend.replay.context import ReplayContext
from bot.recommend.replay.figures import over_request_share, replay, replica_path
from bot.recommend.replay.recent import recent_usage
from bot.recommend.replay.values import Values
from bot.recommend.rules import Rule

GATE_RULE = Rule.REPLAY_GATE
"""Rule of a value the gate held back."""

SEARCH_STEPS = 5
"""Binary-search steps per group: the share given back is found to 1/32 of the move."""

LimitOf = Callable[[str, Resource, Explained], Explained]
"""The limit that follows a (held) request: ``(container, resource, request) -> limit``."""


@dataclass(frozen=True, slots=True)
class Knob:
    """One proposed value the gate may move back: ``field`` as in ``FieldChange``."""

    field: FieldId
    container: str | None
    resource: Resource | None
    current: Number
    wanted: Number
    ceiling: float = math.inf
    """The highest value the knob may take (a container's max allocated resources)."""


def _grid(resource: Resource | None, settings: RecommendSettings) -> float:
    if resource is None:
        return 1.0
    noise = settings.noise
    return noise.cpu_step_cores if resource == "cpu" else float(noise.memory_step_bytes)


def _at(knob: Knob, share: float, settings: RecommendSettings) -> Number:
    """The value ``share`` of the way back from ``wanted`` to ``current``, on the manifest
    grid, rounded toward ``current``."""
    if share <= 0.0:
        return knob.wanted
    if share >= 1.0:
        return min(knob.current, knob.ceiling) if knob.ceiling < math.inf else knob.current
    step = _grid(knob.resource, settings)
    raw = float(knob.wanted) + share * (float(knob.current) - float(knob.wanted))
    value = (
        math.ceil(raw / step - 1e-9) * step
        if knob.current > knob.wanted
        else math.floor(raw / step + 1e-9) * step
    )
    value = min(value, knob.ceiling)
    if knob.resource == "cpu":
        return round(value, 6)
    return int(value)


def _cap(container: ContainerInput, resource: Resource) -> float:
    """The node's and the LimitRange's ceiling on a request (``namespace.request_cap``)."""
    bound = namespace.request_cap(container, resource)
    return bound.value if bound is not None else math.inf


class _Draft:
    """The proposal being backed off: knobs and their values now."""

    def __init__(self, rec: Recommendation, inp: WorkloadInput) -> None:
        self.rec = rec
        ceilings = {
            (c.name, resource): min(
                float(c.max_allocated.get(resource) or math.inf),
                _cap(c, resource),
            )
            for c in inp.containers
            for resource in ("cpu", "memory")
        }
        limit_ceilings = {
            (c.name, resource): namespace.limit_ceiling(c, resource)
            for c in inp.containers
            for resource in ("cpu", "memory")
        }
        self.knobs: list[Knob] = []
        self.value: dict[tuple[FieldId, str | None], Number | None] = {}
        for cr in rec.containers:
            for resource in ("cpu", "memory"):
                rr = cr.resource(resource)
                for field_id, x in (
                    (FieldId.request(resource), rr.request),
                    (FieldId.limit(resource), rr.limit),
                ):
                    if x.changed and x.current is not None and x.proposed is not None:
                        ceiling = ceilings.get((cr.name, resource), math.inf)
                        self._add(
                            Knob(
                                field_id,
                                cr.name,
                                resource,
                                x.current,
                                x.proposed,
                                ceiling
                                if field_id.is_request
                                else limit_ceilings.get((cr.name, resource), math.inf),
                            )
                        )
        if rec.hpa is not None:
            for name, x in (
                (FieldId.HPA_MIN_REPLICAS, rec.hpa.min_replicas),
                (FieldId.HPA_MAX_REPLICAS, rec.hpa.max_replicas),
            ):
                if x.changed and x.current is not None and x.proposed is not None:
                    self._add(Knob(name, None, None, x.current, x.proposed))
            for t in rec.hpa.targets:
                x = t.value
                if x.changed and x.current is not None and x.proposed is not None:
                    self._add(
                        Knob(
                            FieldId.hpa_target(t.resource), t.container, None, x.current, x.proposed
                        )
                    )

    def _add(self, knob: Knob) -> None:
        self.knobs.append(knob)
        self.value[(knob.field, knob.container)] = knob.wanted

    def group(
        self, kind: str, container: str | None, horizontal: Sequence[tuple[str, FieldId]]
    ) -> list[list[Knob]]:
        """The groups of knobs behind one finding, in the order the gate tries them; only
        knobs moving in the risky direction (a lower request, limit or replica bound, a higher
        target), so giving a move back never adds risk."""

        def pick(test: Callable[[Knob], bool]) -> list[Knob]:
            return [k for k in self.knobs if test(k) and _risky(k)]

        targets = pick(lambda k: k.field.is_hpa_target)
        low = pick(lambda k: k.field == FieldId.HPA_MIN_REPLICAS)
        high = pick(lambda k: k.field == FieldId.HPA_MAX_REPLICAS)
        others = pick(
            lambda k: (
                k.field.is_request
                and (k.container, k.field) in horizontal
                and k.container != container
            )
        )
        if kind == "oom":
            return [
                pick(lambda k: k.field == FieldId.LIMITS_MEMORY and k.container == container),
                pick(lambda k: k.field == FieldId.REQUESTS_MEMORY and k.container == container),
            ]
        if kind == "eviction":
            return [pick(lambda k: k.field == FieldId.REQUESTS_MEMORY and k.container == container)]
        if kind == "cpu":
            own = pick(lambda k: k.field == FieldId.REQUESTS_CPU and k.container == container)
            return [own, targets, low, high, others]
        horizontal_requests = pick(lambda k: (k.container, k.field) in horizontal)
        return [high, targets, low, horizontal_requests]


def _risky(knob: Knob) -> bool:
    """A move that can make the replay worse: down for sizes and replica bounds, up for a
    target."""
    if knob.field.is_hpa_target:
        return knob.wanted > knob.current
    return knob.wanted < knob.current


def _apply(
    rec: Recommendation,
    values: dict[tuple[FieldId, str | None], Number | None],
    reasons: dict[tuple[FieldId, str | None], str],
    limit_of: LimitOf,
) -> Recommendation:
    """``rec`` with every knob at its value in ``values``; held knobs explained."""

    def held(x: Explained, key: tuple[FieldId, str | None]) -> Explained:
        value = values.get(key, x.proposed)
        if value == x.proposed:
            return x
        return Explained(
            x.current,
            value,
            GATE_RULE,
            reasons.get(key, "held back by the replay"),
            {**x.inputs, "wanted": x.proposed, "wanted_rule": x.rule},
        )

    containers = []
    for cr in rec.containers:
        per = {}
        for resource in ("cpu", "memory"):
            rr = cr.resource(resource)
            request = held(rr.request, (FieldId.request(resource), cr.name))
            limit = held(rr.limit, (FieldId.limit(resource), cr.name))
            if request is not rr.request and limit is rr.limit:
                limit = limit_of(cr.name, resource, request)
            if (
                limit.proposed is not None
                and request.proposed is not None
                and limit.proposed < request.proposed
            ):
                limit = replace(limit, proposed=request.proposed)
            per[resource] = replace(rr, request=request, limit=limit)
        containers.append(ContainerRecommendation(cr.name, per["cpu"], per["memory"]))
    hpa = rec.hpa
    if hpa is not None:
        low = held(hpa.min_replicas, (FieldId.HPA_MIN_REPLICAS, None))
        high = held(hpa.max_replicas, (FieldId.HPA_MAX_REPLICAS, None))
        if low.proposed is not None and high.proposed is not None and low.proposed > high.proposed:
            low = replace(low, proposed=high.proposed)
        targets = tuple(
            HpaTargetRecommendation(
                t.container,
                t.resource,
                held(t.value, (FieldId.hpa_target(t.resource), t.container)),
            )
            for t in hpa.targets
        )
        hpa = HpaRecommendation(low, high, targets, hpa.slots)
    return replace(rec, containers=tuple(containers), hpa=hpa)


def _describe(knob: Knob, value: Number, finding: GateFinding) -> str:
    """``wants 150m; held at 180m: <finding>`` in the knob's unit."""

    def show(x: Number) -> str:
        if knob.resource is None:
            return f"{x}%" if knob.field.is_hpa_target else str(x)
        return units.amount(float(x), knob.resource)

    kept = "kept at the current value" if value == knob.current else f"held at {show(value)}"
    return f"wants {show(knob.wanted)}; {kept}: the replay of the history shows {finding.message}"


def gate(
    inp: WorkloadInput,
    draft: Recommendation,
    settings: RecommendSettings,
    *,
    context: ReplayContext,
    limit_of: LimitOf,
) -> Recommendation:
    """``draft`` with its replay attached and, with ``replay.gate: on``, backed off (module
    doc)."""
    mode = settings.replay.gate
    series, options, now, before = context.series, context.options, context.now, context.before
    plain = replace(options, slots=None)
    allowance = settings.replay.max_extra_over_request
    short_allowance = settings.replay.max_extra_shortfall
    scored: dict[tuple[Values, bool], ReplayFigures] = {}

    def score(values: Values, detail: bool = False) -> ReplayFigures:
        """The figures of ``values``; ``detail``: with the report-only ones (a detailed replay
        also answers for a plain one)."""
        if values == now:
            return before
        if (values, True) in scored:
            return scored[(values, True)]
        key = (values, detail)
        if key not in scored:
            scored[key] = replay(series, values, recorded=now, options=options if detail else plain)
        return scored[key]

    days = settings.forecast.horizon_days

    def recent_share(values: Values, container: str) -> float | None:
        """Share of ``container``'s minutes over its CPU request in the last cycle."""
        cv = values.container(container)
        found = recent_usage(series, values, container, plain, days=days)
        if found is None or cv is None or not cv.requests.cpu_cores:
            return None
        return found.over_share(cv.requests.cpu_cores)

    def judged(values: Values, figures: ReplayFigures) -> tuple[GateFinding, ...]:
        """``findings``, the CPU ones judged on the last cycle (``recent``)."""
        out = []
        for f in findings(
            before, figures, allowance=allowance, shortfall_allowance=short_allowance
        ):
            name = f.container
            was = recent_share(now, name) if f.kind == "cpu" and name is not None else None
            share = recent_share(values, name) if was is not None and name is not None else None
            if was is None or share is None:
                out.append(f)
            elif share > was + allowance:
                out.append(
                    GateFinding(
                        "cpu",
                        name,
                        was,
                        share,
                        was + allowance,
                        f"{name}: CPU above the proposed request {share:.1%} of the "
                        f"container-minutes of the last {days:g} days (current {was:.1%}, "
                        f"allowed {was + allowance:.1%})",
                    )
                )
        return tuple(out)

    wanted_values = proposed_values(now, draft)
    first = score(wanted_values, detail=True)  # most proposals pass: the figures they show
    found = () if mode == "off" else judged(wanted_values, first)
    if mode != "on" or not found:
        if not context.report:  # the values are read, not the figures
            return replace(draft, replay=None)
        proposed = score(wanted_values, detail=True)
        return replace(draft, replay=ReplayComparison(before, proposed, mode, found))

    work = _Draft(draft, inp)
    values = dict(work.value)
    reasons: dict[tuple[FieldId, str | None], str] = {}
    horizontal = [
        (c.name, FieldId.request(resource))
        for c in inp.containers
        for resource in ("cpu", "memory")
        if c.policy(resource) == "horizontal"
    ]

    def trial(overrides: dict[tuple[FieldId, str | None], Number]) -> Recommendation:
        merged = {**values, **overrides}
        return _apply(draft, merged, {}, limit_of)

    def clears(finding: GateFinding, rec: Recommendation) -> bool:
        """Whether ``rec`` no longer has ``finding``, computing only the figure it is about."""
        values = proposed_values(now, rec)
        if finding.kind == "cpu" and finding.container is not None:
            share = recent_share(values, finding.container)
            if share is None:
                share = over_request_share(series, values, finding.container, plain)
            return share <= finding.allowed
        if finding.kind == "shortfall":
            walk = replica_path(series, values, plain)
            return walk.shortfall_steps * series.step_s / 60.0 <= finding.allowed
        result = judged(values, score(values))
        return not any(f.kind == finding.kind and f.container == finding.container for f in result)

    for _ in range(len(found) + len(work.knobs) + 1):
        current_rec = _apply(draft, values, {}, limit_of)
        trying = proposed_values(now, current_rec)
        remaining = judged(trying, score(trying))
        if not remaining:
            break
        finding = remaining[0]
        progressed = False
        for group in work.group(finding.kind, finding.container, horizontal):
            movable = [k for k in group if values[(k.field, k.container)] != k.current]
            if not movable:
                continue
            progressed = True
            back = {(k.field, k.container): k.current for k in movable}
            if not clears(finding, trial(back)):
                values.update(back)
                for k in movable:
                    reasons[(k.field, k.container)] = _describe(k, k.current, finding)
                continue
            low, high = 0.0, 1.0
            for _step in range(SEARCH_STEPS):
                mid = (low + high) / 2
                if clears(
                    finding, trial({(k.field, k.container): _at(k, mid, settings) for k in movable})
                ):
                    high = mid
                else:
                    low = mid
            for k in movable:
                value = _at(k, high, settings)
                values[(k.field, k.container)] = value
                reasons[(k.field, k.container)] = _describe(k, value, finding)
            break
        if not progressed:
            break
    for k in work.knobs:
        key = (k.field, k.container)
        held_value = values[key]
        if (
            held_value not in (k.wanted, k.current)
            and k.resource is not None
            and held_value is not None
            and k.field.is_request
            and not passes_min_change(
                float(k.current), float(held_value), k.resource, settings.noise
            )[0]
        ):
            # What the replay lets through is too small a move to propose.
            values[key] = k.current
            reasons[key] = f"{reasons.get(key, '')}; that move is below minChange: kept"
        elif (
            held_value not in (k.wanted, k.current)
            and held_value is not None
            and k.field.is_hpa_target
            and abs(float(held_value) - float(k.current)) < settings.noise.target_min_points
        ):
            values[key] = k.current
            reasons[key] = f"{reasons.get(key, '')}; that move is below the target step: kept"
    gated = _apply(draft, values, reasons, limit_of)
    if not context.report:  # the values are read, not the figures
        return replace(gated, replay=None)
    proposed = score(proposed_values(now, gated), detail=True)
    held = tuple(
        (k.field, k.container, k.wanted, values[(k.field, k.container)])
        for k in work.knobs
        if values[(k.field, k.container)] != k.wanted
    )
    return replace(gated, replay=ReplayComparison(before, proposed, mode, found, held))


__all__ = ["GATE_RULE", "gate"]
