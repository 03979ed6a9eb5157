"""What a repository declares and what Prometheus recorded: workload references, declared
workloads, autoscalers and namespace bounds, the inventory, and the usage history."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final, Literal, TypeAlias

import numpy as np

from bot.model.units import (
    DEFAULT_ENVIRONMENT,
    RESOURCES,
    FieldId,
    FloatArray,
    IntArray,
    Policy,
    Resource,
)

# --------------------------------------------------------------------------- identities


@dataclass(frozen=True, slots=True, order=True)
class WorkloadRef:
    """One workload in one environment: ``Deployment/shop/frontend@overlays/prod``."""

    kind: str
    namespace: str
    name: str
    environment: str = DEFAULT_ENVIRONMENT

    @property
    def key(self) -> str:
        """Stable identifier, used in branch names, state JSON and sharding."""
        return f"{self.environment}/{self.namespace}/{self.kind}/{self.name}"

    def __str__(self) -> str:
        return f"{self.kind}/{self.namespace}/{self.name}@{self.environment}"


@dataclass(frozen=True, slots=True)
class Location:
    """Where one value is written: repository-relative POSIX path, 1-based line, YAML path."""

    file: str
    line: int
    yaml_path: tuple[str | int, ...] = ()
    document: int = 0


@dataclass(frozen=True, slots=True)
class SourceError:
    """A problem found in a repository file; ``line`` is 1-based, 0 when unknown."""

    file: str
    line: int
    message: str


@dataclass(frozen=True, slots=True)
class Note:
    """A data-quality or decision note attached to a workload (``code`` is machine-readable)."""

    code: str
    message: str
    container: str | None = None


# --------------------------------------------------------------------------- inventory


@dataclass(frozen=True, slots=True)
class ResourceValues:
    """Requests or limits of one container: CPU in cores, memory in bytes; ``None`` = unset."""

    cpu_cores: float | None = None
    memory_bytes: int | None = None

    def get(self, resource: Resource) -> float | int | None:
        return self.cpu_cores if resource == "cpu" else self.memory_bytes


@dataclass(frozen=True, slots=True)
class ContainerSettings:
    """What a repository's settings say of one container (``bot.settings``): the
    policy per resource it sets (absent: the engine's default, ``recommend.inputs``) and
    Tortoise's ``minAllocatedResources`` / ``maxAllocatedResources`` in cores and bytes (None:
    a declared VPA's ``minAllowed`` / ``maxAllowed``, else no bound)."""

    policies: Mapping[Resource, Policy] = field(default_factory=dict)
    min_allocated: ResourceValues | None = None
    max_allocated: ResourceValues | None = None
    max_allocatable: ResourceValues | None = None
    """The largest request its environment's nodes can hold (None: no bound)."""


# --------------------------------------------------------------------------- namespace bounds


RuntimeMemoryKind: TypeAlias = Literal[
    "max_heap", "initial_heap", "max_ram_percentage", "gomemlimit"
]
"""A runtime memory setting: ``-Xmx``, ``-Xms``, ``-XX:MaxRAMPercentage`` or ``GOMEMLIMIT``."""


@dataclass(frozen=True, slots=True)
class RuntimeMemory:
    """A runtime memory setting a container's env or args declare (``bot.manifests.runtime``):
    ``value`` in bytes (a heap, ``GOMEMLIMIT``) or percent (``MaxRAMPercentage``); None when it
    comes from ``valueFrom`` (unknown to the repository). ``source`` says where
    (``env JAVA_TOOL_OPTIONS``, ``args``), ``text`` the setting as written (``-Xmx768m``)."""

    kind: RuntimeMemoryKind
    source: str
    text: str
    value: float | None


@dataclass(frozen=True, slots=True)
class DeclaredLimitRange:
    """What the ``LimitRange`` objects of a workload's namespace bound (``v1``, ``type:
    Container`` and ``type: Pod``), merged: the largest ``min``, the smallest ``max`` and
    ``maxLimitRequestRatio``; ``name`` names them with their files (``limits (ns/lr.yaml:3)``).
    Cores and bytes; ``max_ratio`` per resource."""

    name: str
    min: ResourceValues = ResourceValues()
    max: ResourceValues = ResourceValues()
    max_ratio: Mapping[Resource, float] = field(default_factory=dict)
    default_limit: ResourceValues = ResourceValues()
    default_request: ResourceValues = ResourceValues()
    pod_max: ResourceValues = ResourceValues()
    """``type: Pod`` ``max``: the sum over a pod's containers."""


@dataclass(frozen=True, slots=True)
class DeclaredQuota:
    """A ``ResourceQuota`` of a workload's namespace: ``hard`` by the request or limit field it
    bounds the namespace's sum of (its ``requests.cpu`` ... keys; ``cpu`` and ``memory`` are
    read as requests) in cores and bytes."""

    name: str
    where: str
    """``file:line`` of the object."""
    hard: Mapping[FieldId, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class DeclaredPDB:
    """A ``PodDisruptionBudget`` selecting a workload's pods (its ``matchLabels`` all in the pod
    template's labels, same namespace): ``min_available`` / ``max_unavailable`` as written (a
    count or a percentage such as ``"50%"``)."""

    name: str
    where: str
    min_available: int | str | None = None
    max_unavailable: int | str | None = None


@dataclass(frozen=True, slots=True)
class NamespaceBounds:
    """What a workload's namespace and pods already declare that bounds its proposals
    (``bot.manifests.namespace_bounds``): its LimitRange (None: none), its quotas and the PDBs
    that select its pods."""

    limit_range: DeclaredLimitRange | None = None
    quotas: tuple[DeclaredQuota, ...] = ()
    pdbs: tuple[DeclaredPDB, ...] = ()


@dataclass(frozen=True, slots=True)
class DeclaredContainer:
    """A container as the repository declares it.

    ``locations`` maps a field (``requests.cpu``, ``limits.memory`` ...) to where it is written.
    ``init``: an ordinary init container (runs to completion before the others; left alone).
    ``sidecar``: a native sidecar, an ``initContainers`` item with ``restartPolicy: Always``; it
    runs beside the containers for the pod's life, so it is sized like one (``init`` is False).
    ``init_sized``: an ordinary init container sized like a container because the repository
    says so (``containers.init: propose``; ``init`` is False).
    """

    name: str
    requests: ResourceValues = ResourceValues()
    limits: ResourceValues = ResourceValues()
    locations: Mapping[str, Location] = field(default_factory=dict)
    init: bool = False
    sidecar: bool = False
    init_sized: bool = False
    runtime: tuple[RuntimeMemory, ...] = ()
    """Runtime memory settings its env and args declare (heap, ``GOMEMLIMIT``)."""
    extended: Mapping[str, float] = field(default_factory=dict)
    """Extended resources it requests (``nvidia.com/gpu`` -> 1); never proposed."""
    restart_on_resize: tuple[Resource, ...] = ()
    """Resources whose ``resizePolicy`` is ``restartPolicy: RestartContainer``: an in-place
    resize of them restarts the container."""

    @property
    def mark(self) -> str:
        """How outputs label it beside its name: ``sidecar (init)``, ``init`` or empty."""
        return "sidecar (init)" if self.sidecar else "init" if self.init or self.init_sized else ""


@dataclass(frozen=True, slots=True)
class HpaTarget:
    """One HPA resource target in percent; ``container`` is None for a pod-level ``Resource``."""

    resource: Resource
    utilization_percent: int
    container: str | None = None


KubernetesVersion: TypeAlias = tuple[int, int]
"""A cluster's Kubernetes version as (major, minor), e.g. ``(1, 30)``."""

ScalingPolicyType = Literal["Pods", "Percent"]
SelectPolicy = Literal["Max", "Min", "Disabled"]


@dataclass(frozen=True, slots=True)
class ScalingPolicy:
    """One ``behavior.scaleUp|scaleDown.policies`` item: at most ``value`` pods (``Pods``) or
    ``value`` percent of the replicas (``Percent``) added or removed per ``period_s``."""

    type: ScalingPolicyType
    value: int
    period_s: int


@dataclass(frozen=True, slots=True)
class ScalingRules:
    """One direction of an HPA's ``behavior`` with the upstream defaults filled in (``D2`` in
    ``pkg/apis/autoscaling/v2/defaults.go``): a declared field replaces its default only."""

    stabilization_s: int
    """``stabilizationWindowSeconds``: recommendations of this many seconds are weighed."""
    policies: tuple[ScalingPolicy, ...]
    select: SelectPolicy = "Max"
    """``selectPolicy``: the policy allowing the largest change (``Max``), the smallest
    (``Min``), or no change in this direction (``Disabled``)."""
    tolerance: float = 0.1
    """``tolerance`` (alpha in Kubernetes 1.33): no change while the usage ratio is within it;
    else the controller's ``--horizontal-pod-autoscaler-tolerance`` (0.1)."""


@dataclass(frozen=True, slots=True)
class HpaBehavior:
    """An HPA's ``spec.behavior`` (``DEFAULT_BEHAVIOR`` where it declares none): what the
    replay of its controller uses (``recommend/replay/controller.py``)."""

    scale_up: ScalingRules = ScalingRules(
        0, (ScalingPolicy("Pods", 4, 15), ScalingPolicy("Percent", 100, 15))
    )
    scale_down: ScalingRules = ScalingRules(300, (ScalingPolicy("Percent", 100, 15),))

    @property
    def declared(self) -> bool:
        """Whether anything differs from the defaults."""
        return self != DEFAULT_BEHAVIOR


DEFAULT_BEHAVIOR: Final = HpaBehavior()
"""The behaviour of an HPA that declares none (the controller's defaults and flags)."""
MAX_WINDOW_S: Final = 3600
MAX_PERIOD_S: Final = 1800
"""The Kubernetes API's bounds of ``stabilizationWindowSeconds`` and ``periodSeconds``."""


@dataclass(frozen=True, slots=True)
class KedaScaler:
    """The KEDA ``ScaledObject`` behind a ``DeclaredHPA``: KEDA generates that HPA (named
    ``keda-hpa-<name>`` unless ``advanced.horizontalPodAutoscalerConfig.name`` says otherwise)
    from the ScaledObject's replica counts, its ``cpu``/``memory`` triggers and its behavior
    (``bot.manifests.keda``)."""

    name: str
    min_replica_count: int
    """``minReplicaCount`` as declared (KEDA's default 0: scaled to zero when idle)."""
    external: tuple[str, ...] = ()
    """The types of the triggers the bot neither models nor edits (``kafka``, ``prometheus``,
    ``cpu (AverageValue)`` ...), sorted."""


@dataclass(frozen=True, slots=True)
class DeclaredHPA:
    """An ``autoscaling/v2`` HorizontalPodAutoscaler linked to its workload."""

    name: str
    min_replicas: int | None
    max_replicas: int
    targets: tuple[HpaTarget, ...] = ()
    other_metrics: int = 0
    """Number of metrics that are not CPU/memory Resource/ContainerResource (kept untouched)."""
    locations: Mapping[str, Location] = field(default_factory=dict)
    container_resource: bool = True
    """Whether the repository can express per-container (``ContainerResource``) metrics for this
    HPA: raw YAML and Kustomize can; ``autoscaling/v1`` and Helm values (unless the mapping names
    per-container targets) cannot."""
    behavior: HpaBehavior = DEFAULT_BEHAVIOR
    """``spec.behavior`` with the defaults filled in (Helm values, ``autoscaling/v1``: the
    defaults)."""
    keda: KedaScaler | None = None
    """Set when KEDA generates this HPA from a ``ScaledObject`` (its name is KEDA's HPA's)."""

    @property
    def scaler(self) -> str:
        """What outputs call it: ``KEDA ScaledObject web`` or ``HorizontalPodAutoscaler web``."""
        if self.keda is not None:
            return f"KEDA ScaledObject {self.keda.name}"
        return f"HorizontalPodAutoscaler {self.name}"

    @property
    def external_only(self) -> bool:
        """A ScaledObject with no ``cpu``/``memory`` Utilization trigger: KEDA scales the
        workload on its external triggers alone (its replicas are not proposed for)."""
        return self.keda is not None and not self.targets


@dataclass(frozen=True, slots=True)
class VpaContainerPolicy:
    """One ``resourcePolicy.containerPolicies`` entry (``container`` may be ``*``)."""

    container: str
    mode: str | None = None
    min_allowed: ResourceValues = ResourceValues()
    max_allowed: ResourceValues = ResourceValues()
    controlled_resources: tuple[Resource, ...] = RESOURCES
    controlled_values: str | None = None


@dataclass(frozen=True, slots=True)
class DeclaredVPA:
    """An ``autoscaling.k8s.io/v1`` VerticalPodAutoscaler linked to its workload."""

    name: str
    update_mode: str | None = None
    container_policies: tuple[VpaContainerPolicy, ...] = ()
    locations: Mapping[str, Location] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class DeclaredWorkload:
    """A workload (``WorkloadKind``) in one environment, as rendered, with value locations."""

    ref: WorkloadRef
    replicas: int | None
    containers: tuple[DeclaredContainer, ...]
    hpa: DeclaredHPA | None = None
    vpa: DeclaredVPA | None = None
    files: tuple[str, ...] = ()
    locations: Mapping[str, Location] = field(default_factory=dict)
    managed_by_tortoise: bool = False
    """A live Tortoise object (mode not Off) in the repository manages this workload."""
    bounds: NamespaceBounds = NamespaceBounds()
    """What its namespace's LimitRange, ResourceQuotas and PDBs declare."""
    pod_requests: ResourceValues = ResourceValues()
    pod_limits: ResourceValues = ResourceValues()
    """Pod-level ``spec.resources`` of the pod template (Kubernetes 1.32+), read, never
    edited: the containers' requests stay within the pod's limits."""
    labels: Mapping[str, str] = field(default_factory=dict)
    """Its pod template's labels over its own (a Job's runs share them)."""

    def container(self, name: str) -> DeclaredContainer | None:
        return next((c for c in self.containers if c.name == name), None)


@dataclass(frozen=True, slots=True)
class EnvironmentDeployment:
    """Where one environment is deployed, as the repository's Argo CD / Flux objects say, and
    whether the bot proposes changes for it (``docs/manifests.md``, GitOps)."""

    environment: str
    deployed_by: tuple[str, ...] = ()
    """The objects that deploy it (``Application shop (argocd/shop.yaml:3)``); empty: none."""
    cluster: str | None = None
    """The cluster's name ('' the unnamed cluster an Argo CD runs in); None: no object says."""
    namespace: str | None = None
    """The destination namespace of its objects that declare none; None: unset."""
    clusters: tuple[str, ...] = ()
    """Every cluster its objects deploy it to, ``cluster`` first (its history is read there)."""
    selector: Mapping[str, str] = field(default_factory=dict)
    """Prometheus label matchers the deployment implies (``{cluster: name}``)."""
    proposed: bool = True
    """False: read and shown, never proposed for (``reason``)."""
    reason: str = ""
    """Why it is not proposed for."""
    merged: tuple[str, ...] = ()
    """Environments whose workloads read the same pods and are proposed for here instead."""


@dataclass(frozen=True, slots=True)
class SkippedObject:
    """An object that runs pods but that the bot does not right-size (its kind), listed with
    why so nothing is ignored in silence (``bot.manifests.unsupported``)."""

    ref: WorkloadRef
    api_version: str
    location: Location
    """Its ``kind:`` line."""
    reason: str


@dataclass(frozen=True, slots=True)
class Inventory:
    """Everything a repository declares, per environment, plus every problem found."""

    environments: tuple[str, ...]
    workloads: tuple[DeclaredWorkload, ...]
    errors: tuple[SourceError, ...] = ()
    deployments: tuple[EnvironmentDeployment, ...] = ()
    """Per environment, where it is deployed and whether it is proposed for (GitOps)."""
    not_proposed: Mapping[WorkloadRef, str] = field(default_factory=dict)
    """Workloads listed but never proposed for, with why (an environment no GitOps object
    deploys, a copy of the same pods proposed for in another environment)."""
    notes: tuple[SourceError, ...] = ()
    """GitOps objects not read or read on an assumption, with why; not problems."""
    warnings: tuple[SourceError, ...] = ()
    """What the cluster would not do as declared, the files still read (two HPAs on one
    workload); the workload concerned is in ``not_proposed``."""
    skipped: tuple[SkippedObject, ...] = ()
    """Objects with a pod spec of a kind the bot does not right-size, each with its reason."""

    def deployment(self, environment: str) -> EnvironmentDeployment | None:
        """The deployment of ``environment``, None when none is known."""
        return next((d for d in self.deployments if d.environment == environment), None)


# --------------------------------------------------------------------------- history


def _empty_f() -> FloatArray:
    return np.zeros(0, dtype=np.float64)


def _empty_i() -> IntArray:
    return np.zeros(0, dtype=np.int32)


@dataclass(frozen=True, slots=True)
class ContainerHistory:
    """Usage samples of one container across all pods of its workload.

    Each triple of arrays is one series family in time order within a pod:
    ``cpu_t`` unix seconds, ``cpu_pod`` index into ``WorkloadHistory.pods``, ``cpu_cores`` cores;
    ``mem_t``/``mem_pod``/``mem_bytes`` working-set bytes;
    ``oom_t``/``oom_pod``/``oom_request_bytes`` one row per OOM kill with the memory request
    in force at the time; ``restart_t`` one time per restart of the container in any pod.
    """

    name: str
    cpu_t: FloatArray = field(default_factory=_empty_f)
    cpu_pod: IntArray = field(default_factory=_empty_i)
    cpu_cores: FloatArray = field(default_factory=_empty_f)
    mem_t: FloatArray = field(default_factory=_empty_f)
    mem_pod: IntArray = field(default_factory=_empty_i)
    mem_bytes: FloatArray = field(default_factory=_empty_f)
    oom_t: FloatArray = field(default_factory=_empty_f)
    oom_pod: IntArray = field(default_factory=_empty_i)
    oom_request_bytes: FloatArray = field(default_factory=_empty_f)
    restart_t: FloatArray = field(default_factory=_empty_f)


@dataclass(frozen=True, slots=True)
class WorkloadHistory:
    """How one workload ran over ``[start_s, end_s]`` (unix seconds)."""

    ref: WorkloadRef
    start_s: float
    end_s: float
    pods: tuple[str, ...] = ()
    containers: Mapping[str, ContainerHistory] = field(default_factory=dict)
    replicas_t: FloatArray = field(default_factory=_empty_f)
    replicas: FloatArray = field(default_factory=_empty_f)
    quality: tuple[Note, ...] = ()
    crash_loops_s: tuple[tuple[float, float], ...] = ()
    """Half-open ``[start, end)`` periods (unix seconds) when a container crash-looped."""
