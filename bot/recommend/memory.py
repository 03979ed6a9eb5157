"""The memory rules of the folding: after an OOM kill, for a leak, and the margin of a limit over
the observed peak (``docs/recommendations.md`` §2-§4).

- ``oom_raise`` (``oom.raise``, ``noise.oom_response: raise``): an OOM kill in the window raises
  the request as the VPA does after a kill, to ``max(current, VPA target × (1 + buffer), OOM
  bump)``, the bump being ``max(used + 100 MiB, trunc(used × 1.2))`` with ``used = max(request at
  the kill, peak of its window)`` (``model/container.go`` ``RecordOOM``); never lower than the
  current request in that proposal, whatever usage says. The limit goes with it
  (``limit_floors``): at least the bump, the current limit/request ratio (``limits.keep_ratio``)
  and the peak margin.
- ``leak_request`` (``oom.leak_quantile``): a leak's request is the ``1 − share`` quantile of
  the window's working-set samples (``noise.leak_over_request_share``, 0.03): the working set
  is above it in at most 3 % of the minutes; ``oom.leak`` keeps the request (share null).
- ``leak_limit`` (``oom.leak_cadence``): a leak's limit holds its growth until the pods restart,
  ``start + rate × cadence × (1 + limits.memory_peak_headroom)``; the cadence is the longest
  lifetime of a pod that ended in the window other than by a kill (``leak.restart_cadence``).
  Where only the kills restart the pods, their spacing is set by the limit itself (a margin on it
  would raise the limit every proposal): the limit holds ``start + rate × forecast.horizon_days``
  without a margin, for as long as a merged value is expected to live, and is never lowered;
  ``noise.leak_hold_days`` set: that many days, as before (``oom.leak``, never lowered).
- ``limit_floors`` (``limits.peak_headroom``): a memory limit is never below the observed
  working-set peak × ``(1 + limits.memory_peak_headroom)``; ``request_peak_floor`` raises a
  request whose limit equals it (the pod keeps its QoS class) to the same value. A leak's limit
  is exempt: its peak is wherever the limit kills it.
"""

from __future__ import annotations

import math

from bot.config.recommend import NoiseSettings, RecommendSettings
from bot.model import SECONDS_PER_DAY, Explained, Number
from bot.recommend import units
from bot.recommend.estimate import ResourceEstimate
from bot.recommend.inputs import ContainerInput
from bot.recommend.leak import Leak
from bot.recommend.rules import Rule, RuleId
from bot.recommend.vpa.limits import LimitRule

LEAK_RULES: frozenset[RuleId] = frozenset((Rule.OOM_LEAK, Rule.OOM_LEAK_QUANTILE))
"""Rules of a leaking container's request: its limit is ``leak_limit``'s."""

Inputs = dict[str, Number | str | None]


def is_burstable(container: ContainerInput) -> bool:
    """A memory limit above the request: the limit, not the request, absorbs the peaks."""
    request, limit = container.requests.memory_bytes, container.limits.memory_bytes
    return bool(request and limit and limit > request)


def limit_absorbs_peaks(container: ContainerInput, noise: NoiseSettings) -> bool:
    """A burstable container under the bot's OOM responses: its request is not floored at the
    peak (its limit is); upstream (``stacked``) floors the request as any other."""
    return is_burstable(container) and noise.oom_response != "stacked"


def limit_follows_request(container: ContainerInput) -> bool:
    """The memory limit equals the request (a Guaranteed pod's): the limit is the request."""
    request, limit = container.requests.memory_bytes, container.limits.memory_bytes
    return bool(request and limit and limit == request)


def oom_raise(current: float, est: ResourceEstimate, buffer: float) -> tuple[int, str, str]:
    """The request after an OOM kill (``oom.raise``, module doc), in milli-bytes, with its rule
    and reason: ``max(current, max(VPA target, bump) × (1 + buffer))``."""
    wanted = max(est.vpa.target, est.oom_floor) * (1 + buffer)
    value = max(float(current), wanted)
    shown = f" × (1 + {buffer:g})" if buffer else ""
    reason = (
        f"OOM kill in the window: max(current {units.amount(current, 'memory')}, max(VPA "
        f"target {units.amount(est.vpa.target, 'memory')}, OOM bump "
        f"{units.amount(est.oom_floor, 'memory')}){shown}), never lowered after a kill"
    )
    return math.ceil(round(value * 1000, 6)), Rule.OOM_RAISE, reason


