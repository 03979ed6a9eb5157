"""Simulate a ``ClusterSpec``: replicas, pods that come and go, per-container usage and OOM kills.

Pods fill replica *slots*: slot ``i`` is alive while ``replicas > i``; a rollout ends every
pod life at once. A Deployment pod is named ``<name>-<replicaset hash>-<5 chars>`` (new hash per
rollout, new suffix per life), a StatefulSet pod ``<name>-<ordinal>``. Per pod and container:

- ``cpu_cores = demand / replicas * share * (1 + noise) + floor``, never negative;
- ``memory_bytes = base + load * demand / peak + growth_per_day * age_days + noise``, where the age
  restarts at each container start; above the limit the container is OOM-killed at that sample,
  restarts (its restart count goes up, its CPU counter starts again) and shows fresh memory;
- ``cpu_counter_s``: cumulative CPU seconds since the container started (``cpu * step`` summed),
  which is what cAdvisor's ``container_cpu_usage_seconds_total`` counts;
- a ``CrashLoopSpec`` restarts the first container every ``restart_every_s`` during its period
  (restart count up, CPU counter from zero) and may force the replica count meanwhile.

An HPA'd service's replicas come from ``bot.sim.hpa`` on what its pods report, their noise
included, as a controller reading the metrics API sees it: the CPU noise of the pods in slot
``i`` is drawn first, from a stream of that slot and container, and the pods' usage is made of
those very draws.

``SimulatedCluster.expected_history(ref)`` returns the generated truth as the seam type.
"""

from __future__ import annotations

import functools
import itertools
import random
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from bot.model import (
    SECONDS_PER_DAY,
    SECONDS_PER_HOUR,
    ContainerHistory,
    FloatArray,
    IntArray,
    Note,
    WorkloadHistory,
    WorkloadRef,
)
from bot.sim.errors import SimError
from bot.sim.hpa import hpa_signals, pods_seen, simulate_replicas
from bot.sim.jobs import job_name, run_mask
from bot.sim.load import demand_cores
from bot.sim.spec import ClusterSpec, ContainerSpec, ServiceSpec

NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
"""Characters of generated pod-name parts (``k8s.io/apimachinery/pkg/util/rand``, ``alphanums``)."""

POD_SUFFIX_CHARS = 5
"""Length of the random suffix of a ReplicaSet's pod names."""

TEMPLATE_HASH_CHARS = 10
"""Length of the simulated ``pod-template-hash``."""

MEMORY_NOISE_FRACTION = 0.01
"""Relative size of the per-sample memory noise."""

HPA_SLOT_STREAM = 7
"""The stream number of an HPA'd service's per-slot CPU draws (module doc)."""


@dataclass(frozen=True, slots=True)
class ContainerRun:
    """One container inside one pod life; arrays hold one value per sample of the pod life."""

    name: str
    cpu_cores: FloatArray
    memory_bytes: FloatArray
    cpu_counter_s: FloatArray
    restarts: IntArray
    oom_steps: IntArray
    """Absolute sample indices at which the container was OOM-killed (and restarted)."""
    memory_request_bytes: int
    cpu_request_cores: float | None = None
    """The CPU request the pod runs with (kube-state-metrics reports it); None: not written."""


@dataclass(frozen=True, slots=True)
class PodLife:
    """A pod from its first to its last sample: steps ``[start, stop)`` of the cluster grid."""

    name: str
    owner_kind: str
    owner_name: str
    start: int
    stop: int
    containers: tuple[ContainerRun, ...]


@dataclass(frozen=True, slots=True)
class SimulatedService:
    """The history of one workload: replica count per sample and every pod life."""

    spec: ServiceSpec
    replicas: IntArray
    pods: tuple[PodLife, ...]
    replicasets: tuple[str, ...]
    demand_cores: FloatArray
    """CPU demand of the whole service per sample, cores (what the pods share)."""

    @property
    def ref(self) -> WorkloadRef:
        """The workload in the ``default`` environment."""
        return WorkloadRef(self.spec.kind, self.spec.namespace, self.spec.name)


