"""Gardener HVPA's weight-based blending (gardener/hvpa-controller, ``controllers/hvpa_controller.go``).

* ``vpa_weight``: the first interval with ``start <= current <= last`` wins (0 start/last = HPA
  min/max); a winning 100 looks back (scale-in) or forward (scale-out) for a weight < 100;
  no match is 0 (pure HPA) (``getVpaWeightFromIntervals``).
* replicas: ``ceil`` (out) or ``floor`` (in) of ``current + (desired − current) × hpaWeight/100``
  (``getWeightedReplicas``).
* requests: ``current + trunc((target − current) × vpaWeight/100)`` in millicores / bytes, memory
  rounded up to 1000 bytes (``getWeightedRequests``).
* limits: ``limitsRequestsGapScaleParams``: ``max(w + value, w + trunc(w × pct/100))``, or the
  proportional rule when neither is set (``getScaledLimits``).
* minChange: a change passes when ``|weighted delta| >= min(value, trunc(current × pct/100))``;
  neither set: 200m CPU / 200M memory (``getThreshold``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from bot.config.recommend import ChangeThreshold, GapParams, WeightInterval
from bot.model import Resource

VPA_ONLY = 100
"""vpaWeight of a purely vertical interval."""
HPA_ONLY = 0
"""vpaWeight of a purely horizontal interval."""
DEFAULT_MIN_CHANGE_CPU_CORES = 0.2
"""minChange when neither value nor percentage is set, CPU (``getThreshold``)."""
DEFAULT_MIN_CHANGE_MEMORY_BYTES = 200_000_000
"""minChange when neither value nor percentage is set, memory: 200M."""
MEMORY_ROUND_BYTES = 1000
"""Blended memory requests and limits are rounded up to this ("k" scale)."""


def vpa_weight(
    intervals: Sequence[WeightInterval],
    current: int,
    desired: int,
    *,
    hpa_min: int,
    hpa_max: int,
) -> int:
    """The vpaWeight (percent) for ``current`` replicas and the HPA's ``desired`` replicas."""
    last_fraction = VPA_ONLY
    for i, interval in enumerate(intervals):
        start = interval.start_replica_count or hpa_min
        last = interval.last_replica_count or hpa_max
        weight = int(interval.vpa_weight)
        if start <= current <= last:
            if weight != VPA_ONLY or desired == current:
                return weight
            if desired < current:
                return last_fraction
            for later in intervals[i + 1 :]:
                if int(later.vpa_weight) < VPA_ONLY:
                    return int(later.vpa_weight)
            return VPA_ONLY
        if weight < VPA_ONLY:
            last_fraction = weight
    return HPA_ONLY


def weighted_replicas(current: int, desired: int, hpa_weight: int) -> int:
    """Blended replicas: ceil when scaling out, floor when scaling in."""
    value = current + (desired - current) * hpa_weight / 100
    return math.ceil(value) if desired > current else math.floor(value)


def weighted_request(current: float, target: float, weight: int, resource: Resource) -> float:
    """``current + trunc((target − current) × w/100)`` (CPU in millicores, memory in bytes)."""
    if resource == "cpu":
        cur_m, tgt_m = round(current * 1000), round(target * 1000)
        return (cur_m + int((tgt_m - cur_m) * weight / 100)) / 1000
    cur, tgt = math.ceil(current), math.ceil(target)
    value = cur + int((tgt - cur) * weight / 100)
    return float(math.ceil(value / MEMORY_ROUND_BYTES) * MEMORY_ROUND_BYTES)


def min_change_threshold(current: float, threshold: ChangeThreshold, resource: Resource) -> float:
    """``getThreshold``: min(value, trunc(current × pct/100)); defaults 200m / 200M."""
    if threshold.value is None and threshold.percentage is None:
        return (
            DEFAULT_MIN_CHANGE_CPU_CORES if resource == "cpu" else DEFAULT_MIN_CHANGE_MEMORY_BYTES
        )
    if threshold.percentage is None:
        assert threshold.value is not None
        return threshold.value
    if resource == "cpu":
        by_pct = math.trunc(round(current * 1000) * threshold.percentage / 100) / 1000
    else:
        by_pct = float(math.trunc(current * threshold.percentage / 100))
    return by_pct if threshold.value is None else min(by_pct, threshold.value)


def scaled_limit(
    orig_limit: float | None,
    orig_request: float | None,
    weighted: float,
    params: GapParams | None,
    resource: Resource,
) -> float | None:
    """``getScaledResourceLimit``: no original limit -> None; see the module doc."""
    if not orig_limit:
        return None

    def units(x: float) -> int:
        return round(x * 1000)

    if not orig_request or units(orig_request) == units(orig_limit):
        value = float(weighted)
    elif params is None or (params.value is None and not params.percentage):
        value = units(orig_limit) * units(weighted) // units(orig_request) / 1000
    else:
        w = units(weighted)
        by_pct = w + math.trunc(w * (params.percentage or 0) / 100)
        by_val = w + units(params.value or 0.0)
        value = max(by_val, by_pct) / 1000
    if resource == "memory":
        value = float(math.ceil(value / MEMORY_ROUND_BYTES) * MEMORY_ROUND_BYTES)
    return value
