"""Limits that follow a new request.

Default: the VPA proportional rule (``vertical-pod-autoscaler/pkg/utils/vpa/
limit_and_request_scaling.go``, ``getProportionalResourceLimit``), with Tortoise's
``ResourceLimitMultiplier`` / ``MinimumCPULimit`` on top (``pkg/pod/pod.go``,
``ModifyPodSpecResource``). The policy is a setting (``limits.policy``):

* ``keep_ratio``: upstream. No original limit -> none; original request missing or equal to the
  limit -> limit = new request; else ``floor(origLimit × newRequest / origRequest)`` in
  milli-units (CPU) or whole bytes (memory), capped at MaxInt64 milli.
* ``leave``: the limit is not touched.
* ``drop_cpu_limit``: CPU limits are removed (proposed None); memory keeps its ratio.
* ``fixed_headroom``: where a limit exists, ``request × (1 + headroom)``.

Whatever the policy, a proposed limit is never below the proposed request, and never above
``max(current limit, proposed request × limits.max_ratio, observed peak × limits.peak_margin)``
(bot rule ``limits.evidence``: a ratio such as 16 is never multiplied into a bigger limit;
``limits.max_ratio`` null restores upstream).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from bot.config.recommend import AdminSettings, LimitsSettings
from bot.model import Resource
from bot.recommend.units import amount, ratio
from bot.recommend.vpa.limit_rules import LimitRule as LimitRule  # noqa: PLC0414 (re-exported)

MAX_INT64 = 2**63 - 1
"""Largest int64: the proportional limit saturates there (``getProportionalResourceLimit``)."""


@dataclass(frozen=True, slots=True)
class LimitProposal:
    """A limit (cores or bytes; None = no limit) with the rule and reason behind it."""

    value: float | None
    rule: str
    reason: str


def _milli(value: float, resource: Resource) -> int:
    return round(value * 1000) if resource == "cpu" else math.ceil(value)


def proportional_limit(
    orig_limit: float | None,
    orig_request: float | None,
    new_request: float | None,
    resource: Resource,
) -> LimitProposal:
    """Upstream ``getProportionalResourceLimit`` (CPU in millicores, memory in bytes)."""
    if not orig_limit:
        return LimitProposal(None, LimitRule.LIMITS_NONE, "no limit set: VPA does not add one")
    if not new_request:
        return LimitProposal(None, LimitRule.LIMITS_NONE, "no new request: limit not set")
    if not orig_request or _milli(orig_request, resource) == _milli(orig_limit, resource):
        return LimitProposal(
            new_request,
            LimitRule.LIMITS_EQUAL_TO_REQUEST,
            "limit was equal to the request (or no request)",
        )
    lim, req, new = (_milli(x, resource) for x in (orig_limit, orig_request, new_request))
    out = lim * new // req
    rule, reason = (
        LimitRule.LIMITS_KEEP_RATIO,
        f"limit/request ratio {ratio(orig_limit / orig_request)} kept",
    )
    if out > MAX_INT64:
        out, rule, reason = (
            MAX_INT64,
            LimitRule.LIMITS_KEEP_RATIO_CAPPED,
            "proportional limit capped",
        )
    return LimitProposal(out / 1000.0 if resource == "cpu" else float(out), rule, reason)


def propose_limit(
    orig_limit: float | None,
    orig_request: float | None,
    new_request: float | None,
    resource: Resource,
    *,
    limits: LimitsSettings,
    admin: AdminSettings,
    peak: float | None = None,
) -> LimitProposal:
    """The limit for ``new_request`` under the configured policy (see module doc); ``peak``:
    the observed usage peak (cores or bytes) for ``evidence_bound``."""
    if limits.policy == "leave":
        return LimitProposal(orig_limit, LimitRule.LIMITS_LEAVE, "limits policy: leave as is")
    if limits.policy == "drop_cpu_limit" and resource == "cpu":
        return LimitProposal(None, LimitRule.LIMITS_DROP_CPU, "limits policy: no CPU limit")
    if limits.policy == "fixed_headroom":
        if not orig_limit or not new_request:
            return LimitProposal(None, LimitRule.LIMITS_NONE, "no limit set: none added")
        headroom = (
            limits.cpu_headroom_fraction if resource == "cpu" else limits.memory_headroom_fraction
        )
        value = new_request * (1 + headroom)
        out = LimitProposal(
            value if resource == "cpu" else float(math.ceil(value)),
            LimitRule.LIMITS_FIXED_HEADROOM,
            f"request + {headroom:.0%}",
        )
    else:
        out = proportional_limit(orig_limit, orig_request, new_request, resource)
    if out.value is None or new_request is None:
        return out
    value = out.value
    multiplier = admin.resource_limit_multiplier.get(resource)
    if multiplier and value < new_request * multiplier:
        value = new_request * multiplier
    if resource == "cpu" and value < admin.minimum_cpu_limit_cores:
        value = admin.minimum_cpu_limit_cores
    value = max(value, new_request)
    bound = evidence_bound(orig_limit, new_request, peak, resource, limits)
    if bound is not None and value > bound:
        kept = max(bound, new_request)
        return LimitProposal(
            kept,
            LimitRule.LIMITS_EVIDENCE,
            f"{out.reason} would give {amount(value, resource)}; a limit rises no higher than "
            f"max(current {amount(orig_limit or 0, resource)}, request × "
            f"{limits.max_ratio.get(resource) or 0:g}, peak × {limits.peak_margin:g})",
        )
    return LimitProposal(value, out.rule, out.reason)


def evidence_bound(
    orig_limit: float | None,
    new_request: float,
    peak: float | None,
    resource: Resource,
    limits: LimitsSettings,
) -> float | None:
    """``max(current limit, new request × max_ratio, peak × peak_margin)``: the highest limit a
    proposal may set (bot rule ``limits.evidence``); None when ``limits.max_ratio`` names no
    ratio for ``resource`` (upstream: the ratio rule alone)."""
    ratio_cap = limits.max_ratio.get(resource)
    if ratio_cap is None:
        return None
    return max(orig_limit or 0.0, new_request * ratio_cap, (peak or 0.0) * limits.peak_margin)
