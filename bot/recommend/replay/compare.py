"""Current values and a proposal as replay candidates, and where a proposal does worse.

``current_values`` reads what the repository declares (``WorkloadInput``);
``proposed_values`` applies a ``Recommendation``'s proposed requests, limits, replica bounds
and HPA metrics to it (a pod-level ``Resource`` metric replaced by ``ContainerResource``
metrics, metrics added and removed, targets changed). ``findings`` compares two replays with
the gate's rules (``docs/recommendations.md`` §9):

* ``oom``: more predicted OOM kills in a container than with the current values;
* ``eviction``: without a memory limit, a larger share of minutes with the working set above the
  request than the current values' plus the allowance;
* ``cpu``: a larger share of container-minutes with CPU usage above the request than the
  current values' plus ``replay.max_extra_over_request``;
* ``shortfall``: more minutes of capacity shortfall than the current HPA's, or than
  ``replay.max_extra_shortfall`` × the window's minutes where that is more (a ceiling: a value
  held at it is held there again by the next plan on the same history).

A proposal the gate held at the edge of a CPU allowance, once merged, is the next run's current
value: the engine then wants the same value again, and the gate can give it at most another
allowance, which noise control rejects when it is a small move (``gate``).
"""

from __future__ import annotations

from bot.model import (
    POD_LEVEL,
    REMOVE_METRIC,
    RESOURCES,
    GateFinding,
    HpaTarget,
    Recommendation,
    ReplayFigures,
    ResourceValues,
)
from bot.recommend.inputs import WorkloadInput
from bot.recommend.replay.values import ContainerValues, HpaValues, Values


def current_values(inp: WorkloadInput) -> Values:
    """What the repository declares for ``inp``'s containers and HPA."""
    containers = tuple(ContainerValues(c.name, c.requests, c.limits) for c in inp.containers)
    hpa = None
    if inp.hpa is not None:
        hpa = HpaValues(
            inp.hpa.min_replicas if inp.hpa.min_replicas is not None else 1,
            inp.hpa.max_replicas,
            tuple(inp.hpa.targets),
            inp.hpa.behavior,
        )
    return Values(containers, hpa)


def _number(value: float | int | None) -> float | None:
    return None if value is None else float(value)


def proposed_values(current: Values, rec: Recommendation) -> Values:
    """``current`` with every value ``rec`` proposes (its ``proposed``, gathered or not)."""
    containers = []
    for cv in current.containers:
        cr = next((c for c in rec.containers if c.name == cv.name), None)
        if cr is None:
            containers.append(cv)
            continue
        requests, limits = {}, {}
        for resource in RESOURCES:
            rr = cr.resource(resource)
            requests[resource] = (
                rr.request.proposed
                if rr.request.proposed is not None
                else cv.requests.get(resource)
            )
            limits[resource] = (
                rr.limit.proposed if rr.limit.rule != "gathering-data" else cv.limits.get(resource)
            )
        containers.append(
            ContainerValues(
                cv.name,
                ResourceValues(_number(requests["cpu"]), _int(requests["memory"])),
                ResourceValues(_number(limits["cpu"]), _int(limits["memory"])),
            )
        )
    hpa = current.hpa
    if hpa is not None and rec.hpa is not None:
        targets = list(hpa.targets)
        for t in rec.hpa.targets:
            value = t.value
            container = None if t.container == POD_LEVEL else t.container
            if value.inputs.get("metric") == "Resource" and container is not None:
                targets = [
                    x for x in targets if not (x.container is None and x.resource == t.resource)
                ]
            targets = [
                x for x in targets if not (x.container == container and x.resource == t.resource)
            ]
            if value.proposed is not None:
                targets.append(HpaTarget(t.resource, int(value.proposed), container))
            elif value.current is not None and value.rule != REMOVE_METRIC:
                targets.append(HpaTarget(t.resource, int(value.current), container))
        low = rec.hpa.min_replicas.proposed
        high = rec.hpa.max_replicas.proposed
        hpa = HpaValues(
            int(low) if low is not None else hpa.min_replicas,
            int(high) if high is not None else hpa.max_replicas,
            tuple(targets),
            hpa.behavior,
        )
    return Values(tuple(containers), hpa)


def _int(value: float | int | None) -> int | None:
    return None if value is None else int(value)


def _share(minutes: float | None, total: float) -> float:
    return (minutes or 0.0) / total if total > 0 else 0.0


def allowed_shortfall(current_minutes: float | None, window_s: float, allowance: float) -> float:
    """Minutes of capacity shortfall a proposal may have: the current HPA's, or ``allowance``
    of the window's minutes where that is more (a ceiling, not an addition)."""
    return max(current_minutes or 0.0, allowance * window_s / 60.0)


def findings(
    current: ReplayFigures,
    proposed: ReplayFigures,
    *,
    allowance: float,
    shortfall_allowance: float = 0.0,
) -> tuple[GateFinding, ...]:
    """Where ``proposed`` does worse than ``current`` (module doc), containers in order."""
    out: list[GateFinding] = []
    for mem in proposed.memory:
        old = current.container_memory(mem.container)
        if old is None:
            continue
        if mem.oom_kills is not None and mem.oom_kills > (old.oom_kills or 0):
            out.append(
                GateFinding(
                    "oom",
                    mem.container,
                    float(old.oom_kills or 0),
                    float(mem.oom_kills),
                    float(old.oom_kills or 0),
                    f"{mem.container}: {mem.oom_kills} OOM kills predicted at the proposed "
                    f"memory limit, {old.oom_kills or 0} at the current one",
                )
            )
        cpu = proposed.container_cpu(mem.container)
        total = cpu.container_minutes if cpu else 0.0
        if mem.over_request_minutes is not None and total > 0:
            was = _share(old.over_request_minutes, total)
            now = _share(mem.over_request_minutes, total)
            if now > was + allowance:
                out.append(
                    GateFinding(
                        "eviction",
                        mem.container,
                        was,
                        now,
                        was + allowance,
                        f"{mem.container}: working set above the proposed memory request "
                        f"{now:.1%} of the time (current {was:.1%}; no memory limit: eviction "
                        "risk)",
                    )
                )
    for cpu in proposed.cpu:
        old_cpu = current.container_cpu(cpu.container)
        if old_cpu is None:
            continue
        was = _share(old_cpu.over_request_minutes, old_cpu.container_minutes)
        now = _share(cpu.over_request_minutes, cpu.container_minutes)
        allowed = was + allowance
        if now > allowed:
            out.append(
                GateFinding(
                    "cpu",
                    cpu.container,
                    was,
                    now,
                    allowed,
                    f"{cpu.container}: CPU above the proposed request {now:.1%} of the "
                    f"container-minutes (current {was:.1%}, allowed {allowed:.1%})",
                )
            )
    was_short = current.replicas.shortfall_minutes or 0.0
    now_short = proposed.replicas.shortfall_minutes or 0.0
    allowed_short = allowed_shortfall(was_short, proposed.window_s, shortfall_allowance)
    if now_short > allowed_short:
        out.append(
            GateFinding(
                "shortfall",
                None,
                was_short,
                now_short,
                allowed_short,
                f"capacity shortfall {now_short:g} min under the proposed HPA, "
                f"{was_short:g} min under the current one (allowed {allowed_short:g})",
            )
        )
    return tuple(out)
