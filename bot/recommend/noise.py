"""Noise control: what keeps small wobbles and pure rounding out of pull requests.

* Proposed requests round **up** to ``noise.cpu_step_cores`` / ``noise.memory_step_bytes``; a
  proposal equal to the current value on that grid is no change.
* A change is proposed only when it moves the request by at least ``max(floor, 10 % of the
  current value)`` (``noise.proportional``, bot rule); with ``noise.proportional: false``,
  HVPA's ``minChange`` (``hvpa.min_change_threshold``): ``min(value, percentage of current)``,
  200m / 200M by default (upstream).
* Never a memory request below the observed working-set peak.
* An OOM kill in the window proposes an increase at once, whatever minChange says.
* Rounding and minChange judge the **full move** from the current request to the recommended
  one, as HVPA judges its weighted delta; only then, with ``noise.step_limit`` (upstream), does
  Tortoise's ``MaxAllowedScalingDownRatio`` limit how far one proposal goes down:
  ``max(full move, round_up(trunc(current × ratio)))``, never above the ceiling
  (``step_limited``). A container far above its need therefore shrinks step by step instead of
  being held forever because each single step is below minChange.

Only requests pass through here. HPA metric changes (a metric added, a pod-level metric
replaced, a metric removed because its resource is no longer horizontal) are structural: no
threshold holds them back.
"""

from __future__ import annotations

import math

from bot.config.recommend import NoiseSettings
from bot.model import Resource
from bot.recommend.hvpa import min_change_threshold


def round_up_to_step(value: float, resource: Resource, noise: NoiseSettings) -> float:
    """``value`` rounded up to the manifest grid (1 millicore, 1 MiB by default)."""
    if resource == "cpu":
        steps = math.ceil(round(value / noise.cpu_step_cores, 6))
        return round(steps * noise.cpu_step_cores, 6)
    return float(math.ceil(value / noise.memory_step_bytes) * noise.memory_step_bytes)


def same_on_grid(current: float, proposed: float, resource: Resource, noise: NoiseSettings) -> bool:
    """True when the two round to the same manifest value: a rounding-only proposal."""
    return round_up_to_step(current, resource, noise) == round_up_to_step(proposed, resource, noise)


def proportional_threshold(current: float, resource: Resource, noise: NoiseSettings) -> float:
    """``max(floor, fraction × current)``: the smallest move worth a proposal (bot rule
    ``noise.proportional``): 10 % of the request, at least 10m CPU or 16 MiB by default, so a
    200m sidecar moves by 20m and a 4-core service does not churn by less than 400m."""
    floor = (
        noise.proportional_floor_cpu_cores
        if resource == "cpu"
        else float(noise.proportional_floor_memory_bytes)
    )
    return max(floor, current * noise.proportional_fraction)


def passes_min_change(
    current: float | None, proposed: float, resource: Resource, noise: NoiseSettings
) -> tuple[bool, float]:
    """(change allowed, threshold) for moving a request from ``current`` to ``proposed``:
    ``proportional_threshold`` with ``noise.proportional``, else HVPA's minChange."""
    if current is None:
        return True, 0.0
    direction = noise.scale_up if proposed > current else noise.scale_down
    if noise.proportional:
        threshold = proportional_threshold(current, resource, noise)
    else:
        threshold = min_change_threshold(current, getattr(direction, resource), resource)
    scale = 1000 if resource == "cpu" else 1
    delta = abs(round(proposed * scale) - round(current * scale))
    return delta >= round(threshold * scale), threshold


def step_limited(
    current: float, wanted: float, resource: Resource, ratio: float, noise: NoiseSettings
) -> float:
    """The proposal for a move from ``current`` to ``wanted`` under the step limit.

    ``max(wanted, round_up(trunc(current_milli × ratio)))``: at most ``1 − ratio`` down per
    proposal (Tortoise ``justifyNewSize``, ``MaxAllowedScalingDownRatio``); increases and
    ``ratio`` 0 leave ``wanted`` as it is, and so does a request too small for one step on the
    manifest grid (the rounded floor would be the current value).
    """
    if wanted >= current or ratio <= 0:
        return wanted
    floor_milli = math.trunc(round(current * 1000) * ratio)
    floor = round_up_to_step(floor_milli / 1000, resource, noise)
    return wanted if floor >= current else max(wanted, floor)
