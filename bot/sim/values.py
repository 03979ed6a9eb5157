"""A simulated service's declared values, both ways: as the repository would declare them, and
changed the way merging the bot's field changes would change them.

``declared_workload(service)`` is the ``DeclaredWorkload`` discovery would read from the
service's manifest (``bot.sim.manifests.service_yaml``); ``apply_changes(service, changes)``
is the service after a merge of ``changes`` (``FieldChange`` values: cores, bytes, replicas,
percent), with the editor's rules for HPA metrics (``bot.manifests.metric_edits``): a per-container
target where the HPA has only the pod-level ``Resource`` metric of that resource replaces it by
one ``ContainerResource`` metric per changed container; a per-container target for a container
without a metric adds one; a target proposed as None removes its metric; a limit proposed as
None is removed. The simulated HPA scales on CPU only: a memory target is refused.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from bot.model import (
    DeclaredContainer,
    DeclaredHPA,
    DeclaredWorkload,
    FieldChange,
    FieldId,
    HpaTarget,
    ResourceValues,
    WorkloadRef,
)
from bot.sim.errors import SimError
from bot.sim.spec import ContainerSpec, HpaMetric, HpaSpec, ServiceSpec


def declared_workload(service: ServiceSpec) -> DeclaredWorkload:
    """What discovery reads from ``service``'s manifest (environment ``default``)."""
    ref = service_ref(service)
    containers = tuple(
        DeclaredContainer(
            c.name,
            ResourceValues(c.cpu_request_cores, c.memory_request_bytes),
            ResourceValues(c.cpu_limit_cores, c.memory_limit_bytes),
        )
        for c in service.containers
    )
    hpa = None
    if service.hpa is not None:
        targets = tuple(
            HpaTarget("cpu", m.target_percent, m.container)
            for m in service.hpa.targets(service.containers[0].name)
        )
        hpa = DeclaredHPA(service.name, service.hpa.min_replicas, service.hpa.max_replicas, targets)
    return DeclaredWorkload(ref, None if hpa else service.replicas, containers, hpa)


def service_ref(service: ServiceSpec) -> WorkloadRef:
    """The workload of ``service`` in the ``default`` environment."""
    return WorkloadRef(service.kind, service.namespace, service.name)


def _container(spec: ContainerSpec, change: FieldChange) -> ContainerSpec:
    value = change.proposed
    if change.field == FieldId.REQUESTS_CPU and value is not None:
        return replace(spec, cpu_request_cores=float(value))
    if change.field == FieldId.REQUESTS_MEMORY and value is not None:
        return replace(spec, memory_request_bytes=int(value))
    if change.field == FieldId.LIMITS_CPU:
        return replace(spec, cpu_limit_cores=None if value is None else float(value))
    if change.field == FieldId.LIMITS_MEMORY:
        return replace(spec, memory_limit_bytes=None if value is None else int(value))
    raise SimError(f"{change.field} of {change.container!r}: not a value the simulator can set")


def _metrics(hpa: HpaSpec, first: str, changes: list[FieldChange]) -> tuple[HpaMetric, ...]:
    metrics = list(hpa.targets(first))
    per_container = [c for c in changes if c.container is not None]
    has_own = {m.container for m in metrics}
    if any(c.container not in has_own for c in per_container):
        # a pod-level metric is replaced by the per-container ones (or they are added)
        metrics = [m for m in metrics if m.container is not None]
    for change in changes:
        metrics = [m for m in metrics if m.container != change.container]
        if change.proposed is not None:
            metrics.append(HpaMetric(int(change.proposed), change.container))
    if not metrics:
        raise SimError(f"the changes leave the HPA of {first!r}'s pod without a metric")
    return tuple(metrics)


def apply_changes(service: ServiceSpec, changes: Iterable[FieldChange]) -> ServiceSpec:
    """``service`` with ``changes`` merged (module doc); an unknown field or container is a
    ``SimError``."""
    containers = {c.name: c for c in service.containers}
    hpa = service.hpa
    targets: list[FieldChange] = []
    for change in changes:
        if change.field.is_request_or_limit:
            if change.container not in containers:
                raise SimError(f"{service.name} has no container {change.container!r}")
            containers[change.container] = _container(containers[change.container], change)
        elif change.field in (
            FieldId.HPA_MIN_REPLICAS,
            FieldId.HPA_MAX_REPLICAS,
            FieldId.HPA_TARGET_CPU,
        ):
            if hpa is None:
                raise SimError(f"{service.name}: {change.field} without an HPA")
            if change.field == FieldId.HPA_TARGET_CPU:
                targets.append(change)
            elif change.proposed is None:
                raise SimError(f"{service.name}: {change.field} cannot be removed")
            elif change.field == FieldId.HPA_MIN_REPLICAS:
                hpa = replace(hpa, min_replicas=int(change.proposed))
            else:
                hpa = replace(hpa, max_replicas=int(change.proposed))
        else:
            raise SimError(f"{service.name}: {change.field} is not simulated")
    if hpa is not None and targets:
        first = service.containers[0].name
        hpa = replace(hpa, metrics=_metrics(hpa, first, targets))
    return replace(
        service, containers=tuple(containers[c.name] for c in service.containers), hpa=hpa
    )
