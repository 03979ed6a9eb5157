"""One service simulated without a break while its declared values switch at a given sample.

``simulate_switched(spec, demand, before, after, switch_step)`` runs ``before``'s values for
samples ``[0, switch_step)`` and ``after``'s from there: the pods alive at the switch keep
running (their working set and its age carry on, as after an in-place resize), the HPA carries
its replicas and its scale-down window over and from then on reads the new requests, targets,
``minReplicas`` and ``maxReplicas``, and a container is OOM-killed at the limit in force at each
sample. With ``rollout=True`` the switch is a rollout instead, as a merged change of the pod
template makes: the pods stop at the switch and new ones (a new ReplicaSet) start with the new
values, each pod reporting the requests it runs with (CPU and memory, kube-state-metrics). The physics is ``bot.sim.cluster``'s (usage, working set, leaks, one kill per episode).

Every random draw is *prefix-consistent*: rollouts come from their own stream of
exponential gaps, and the CPU and memory noise of a container in replica slot ``i`` from a
stream of that slot and container, indexed by the absolute sample. So the first ``k`` samples do
not depend on anything after ``k``: simulating ``[0, k)`` alone gives exactly the prefix of a
longer run, and two runs that differ only after the switch agree before it. ``prefix`` cuts a
run at a sample (the training history a decision at that sample reads).
"""

from __future__ import annotations

import functools
import random
import zlib
from collections.abc import Callable
from dataclasses import replace

import numpy as np
import numpy.typing as npt

from bot.model import SECONDS_PER_DAY, FloatArray, IntArray
from bot.sim.cluster import (
    MEMORY_NOISE_FRACTION,
    NAME_ALPHABET,
    POD_SUFFIX_CHARS,
    TEMPLATE_HASH_CHARS,
    ContainerRun,
    PodLife,
    SimulatedCluster,
    SimulatedService,
    _memory_and_ooms,
    _runs,
    run_of,
)
from bot.sim.errors import SimError
from bot.sim.hpa import HpaState, continue_replicas, hpa_signals, pods_seen
from bot.sim.jobs import job_name, run_mask
from bot.sim.spec import ClusterSpec, ServiceSpec

CPU_STREAM, MEMORY_STREAM, ROLLOUT_STREAM = 1, 2, 3
"""Stream numbers of the three kinds of draws (module doc)."""


def _stream(spec: ClusterSpec, service: ServiceSpec, *parts: int) -> np.random.Generator:
    key = zlib.crc32(f"{service.namespace}/{service.name}".encode())
    return np.random.default_rng([spec.seed, key, *parts])


def _rollouts(spec: ClusterSpec, service: ServiceSpec, n: int) -> npt.NDArray[np.int64]:
    """Rollout samples: a Poisson process of ``rollouts_per_week``, drawn gap by gap."""
    rate = service.rollouts_per_week / 7 / SECONDS_PER_DAY * spec.step_s  # per sample
    if rate <= 0:
        return np.zeros(0, np.int64)
    rng, at = _stream(spec, service, ROLLOUT_STREAM), 0.0
    out: list[float] = []
    while True:
        at += float(rng.exponential(1 / rate))
        if at >= n:
            return np.asarray(sorted({max(1, int(a)) for a in out}), np.int64)
        out.append(at)


def _replicas(
    spec: ClusterSpec,
    before: ServiceSpec,
    after: ServiceSpec,
    demand: FloatArray,
    switch: int,
    *,
    cpu_draws: Callable[[int, int], FloatArray],
) -> IntArray:
    """Replicas per sample: ``before``'s HPA (or fixed count) then ``after``'s, state carried;
    the HPA reads the pods' usage with their CPU noise (``cpu_draws(slot, container)``, the
    draws the pods' usage is made of; ``bot.sim.hpa``)."""
    out, state = [], None
    for values, a, b in ((before, 0, switch), (after, switch, len(demand))):
        if b <= a:
            continue
        if values.hpa is None:
            part = np.full(b - a, max(1, values.replicas), np.int32)
            state = HpaState(int(part[-1]))
        else:
            hpa = values.hpa
            start = state or HpaState(hpa.min_replicas)
            start = replace(
                start, replicas=min(hpa.max_replicas, max(hpa.min_replicas, start.replicas))
            )
            # the pods' noise is a property of the load: ``before``'s, on ``values``' bounds
            noisy = replace(values, noise_fraction=before.noise_fraction)
            signals = hpa_signals(values, demand[a:b], pods_seen(noisy, cpu_draws, slice(a, b)))
            part, state = continue_replicas(
                signals, hpa.min_replicas, hpa.max_replicas, spec.step_s, start
            )
        out.append(part)
    return np.concatenate(out).astype(np.int32) if out else np.zeros(0, np.int32)