@dataclass(frozen=True, slots=True)
class SimulatedCluster:
    """A simulated cluster: the time grid (unix seconds) and every service's history."""

    spec: ClusterSpec
    t_s: FloatArray
    services: tuple[SimulatedService, ...]

    def service(self, namespace: str, name: str) -> SimulatedService:
        """The simulated service ``namespace/name``; raises ``SimError`` if absent."""
        for service in self.services:
            if service.spec.namespace == namespace and service.spec.name == name:
                return service
        raise SimError(f"no simulated service {namespace}/{name}")

    def expected_history(self, ref: WorkloadRef) -> WorkloadHistory:
        """The generated truth for ``ref`` as a ``WorkloadHistory`` (every sample, in pod order).

        OOM rows carry the container's memory request. Pods are numbered in order of first sample.
        """
        service = self.service(ref.namespace, ref.name)
        pods = sorted(service.pods, key=lambda p: (p.start, p.name))
        names = tuple(dict.fromkeys(p.name for p in pods))
        index = {name: i for i, name in enumerate(names)}
        containers: dict[str, ContainerHistory] = {}
        for spec in service.spec.containers:
            runs = [(p, next(c for c in p.containers if c.name == spec.name)) for p in pods]
            ts = [self.t_s[p.start : p.stop] for p, _ in runs]
            pod_idx = [np.full(p.stop - p.start, index[p.name], np.int32) for p, _ in runs]
            oom_t = [self.t_s[c.oom_steps] for _, c in runs]
            oom_pod = [np.full(len(c.oom_steps), index[p.name], np.int32) for p, c in runs]
            containers[spec.name] = ContainerHistory(
                name=spec.name,
                cpu_t=_cat_f(ts),
                cpu_pod=_cat_i(pod_idx),
                cpu_cores=_cat_f([c.cpu_cores for _, c in runs]),
                mem_t=_cat_f(ts),
                mem_pod=_cat_i(pod_idx),
                mem_bytes=_cat_f([c.memory_bytes for _, c in runs]),
                oom_t=_cat_f(oom_t),
                oom_pod=_cat_i(oom_pod),
                oom_request_bytes=np.full(
                    sum(len(c.oom_steps) for _, c in runs), spec.memory_request_bytes, np.float64
                ),
            )
        return WorkloadHistory(
            ref=ref,
            start_s=float(self.t_s[0]),
            end_s=float(self.t_s[-1]),
            pods=names,
            containers=containers,
            replicas_t=self.t_s.copy(),
            replicas=service.replicas.astype(np.float64),
            quality=(Note("simulated", "generated by the simulator"),),
        )


def _cat_f(parts: list[FloatArray]) -> FloatArray:
    return np.concatenate(parts).astype(np.float64) if parts else np.zeros(0, np.float64)


def _cat_i(parts: list[IntArray]) -> IntArray:
    return np.concatenate(parts).astype(np.int32) if parts else np.zeros(0, np.int32)


def _name_part(rng: random.Random, length: int) -> str:
    return "".join(rng.choice(NAME_ALPHABET) for _ in range(length))


def _runs(alive: npt.NDArray[np.bool_], cuts: npt.NDArray[np.int64]) -> list[tuple[int, int]]:
    """Maximal ``[start, stop)`` runs of ``alive``, also split at every index in ``cuts``."""
    edges = np.flatnonzero(np.diff(np.concatenate(([0], alive.astype(np.int8), [0]))))
    out: list[tuple[int, int]] = []
    for start, stop in zip(edges[::2].tolist(), edges[1::2].tolist(), strict=True):
        inner = [int(c) for c in cuts if start < c < stop]
        bounds = [start, *inner, stop]
        out.extend(itertools.pairwise(bounds))
    return out


