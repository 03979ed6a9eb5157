"""The engine's input: one workload's declared state, policies, previous state and history.

``build_input`` derives it from what discovery and metrics produce (``DeclaredWorkload`` +
``WorkloadHistory``) and each container's effective settings (``bot.settings`` applies the
defaults below, with ``default_policy``).

Default policy per container resource (Tortoise ``UpdateTortoiseAutoscalingPolicyInStatus``,
adapted to manifests): with an HPA, a resource is ``horizontal`` when the HPA scales on it (a
``ContainerResource`` metric for that container, or a pod-level ``Resource`` metric, which the
bot replaces by per-container metrics as Tortoise does), else ``vertical``; without an HPA every
resource is ``vertical`` (the bot does not create HPAs). A resource without a request is ``off``
("no request, no recommendation"). Configured policies (``ContainerSettings``) win over the
default; a bound nobody configures is a declared VPA's ``minAllowed`` / ``maxAllowed``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from bot.model import (
    ContainerSettings,
    DeclaredHPA,
    DeclaredLimitRange,
    DeclaredWorkload,
    EmergencyPhase,
    FieldId,
    KubernetesVersion,
    Number,
    Policy,
    Resource,
    ResourceValues,
    RuntimeMemory,
    WorkloadHistory,
    WorkloadRef,
)
from bot.recommend import keda, kubernetes


@dataclass(frozen=True, slots=True)
class ContainerInput:
    """One container: current requests/limits (cores, bytes), policy and allocation bounds."""

    name: str
    requests: ResourceValues = field(default_factory=ResourceValues)
    limits: ResourceValues = field(default_factory=ResourceValues)
    cpu_policy: Policy = "vertical"
    memory_policy: Policy = "vertical"
    min_allocated: ResourceValues = field(default_factory=ResourceValues)
    """Tortoise ``minAllocatedResources`` (also the VPA ``minAllowed``)."""
    max_allocated: ResourceValues = field(default_factory=ResourceValues)
    """Tortoise ``maxAllocatedResources`` (also the VPA ``maxAllowed``)."""
    max_allocatable: ResourceValues = field(default_factory=ResourceValues)
    """The largest node's allocatable CPU and memory of the workload's environment: no request
    is proposed above it (``node.max_allocatable``; unset: no bound)."""
    limit_range: DeclaredLimitRange | None = None
    """The namespace's LimitRange (``bot.recommend.namespace``; None: none)."""
    pod_room: ResourceValues = field(default_factory=ResourceValues)
    """A LimitRange ``type: Pod`` max less the other containers' limits: the most this
    container's limit (and so its request) may be (unset: no bound)."""
    runtime: tuple[RuntimeMemory, ...] = ()
    """Its runtime memory settings (heap, ``GOMEMLIMIT``): the memory limit keeps room."""

    def policy(self, resource: Resource) -> Policy:
        return self.cpu_policy if resource == "cpu" else self.memory_policy


@dataclass(frozen=True, slots=True)
class EmergencyState:
    """``requested``: the repository config puts the workload in emergency now;
    ``previous_phase``: the phase the last proposal left (read from the PR or repository)."""

    requested: bool = False
    previous_phase: EmergencyPhase = "normal"


@dataclass(frozen=True, slots=True)
class AfterRevert:
    """A merged revert of the workload's values (rule ``after_revert.floor``,
    ``bot.recommend.after_revert``): ``revert`` is the number of the merged revert pull request,
    ``reverted`` that of the pull request whose outcome regressed, ``values`` the value
    ``reverted`` had set for each field the revert restored, by (container, field); the
    container is None for the replica bounds and a pod-level HPA target. ``margin`` is
    ``verify.after_revert_margin``."""

    revert: int
    reverted: int
    values: Mapping[tuple[str | None, FieldId], Number] = field(default_factory=dict)
    margin: float = 0.2

    def value(self, container: str | None, field_id: FieldId) -> Number | None:
        """The value ``reverted`` set for ``field_id`` of ``container``, None if not restored."""
        return self.values.get((container, field_id))