def _name(rng: random.Random, length: int) -> str:
    return "".join(rng.choice(NAME_ALPHABET) for _ in range(length))


def simulate_switched(
    spec: ClusterSpec,
    demand: FloatArray,
    before: ServiceSpec,
    after: ServiceSpec,
    switch_step: int,
    *,
    steps: int | None = None,
    rollout: bool = False,
) -> SimulatedService:
    """``steps`` samples (default ``len(demand)``) of one service on ``demand`` (cores per
    sample, from ``spec.start_s``): ``before``'s values before ``switch_step``, ``after``'s from
    it (module doc; ``rollout``: the switch rolls the pods out). ``before`` and ``after`` are
    the same service (same containers, load); crash loops are not simulated here."""
    n = len(demand) if steps is None else steps
    if n > len(demand) or not 0 <= switch_step <= n:
        raise SimError(f"switch at {switch_step} or {n} steps outside {len(demand)} samples")
    if [c.name for c in before.containers] != [c.name for c in after.containers]:
        raise SimError(f"{after.name}: the values before and after name other containers")
    if before.crash_loop is not None:
        raise SimError(f"{after.name}: crash loops are not simulated across a switch")
    demand = np.asarray(demand[:n], np.float64)

    @functools.cache
    def cpu_draws(slot: int, index: int) -> FloatArray:
        return _stream(spec, before, CPU_STREAM, slot, index).standard_normal(n)

    replicas = _replicas(spec, before, after, demand, switch_step, cpu_draws=cpu_draws)
    if after.kind in ("CronJob", "Job"):  # one pod per run, as ``bot.sim.cluster`` runs them
        replicas = run_mask(after, spec.start_s + np.arange(n, dtype=np.float64) * spec.step_s)
    rollouts = _rollouts(spec, before, n)
    if rollout and 0 < switch_step < n:
        rollouts = np.union1d(rollouts, [switch_step]).astype(np.int64)
    if after.kind in ("CronJob", "Job"):
        rollouts = rollouts[:0]  # a new template applies from the next run on
    epoch = np.searchsorted(rollouts, np.arange(n), side="right")
    key = f"{spec.seed}/{after.namespace}/{after.name}"
    hashes = [
        _name(random.Random(f"{key}/{k}"), TEMPLATE_HASH_CHARS) for k in range(len(rollouts) + 1)
    ]
    load = demand / max(before.peak_cores, 1e-9)
    pods: list[PodLife] = []
    for slot in range(int(replicas.max(initial=0))):
        noise = [
            (
                cpu_draws(slot, i),
                _stream(spec, before, MEMORY_STREAM, slot, i).standard_normal(n),
            )
            for i in range(len(before.containers))
        ]
        for start, stop in _runs(replicas > slot, rollouts):
            if after.kind == "StatefulSet":
                name, owner_kind, owner = f"{after.name}-{slot}", "StatefulSet", after.name
            elif after.kind == "DaemonSet":
                suffix = _name(random.Random(f"{key}/{slot}/{start}"), POD_SUFFIX_CHARS)
                name, owner_kind, owner = f"{after.name}-{suffix}", "DaemonSet", after.name
            elif after.kind in ("CronJob", "Job"):  # one Job per run, as the controller names it
                owner_kind = "Job"
                owner = job_name(after, spec.start_s + start * spec.step_s, len(pods))
                suffix = _name(random.Random(f"{key}/{slot}/{start}"), POD_SUFFIX_CHARS)
                name = f"{owner}-{suffix}"
            else:
                owner = f"{after.name}-{hashes[int(epoch[start])]}"
                suffix = _name(random.Random(f"{key}/{slot}/{start}"), POD_SUFFIX_CHARS)
                name, owner_kind = f"{owner}-{suffix}", "ReplicaSet"
            runs = tuple(
                _run(
                    spec,
                    before,
                    after,
                    i,
                    span=(start, stop),
                    switch=switch_step,
                    demand=demand,
                    replicas=replicas,
                    load=load,
                    noise=noise[i],
                    rolled=rollout,
                )
                for i in range(len(before.containers))
            )
            pods.append(PodLife(name, owner_kind, owner, start, stop, runs))
    used = sorted({p.owner_name for p in pods if p.owner_kind == "ReplicaSet"})
    return SimulatedService(after, replicas, tuple(pods), tuple(used), demand)