def _memory_and_ooms(
    spec: ContainerSpec,
    base: FloatArray,
    *,
    start: int,
    step_s: int,
    limits: FloatArray | None = None,
) -> tuple[FloatArray, IntArray, list[int]]:
    """Working set, restart count and OOM-kill samples (relative to ``start``) of one container run.

    The working set would be ``base + growth_per_day * age``, the age starting again at each
    restart: a kill of ``spec.oom_kill_days`` (an allocation burst between two samples), or the
    first sample at which it would pass ``spec.memory_limit_bytes`` (a container born above its
    limit is killed at its first sample). No sample exceeds the limit: the kernel reclaims or
    kills there. After a restart the container is killed again only once its working set has
    been at or below the limit and passes it again: one kill per episode, however long the load
    keeps the fresh container at its limit. ``limits``: the limit per sample instead (``inf``
    for none), for a limit that changes during the run.
    """
    n = len(base)
    limit: FloatArray | None = limits
    if limit is None and spec.memory_limit_bytes is not None:
        limit = np.full(n, float(spec.memory_limit_bytes))
    growth = spec.memory_growth_bytes_per_day * step_s / SECONDS_PER_DAY
    bursts = sorted(
        {
            at
            for day in spec.oom_kill_days
            if 0 < (at := round(day * SECONDS_PER_DAY / step_s) - start) < n
        }
    )
    memory = np.empty(n, dtype=np.float64)
    kills: list[int] = []
    at, armed = 0, True
    while at < n:
        stop = next((b for b in bursts if b > at), n)
        seg = base[at:stop] + growth * np.arange(stop - at, dtype=np.float64)
        if limit is not None:
            over = seg > limit[at:stop]
            # a fresh container still at its limit after a restart is not killed again
            first = 0 if armed else (int(np.argmin(over)) if not over.all() else len(seg))
            hits = np.flatnonzero(over[first:])
            if len(hits):
                kill = first + int(hits[0])
                memory[at : at + kill] = seg[:kill]
                at += kill
                kills.append(at)
                armed = False
                continue
        memory[at:stop] = seg
        if stop < n:
            kills.append(stop)
            armed = False
        at = stop
    rises = np.zeros(n, dtype=np.int32)
    np.add.at(rises, kills, 1)
    if limit is not None:
        np.minimum(memory, limit, out=memory)
    return memory, np.cumsum(rises, dtype=np.int32), kills


def _container_run(
    spec: ContainerSpec,
    service: ServiceSpec,
    *,
    demand: FloatArray,
    replicas: IntArray,
    start: int,
    stop: int,
    step_s: int,
    rng: np.random.Generator,
    crash_steps: IntArray | None = None,
    cpu_noise: FloatArray | None = None,
) -> ContainerRun:
    """One container of one pod life ``[start, stop)`` (module doc); ``cpu_noise``: its slot's
    CPU draws over the whole run (an HPA'd service's, which its controller read), else drawn
    from ``rng``."""
    n = stop - start
    share = demand[start:stop] / replicas[start:stop] * spec.cpu_share_fraction
    draws = rng.standard_normal(n) if cpu_noise is None else cpu_noise[start:stop]
    noise = 1.0 + service.noise_fraction * draws
    cpu = np.clip(share * noise, 0.0, None) + spec.cpu_floor_cores
    load = demand[start:stop] / max(service.peak_cores, 1e-9)
    mem_noise = spec.memory_base_bytes * MEMORY_NOISE_FRACTION * rng.standard_normal(n)
    base = spec.memory_base_bytes + spec.memory_load_bytes * load + mem_noise
    memory, restarts, ooms = _memory_and_ooms(spec, base, start=start, step_s=step_s)
    crashes = [
        int(k) - start for k in (crash_steps if crash_steps is not None else ()) if start < k < stop
    ]
    for at in crashes:
        restarts[at:] += 1
    return run_of(
        spec.name,
        cpu,
        memory,
        restarts,
        ooms=sorted(ooms),
        breaks=sorted(set(ooms) | set(crashes)),
        start=start,
        step_s=step_s,
        memory_request_bytes=spec.memory_request_bytes,
        cpu_request_cores=spec.cpu_request_cores,
    )


