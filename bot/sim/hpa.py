"""Replica counts produced by simulating the HorizontalPodAutoscaler on a demand series.

Each HPA metric is an ``HpaSignal``: with ``r`` replicas a pod uses ``shared / r + per_pod``
cores against ``request`` cores, so its utilisation is ``(shared / r + per_pod) / request * 100``
percent. A ``ContainerResource`` metric reads one container (its share of the demand, its idle
floor, its request); a pod-level ``Resource`` metric reads the pod (shares, floors and requests
summed over the containers), as the metrics API sums containers into a pod.

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
from collections.abc import Sequence
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
    """What one HPA metric reads: per pod ``shared_cores / replicas + per_pod_cores`` against
    ``request_cores`` (cores per pod), with its target in percent."""

    shared_cores: FloatArray
    per_pod_cores: float
    request_cores: float
    target_percent: int

    def utilisation_percent(self, replicas: IntArray) -> FloatArray:
        """Utilisation at each sample with ``replicas`` pods, percent of the request."""
        per_pod = self.shared_cores / np.maximum(replicas, 1) + self.per_pod_cores
        return np.asarray(per_pod / self.request_cores * 100.0, dtype=np.float64)


def hpa_signals(service: ServiceSpec, demand_cores: FloatArray) -> list[HpaSignal]:
    """The signals of ``service``'s HPA metrics for a service demand (cores) per sample."""
    if service.hpa is None:
        return []
    by_name = {c.name: c for c in service.containers}
    out = []
    for metric in service.hpa.targets(service.containers[0].name):
        chosen = service.containers if metric.container is None else (by_name[metric.container],)
        out.append(
            HpaSignal(
                demand_cores * sum(c.cpu_share_fraction for c in chosen),
                sum(c.cpu_floor_cores for c in chosen),
                sum(c.cpu_request_cores for c in chosen),
                metric.target_percent,
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
        (s.shared_cores.tolist(), s.per_pod_cores, s.request_cores, s.target_percent)
        for s in signals
    ]
    for k in range(n):
        out[k] = current
        desired = 0
        for shared, per_pod, request, target in rows:
            ratio = (shared[k] / current + per_pod) / request * 100.0 / target
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
