"""Load profiles and service archetypes: the one definition of how simulated services behave.

``PROFILES`` are the load shapes over time (``tortoise-bot simulate --profile`` draws histories
with them); ``ARCHETYPES`` are nine whole services, each a load shape plus containers with
realistic current values, some over- and some under-provisioned (``benchmarks/quality.py``
scores recommendations on them). ``archetype_cluster(seed)`` draws all nine for one seed: the
size of each service varies by seed (``SIZE_RANGE``), its declared values do not, so a seed can
turn a tight service into a slack one.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Literal

from bot.model import MIB
from bot.sim.spec import (
    DEFAULT_START_S,
    SIDECAR_NAME,
    ClusterSpec,
    ContainerSpec,
    HpaMetric,
    HpaSpec,
    ServiceSpec,
)

Profile = Literal["daily", "weekly", "bursty", "growing"]
"""The load shapes ``tortoise-bot simulate --profile`` offers."""


@dataclass(frozen=True, slots=True)
class ProfileShape:
    """The load shape of a profile: ``ServiceSpec`` fields, plus memory growth per day as a
    fraction of the memory request (a leak that restarts at each container start)."""

    night_fraction: float
    weekend_fraction: float
    burst_per_day: float
    burst_factor: float
    noise_fraction: float
    growth_per_day: float = 0.0
    memory_growth_fraction_per_day: float = 0.0

    def shape(self, service: ServiceSpec) -> ServiceSpec:
        """``service`` with this load shape (its containers untouched)."""
        return replace(
            service,
            night_fraction=self.night_fraction,
            weekend_fraction=self.weekend_fraction,
            burst_per_day=self.burst_per_day,
            burst_factor=self.burst_factor,
            noise_fraction=self.noise_fraction,
            growth_per_day=self.growth_per_day,
        )


PROFILES: Mapping[Profile, ProfileShape] = {
    "daily": ProfileShape(0.3, 1.0, 0.3, 2.0, 0.08),
    "weekly": ProfileShape(0.3, 0.3, 0.3, 2.0, 0.08),
    "bursty": ProfileShape(0.5, 0.9, 6.0, 4.0, 0.15),
    "growing": ProfileShape(0.3, 0.8, 0.3, 2.0, 0.08, 0.03, 0.04),
}
"""``daily``: the same day every day; ``weekly``: quiet weekends (30 % of a weekday);
``bursty``: six short 4x bursts a day on a flat load; ``growing``: +3 % demand per day (of the
first day's) and memory that grows 4 % of the request a day."""

STEADY = ProfileShape(0.9, 0.95, 0.0, 1.0, 0.05)
"""Flat, quiet load: no daily cycle to speak of, no bursts."""

SPIKY = ProfileShape(0.15, 0.8, 12.0, 8.0, 0.1)
"""A batch-like worker: idle most of the day, a dozen short 8x spikes a day."""

SIZE_RANGE = (0.8, 1.25)
"""Factor on each archetype's demand drawn per seed (uniform)."""

MEMORY_SIZE_RANGE = (0.9, 1.1)
"""Factor on each archetype's idle memory drawn per seed (uniform)."""

QUALITY_NAMESPACE = "quality"
"""Namespace of every archetype."""


def _mib(n: float) -> int:
    return int(n * MIB)


def _api_daily(size: float, mem: float) -> ServiceSpec:
    """Three pods sized for a launch that never came: peak 0.6 core against 1 core requested."""
    app = ContainerSpec(
        "app", 1.0, _mib(1024), 1.0, 0.01, _mib(300 * mem), _mib(60), memory_limit_bytes=_mib(1024)
    )
    service = ServiceSpec("api-daily", QUALITY_NAMESPACE, "Deployment", (app,), 3)
    return PROFILES["daily"].shape(replace(service, peak_cores=1.8 * size))


def _reports_weekly(size: float, mem: float) -> ServiceSpec:
    """Two pods busy on weekdays, requested below their weekday peak (0.55 core per pod)."""
    app = ContainerSpec(
        "app",
        0.5,
        _mib(384),
        1.0,
        0.01,
        _mib(220 * mem),
        _mib(60),
        memory_limit_bytes=_mib(512),
        cpu_limit_cores=1.0,
    )
    service = ServiceSpec("reports-weekly", QUALITY_NAMESPACE, "Deployment", (app,), 2)
    return PROFILES["weekly"].shape(replace(service, peak_cores=1.1 * size))


def _ingest_bursty(size: float, mem: float) -> ServiceSpec:
    """A flat load with six 4x bursts a day; memory follows the bursts."""
    app = ContainerSpec(
        "app", 0.3, _mib(512), 1.0, 0.01, _mib(380 * mem), _mib(90), memory_limit_bytes=_mib(1024)
    )
    service = ServiceSpec("ingest-bursty", QUALITY_NAMESPACE, "Deployment", (app,), 2)
    return PROFILES["bursty"].shape(replace(service, peak_cores=0.5 * size))


def _search_growing(size: float, mem: float) -> ServiceSpec:
    """Right-sized on day 0, demand +3 % a day: short of CPU by the third week."""
    app = ContainerSpec(
        "app",
        0.5,
        _mib(768),
        1.0,
        0.01,
        _mib(350 * mem),
        _mib(200),
        memory_limit_bytes=_mib(1536),
    )
    service = ServiceSpec("search-growing", QUALITY_NAMESPACE, "Deployment", (app,), 3)
    return PROFILES["growing"].shape(replace(service, peak_cores=1.15 * size))


def _frontend_hpa(size: float, mem: float) -> ServiceSpec:
    """An HPA'd web app with an ``istio-proxy`` sidecar at the mesh's default 100m/128Mi and
    2/1Gi limits, scaling on the pod-level CPU ``Resource`` metric at 70 %."""
    app = ContainerSpec(
        "app",
        0.5,
        _mib(512),
        0.85,
        0.01,
        _mib(330 * mem),
        _mib(50),
        memory_limit_bytes=_mib(1024),
    )
    sidecar = ContainerSpec(
        SIDECAR_NAME,
        0.1,
        _mib(128),
        0.15,
        0.004,
        _mib(55 * mem),
        _mib(20),
        memory_limit_bytes=_mib(1024),
        cpu_limit_cores=2.0,
    )
    service = ServiceSpec(
        "frontend-hpa",
        QUALITY_NAMESPACE,
        "Deployment",
        (app, sidecar),
        2,
        hpa=HpaSpec(2, 10, 70, (HpaMetric(70),)),
        rollouts_per_week=2.0,
    )
    return PROFILES["weekly"].shape(
        replace(service, peak_cores=3.0 * size, night_fraction=0.2, weekend_fraction=0.6)
    )


def _cache_leaky(size: float, mem: float) -> ServiceSpec:
    """Two StatefulSet pods whose memory leaks 250 MiB a day towards a 1 GiB limit: OOM-killed
    every two to three days, restarting fresh each time."""
    app = ContainerSpec(
        "app",
        0.25,
        _mib(768),
        1.0,
        0.01,
        _mib(380 * mem),
        _mib(40),
        memory_growth_bytes_per_day=_mib(250),
        memory_limit_bytes=_mib(1024),
    )
    service = ServiceSpec(
        "cache-leaky", QUALITY_NAMESPACE, "StatefulSet", (app,), 2, rollouts_per_week=0.0
    )
    return PROFILES["daily"].shape(replace(service, peak_cores=0.35 * size))


def _tiny_exporter(size: float, mem: float) -> ServiceSpec:
    """Two tiny containers per pod (about 20m / 40 MiB and 5m / 20 MiB), requested 50m/64Mi
    and 10m/32Mi."""
    exporter = ContainerSpec(
        "exporter",
        0.05,
        _mib(64),
        0.8,
        0.004,
        _mib(36 * mem),
        _mib(6),
        memory_limit_bytes=_mib(128),
    )
    reloader = ContainerSpec(
        "reloader",
        0.01,
        _mib(32),
        0.2,
        0.001,
        _mib(19 * mem),
        _mib(2),
        memory_limit_bytes=_mib(64),
    )
    service = ServiceSpec("tiny-exporter", QUALITY_NAMESPACE, "Deployment", (exporter, reloader), 2)
    return STEADY.shape(replace(service, peak_cores=0.035 * size, noise_fraction=0.15))


def _billing_steady(size: float, mem: float) -> ServiceSpec:
    """Two pods using a steady 10 % of the 2 cores each requests."""
    app = ContainerSpec(
        "app",
        2.0,
        _mib(4096),
        1.0,
        0.01,
        _mib(1400 * mem),
        _mib(100),
        memory_limit_bytes=_mib(4096),
        cpu_limit_cores=4.0,
    )
    service = ServiceSpec("billing-steady", QUALITY_NAMESPACE, "Deployment", (app,), 2)
    return STEADY.shape(replace(service, peak_cores=0.4 * size))


def _batch_spiky(size: float, mem: float) -> ServiceSpec:
    """One worker idling at a tenth of a core with a dozen 8x spikes a day; a spike's memory can
    pass its 1 GiB limit (OOM kills at the biggest spikes)."""
    app = ContainerSpec(
        "worker",
        0.5,
        _mib(640),
        1.0,
        0.01,
        _mib(420 * mem),
        _mib(75),
        memory_limit_bytes=_mib(1024),
    )
    service = ServiceSpec("batch-spiky", QUALITY_NAMESPACE, "Deployment", (app,), 1)
    return SPIKY.shape(replace(service, peak_cores=0.12 * size))


ARCHETYPES: Mapping[str, Callable[[float, float], ServiceSpec]] = {
    "api-daily": _api_daily,
    "reports-weekly": _reports_weekly,
    "ingest-bursty": _ingest_bursty,
    "search-growing": _search_growing,
    "frontend-hpa": _frontend_hpa,
    "cache-leaky": _cache_leaky,
    "tiny-exporter": _tiny_exporter,
    "billing-steady": _billing_steady,
    "batch-spiky": _batch_spiky,
}
"""Service name -> builder from (demand factor, idle-memory factor); docstrings say what each
service is and how its current values fit it."""


def archetype_cluster(
    seed: int,
    *,
    days: float,
    names: tuple[str, ...] | None = None,
    step_s: int = 60,
    start_s: float = DEFAULT_START_S,
) -> ClusterSpec:
    """The archetypes (all, or ``names`` in ``ARCHETYPES`` order) drawn for ``seed``."""
    rng = random.Random(f"archetypes/{seed}")
    services = []
    for name, build in ARCHETYPES.items():
        size, mem = rng.uniform(*SIZE_RANGE), rng.uniform(*MEMORY_SIZE_RANGE)
        if names is None or name in names:
            services.append(build(size, mem))
    return ClusterSpec(seed, tuple(services), days=days, step_s=step_s, start_s=start_s)
