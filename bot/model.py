"""Seam types: the values that cross package boundaries.

Units are part of every name or of the first docstring line: CPU in cores (float), memory in
bytes (int), utilisation in percent (int, as the HPA stores it), time in unix seconds (float64
arrays) or aware ``datetime`` at the edges. Kubernetes quantity strings (``250m``, ``512Mi``)
never appear here: they live only in ``bot/manifests/quantities.py``.

Data flows one way (see ``docs/architecture.md``)::

    manifests.discover -> Inventory
    metrics.fetch      -> WorkloadHistory
    recommend.engine   -> Recommendation
    policy + noise     -> ChangeSet
    manifests.edit     -> EditResult
    forge              -> pull request, dashboard

This module imports only the standard library and numpy.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Final, Literal, TypeAlias, get_args

import numpy as np
import numpy.typing as npt

Resource: TypeAlias = Literal["cpu", "memory"]
"""A container resource the bot manages."""

RESOURCES: tuple[Resource, ...] = ("cpu", "memory")

Policy: TypeAlias = Literal["horizontal", "vertical", "off"]
"""How one container resource is scaled (Tortoise's ``autoscalingPolicy``)."""

Status: TypeAlias = Literal["changes", "no-change", "gathering-data", "skipped", "error"]
"""The outcome for one workload."""

WorkloadKind: TypeAlias = Literal[
    "Deployment", "StatefulSet", "DaemonSet", "Rollout", "CronJob", "Job"
]
"""Kinds the bot right-sizes; ``Rollout`` is Argo Rollouts' (``argoproj.io/v1alpha1``),
``CronJob`` and ``Job`` are ``batch/v1``'s."""

FloatArray: TypeAlias = npt.NDArray[np.float64]
IntArray: TypeAlias = npt.NDArray[np.int32]

MIB = 1024**2
"""Bytes in one MiB."""
GIB = 1024**3
"""Bytes in one GiB."""
SECONDS_PER_HOUR = 3600
"""Seconds in one hour."""
HOURS_PER_WEEK = 168
"""Hours in one week: the slots of a per-hour profile (hour of the week, Sunday 00 first)."""
SECONDS_PER_DAY = 86_400
"""Seconds in one day."""

DEFAULT_ENVIRONMENT = "default"
"""The environment of raw YAML outside any kustomization, and of a repo with no mapping."""

POD_LEVEL: Final = "*"
"""Container name of a pod-level ``Resource`` HPA target (its ``FieldChange.container`` is
None; a change id writes it ``-``)."""

ANY_CONTAINER: Final = "*"
"""Container name that stands for every container: a VerticalPodAutoscaler's
``containerPolicies[].containerName`` (also its default) and the opt-in file's ``min_allocated``
/ ``max_allocated`` keys; a named container's entry wins over it."""

REMOVE_METRIC: Final = "tortoise.target.remove_metric"
"""Rule of a per-container HPA target proposed as None: its ``ContainerResource`` metric is
removed (upstream ``tortoise.target.remove_metric``)."""

EmergencyPhase: TypeAlias = Literal["normal", "emergency", "back-to-normal"]
"""Tortoise's emergency phase a proposal leaves a workload in (``pkg/hpa/service.go``)."""

EMERGENCY_PHASES: tuple[EmergencyPhase, ...] = get_args(EmergencyPhase)


def emergency_phase(text: object) -> EmergencyPhase:
    """The phase named by ``text`` as read from a pull-request state; anything else is
    ``normal``."""
    for phase in EMERGENCY_PHASES:
        if text == phase:
            return phase
    return "normal"


class FieldId(StrEnum):
    """A value the bot writes: a container's request or limit, the HPA's replica bounds, or a
    per-container (or pod-level) HPA target utilisation.

    ``replicas`` is the workload's own ``spec.replicas`` (set by hand only). A ``str`` whose text (``.text``) is the one shown and stored (``requests.cpu``,
    ``hpa.target.memory``); code asks the member (``.resource``, ``.is_hpa_target``), never
    the text.
    """

    REQUESTS_CPU = "requests.cpu"
    REQUESTS_MEMORY = "requests.memory"
    LIMITS_CPU = "limits.cpu"
    LIMITS_MEMORY = "limits.memory"
    REPLICAS = "replicas"
    HPA_MIN_REPLICAS = "hpa.minReplicas"
    HPA_MAX_REPLICAS = "hpa.maxReplicas"
    HPA_TARGET_CPU = "hpa.target.cpu"
    HPA_TARGET_MEMORY = "hpa.target.memory"
    KEDA_TRIGGERS = "keda.triggers"  # KEDA cron triggers to append (FieldChange.triggers)

    @property
    def text(self) -> str:
        """The field's name as shown in reports and stored in pull-request states."""
        return self.value

    @property
    def resource(self) -> Resource | None:
        """The container resource of a request, limit or HPA target; None for replicas."""
        return _FIELD_RESOURCE.get(self)

    @property
    def is_hpa_target(self) -> bool:
        return self in (FieldId.HPA_TARGET_CPU, FieldId.HPA_TARGET_MEMORY)

    @property
    def is_hpa(self) -> bool:
        """A field of the workload's HorizontalPodAutoscaler (replica bounds or a target)."""
        return self.is_hpa_target or self in (FieldId.HPA_MIN_REPLICAS, FieldId.HPA_MAX_REPLICAS)

    @property
    def is_request(self) -> bool:
        return self in _REQUEST_FIELDS

    @property
    def is_limit(self) -> bool:
        return self in _LIMIT_FIELDS

    @property
    def is_request_or_limit(self) -> bool:
        return self.is_request or self.is_limit

    @staticmethod
    def request(resource: Resource) -> FieldId:
        return _REQUEST_FIELDS[RESOURCES.index(resource)]

    @staticmethod
    def limit(resource: Resource) -> FieldId:
        return _LIMIT_FIELDS[RESOURCES.index(resource)]

    @staticmethod
    def hpa_target(resource: Resource) -> FieldId:
        return _TARGET_FIELDS[RESOURCES.index(resource)]

    @staticmethod
    def parse(text: str) -> FieldId | None:
        """The field named ``text`` (read from outside the process), None when unknown."""
        try:
            return FieldId(text)
        except ValueError:
            return None


_REQUEST_FIELDS = (FieldId.REQUESTS_CPU, FieldId.REQUESTS_MEMORY)
_LIMIT_FIELDS = (FieldId.LIMITS_CPU, FieldId.LIMITS_MEMORY)
_TARGET_FIELDS = (FieldId.HPA_TARGET_CPU, FieldId.HPA_TARGET_MEMORY)
_FIELD_RESOURCE: Mapping[FieldId, Resource] = {
    f: r
    for group in (_REQUEST_FIELDS, _LIMIT_FIELDS, _TARGET_FIELDS)
    for f, r in zip(group, RESOURCES, strict=True)
}


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
    in force at the time.
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


# --------------------------------------------------------------------------- recommendation

Number: TypeAlias = float | int


@dataclass(frozen=True, slots=True)
class Explained:
    """A value with its provenance: ``rule`` (a stable id), one-line ``reason`` and ``inputs``."""

    current: Number | None
    proposed: Number | None
    rule: str
    reason: str
    inputs: Mapping[str, Number | str | None] = field(default_factory=dict)

    @property
    def changed(self) -> bool:
        return self.proposed is not None and self.proposed != self.current


@dataclass(frozen=True, slots=True)
class VpaEstimate:
    """The VPA recommender's estimate, in cores or bytes, before rounding to quantities."""

    target: float
    lower_bound: float
    upper_bound: float
    uncapped_target: float
    confidence: float


@dataclass(frozen=True, slots=True)
class Usage:
    """Observed usage percentiles over the window, in cores or bytes."""

    p50: float
    p90: float
    p99: float
    max: float
    samples: int = 0


@dataclass(frozen=True, slots=True)
class ResourceRecommendation:
    """Request and limit of one container resource, each explained."""

    resource: Resource
    policy: Policy
    request: Explained
    limit: Explained
    usage: Usage | None = None
    vpa: VpaEstimate | None = None


@dataclass(frozen=True, slots=True)
class ContainerRecommendation:
    name: str
    cpu: ResourceRecommendation
    memory: ResourceRecommendation

    def resource(self, resource: Resource) -> ResourceRecommendation:
        return self.cpu if resource == "cpu" else self.memory


@dataclass(frozen=True, slots=True)
class HpaTargetRecommendation:
    """Target utilisation (percent) of one ``ContainerResource`` metric."""

    container: str
    resource: Resource
    value: Explained


@dataclass(frozen=True, slots=True)
class HpaRecommendation:
    min_replicas: Explained
    max_replicas: Explained
    targets: tuple[HpaTargetRecommendation, ...] = ()
    slots: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    """Per time slot (e.g. ``Mon 09``) the (minReplicas, maxReplicas) the slot asks for."""


# --------------------------------------------------------------------------- replay


@dataclass(frozen=True, slots=True)
class CpuReplay:
    """One container's CPU over the replayed window under one set of values.

    ``container_minutes``: minutes summed over the container's pods; ``over_request_minutes``:
    of those, minutes with usage above the request (contention risk); ``over_limit_minutes``:
    above the CPU limit (throttling; None without a limit); ``p95_percent``: the 95th percentile
    of one pod's usage as a percentage of the request (None without a request).
    """

    container: str
    request_cores: float | None
    limit_cores: float | None
    container_minutes: float
    over_request_minutes: float
    over_limit_minutes: float | None
    p95_percent: float | None

    @property
    def over_request_share(self) -> float:
        """``over_request_minutes / container_minutes`` (0 without minutes)."""
        return self.over_request_minutes / self.container_minutes if self.container_minutes else 0.0


@dataclass(frozen=True, slots=True)
class MemoryReplay:
    """One container's memory over the replayed window under one set of values.

    ``oom_kills``: predicted OOM episodes (the working set reaching the limit, and recorded kills
    at a limit no higher); None without a limit. ``over_request_minutes``: without a limit,
    minutes with the working set above the request (eviction risk), else None.
    ``peak_bytes``: highest working set; ``headroom_percent``: ``(limit or request − peak) /
    (limit or request) × 100`` (negative: the peak is above it).
    """

    container: str
    request_bytes: int | None
    limit_bytes: int | None
    oom_kills: int | None
    over_request_minutes: float | None
    peak_bytes: float
    headroom_percent: float | None


@dataclass(frozen=True, slots=True)
class ReplicaReplay:
    """Replicas over the replayed window (the HPA controller replayed, or as recorded).

    ``shortfall_minutes``: minutes of capacity shortfall (None without an HPA): at maxReplicas
    with utilisation above the target beyond the tolerance, or new pods still starting while
    the serving pods run above their requests. ``by_hour``: per hour of the week (Sunday 00 first,
    in ``time_zone``), mean replicas; empty when not computed.
    """

    mean: float
    p95: float
    max: float
    pod_hours: float
    shortfall_minutes: float | None
    replayed: bool
    """True when an HPA was replayed; False when the recorded replica counts are used."""
    by_hour: tuple[float, ...] = ()
    time_zone: str = "UTC"


@dataclass(frozen=True, slots=True)
class ReplayFigures:
    """What one set of values would have done over the window (``bot/recommend/replay``).

    ``core_hours`` / ``gib_hours``: requested CPU (cores) and memory (GiB) summed over pods and
    hours; ``window_s``: the length of the window replayed.
    """

    window_s: float
    cpu: tuple[CpuReplay, ...]
    memory: tuple[MemoryReplay, ...]
    replicas: ReplicaReplay
    core_hours: float
    gib_hours: float

    def container_cpu(self, name: str) -> CpuReplay | None:
        return next((c for c in self.cpu if c.container == name), None)

    def container_memory(self, name: str) -> MemoryReplay | None:
        return next((c for c in self.memory if c.container == name), None)

    @property
    def over_request_minutes(self) -> float:
        """CPU minutes over request, summed over containers."""
        return sum(c.over_request_minutes for c in self.cpu)

    @property
    def container_minutes(self) -> float:
        """Container-minutes, summed over containers (CPU samples)."""
        return sum(c.container_minutes for c in self.cpu)

    @property
    def oom_kills(self) -> int:
        """Predicted OOM episodes, summed over containers with a limit."""
        return sum(m.oom_kills or 0 for m in self.memory)


@dataclass(frozen=True, slots=True)
class GateFinding:
    """One way a proposal's replay is worse than the current values'.

    ``kind``: ``oom`` (more OOM kills), ``eviction`` (more minutes above a memory request
    without a limit, beyond the allowance), ``cpu`` (more CPU minutes over request beyond the
    allowance) or ``shortfall`` (more capacity shortfall); ``container`` None for the workload.
    """

    kind: str
    container: str | None
    current: float
    proposed: float
    allowed: float
    message: str


@dataclass(frozen=True, slots=True)
class ReplayComparison:
    """The replay of the current and the proposed values over the same window.

    ``gate``: ``on`` / ``report-only`` / ``off``; ``held``: fields the gate moved back, as
    ``(field, container, wanted, kept)``; ``findings``: what the proposal as wanted did worse
    (with ``gate: on`` the proposal shown is the backed-off one, whose figures are ``proposed``).
    """

    current: ReplayFigures
    proposed: ReplayFigures
    gate: str = "on"
    findings: tuple[GateFinding, ...] = ()
    held: tuple[tuple[FieldId, str | None, Number | None, Number | None], ...] = ()
    extended: Mapping[str, float] = field(default_factory=dict)
    """Extended resources per pod (``nvidia.com/gpu`` -> 1): priced per replica, never
    proposed."""


@dataclass(frozen=True, slots=True)
class Backtest:
    """Out-of-sample evidence: the engine with the same settings on the history as it stood
    ``trained_until_s`` (one ``forecast.horizon_days`` ago), its values replayed on the days since.

    ``proposed``: the figures of what it would have proposed then (its current values where it
    proposed nothing), ``current``: the figures of the current values, both over the scored days
    only (``window_s``); ``status``: that earlier run's status. ``unavailable``: why there is no
    backtest (a history too short, nothing to replay); the figures are then None.
    """

    trained_until_s: float
    proposed: ReplayFigures | None = None
    current: ReplayFigures | None = None
    status: str | None = None
    unavailable: str | None = None
    expected: tuple[tuple[str, float], ...] = ()
    """Per container, what the backtest predicts for the proposal: the share of the scored
    minutes over the backtest's request × the factor the proposal was raised by for it
    (``replay.backtest_raise``; 1 where it was not)."""


@dataclass(frozen=True, slots=True)
class Recommendation:
    """What the engine proposes for one workload.

    ``replay``: the current and proposed values replayed on the history (None when there was
    nothing to replay: no change, too little data, an error). ``backtest``: the same engine one
    horizon ago scored on the days since (None with ``replay.backtest: off`` or too little data).
    """

    ref: WorkloadRef
    status: Status
    reasons: tuple[str, ...] = ()
    containers: tuple[ContainerRecommendation, ...] = ()
    hpa: HpaRecommendation | None = None
    notes: tuple[Note, ...] = ()
    replay: ReplayComparison | None = None
    backtest: Backtest | None = None
    keda_triggers: tuple[tuple[tuple[str, str], ...], ...] = ()  # cron metadata to append


@dataclass(frozen=True, slots=True)
class Prediction:
    """What a proposal predicted for its workload, kept in its pull request's state so the
    outcome after the merge can be compared with it (``docs/pull-requests.md``, verification).

    From the replay of the proposed values: per container the share of CPU minutes over the
    request (``cpu_share``) and over the CPU limit (``throttle_share``, containers with a limit
    only), the OOM kills and the capacity-shortfall minutes at maxReplicas (None without an
    HPA) over ``window_days``; from the backtest, per container, the share it expects at this
    proposal's margin (``backtest_share``; empty without one).
    """

    window_days: float
    cpu_share: Mapping[str, float] = field(default_factory=dict)
    throttle_share: Mapping[str, float] = field(default_factory=dict)
    oom_kills: int = 0
    shortfall_minutes: float | None = None
    backtest_share: Mapping[str, float] = field(default_factory=dict)


# --------------------------------------------------------------------------- changes and edits


@dataclass(frozen=True, slots=True)
class FieldChange:
    """One value to write.

    ``field`` is ``requests.cpu``, ``requests.memory``, ``limits.cpu``, ``limits.memory``
    (with ``container`` set), ``hpa.minReplicas``, ``hpa.maxReplicas``, or ``hpa.target.cpu`` /
    ``hpa.target.memory`` (with ``container`` set; percent). ``proposed`` None removes the field
    (e.g. dropping a CPU limit). Values are cores, bytes, replicas or percent.
    """

    ref: WorkloadRef
    field: FieldId
    proposed: Number | None
    current: Number | None = None
    container: str | None = None
    reason: str = ""
    triggers: tuple[tuple[tuple[str, str], ...], ...] = ()  # keda.triggers: each metadata


@dataclass(frozen=True, slots=True)
class ChangeSet:
    """The changes one pull request carries; ``key`` names its branch (see forge.branches)."""

    key: str
    changes: tuple[FieldChange, ...]
    recommendations: tuple[Recommendation, ...] = ()


@dataclass(frozen=True, slots=True)
class FileChange:
    """A file the editor changed: repository-relative path, bytes before and after."""

    path: str
    old: bytes
    new: bytes


@dataclass(frozen=True, slots=True)
class SkippedChange:
    """A change the editor left out, and why (its value lives only in a file that renders of
    other environments read, and the environment has no file of its own to hold it)."""

    change: FieldChange
    reason: str


@dataclass(frozen=True, slots=True)
class EditResult:
    """What an edit did: changed files, unified diff, and problems per workload."""

    files: tuple[FileChange, ...] = ()
    diff: str = ""
    notes: tuple[Note, ...] = ()
    errors: tuple[SourceError, ...] = ()
    failed: tuple[WorkloadRef, ...] = ()
    """Workloads whose edits were refused or failed verification (nothing written for them)."""
    skipped: tuple[SkippedChange, ...] = ()
    """Changes left out while the rest of their workload's changes were written."""