def _crash_steps(service: ServiceSpec, t_s: FloatArray, step_s: int) -> IntArray:
    """Sample indices at which the crash-looping container restarts (empty without a loop)."""
    loop = service.crash_loop
    if loop is None or not len(t_s):
        return np.zeros(0, np.int32)
    first = t_s[0] + loop.start_day * SECONDS_PER_DAY
    times = np.arange(
        first, first + loop.hours * SECONDS_PER_HOUR, max(loop.restart_every_s, step_s)
    )
    steps = np.unique(np.round((times - t_s[0]) / step_s).astype(np.int64))
    return steps[(steps > 0) & (steps < len(t_s))].astype(np.int32)


def _simulate_service(
    spec: ClusterSpec, index: int, t_s: FloatArray, demand: FloatArray | None
) -> SimulatedService:
    service = spec.services[index]
    names = random.Random(f"{spec.seed}/{service.namespace}/{service.name}")
    if demand is None:
        rng = np.random.default_rng([spec.seed, index])
        demand = demand_cores(service, t_s, rng)
    else:
        # pods, noise and rollouts from a stream of the service's own, wherever it is listed
        rng = np.random.default_rng([spec.seed, zlib.crc32(_key(service).encode()), len(t_s)])
    app = service.containers[0]
    key = zlib.crc32(_key(service).encode())

    @functools.cache
    def cpu_draws(slot: int, container: int) -> FloatArray:
        stream = np.random.default_rng([spec.seed, key, HPA_SLOT_STREAM, slot, container])
        return stream.standard_normal(len(t_s))

    slot_draws = None
    if service.hpa is not None:
        slot_draws = cpu_draws
        signals = hpa_signals(service, demand, pods_seen(service, cpu_draws))
        replicas = simulate_replicas(
            signals, service.hpa.min_replicas, service.hpa.max_replicas, spec.step_s
        )
    else:
        replicas = np.full(len(t_s), max(1, service.replicas), dtype=np.int32)
    if service.kind in ("CronJob", "Job"):
        replicas = run_mask(service, t_s)
    crash_steps = _crash_steps(service, t_s, spec.step_s)
    loop = service.crash_loop
    if loop is not None and loop.replicas is not None and len(crash_steps):
        replicas[int(crash_steps[0]) : int(crash_steps[-1]) + 1] = loop.replicas
    days = len(t_s) * spec.step_s / SECONDS_PER_DAY
    rollouts = np.sort(
        rng.integers(1, max(2, len(t_s)), int(rng.poisson(service.rollouts_per_week * days / 7)))
    )
    if service.kind in ("CronJob", "Job"):
        rollouts = rollouts[:0]  # a new template applies from the next run on
    epoch = np.searchsorted(rollouts, np.arange(len(t_s)), side="right")
    hashes = [_name_part(names, TEMPLATE_HASH_CHARS) for _ in range(len(rollouts) + 1)]
    pods: list[PodLife] = []
    for slot in range(int(replicas.max(initial=0))):
        for start, stop in _runs(replicas > slot, rollouts):
            if service.kind == "StatefulSet":
                name, owner_kind, owner = f"{service.name}-{slot}", "StatefulSet", service.name
            elif service.kind == "DaemonSet":
                name = f"{service.name}-{_name_part(names, POD_SUFFIX_CHARS)}"
                owner_kind, owner = "DaemonSet", service.name
            elif service.kind in ("CronJob", "Job"):
                owner_kind, owner = "Job", job_name(service, float(t_s[start]), len(pods))
                name = f"{owner}-{_name_part(names, POD_SUFFIX_CHARS)}"
            else:
                owner = f"{service.name}-{hashes[int(epoch[start])]}"
                name = f"{owner}-{_name_part(names, POD_SUFFIX_CHARS)}"
                owner_kind = "ReplicaSet"
            runs = tuple(
                _container_run(
                    c,
                    service,
                    demand=demand,
                    replicas=replicas,
                    start=start,
                    stop=stop,
                    step_s=spec.step_s,
                    rng=rng,
                    crash_steps=crash_steps if c is app else None,
                    cpu_noise=None if slot_draws is None else slot_draws(slot, i),
                )
                for i, c in enumerate(service.containers)
            )
            pods.append(PodLife(name, owner_kind, owner, start, stop, runs))
    used = sorted({p.owner_name for p in pods if p.owner_kind == "ReplicaSet"})
    return SimulatedService(service, replicas, tuple(pods), tuple(used), demand)


