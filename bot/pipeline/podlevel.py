"""Pod-level resources and in-place resizes: what the pod template says beyond its containers.

- **Pod-level limits** (``spec.resources.limits``, Kubernetes 1.32+): the containers' requests
  must fit in them. When the proposed requests of a resource sum to more than the pod's limit,
  the containers whose request the engine sizes get a ceiling (``max_allocated``) in
  proportion to their proposal, so the sum fits what the other containers leave, and the engine
  runs again with it (its replay replays what is proposed); those values carry rule
  ``limits.pod_limits`` and a note.
- **Pod-level requests** cover a container without a request of its own: no request is added
  to it for that resource (``requests.add_missing`` would have done so blindly, ignoring the
  pod's share); a note says so.
- **``resizePolicy``**: a change to a resource whose ``restartPolicy`` is ``RestartContainer``
  restarts the container when Kubernetes resizes the pod in place; a note says so.

Both fields are read, never edited.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Final

from bot.manifests.quantities import CPU_STEP_MILLICORES, MEMORY_STEP_BYTES
from bot.model import (
    RESOURCES,
    ContainerRecommendation,
    ContainerSettings,
    DeclaredWorkload,
    Explained,
    FieldChange,
    Note,
    Recommendation,
    Resource,
    ResourceValues,
)
from bot.recommend.rules import Rule
from bot.report.numbers import core_amount, memory


def amount(resource: Resource, value: float) -> str:
    """``1 core``, ``640 MiB``: a pod-level value in a note."""
    return core_amount(value) if resource == "cpu" else memory(value)


POD_NOTE_CODES: Final = frozenset({"pod-request-covers", "pod-limits", "resize-restarts"})
"""Codes of the notes below (``plan`` prints them under the workload's table)."""

Run = Callable[[Mapping[str, ContainerSettings]], Recommendation]
"""The engine on one workload with these container settings."""


def _floor(resource: Resource, value: float) -> float:
    """``value`` rounded down to the step the editor writes (5m, 1 MiB)."""
    if resource == "cpu":
        return math.floor(value * 1000 / CPU_STEP_MILLICORES) * CPU_STEP_MILLICORES / 1000
    return float(math.floor(value / MEMORY_STEP_BYTES) * MEMORY_STEP_BYTES)


def uncovered(
    declared: DeclaredWorkload, containers: Mapping[str, ContainerSettings]
) -> tuple[dict[str, ContainerSettings], tuple[Note, ...]]:
    """``containers`` with no request added where the pod-level request covers a container
    that has none (policy ``off``), and a note for each."""
    out = dict(containers)
    notes = []
    for c in declared.containers:
        if c.init:
            continue
        for resource in RESOURCES:
            pod = declared.pod_requests.get(resource)
            if pod is None or c.requests.get(resource):
                continue
            current = out.get(c.name, ContainerSettings())
            out[c.name] = replace(current, policies={**current.policies, resource: "off"})
            notes.append(
                Note(
                    "pod-request-covers",
                    f"{c.name} has no {resource} request of its own: the pod-level request "
                    f"({amount(resource, pod)}) covers it, so none is added",
                    c.name,
                )
            )
    return out, tuple(notes)


def ceilings(declared: DeclaredWorkload, rec: Recommendation) -> dict[str, dict[Resource, float]]:
    """Per container and resource, the ceiling that keeps the proposed requests within the
    pod-level limit (empty: they fit)."""
    out: dict[str, dict[Resource, float]] = {}
    for resource in RESOURCES:
        limit = declared.pod_limits.get(resource)
        if limit is None:
            continue
        fixed, sized = 0.0, {}
        for c in rec.containers:
            request = c.resource(resource).request
            value = float(request.proposed or 0.0)
            if request.proposed == request.current:
                fixed += value
            else:
                sized[c.name] = value
        if fixed + sum(sized.values()) <= limit or not sized:
            continue
        share = max(limit - fixed, 0.0) / sum(sized.values())
        for name, value in sized.items():
            out.setdefault(name, {})[resource] = _floor(resource, value * share)
    return out


def within_pod(
    declared: DeclaredWorkload, containers: Mapping[str, ContainerSettings], run: Run
) -> Recommendation:
    """The engine's recommendation with the pod-level rules of the module doc applied."""
    settings, notes = uncovered(declared, containers)
    rec = run(settings)
    found = ceilings(declared, rec)
    if found:
        for name, caps in found.items():
            current = settings.get(name, ContainerSettings())
            high = current.max_allocated or ResourceValues()
            cpu, memory = caps.get("cpu"), caps.get("memory")
            settings[name] = replace(
                current,
                max_allocated=ResourceValues(
                    min(x for x in (cpu, high.cpu_cores) if x is not None)
                    if cpu is not None
                    else high.cpu_cores,
                    int(min(x for x in (memory, high.memory_bytes) if x is not None))
                    if memory is not None
                    else high.memory_bytes,
                ),
            )
        rec = _labelled(run(settings), found, declared)
    return replace(rec, notes=(*rec.notes, *notes)) if notes else rec


def _labelled(
    rec: Recommendation, found: Mapping[str, Mapping[Resource, float]], declared: DeclaredWorkload
) -> Recommendation:
    """``rec`` with each value clamped to its pod ceiling named for the rule, and a note."""
    notes = []

    def value(name: str, resource: Resource, request: Explained) -> Explained:
        cap = found.get(name, {}).get(resource)
        if cap is None or request.proposed is None or request.proposed > cap + 1e-9:
            return request
        if request.proposed < cap - 1e-9:
            return request
        limit = declared.pod_limits.get(resource)
        assert limit is not None
        return Explained(
            request.current,
            request.proposed,
            Rule.LIMITS_POD_LIMITS,
            f"clamped so the containers' {resource} requests stay within the pod-level limit "
            f"{amount(resource, limit)}",
            {**request.inputs, "pod_limit": limit},
        )

    containers = []
    for c in rec.containers:
        resources = []
        for r in (c.cpu, c.memory):
            request = value(c.name, r.resource, r.request)
            resources.append(replace(r, request=request))
        containers.append(ContainerRecommendation(c.name, resources[0], resources[1]))
    for resource in RESOURCES:
        limit = declared.pod_limits.get(resource)
        if limit is not None and any(resource in caps for caps in found.values()):
            notes.append(
                Note(
                    "pod-limits",
                    f"the proposed {resource} requests are clamped to fit the pod-level limit "
                    f"{amount(resource, limit)} (spec.resources.limits)",
                )
            )
    return replace(rec, containers=tuple(containers), notes=(*rec.notes, *notes))


def resize_notes(declared: DeclaredWorkload, changes: tuple[FieldChange, ...]) -> tuple[Note, ...]:
    """A note per container whose changed resource restarts it on an in-place resize."""
    notes = []
    for c in declared.containers:
        moved = [
            r
            for r in c.restart_on_resize
            if any(
                ch.container == c.name and ch.field.is_request_or_limit and ch.field.resource == r
                for ch in changes
            )
        ]
        if moved:
            notes.append(
                Note(
                    "resize-restarts",
                    f"{c.name}: its resizePolicy restarts the container (RestartContainer) "
                    f"when its {' and '.join(moved)} is resized in place",
                    c.name,
                )
            )
    return tuple(notes)
