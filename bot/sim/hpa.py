"""Replica counts produced by simulating the HorizontalPodAutoscaler on a demand series.

Per sample, from the previous sample's utilisation (the controller acts on what it last saw):
``desired = ceil(current * utilization / target)``, unchanged while ``|utilization / target - 1|``
is within ``TOLERANCE_FRACTION``, clamped to ``[min, max]``; scale-up is immediate and scale-down
takes the highest recommendation of the last ``DOWNSCALE_STABILIZATION_S`` seconds.
Upstream: ``pkg/controller/podautoscaler/replica_calculator.go`` (``GetResourceReplicas``) and
``horizontal.go`` (``stabilizeRecommendation``) in kubernetes/kubernetes.
"""

from __future__ import annotations

import math
from collections import deque

import numpy as np

from bot.model import FloatArray, IntArray
from bot.sim.spec import HpaSpec

TOLERANCE_FRACTION = 0.1
"""The HPA controller's default ``--horizontal-pod-autoscaler-tolerance``."""

DOWNSCALE_STABILIZATION_S = 300
"""The default ``behavior.scaleDown.stabilizationWindowSeconds``."""


def simulate_hpa(
    hpa: HpaSpec, per_pod_cores_at_one: FloatArray, request_cores: float, step_s: int
) -> IntArray:
    """Replicas per sample for a demand ``per_pod_cores_at_one`` (cores if served by one pod).

    Utilisation with ``r`` replicas is ``demand / r / request * 100`` percent.
    """
    window = max(1, DOWNSCALE_STABILIZATION_S // step_s)
    recent: deque[int] = deque(maxlen=window)
    current = hpa.min_replicas
    out = np.empty(len(per_pod_cores_at_one), dtype=np.int32)
    demand = per_pod_cores_at_one.tolist()
    target = hpa.target_cpu_percent
    for k, value in enumerate(demand):
        out[k] = current
        utilization = value / current / request_cores * 100.0
        ratio = utilization / target
        desired = current if abs(ratio - 1.0) <= TOLERANCE_FRACTION else math.ceil(current * ratio)
        desired = min(hpa.max_replicas, max(hpa.min_replicas, desired))
        recent.append(desired)
        current = desired if desired > current else max(recent)
    return out