def draw_demand(spec: ClusterSpec) -> dict[str, FloatArray]:
    """The CPU demand (cores) of every service of ``spec`` per sample, keyed ``namespace/name``:
    the very values ``simulate(spec)`` draws."""
    t_s = spec.times_s()
    return {
        _key(service): demand_cores(service, t_s, np.random.default_rng([spec.seed, i]))
        for i, service in enumerate(spec.services)
    }


def simulate(
    spec: ClusterSpec, *, demand: Mapping[str, FloatArray] | None = None
) -> SimulatedCluster:
    """Run the simulation; the same ``spec`` (seed included) always gives the same cluster.

    ``demand``, keyed ``namespace/name`` with one value per sample, replaces the drawn demand
    of those services (their pods, noise and rollouts then come from a stream seeded by the
    service's name, so a service simulates the same alone or among others).
    """
    t_s = spec.times_s()
    given = demand or {}
    for key, values in given.items():
        if len(values) != len(t_s):
            raise SimError(f"demand of {key}: {len(values)} samples for {len(t_s)} steps")
    services = tuple(
        _simulate_service(spec, i, t_s, given.get(_key(s))) for i, s in enumerate(spec.services)
    )
    return SimulatedCluster(spec, t_s, services)


def simulate_window(
    spec: ClusterSpec,
    demand: Mapping[str, FloatArray],
    *,
    start_day: float,
    days: float,
    services: Sequence[ServiceSpec] | None = None,
) -> SimulatedCluster:
    """Days ``[start_day, start_day + days)`` of ``spec`` on its ``demand`` (``draw_demand``),
    run by ``services`` (default ``spec.services``): the same services, under new values.

    This continues a simulated process with other requests, limits or HPA settings: the demand
    is the same seeded process, the pods start afresh at ``start_day`` (a rollout, as a change of
    the pod template makes) and the HPA at ``minReplicas``.
    """
    first = round(start_day * SECONDS_PER_DAY / spec.step_s)
    part = replace(
        spec,
        services=tuple(spec.services if services is None else services),
        days=days,
        start_s=spec.start_s + first * spec.step_s,
    )
    if first < 0 or first + part.steps > spec.steps:
        raise SimError(
            f"days {start_day:g}-{start_day + days:g} are outside the {spec.days:g} drawn"
        )
    missing = [_key(s) for s in part.services if _key(s) not in demand]
    if missing:
        raise SimError(f"no demand for {', '.join(missing)}")
    return simulate(
        part,
        demand={_key(s): demand[_key(s)][first : first + part.steps] for s in part.services},
    )


def _key(service: ServiceSpec) -> str:
    return f"{service.namespace}/{service.name}"


def run_of(
    name: str,
    cpu: FloatArray,
    memory: FloatArray,
    restarts: IntArray,
    *,
    ooms: list[int],
    breaks: list[int],
    start: int,
    step_s: float,
    memory_request_bytes: int,
    cpu_request_cores: float | None = None,
) -> ContainerRun:
    """A container's run from its per-step CPU (cores) and working set (bytes): the CPU counter
    (core-seconds) restarting at each of ``breaks`` (steps from ``start``: OOM kills, crashes),
    the working set rounded to whole bytes (at least 1), the OOM steps made absolute."""
    counter = np.empty(cpu.size, dtype=np.float64)
    for a, b in itertools.pairwise([0, *breaks, cpu.size]):
        counter[a:b] = np.cumsum(cpu[a:b] * step_s)
    return ContainerRun(
        name=name,
        cpu_cores=cpu,
        memory_bytes=np.round(np.clip(memory, 1.0, None)).astype(np.float64),
        cpu_counter_s=counter,
        restarts=restarts,
        oom_steps=(np.asarray(ooms, dtype=np.int32) + start).astype(np.int32),
        memory_request_bytes=memory_request_bytes,
        cpu_request_cores=cpu_request_cores,
    )
