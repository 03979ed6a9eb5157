"""The services scored and when: the design set, the test set, and the split on each weekday.

- **design** set: the nine archetypes of ``bot.sim.profiles`` (``ARCHETYPES``), the services the
  engine may be tuned on;
- **test** set: five other shapes (``TEST_SERVICES``), run only to report: a weekly load peaking
  on Mondays, growth with a step change (HPA'd), a daily service with a holiday in the training
  and one in the scored days, a batch job every 6 h, a load that halves mid-history.

Each seed scales a service's demand by ``SIZE_RANGE`` and its idle memory by
``MEMORY_SIZE_RANGE`` (drawn per service name, so a service is the same whatever else runs);
the declared values stay. ``split_start(weekday, days)`` is the first sample of a history whose
``days`` of training end at 00:00 UTC (the simulated time zone) of ``weekday``.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping
from dataclasses import replace

import numpy as np

from bot.model import MIB, SECONDS_PER_DAY
from bot.sim.load import weekday
from bot.sim.profiles import ARCHETYPES, MEMORY_SIZE_RANGE, PROFILES, QUALITY_NAMESPACE, SIZE_RANGE
from bot.sim.spec import (
    DEFAULT_START_S,
    ContainerSpec,
    HpaMetric,
    HpaSpec,
    LevelChange,
    PeriodicBurst,
    ServiceSpec,
)

WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
"""Split weekdays, Monday = 0."""


def _mib(n: float) -> int:
    return int(n * MIB)


def _app(
    cpu: float, request_mib: int, base_mib: float, load_mib: int, limit_mib: int
) -> ContainerSpec:
    return ContainerSpec(
        "app",
        cpu,
        _mib(request_mib),
        1.0,
        0.01,
        _mib(base_mib),
        _mib(load_mib),
        memory_limit_bytes=_mib(limit_mib),
    )


def _checkout_monday(size: float, mem: float) -> ServiceSpec:
    """Two pods; Mondays at 1.6× a mid-week day, weekends at 35 %: 600m a pod covers the
    week but not a Monday afternoon (~0.8 core a pod)."""
    service = ServiceSpec(
        "checkout-monday",
        QUALITY_NAMESPACE,
        "Deployment",
        (_app(0.6, 512, 260 * mem, 60, 768),),
        2,
        weekday_factors=(1.6, 1.1, 1.0, 1.0, 1.0, 0.35, 0.35),
    )
    return replace(PROFILES["daily"].shape(service), peak_cores=1.0 * size)


def _orders_step(size: float, mem: float) -> ServiceSpec:
    """HPA 2–12 on the app's CPU at 75 % of 400m; demand +1.5 % a day and 1.5× from day 10 on
    (a new customer)."""
    service = ServiceSpec(
        "orders-step",
        QUALITY_NAMESPACE,
        "Deployment",
        (_app(0.4, 512, 300 * mem, 80, 1024),),
        2,
        hpa=HpaSpec(2, 12, 75, (HpaMetric(75, "app"),)),
        rollouts_per_week=2.0,
    )
    shaped = PROFILES["daily"].shape(service)
    return replace(
        shaped,
        growth_per_day=0.015,
        level_changes=(LevelChange(10.0, 1.5),),
        peak_cores=1.6 * size,
    )


def _portal_holiday(size: float, mem: float) -> ServiceSpec:
    """Three pods at 800m for a daily peak of ~0.5 core a pod; day 11 (training) and day 19
    (scored) are holidays at the night level."""
    service = ServiceSpec(
        "portal-holiday",
        QUALITY_NAMESPACE,
        "Deployment",
        (_app(0.8, 768, 320 * mem, 60, 1024),),
        3,
    )
    return replace(PROFILES["daily"].shape(service), holidays=(11.0, 19.0), peak_cores=1.5 * size)


def _etl_6h(size: float, mem: float) -> ServiceSpec:
    """One worker idling at ~0.15 core; every 6 h (01:00, 07:00, ...) a 40-minute job at 5×,
    its memory following the load."""
    service = ServiceSpec(
        "etl-6h",
        QUALITY_NAMESPACE,
        "Deployment",
        (_app(0.25, 512, 280 * mem, 60, 1024),),
        1,
        periodic_burst=PeriodicBurst(6.0, 40.0, 5.0, 1.0),
    )
    shaped = replace(service, night_fraction=0.9, weekend_fraction=1.0, burst_per_day=0.0)
    return replace(shaped, noise_fraction=0.08, peak_cores=0.15 * size)


def _legacy_halved(size: float, mem: float) -> ServiceSpec:
    """Two pods at 700m; the daily load halves on day 7 (traffic moved elsewhere)."""
    service = ServiceSpec(
        "legacy-halved",
        QUALITY_NAMESPACE,
        "Deployment",
        (_app(0.7, 640, 300 * mem, 60, 1024),),
        2,
    )
    shaped = PROFILES["daily"].shape(service)
    return replace(shaped, level_changes=(LevelChange(7.0, 0.5),), peak_cores=1.6 * size)


TEST_SERVICES: Mapping[str, Callable[[float, float], ServiceSpec]] = {
    "checkout-monday": _checkout_monday,
    "orders-step": _orders_step,
    "portal-holiday": _portal_holiday,
    "etl-6h": _etl_6h,
    "legacy-halved": _legacy_halved,
}
"""The test set: name -> builder from (demand factor, idle-memory factor)."""

SETS: Mapping[str, tuple[str, ...]] = {
    "design": tuple(ARCHETYPES),
    "test": tuple(TEST_SERVICES),
    "all": (*ARCHETYPES, *TEST_SERVICES),
}
"""Set name -> its services, in order."""


def set_of(service: str) -> str:
    """``design`` or ``test``."""
    return "design" if service in ARCHETYPES else "test"


def build(name: str, seed: int) -> ServiceSpec:
    """Service ``name`` of either set, sized for ``seed`` (module doc)."""
    rng = random.Random(f"quality/{seed}/{name}")
    size, mem = rng.uniform(*SIZE_RANGE), rng.uniform(*MEMORY_SIZE_RANGE)
    builder = ARCHETYPES.get(name) or TEST_SERVICES[name]
    return builder(size, mem)


def split_start(day: int, days: float, step_s: int = 60) -> float:
    """First sample of a history whose ``days`` of training end at 00:00 UTC of weekday ``day``
    (Monday = 0): the first such midnight at least ``days`` after ``DEFAULT_START_S``."""
    midnight = math.ceil((DEFAULT_START_S + days * SECONDS_PER_DAY) / SECONDS_PER_DAY)
    now = int(weekday(np.asarray([midnight * SECONDS_PER_DAY], np.float64))[0])
    split = (midnight + (day - now) % 7) * SECONDS_PER_DAY
    start = split - days * SECONDS_PER_DAY
    return float(round(start / step_s) * step_s)
