"""Replica counts produced by simulating the HorizontalPodAutoscaler on a demand series.

Each HPA metric is an ``HpaSignal``: with ``r`` replicas a pod uses ``shared / r + per_pod``
cores against ``request`` cores, so its utilisation is ``(shared / r + per_pod) / request * 100``
percent. A ``ContainerResource`` metric reads one container (its share of the demand, its idle
floor, its request); a pod-level ``Resource`` metric reads the pod (shares, floors and requests
summed over the containers), as the metrics API sums containers into a pod.

The controller reads what the pods report (``metrics.k8s.io``), noise included: pod ``i`` of
``r`` uses ``shared / r × max(1 + f × z_i, 0) + per_pod`` (``bot.sim.cluster``'s usage, ``f``
the service's ``noise_fraction``, ``z_i`` the pod's draw at that sample), so the mean the
controller averages is ``shared / r × seen[r − 1] + per_pod``, ``seen[r − 1]`` the mean of
``max(1 + f × z_i, 0)`` over pods ``0 … r − 1`` (``seen_factors``; the share-weighted mean of its
containers' for a pod-level metric). Without the pods' draws (``seen`` None) it reads the
demand itself, as if every pod used its exact share.

Per sample, from the previous sample's utilisation (the controller acts on what it last saw),
each metric proposes ``ceil(current * utilisation / target)``, or ``current`` while
``|utilisation / target - 1|`` is within ``TOLERANCE_FRACTION``; the largest proposal wins,
clamped to ``[min, max]``. Scale-up follows the default ``behavior.scaleUp`` (no stabilisation;
per ``SYNC_PERIOD_S`` at most double or +4 pods, whichever is more); scale-down goes to the
highest recommendation of the last ``DOWNSCALE_STABILIZATION_S`` seconds, never up.
Upstream: ``pkg/controller/podautoscaler/replica_calculator.go`` (``GetResourceReplicas``),
``horizontal.go`` (``computeReplicasForMetrics``, ``stabilizeRecommendationWithBehaviors``,
``calculateScaleUpLimitWithScalingRules``) and ``pkg/apis/autoscaling/v2/defaults.go`` in
kubernetes/kubernetes.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from bot.model import FloatArray, IntArray
from bot.sim.spec import HpaSpec, ServiceSpec

TOLERANCE_FRACTION = 0.1
"""The HPA controller's default ``--horizontal-pod-autoscaler-tolerance``."""

DOWNSCALE_STABILIZATION_S = 300
"""The default ``behavior.scaleDown.stabilizationWindowSeconds``."""

SYNC_PERIOD_S = 15
"""The controller's default ``--horizontal-pod-autoscaler-sync-period`` and the period of the
default scale-up policies."""

SCALE_UP_PODS = 4
"""Default scale-up policy: at most this many pods more per period ..."""

SCALE_UP_FACTOR = 2.0
"""... or this factor (``Percent: 100``), whichever allows more (``selectPolicy: Max``)."""


@dataclass(frozen=True, slots=True, eq=False)
class HpaSignal:
    """What one HPA metric reads: per pod ``shared_cores / replicas × seen + per_pod_cores``
    against ``request_cores`` (cores per pod), with its target in percent; ``seen``: per
    replica count ``r`` (row ``r − 1``) and sample, the mean noise factor of pods ``0 … r − 1``
    (module doc; None: 1, the demand itself)."""

    shared_cores: FloatArray
    per_pod_cores: float
    request_cores: float
    target_percent: int
    seen: FloatArray | None = None

    def utilisation_percent(self, replicas: IntArray) -> FloatArray:
        """Utilisation at each sample with ``replicas`` pods, percent of the request."""
        count = np.maximum(replicas, 1)
        shared = self.shared_cores
        if self.seen is not None:
            row = np.minimum(count, len(self.seen)) - 1
            shared = shared * self.seen[row, np.arange(len(shared))]
        per_pod = shared / count + self.per_pod_cores
        return np.asarray(per_pod / self.request_cores * 100.0, dtype=np.float64)


def seen_factors(draws: FloatArray, noise_fraction: float) -> FloatArray:
    """Per replica count ``r`` (row ``r − 1``) and sample, the mean of ``max(1 + f × z, 0)``
    over pods ``0 … r − 1`` of ``draws`` (pods × samples, standard normal; ``f`` =
    ``noise_fraction``): the factor the pods' noise puts on the mean usage the controller
    reads (module doc)."""
    factors = np.maximum(1.0 + noise_fraction * np.asarray(draws, np.float64), 0.0)
    mean = np.cumsum(factors, axis=0)
    mean /= np.arange(1, len(factors) + 1, dtype=np.float64)[:, None]
    return mean