def _run(
    spec: ClusterSpec,
    before: ServiceSpec,
    after: ServiceSpec,
    index: int,
    *,
    span: tuple[int, int],
    switch: int,
    demand: FloatArray,
    replicas: IntArray,
    load: FloatArray,
    noise: tuple[FloatArray, FloatArray],
    rolled: bool = False,
) -> ContainerRun:
    """One container of one pod life ``[start, stop)`` (``bot.sim.cluster``'s physics);
    ``rolled``: the switch was a rollout, so a pod started before it reports the old requests
    (and the CPU request is reported; without a rollout only the new memory request is)."""
    start, stop = span
    old, new = before.containers[index], after.containers[index]
    cpu_noise, mem_noise = noise[0][start:stop], noise[1][start:stop]
    share = demand[start:stop] / replicas[start:stop] * old.cpu_share_fraction
    cpu = np.clip(share * (1.0 + before.noise_fraction * cpu_noise), 0.0, None)
    cpu = cpu + old.cpu_floor_cores
    base = (
        old.memory_base_bytes
        + old.memory_load_bytes * load[start:stop]
        + old.memory_base_bytes * MEMORY_NOISE_FRACTION * mem_noise
    )
    at = np.arange(start, stop)
    limits = np.where(
        at < switch,
        np.inf if old.memory_limit_bytes is None else float(old.memory_limit_bytes),
        np.inf if new.memory_limit_bytes is None else float(new.memory_limit_bytes),
    )
    memory, restarts, ooms = _memory_and_ooms(
        old, base, start=start, step_s=spec.step_s, limits=limits
    )
    return run_of(
        new.name,
        cpu,
        memory,
        restarts,
        ooms=list(ooms),
        breaks=list(ooms),
        start=start,
        step_s=spec.step_s,
        memory_request_bytes=(old if rolled and start < switch else new).memory_request_bytes,
        cpu_request_cores=(old if start < switch else new).cpu_request_cores if rolled else None,
    )


def prefix(spec: ClusterSpec, service: SimulatedService, stop: int) -> SimulatedCluster:
    """The first ``stop`` samples of ``service`` (simulated on ``spec``'s grid) as a cluster of
    one service: pod lives cut at ``stop``, later OOM kills dropped."""
    pods = []
    for pod in service.pods:
        if pod.start >= stop:
            continue
        end = min(pod.stop, stop)
        n = end - pod.start
        runs = tuple(
            replace(
                c,
                cpu_cores=c.cpu_cores[:n],
                memory_bytes=c.memory_bytes[:n],
                cpu_counter_s=c.cpu_counter_s[:n],
                restarts=c.restarts[:n],
                oom_steps=c.oom_steps[c.oom_steps < end],
            )
            for c in pod.containers
        )
        pods.append(replace(pod, stop=end, containers=runs))
    cut = replace(
        service,
        replicas=service.replicas[:stop],
        pods=tuple(pods),
        demand_cores=service.demand_cores[:stop],
    )
    part = replace(spec, services=(service.spec,), days=stop * spec.step_s / SECONDS_PER_DAY)
    return SimulatedCluster(part, spec.times_s()[:stop], (cut,))
