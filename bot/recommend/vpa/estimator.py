"""VPA estimators and capping, vectorised over replay steps.

The chain of ``logic/recommender.go`` (``CreatePodResourceRecommender``) for one resource:

1. ``percentile``: target P90, lower P50, upper P95 of the histogram (``logic/estimator.go``,
   ``percentileEstimator``), each converted to an integer amount at once;
2. ``margin``: ``x + trunc(x × 0.15)`` on all three (``marginEstimator``);
3. ``confidence``: ``upper × (1 + 1/conf)``, ``lower × (1 + 0.001/conf)^-2``
   (``confidenceMultiplier``); conf = 0 gives 1e14 and 0;
4. per-pod minimum: ``max(x, trunc(podMin / n))`` with ``n`` containers (``minResourcesEstimator``);
5. capping, always last: ``minAllowed`` then ``maxAllowed`` (container policy, else the global
   max flags) on target, lower and upper (``utils/vpa/capping.go``, ``ApplyVPAPolicy``);
   ``uncappedTarget`` is the target before capping.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bot.config.recommend import VpaSettings
from bot.model import FloatArray, Resource, VpaEstimate
from bot.recommend.vpa.amounts import amount_from_value, scale_amount, value_from_amount
from bot.recommend.vpa.constants import LOWER_BOUND_CONFIDENCE, UPPER_BOUND_CONFIDENCE
from bot.recommend.vpa.replay import ReplayedHistogram


@dataclass(frozen=True, slots=True, eq=False)
class EstimateRows:
    """Capped target, lower and upper bound and the uncapped target, in cores or bytes."""

    target: FloatArray
    lower: FloatArray
    upper: FloatArray
    uncapped_target: FloatArray
    confidence: FloatArray
    capped_by: str | None = None
    """``minAllowed`` or ``maxAllowed`` when capping changed the final target."""
    unfloored_target: FloatArray | None = None
    """The target before the per-pod minimum and capping: what usage alone asks for."""

    def final(self) -> VpaEstimate:
        return VpaEstimate(
            target=float(self.target[-1]),
            lower_bound=float(self.lower[-1]),
            upper_bound=float(self.upper[-1]),
            uncapped_target=float(self.uncapped_target[-1]),
            confidence=float(self.confidence[-1]),
        )


def percentiles_for(resource: Resource, settings: VpaSettings) -> tuple[float, float, float]:
    """(target, lower, upper) percentiles of ``resource`` (flags of VPA >= 1.2.0)."""
    if resource == "cpu":
        return (
            settings.cpu_target_percentile,
            settings.cpu_lower_bound_percentile,
            settings.cpu_upper_bound_percentile,
        )
    return (
        settings.memory_target_percentile,
        settings.memory_lower_bound_percentile,
        settings.memory_upper_bound_percentile,
    )


def confidence_factor(conf: FloatArray, multiplier: float, exponent: float) -> FloatArray:
    """``(1 + multiplier/conf)^exponent``; conf = 0 gives +Inf for a positive exponent, else 0."""
    with np.errstate(divide="ignore"):
        base = 1.0 + multiplier / np.where(conf > 0, conf, 0.0)
    return np.where(conf > 0, np.power(base, exponent), np.inf if exponent > 0 else 0.0)


def confidence_factors(conf: FloatArray) -> tuple[FloatArray, FloatArray]:
    """(upper, lower) bound multipliers of ``conf``; both resources of a container share them."""
    return (
        confidence_factor(conf, *UPPER_BOUND_CONFIDENCE),
        confidence_factor(conf, *LOWER_BOUND_CONFIDENCE),
    )


def pod_minimum_amount(resource: Resource, settings: VpaSettings, n_containers: int) -> float:
    """The per-pod minimum split across ``n`` containers: ``trunc(amount × (1/n))``.

    ``logic/recommender.go``: CPU ``ScaleResource(CPUAmountFromCores(25 × 0.001), 1/n)``, memory
    ``ScaleResource(250 × 1024 × 1024, 1/n)``; two containers get 12 m and 131,072,000 bytes.
    """
    pod = settings.pod_min_cpu_cores if resource == "cpu" else float(settings.pod_min_memory_bytes)
    amount = amount_from_value(np.array([pod]), resource)
    return float(scale_amount(amount, 1.0 / max(n_containers, 1))[0])


def cap_amounts(
    values: FloatArray, min_amount: float | None, max_amount: float | None
) -> FloatArray:
    """``ApplyVPAPolicy`` for one resource: raise to min, then lower to max (max wins)."""
    out = values
    if min_amount:
        out = np.maximum(out, min_amount)
    if max_amount:
        out = np.minimum(out, max_amount)
    return out


def estimate(
    histogram: ReplayedHistogram,
    conf: FloatArray,
    resource: Resource,
    settings: VpaSettings,
    *,
    n_containers: int,
    min_allowed: float | None = None,
    max_allowed: float | None = None,
    factors: tuple[FloatArray, FloatArray] | None = None,
) -> EstimateRows:
    """Target, bounds and uncapped target at the end of each replay step (see module doc).

    ``factors``: ``confidence_factors(conf)`` when already computed. Target, lower and upper
    bound go through each step as the rows of one array.
    """
    target_p, lower_p, upper_p = percentiles_for(resource, settings)
    upper_factor, lower_factor = confidence_factors(conf) if factors is None else factors
    global_max = (
        settings.max_allowed_cpu_cores if resource == "cpu" else settings.max_allowed_memory_bytes
    )
    cap_max = max_allowed if max_allowed else global_max
    min_amt = (
        float(amount_from_value(np.array([min_allowed]), resource)[0]) if min_allowed else None
    )
    max_amt = float(amount_from_value(np.array([cap_max]), resource)[0]) if cap_max else None
    pod_min = pod_minimum_amount(resource, settings, n_containers)
    rows = amount_from_value(histogram.percentiles((target_p, lower_p, upper_p)), resource)
    rows += scale_amount(rows, settings.margin_fraction)
    rows[2] = scale_amount(rows[2], upper_factor)
    rows[1] = scale_amount(rows[1], lower_factor)
    unfloored = rows[0].copy()
    np.maximum(rows, pod_min, out=rows)
    target = rows[0]
    capped = cap_amounts(rows, min_amt, max_amt)
    capped_by = None
    if capped[0, -1] > target[-1]:
        capped_by = "minAllowed"
    elif capped[0, -1] < target[-1]:
        capped_by = "maxAllowed"
    values = value_from_amount(capped, resource)
    return EstimateRows(
        target=values[0],
        lower=values[1],
        upper=values[2],
        uncapped_target=value_from_amount(target, resource),
        confidence=conf,
        capped_by=capped_by,
        unfloored_target=value_from_amount(unfloored, resource),
    )