def pods_seen(
    service: ServiceSpec,
    cpu_draws: Callable[[int, int], FloatArray],
    span: slice = slice(None),
) -> dict[str, FloatArray]:
    """Per container of ``service``, its ``seen_factors`` over the samples of ``span`` for up to
    ``maxReplicas`` pods, from ``cpu_draws(slot, container index)`` (each slot's standard normal
    CPU draws, the very ones its pods' usage is made of)."""
    if service.hpa is None:
        return {}
    slots = range(max(1, service.hpa.max_replicas))
    return {
        c.name: seen_factors(
            np.stack([cpu_draws(slot, i)[span] for slot in slots]), service.noise_fraction
        )
        for i, c in enumerate(service.containers)
    }


def hpa_signals(
    service: ServiceSpec,
    demand_cores: FloatArray,
    seen: Mapping[str, FloatArray] | None = None,
) -> list[HpaSignal]:
    """The signals of ``service``'s HPA metrics for a service demand (cores) per sample;
    ``seen``: per container, its ``seen_factors`` over the same samples (None: the controller
    reads the demand)."""
    if service.hpa is None:
        return []
    by_name = {c.name: c for c in service.containers}
    out = []
    for metric in service.hpa.targets(service.containers[0].name):
        chosen = service.containers if metric.container is None else (by_name[metric.container],)
        share = sum(c.cpu_share_fraction for c in chosen)
        factor = None
        if seen is not None and share > 0:
            factor = sum(seen[c.name] * (c.cpu_share_fraction / share) for c in chosen)
        out.append(
            HpaSignal(
                demand_cores * share,
                sum(c.cpu_floor_cores for c in chosen),
                sum(c.cpu_request_cores for c in chosen),
                metric.target_percent,
                None if factor is None else np.asarray(factor, np.float64),
            )
        )
    return out


def _scale_up_limit(current: int, step_s: int) -> int:
    """The most replicas the default scale-up policies allow one step after ``current``."""
    limit = current
    for _ in range(max(1, step_s // SYNC_PERIOD_S)):
        limit = max(limit + SCALE_UP_PODS, math.ceil(limit * SCALE_UP_FACTOR))
    return limit


def simulate_replicas(
    signals: Sequence[HpaSignal], min_replicas: int, max_replicas: int, step_s: int
) -> IntArray:
    """Replicas per sample under ``signals`` (module doc), starting at ``min_replicas``."""
    return continue_replicas(signals, min_replicas, max_replicas, step_s, HpaState(min_replicas))[0]


@dataclass(frozen=True, slots=True)
class HpaState:
    """What the controller carries from one sample to the next: the replicas it runs and the
    recommendations of the scale-down stabilisation window (oldest first)."""

    replicas: int
    recent: tuple[int, ...] = ()


def continue_replicas(
    signals: Sequence[HpaSignal],
    min_replicas: int,
    max_replicas: int,
    step_s: int,
    state: HpaState,
) -> tuple[IntArray, HpaState]:
    """Replicas per sample under ``signals`` (module doc) from ``state``, and the state after
    the last sample (to continue under other signals, e.g. new requests or targets)."""
    n = len(signals[0].shared_cores) if signals else 0
    window = max(1, DOWNSCALE_STABILIZATION_S // step_s)
    recent: deque[int] = deque(state.recent, maxlen=window)
    current = state.replicas
    out = np.empty(n, dtype=np.int32)
    rows = [
        (
            s.shared_cores.tolist(),
            s.per_pod_cores,
            s.request_cores,
            s.target_percent,
            None if s.seen is None else s.seen.tolist(),
        )
        for s in signals
    ]
    for k in range(n):
        out[k] = current
        desired = 0
        for shared, per_pod, request, target, seen in rows:
            load = shared[k] if seen is None else shared[k] * seen[min(current, len(seen)) - 1][k]
            ratio = (load / current + per_pod) / request * 100.0 / target
            within = abs(ratio - 1.0) <= TOLERANCE_FRACTION
            desired = max(desired, current if within else math.ceil(current * ratio))
        desired = min(max_replicas, max(min_replicas, desired))
        recent.append(desired)
        if desired > current:
            current = min(desired, _scale_up_limit(current, step_s))
        else:
            current = min(current, max(recent))
    return out, HpaState(current, tuple(recent))


def simulate_hpa(
    hpa: HpaSpec, per_pod_cores_at_one: FloatArray, request_cores: float, step_s: int
) -> IntArray:
    """Replicas per sample for one metric with demand ``per_pod_cores_at_one`` (cores if served
    by one pod) against ``request_cores`` per pod, at ``hpa.target_cpu_percent``."""
    signal = HpaSignal(per_pod_cores_at_one, 0.0, request_cores, hpa.target_cpu_percent)
    return simulate_replicas([signal], hpa.min_replicas, hpa.max_replicas, step_s)
