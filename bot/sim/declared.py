"""Simulated history for the workloads a repository declares (``tortoise-bot simulate``).

Each declared workload becomes a one-service ``ClusterSpec`` with its own containers, requests,
limits, replicas and HPA, seeded by ``(seed, workload key)`` alone: a workload's history does not
change when other workloads are added. How busy each workload is, is drawn per workload:

- the first container's CPU use at the daily peak is ``utilisation`` (``UTILISATION_RANGE``)
  times its request per pod; other containers take their share of the demand in proportion to
  their CPU requests, times ``SHARE_SPREAD``;
- a workload with an HPA peaks at ``min + (max - min) * u`` replicas (``u`` in
  ``HPA_PEAK_RANGE``) at its CPU target (``DEFAULT_TARGET_PERCENT`` when it has none), and the
  simulated HPA controller sets the replica count from the demand;
- memory starts at ``MEMORY_BASE_RANGE`` times the request and follows the load by
  ``MEMORY_LOAD_FRACTION`` of it; an unset request counts as ``DEFAULT_CPU_CORES`` /
  ``DEFAULT_MEMORY_BYTES``.

The profile sets the shape of the load over time (``bot.sim.profiles.PROFILES``). The result
is the generated truth (``SimulatedCluster.expected_history``) with a ``simulated`` note, keyed
by the declared ``WorkloadRef``.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import replace
from typing import get_args

from bot.model import (
    MIB,
    SECONDS_PER_DAY,
    DeclaredContainer,
    DeclaredWorkload,
    Note,
    WorkloadHistory,
    WorkloadRef,
)
from bot.sim.cluster import simulate
from bot.sim.profiles import PROFILES, Profile, ProfileShape
from bot.sim.spec import ClusterSpec, ContainerSpec, HpaSpec, Kind, ServiceSpec

UTILISATION_RANGE = (0.25, 1.1)
"""Peak CPU use of the first container per pod, as a fraction of its request (uniform)."""
SHARE_SPREAD = (0.6, 1.4)
"""Random factor on the CPU share of each further container (uniform)."""
HPA_PEAK_RANGE = (0.2, 0.7)
"""Where the daily peak lands between an HPA's min and max replicas (uniform)."""
DEFAULT_TARGET_PERCENT = 70
"""CPU target of the simulated HPA when the declared one has no CPU target."""
MEMORY_BASE_RANGE = (0.35, 0.85)
"""Idle memory as a fraction of the request (uniform)."""
MEMORY_LOAD_FRACTION = 0.15
"""Extra memory at peak load, as a fraction of the request."""
DEFAULT_CPU_CORES = 0.1
"""CPU request assumed for a container without one."""
DEFAULT_MEMORY_BYTES = 256 * MIB
"""Memory request assumed for a container without one."""


def _container(
    c: DeclaredContainer, share: float, shape: ProfileShape, rng: random.Random
) -> ContainerSpec:
    cpu = c.requests.cpu_cores or c.limits.cpu_cores or DEFAULT_CPU_CORES
    memory = c.requests.memory_bytes or c.limits.memory_bytes or DEFAULT_MEMORY_BYTES
    return ContainerSpec(
        name=c.name,
        cpu_request_cores=cpu,
        memory_request_bytes=memory,
        cpu_share_fraction=share,
        cpu_floor_cores=min(0.005, cpu / 20),
        memory_base_bytes=int(memory * rng.uniform(*MEMORY_BASE_RANGE)),
        memory_load_bytes=int(memory * MEMORY_LOAD_FRACTION),
        memory_growth_bytes_per_day=memory * shape.memory_growth_fraction_per_day,
        memory_limit_bytes=c.limits.memory_bytes,
        cpu_limit_cores=c.limits.cpu_cores,
    )


DAEMONSET_NODES = 3
"""Nodes a simulated DaemonSet runs on (one pod each): a DaemonSet declares no replicas."""

_KINDS: dict[str, Kind] = {k: k for k in get_args(Kind)}
"""A declared kind as the simulator's (anything else runs like a Deployment)."""


def service_for(workload: DeclaredWorkload, profile: Profile, seed: int) -> ServiceSpec | None:
    """The simulated service of ``workload`` (None when it declares no container)."""
    declared = [c for c in workload.containers if not c.init]
    if not declared:
        return None
    rng = random.Random(f"{seed}/{workload.ref.key}")
    shape = PROFILES[profile]
    cpu = [c.requests.cpu_cores or c.limits.cpu_cores or DEFAULT_CPU_CORES for c in declared]
    shares = [1.0] + [cpu[i] / cpu[0] * rng.uniform(*SHARE_SPREAD) for i in range(1, len(cpu))]
    containers = tuple(_container(c, s, shape, rng) for c, s in zip(declared, shares, strict=True))
    utilisation = rng.uniform(*UTILISATION_RANGE)
    hpa = None
    replicas = (
        DAEMONSET_NODES if workload.ref.kind == "DaemonSet" else max(1, workload.replicas or 1)
    )
    if workload.hpa is not None and workload.ref.kind in ("Deployment", "Rollout"):
        low = max(1, workload.hpa.min_replicas or 1)
        high = max(low, workload.hpa.max_replicas)
        target = next(
            (t.utilization_percent for t in workload.hpa.targets if t.resource == "cpu"),
            DEFAULT_TARGET_PERCENT,
        )
        keda = workload.hpa.keda.name if workload.hpa.keda is not None else None
        hpa = HpaSpec(low, high, target, keda=keda)
        replicas = low
        peak_pods = low + (high - low) * rng.uniform(*HPA_PEAK_RANGE)
        utilisation = target / 100
    else:
        peak_pods = replicas
    return ServiceSpec(
        name=workload.ref.name,
        namespace=workload.ref.namespace,
        kind=_KINDS.get(workload.ref.kind, "Deployment"),
        containers=containers,
        replicas=replicas,
        hpa=hpa,
        peak_cores=cpu[0] * utilisation * peak_pods,
        night_fraction=shape.night_fraction,
        weekend_fraction=shape.weekend_fraction,
        noise_fraction=shape.noise_fraction,
        burst_per_day=shape.burst_per_day,
        burst_factor=shape.burst_factor,
        rollouts_per_week=0.0 if workload.ref.kind == "StatefulSet" else 1.0,
        growth_per_day=shape.growth_per_day,
    )


def simulate_workloads(
    workloads: Iterable[DeclaredWorkload],
    *,
    profile: Profile,
    seed: int,
    days: float,
    step_s: int,
    end_s: float,
) -> dict[WorkloadRef, WorkloadHistory]:
    """A simulated history of ``days`` days with samples every ``step_s`` seconds, the last at
    or before ``end_s`` (unix seconds), for every workload that has a container."""
    last = end_s - end_s % step_s
    steps = int(days * SECONDS_PER_DAY // step_s)
    start = last - (steps - 1) * step_s
    out: dict[WorkloadRef, WorkloadHistory] = {}
    note = Note("simulated", f"simulated by tortoise-bot simulate (profile {profile}, seed {seed})")
    for workload in workloads:
        service = service_for(workload, profile, seed)
        if service is None:
            continue
        key = random.Random(f"{seed}/{workload.ref.key}").getrandbits(32)
        spec = ClusterSpec(key, (service,), days=days, step_s=step_s, start_s=start)
        history = simulate(spec).expected_history(workload.ref)
        out[workload.ref] = replace(history, quality=(note,))
    return out