def leak_request(
    current: float, leak: Leak, settings: RecommendSettings
) -> tuple[int | None, str, str, Inputs]:
    """A leaking container's request (module doc) in milli-bytes, None to keep it, with its
    rule, reason and inputs."""
    told = (
        f"memory leak: the working set grew about {units.amount(leak.bytes_per_day, 'memory')} "
        f"a day until each OOM kill ({leak.grew} of {leak.lives} pod lives, {leak.kills} kills)"
    )
    inputs: Inputs = {"leak_bytes_per_day": leak.bytes_per_day, "oom_kills": leak.kills}
    share = settings.noise.leak_over_request_share
    if share is None or leak.covering_bytes is None:
        return None, Rule.OOM_LEAK, f"{told}; the request is kept (fix the leak)", inputs
    life, _, _ = leak_life_days(leak, settings)
    ahead = leak.start_bytes + leak.bytes_per_day * life * (1 - share)
    covering = max(leak.covering_bytes, ahead)
    inputs |= {
        "over_request_share": share,
        "covering_bytes": leak.covering_bytes,
        "life_days": life,
        "start_bytes": leak.start_bytes,
    }
    return (
        math.ceil(round(covering * 1000, 6)),
        Rule.OOM_LEAK_QUANTILE,
        f"{told}; the request covers the working set in all but {share:.0%} of the minutes: "
        f"max(its {1 - share:.0%} quantile in the window "
        f"{units.amount(leak.covering_bytes, 'memory')}, the growth of a pod life under the "
        f"new limit, {units.amount(leak.start_bytes, 'memory')} + "
        f"{units.amount(leak.bytes_per_day, 'memory')}/day × {life:.1f} days × {1 - share:g}) "
        f"= {units.amount(covering, 'memory')} (fix the leak)",
        inputs,
    )


def leak_life_days(leak: Leak, settings: RecommendSettings) -> tuple[float, float, str]:
    """How long a leaking pod lives under the proposed limit (days), the margin on it, and why:
    the longest observed life that ended in a restart other than a kill, with
    ``limits.memory_peak_headroom``; where only kills restart the pods (their spacing is set by
    the limit itself, a margin on it would raise the limit every proposal),
    ``forecast.horizon_days``, how long a merged value is expected to live, without one."""
    if leak.restart_cadence_s is not None:
        return (
            leak.restart_cadence_s / SECONDS_PER_DAY,
            settings.limits.memory_peak_headroom,
            "the longest pod life that ended in a restart",
        )
    spacing = (leak.kill_spacing_s or 0.0) / SECONDS_PER_DAY
    return (
        settings.forecast.horizon_days,
        0.0,
        f"the pods restart only when killed, every {spacing:.1f} days at the limit: "
        "forecast.horizon_days",
    )


