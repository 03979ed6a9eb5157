"""HPA target utilisation per container resource (``pkg/recommender/recommender.go``,
``updateRecommendedContainerBasedMetric``; ``pkg/hpa/service.go``, ``updateHPATargetValue``).
"""

from __future__ import annotations

import math

from bot.config.recommend import AdminSettings
from bot.model import SECONDS_PER_HOUR
from bot.recommend.rules import Rule
from bot.recommend.tortoise.ruled import Ruled


def usage_percent_ceil(rec_milli: int, req_milli: int) -> int:
    """``int32(ceil(float64(rec)/float64(req) × 100))``: division first, as upstream."""
    return math.ceil((float(rec_milli) / float(req_milli)) * 100)


def recommend_target(
    rec_milli: int, req_milli: int, current_percent: int, admin: AdminSettings
) -> Ruled:
    """``100 − (upper − current)`` with ``upper = ceil(rec/req × 100)``, clamped.

    If ``current > upper`` the current target is kept (low usage is blamed on imbalance or on
    minReplicas, which right-sizing handles); a result outside (0, 100] falls back to the
    current target; then clamp to [MinimumTargetResourceUtilization,
    MaximumTargetResourceUtilization] in every branch.
    """
    upper = usage_percent_ceil(rec_milli, req_milli)
    if current_percent > upper:
        value, rule = current_percent, Rule.TORTOISE_TARGET_KEEP
        reason = f"usage {upper}% of request is below the target {current_percent}%: kept"
    else:
        value = 100 - (upper - current_percent)
        rule = Rule.TORTOISE_TARGET_HEADROOM
        reason = f"100 - ({upper}% usage - {current_percent}% target)"
        if value <= 0 or value > 100:
            value, rule, reason = current_percent, Rule.TORTOISE_TARGET_KEEP, "out of range: kept"
    hi, lo = admin.maximum_target_resource_utilization, admin.minimum_target_resource_utilization
    if value > hi:
        value, rule, reason = hi, Rule.TORTOISE_TARGET_MAX, f"clamped to the maximum {hi}%"
    if value < lo:
        value, rule, reason = lo, Rule.TORTOISE_TARGET_MIN, f"clamped to the minimum {lo}%"
    return Ruled(value, rule, reason)


def apply_target_change_limits(
    current_percent: int,
    proposal: Ruled,
    *,
    last_changed_s: float | None,
    now_s: float,
    admin: AdminSettings,
) -> Ruled:
    """At most one change per ``HPATargetUtilizationUpdateInterval`` (24 h), increases capped
    at +``HPATargetUtilizationMaxIncrease`` (5) points; decreases in full
    (``UpdatingHPATargetUtilizationAllowed``, ``updateHPATargetValue``).
    """
    interval = admin.hpa_target_utilization_update_interval_s
    if (
        proposal.value != current_percent
        and last_changed_s is not None
        and now_s - last_changed_s < interval
    ):
        hours = (now_s - last_changed_s) / SECONDS_PER_HOUR
        return Ruled(
            current_percent,
            Rule.TORTOISE_TARGET_INTERVAL,
            f"changed {hours:.1f} h ago; at most one change per {interval / SECONDS_PER_HOUR:g} h",
        )
    step = admin.hpa_target_utilization_max_increase
    if proposal.value - current_percent > step:
        return Ruled(
            current_percent + step,
            Rule.TORTOISE_TARGET_MAX_INCREASE,
            f"{proposal.reason}; toward {proposal.value}%, at most +{step} per change",
        )
    return proposal
