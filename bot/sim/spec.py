"""What the simulator simulates: a seeded, frozen description of services, containers and time.

``ClusterSpec.generate(seed=..., services=...)`` draws a realistic mix (web services with an
``istio-proxy`` sidecar and an HPA, StatefulSets with fixed replicas, memory that grows until an
OOM kill); tests that need exact control build the dataclasses by hand.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Literal

import numpy as np

from bot.model import MIB, SECONDS_PER_DAY, FloatArray
from bot.sim.errors import SimError

Kind = Literal["Deployment", "StatefulSet", "Rollout", "DaemonSet", "CronJob", "Job"]
"""A ``Rollout`` runs pods through ReplicaSets it owns (Argo Rollouts), a ``DaemonSet`` owns one
pod per node (``replicas`` nodes) directly; a ``CronJob`` and a ``Job`` run one pod per run
(``ServiceSpec.runs``)."""

DEFAULT_START_S = 1_767_225_600.0
"""2026-01-01T00:00:00Z, a Thursday: the default first sample of a simulated history."""

SIDECAR_NAME = "istio-proxy"
"""The sidecar container injected into meshed pods."""


@dataclass(frozen=True, slots=True)
class ContainerSpec:
    """One container of a service's pod template.

    ``cpu_share_fraction`` is the part of the service's CPU demand this container burns (the app
    takes most, the sidecar follows the traffic); ``cpu_floor_cores`` is burnt per pod even idle.
    Memory starts at ``memory_base_bytes``, follows the load by ``memory_load_bytes`` and grows
    ``memory_growth_bytes_per_day`` until the container restarts; above ``memory_limit_bytes``
    it is OOM-killed. ``oom_kill_days`` (days after the first sample) are OOM kills by an
    allocation burst shorter than one sample: the container restarts there while its sampled
    working set stays where the load puts it, however far below the limit.
    """

    name: str
    cpu_request_cores: float
    memory_request_bytes: int
    cpu_share_fraction: float
    cpu_floor_cores: float = 0.005
    memory_base_bytes: int = 128 * MIB
    memory_load_bytes: int = 32 * MIB
    memory_growth_bytes_per_day: float = 0.0
    memory_limit_bytes: int | None = None
    cpu_limit_cores: float | None = None
    oom_kill_days: tuple[float, ...] = ()


@dataclass(frozen=True, slots=True)
class HpaMetric:
    """One CPU ``Utilization`` target of an HPA, in percent of the request.

    ``container`` set: a ``ContainerResource`` metric (that container's usage over its request);
    None: a pod-level ``Resource`` metric (the pod's summed usage over its summed requests).
    """

    target_percent: int
    container: str | None = None


@dataclass(frozen=True, slots=True)
class HpaSpec:
    """An ``autoscaling/v2`` HPA scaling on CPU utilisation.

    ``metrics`` empty (the default): one ``ContainerResource`` target of ``target_cpu_percent``
    on the first container. Otherwise ``metrics`` are the HPA's targets and
    ``target_cpu_percent`` is not read. The controller follows the metric that asks for the most
    replicas (``bot.sim.hpa``). ``keda`` set: a KEDA ScaledObject of that name makes the HPA
    (named ``keda-hpa-<keda>``, and declared as the ScaledObject in the manifests), with a
    ``prometheus`` trigger beside its ``cpu`` ones.
    """

    min_replicas: int
    max_replicas: int
    target_cpu_percent: int
    metrics: tuple[HpaMetric, ...] = ()
    keda: str | None = None

    def name(self, service: str) -> str:
        """The HPA's name: the service's, or the one KEDA gives it."""
        return f"keda-hpa-{self.keda}" if self.keda else service

    def targets(self, first_container: str) -> tuple[HpaMetric, ...]:
        """The metrics the controller reads (the default one when ``metrics`` is empty)."""
        return self.metrics or (HpaMetric(self.target_cpu_percent, first_container),)


@dataclass(frozen=True, slots=True)
class CrashLoopSpec:
    """A period when the service's first container crash-loops (e.g. a bad config rollout).

    From ``start_day`` (days after the first sample) for ``hours``, the container of every pod
    alive then restarts every ``restart_every_s`` seconds (its restart count goes up, its CPU
    counter starts again). ``replicas``, when set, is the replica count during the loop (the
    controller over-scaling on the broken pods), replacing the HPA's.
    """

    start_day: float
    hours: float
    restart_every_s: int = 120
    replicas: int | None = None


@dataclass(frozen=True, slots=True)
class PeriodicBurst:
    """A job that runs every ``period_hours`` (from 00:00 UTC plus ``phase_hours``) for
    ``minutes``, multiplying the demand by ``factor`` meanwhile."""

    period_hours: float
    minutes: float
    factor: float
    phase_hours: float = 0.0


@dataclass(frozen=True, slots=True)
class LevelChange:
    """From ``day`` (days after the first sample) on, the demand is ``factor`` times what it
    would be (changes compound)."""

    day: float
    factor: float


@dataclass(frozen=True, slots=True)
class ServiceSpec:
    """One workload and its traffic.

    The CPU demand of the whole service, in cores, is
    ``peak_cores * (night_fraction + (1 - night_fraction) * diurnal(t)) * weekly(t) * noise``
    ``* (1 + growth_per_day * days since the first sample) * levels(t) * periodic(t)`` plus rare
    bursts (``burst_per_day`` on average, ``burst_factor`` times the level, a few minutes).
    ``weekly`` is ``weekday_factors[weekday]`` (Monday first) when given, else
    ``weekend_fraction`` on Saturdays and Sundays and 1 otherwise; ``levels`` the product of the
    ``level_changes`` already passed; on the UTC days that contain ``holidays`` (days after the
    first sample) the daily cycle stays at its night level; ``periodic`` is
    ``periodic_burst.factor`` while its job runs, else 1 (``bot.sim.load``).
    """

    name: str
    namespace: str
    kind: Kind
    containers: tuple[ContainerSpec, ...]
    replicas: int
    hpa: HpaSpec | None = None
    peak_cores: float = 1.0
    night_fraction: float = 0.3
    weekend_fraction: float = 0.7
    noise_fraction: float = 0.08
    burst_per_day: float = 0.5
    burst_factor: float = 2.0
    rollouts_per_week: float = 1.0
    crash_loop: CrashLoopSpec | None = None
    growth_per_day: float = 0.0
    weekday_factors: tuple[float, ...] = ()
    level_changes: tuple[LevelChange, ...] = ()
    holidays: tuple[float, ...] = ()
    periodic_burst: PeriodicBurst | None = None
    runs: JobRuns | None = None
    """When a ``CronJob`` or ``Job`` runs (``JobRuns()`` when not given)."""


@dataclass(frozen=True, slots=True)
class JobRuns:
    """The runs of a simulated CronJob or Job: one pod every ``every_s`` seconds from the first
    sample, alive ``duration_s`` seconds. A CronJob's Jobs are ``<name>-<scheduled minute>``
    (owned by the CronJob in ``kube_job_owner``); a bare Job's are ``<name>-<revision>`` when
    ``generated`` (as a Helm hook or a generator names them), else the one Job ``<name>``."""

    every_s: int = 4 * 3600
    duration_s: int = 20 * 60
    generated: bool = True


def _check_hpa(service: ServiceSpec) -> None:
    """An HPA the simulated controller can run: ``1 <= min <= max``, targets > 0 on containers
    of the service."""
    hpa, where = service.hpa, f"service {service.namespace}/{service.name}"
    assert hpa is not None
    if not 1 <= hpa.min_replicas <= hpa.max_replicas:
        raise SimError(f"{where}: HPA min {hpa.min_replicas} > max {hpa.max_replicas} or < 1")
    names = {c.name for c in service.containers}
    for metric in hpa.targets(service.containers[0].name):
        if metric.target_percent <= 0:
            raise SimError(f"{where}: HPA target {metric.target_percent} % must be positive")
        if metric.container is not None and metric.container not in names:
            raise SimError(f"{where}: HPA target on unknown container {metric.container!r}")


@dataclass(frozen=True, slots=True)
class ClusterSpec:
    """A whole simulated cluster: services, the history window and the sampling step."""

    seed: int
    services: tuple[ServiceSpec, ...]
    days: float = 2.0
    step_s: int = 60
    start_s: float = DEFAULT_START_S

    def __post_init__(self) -> None:
        if self.step_s <= 0 or self.days <= 0:
            raise SimError(f"days ({self.days}) and step_s ({self.step_s}) must be positive")
        if self.start_s % self.step_s:
            raise SimError(f"start_s {self.start_s} is not a multiple of step_s {self.step_s}")
        seen: set[tuple[str, str]] = set()
        for service in self.services:
            key = (service.namespace, service.name)
            if key in seen:
                raise SimError(f"service {service.namespace}/{service.name} declared twice")
            seen.add(key)
            if not service.containers:
                raise SimError(f"service {service.namespace}/{service.name} has no container")
            if service.hpa:
                _check_hpa(service)
            if service.weekday_factors and len(service.weekday_factors) != 7:
                raise SimError(f"service {service.name}: weekday_factors needs 7 values")
            burst = service.periodic_burst
            if burst is not None and not 0 < burst.minutes < burst.period_hours * 60:
                raise SimError(f"service {service.name}: a periodic burst must fit its period")

    @property
    def steps(self) -> int:
        """Number of samples per series over the window."""
        return int(self.days * SECONDS_PER_DAY // self.step_s)

    def times_s(self) -> FloatArray:
        """Unix seconds of every sample."""
        return self.start_s + np.arange(self.steps, dtype=np.float64) * self.step_s

    @property
    def end_s(self) -> float:
        """Unix seconds of the last sample."""
        return self.start_s + (self.steps - 1) * self.step_s

    @classmethod
    def generate(
        cls,
        *,
        seed: int,
        services: int = 4,
        namespaces: int = 2,
        days: float = 2.0,
        step_s: int = 60,
        start_s: float = DEFAULT_START_S,
        sidecar_fraction: float = 0.5,
        statefulset_fraction: float = 0.25,
    ) -> ClusterSpec:
        """A random but reproducible mix of ``services`` workloads over ``namespaces`` namespaces.

        Meshed services get an ``istio-proxy`` sidecar; Deployments get an HPA; one service in
        four leaks memory towards its limit so OOM kills happen within a few days.
        """
        rng = random.Random(seed)
        out: list[ServiceSpec] = []
        for i in range(services):
            namespace = f"ns-{i % max(1, namespaces)}"
            stateful = rng.random() < statefulset_fraction
            kind: Kind = "StatefulSet" if stateful else "Deployment"
            name = f"{'db' if stateful else 'svc'}-{i}"
            peak = round(rng.uniform(0.2, 4.0), 3)
            base_mem = int(rng.uniform(96, 768)) * MIB
            leaks = i % 4 == 3
            app = ContainerSpec(
                name="app",
                cpu_request_cores=round(max(0.05, peak / 3), 3),
                memory_request_bytes=base_mem + 128 * MIB,
                cpu_share_fraction=0.8,
                cpu_floor_cores=0.01,
                memory_base_bytes=base_mem,
                memory_load_bytes=int(base_mem * 0.2),
                memory_growth_bytes_per_day=(base_mem * 0.6 if leaks else base_mem * 0.02),
                memory_limit_bytes=int(base_mem * 1.6) if leaks else 2 * base_mem + 256 * MIB,
            )
            containers = [app]
            if not stateful and rng.random() < sidecar_fraction:
                containers.append(
                    ContainerSpec(
                        name=SIDECAR_NAME,
                        cpu_request_cores=0.1,
                        memory_request_bytes=128 * MIB,
                        cpu_share_fraction=0.2,
                        cpu_floor_cores=0.003,
                        memory_base_bytes=60 * MIB,
                        memory_load_bytes=10 * MIB,
                        memory_limit_bytes=1024 * MIB,
                    )
                )
            hpa = None
            replicas = rng.randint(1, 3)
            if not stateful:
                low = rng.randint(1, 3)
                hpa = HpaSpec(low, low + rng.randint(2, 8), rng.choice((60, 70, 80)))
                replicas = low
            out.append(
                ServiceSpec(
                    name=name,
                    namespace=namespace,
                    kind=kind,
                    containers=tuple(containers),
                    replicas=replicas,
                    hpa=hpa,
                    peak_cores=peak,
                    night_fraction=round(rng.uniform(0.15, 0.5), 3),
                    weekend_fraction=round(rng.uniform(0.5, 0.95), 3),
                    burst_per_day=round(rng.uniform(0.0, 2.0), 3),
                    rollouts_per_week=0.0 if stateful else round(rng.uniform(0.5, 3.0), 3),
                )
            )
        return cls(seed=seed, services=tuple(out), days=days, step_s=step_s, start_s=start_s)