def leak_limit(
    current: Number | None, request: Explained, leak: Leak, settings: RecommendSettings
) -> Explained:
    """A leaking container's memory limit (module doc)."""
    days = settings.noise.leak_hold_days
    start, rate = leak.start_bytes, leak.bytes_per_day
    inputs: Inputs = {"leak_bytes_per_day": rate, "start_bytes": start}
    if days is not None:  # the former rule: a set number of days, never lowered
        held = math.ceil(start + rate * days)
        if current is not None and held <= current:
            return Explained(current, current, Rule.OOM_LEAK, "memory leak: the limit is kept")
        return Explained(
            current,
            held,
            Rule.OOM_LEAK,
            f"memory leak: the limit holds {days:g} days of growth, the working set at a "
            f"restart {units.amount(start, 'memory')} + {days:g} × "
            f"{units.amount(rate, 'memory')}",
            inputs,
        )
    cadence, margin, why = leak_life_days(leak, settings)
    held = math.ceil(start + rate * cadence * (1 + margin))
    formula = f"× {cadence:.1f} × (1 + {margin:g})" if margin else f"× {cadence:g}"
    if leak.restart_cadence_s is None:  # never lowered: the kills' spacing follows the limit
        held = max(held, math.ceil(float(current or 0)))
    value = max(held, math.ceil(float(request.proposed or 0)))
    inputs |= {"cadence_days": cadence, "margin_fraction": margin}
    if current is not None and value == current:
        return Explained(
            current,
            current,
            Rule.OOM_LEAK_CADENCE,
            f"memory leak: the limit is kept, {why} ({cadence:.1f} days; fix the leak or "
            "restart the pods on a schedule)",
            inputs,
        )
    return Explained(
        current,
        value,
        Rule.OOM_LEAK_CADENCE,
        f"memory leak: the limit holds the growth until a restart, {cadence:.1f} days ({why}): "
        f"{units.amount(start, 'memory')} + {units.amount(rate, 'memory')}/day {formula}",
        inputs,
    )


def request_peak_floor(
    container: ContainerInput, est: ResourceEstimate, settings: RecommendSettings
) -> tuple[float, str, str] | None:
    """The floor of a memory request at the observed peak (``noise.memory_peak_floor``), or
    None: the peak where the limit follows the request or there is none, × ``(1 +
    limits.memory_peak_headroom)`` where the limit equals the request (``limits.peak_headroom``:
    the limit keeps its margin, the pod its QoS class); none where the limit absorbs the
    peaks."""
    noise = settings.noise
    if est.usage is None or not noise.memory_floor_at_peak:
        return None
    if limit_absorbs_peaks(container, noise):
        return None
    peak, margin = est.usage.max, settings.limits.memory_peak_headroom
    if margin > 0 and limit_follows_request(container):
        return (
            peak * (1 + margin),
            LimitRule.LIMITS_PEAK_HEADROOM,
            f"the limit equals the request: raised to the observed working-set peak "
            f"{units.amount(peak, 'memory')} × (1 + {margin:g})",
        )
    return peak, Rule.NOISE_MEMORY_PEAK_FLOOR, "raised to the observed working-set peak"


def limit_floors(
    value: float,
    rule: str,
    reason: str,
    container: ContainerInput,
    settings: RecommendSettings,
    *,
    peak: float | None,
    oom_bump: float,
) -> tuple[float, str, str]:
    """A memory limit's floors, in order: the OOM bump (``oom.limit_bump`` of a burstable
    container under ``bounded``; ``oom.raise`` under ``raise``), the observed peak of a burstable
    container (``noise.memory_peak_floor``), the peak × (1 + margin) (``limits.peak_headroom``).
    """
    noise = settings.noise
    burstable = is_burstable(container)
    if oom_bump > value and (
        noise.oom_response == "raise" or (burstable and noise.oom_response == "bounded")
    ):
        value = oom_bump
        rule = Rule.OOM_RAISE if noise.oom_response == "raise" else Rule.OOM_LIMIT_BUMP
        reason = (
            f"OOM kill in the window: limit raised to the VPA OOM bump, max(used + 100Mi, "
            f"used × 1.2) = {units.amount(oom_bump, 'memory')}"
        )
    if peak is None:
        return value, rule, reason
    if limit_absorbs_peaks(container, noise) and noise.memory_floor_at_peak and value < peak:
        value, rule = peak, Rule.NOISE_MEMORY_PEAK_FLOOR
        reason = f"not below the observed working-set peak {units.amount(peak, 'memory')}"
    margin = settings.limits.memory_peak_headroom
    floor = peak * (1 + margin)
    if margin > 0 and value < floor:
        value, rule = floor, LimitRule.LIMITS_PEAK_HEADROOM
        reason = (
            f"{reason}; not below the observed working-set peak "
            f"{units.amount(peak, 'memory')} × (1 + {margin:g}) = {units.amount(floor, 'memory')}"
        )
    return value, rule, reason