@dataclass(frozen=True, slots=True)
class WorkloadInput:
    """Everything ``engine.recommend`` reads for one workload."""

    ref: WorkloadRef
    containers: tuple[ContainerInput, ...]
    history: WorkloadHistory
    hpa: DeclaredHPA | None = None
    replicas: int | None = None
    """The manifest's ``spec.replicas`` (None when an HPA owns it)."""
    emergency: EmergencyState = EmergencyState()
    after_revert: AfterRevert | None = None
    """The values a merged revert restored and those that regressed (None: no revert)."""
    target_changed_s: Mapping[tuple[str, Resource], float] = field(default_factory=dict)
    """When each HPA target (container, resource) last changed, unix s (absent: unknown)."""
    excluded_intervals_s: tuple[tuple[float, float], ...] = ()
    """Periods to drop from the history (crash loops, emergency windows), unix s [start, end)."""
    files: tuple[str, ...] = ()
    container_resource_metrics: bool = True
    """False when the repository cannot express ``ContainerResource`` HPA metrics (e.g. a chart
    without them) or the cluster does not serve them (``kubernetes.py``): targets are then held
    with a skip reason instead of a broken edit."""
    kubernetes_note: str | None = None
    """What the environment's Kubernetes version holds back (``kubernetes.version_note``)."""
    scaler: DeclaredHPA | None = None
    """The autoscaler as declared, a KEDA ScaledObject's included even when ``hpa`` is None
    (external triggers alone: ``keda.engine_hpa``)."""

    def container(self, name: str) -> ContainerInput | None:
        return next((c for c in self.containers if c.name == name), None)


def default_policy(
    container: str, resource: Resource, request: float | None, hpa: DeclaredHPA | None
) -> Policy:
    """The policy of one container resource when the config names none (see module doc)."""
    if not request:
        return "off"
    if hpa is None:
        return "vertical"
    for target in hpa.targets:
        if target.resource == resource and target.container in (container, None):
            return "horizontal"
    return "vertical"


def build_input(
    workload: DeclaredWorkload,
    history: WorkloadHistory,
    *,
    containers: Mapping[str, ContainerSettings],
    emergency: EmergencyState | None = None,
    after_revert: AfterRevert | None = None,
    target_changed_s: Mapping[tuple[str, Resource], float] | None = None,
    excluded_intervals_s: tuple[tuple[float, float], ...] = (),
    container_resource_metrics: bool | None = None,
    kubernetes_version: KubernetesVersion | None = None,
) -> WorkloadInput:
    """A ``WorkloadInput`` from discovery and metrics output.

    ``containers`` is each container's effective settings by name, resolved by
    ``bot.settings`` (policy per resource, allocation bounds; the defaults of the module doc
    already applied); init containers are left out. ``container_resource_metrics`` defaults to
    what discovery found (``DeclaredHPA.container_resource``) and ``kubernetes_version`` (the
    environment's, None: unknown) serves; the HPA is taken as that version runs it
    (``kubernetes.py``).
    """
    if container_resource_metrics is None:
        container_resource_metrics = kubernetes.container_resource_metrics(
            workload.hpa, kubernetes_version
        )
    hpa = keda.engine_hpa(workload.hpa and kubernetes.served_hpa(workload.hpa, kubernetes_version))
    inputs = []
    for declared in workload.containers:
        if declared.init:
            continue
        resolved = containers.get(declared.name)
        if resolved is None:
            raise ValueError(f"no settings resolved for container {declared.name!r}")
        inputs.append(
            ContainerInput(
                name=declared.name,
                requests=declared.requests,
                limits=declared.limits,
                cpu_policy=resolved.policies["cpu"],
                memory_policy=resolved.policies["memory"],
                min_allocated=resolved.min_allocated or ResourceValues(),
                max_allocated=resolved.max_allocated or ResourceValues(),
                max_allocatable=resolved.max_allocatable or ResourceValues(),
                limit_range=workload.bounds.limit_range,
                pod_room=pod_room(workload, declared.name),
                runtime=declared.runtime,
            )
        )
    return WorkloadInput(
        ref=workload.ref,
        containers=tuple(inputs),
        history=history,
        hpa=hpa,
        replicas=workload.replicas,
        emergency=emergency or EmergencyState(),
        after_revert=after_revert,
        target_changed_s=dict(target_changed_s or {}),
        excluded_intervals_s=excluded_intervals_s,
        files=workload.files,
        container_resource_metrics=container_resource_metrics,
        kubernetes_note=kubernetes.version_note(workload.hpa, kubernetes_version),
        scaler=workload.hpa,
    )


def pod_room(workload: DeclaredWorkload, name: str) -> ResourceValues:
    """Per resource, the LimitRange ``type: Pod`` max less the limits of the pod's other
    containers (their current limit, else the LimitRange's default limit, else their request;
    init containers run before the others and are not counted): the most container ``name``'s
    limit may be. Unset where the LimitRange sets no Pod max."""
    limits = workload.bounds.limit_range
    if limits is None:
        return ResourceValues()
    room: dict[Resource, float | None] = {}
    for resource in ("cpu", "memory"):
        pod_max = limits.pod_max.get(resource)
        if pod_max is None:
            room[resource] = None
            continue
        others = 0.0
        for c in workload.containers:
            if c.name == name or c.init:
                continue
            others += float(
                c.limits.get(resource)
                or limits.default_limit.get(resource)
                or c.requests.get(resource)
                or 0.0
            )
        room[resource] = max(float(pod_max) - others, 0.0)
    memory = room["memory"]
    return ResourceValues(room["cpu"], int(memory) if memory is not None else None)
