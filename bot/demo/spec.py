"""The demo shop's simulated cluster: the same services, containers and requests as the
manifests in ``bot/demo/repo`` (namespace ``shop``, cluster label ``demo``).

- ``frontend``: app + istio-proxy, an HPA at 60 %; sized for launch day, runs at a third.
- ``cart`` (Kustomize overlay ``prod``): 500m requested, about 120m used.
- ``checkout`` (Helm values ``values-prod.yaml``): busy weekdays, quiet weekends.
- ``redis`` (StatefulSet, vertical): memory grows towards its 512Mi limit and is OOM-killed.
- ``reviews`` (``demo_cluster`` only, outside ``demo_spec``): the workload of the demo's merged
  bot pull request (``bot/demo/pulls.json``): its CPU request went from ``REVIEWS_BEFORE_CPU``
  to ``REVIEWS_CPU`` (the manifests' value) in a rollout ``REVIEWS_LIVE_DAYS`` into the history,
  and it ran as predicted since, so ``plan --demo`` shows the verification of a merge.

``scripts/make_demo_snapshot.py`` runs ``demo_cluster()`` through a real Prometheus and records
``bot/demo/snapshot.zip``.
"""

from __future__ import annotations

import zlib
from dataclasses import replace

import numpy as np

from bot.model import MIB, SECONDS_PER_DAY
from bot.sim.cluster import SimulatedCluster, simulate
from bot.sim.continuous import simulate_switched
from bot.sim.load import demand_cores
from bot.sim.spec import ClusterSpec, ContainerSpec, HpaSpec, ServiceSpec

DEMO_LABELS = {"cluster": "demo"}
"""Labels on every demo series (an external label of the demo cluster)."""

DEMO_DAYS = 8.0
"""History length: more than one week, so weekly replica slots are all filled."""

DEMO_STEP_S = 120
"""Sample spacing of the demo history, seconds."""


def demo_spec(*, seed: int = 20261123) -> ClusterSpec:
    """The demo cluster (seeded: the same snapshot every time)."""
    frontend = ServiceSpec(
        name="frontend",
        namespace="shop",
        kind="Deployment",
        containers=(
            ContainerSpec(
                name="app",
                cpu_request_cores=1.0,
                memory_request_bytes=1024 * MIB,
                cpu_share_fraction=0.85,
                cpu_floor_cores=0.02,
                memory_base_bytes=300 * MIB,
                memory_load_bytes=80 * MIB,
                memory_growth_bytes_per_day=4 * MIB,
                memory_limit_bytes=2048 * MIB,
            ),
            ContainerSpec(
                name="istio-proxy",
                cpu_request_cores=0.5,
                memory_request_bytes=256 * MIB,
                cpu_share_fraction=0.15,
                cpu_floor_cores=0.005,
                memory_base_bytes=70 * MIB,
                memory_load_bytes=15 * MIB,
                memory_limit_bytes=512 * MIB,
                cpu_limit_cores=1.0,
            ),
        ),
        replicas=3,
        hpa=HpaSpec(3, 20, 60),
        peak_cores=3.0,
        night_fraction=0.25,
        weekend_fraction=0.8,
        burst_per_day=1.0,
        rollouts_per_week=2.0,
    )
    cart = ServiceSpec(
        name="cart",
        namespace="shop",
        kind="Deployment",
        containers=(
            ContainerSpec(
                name="cart",
                cpu_request_cores=0.5,
                memory_request_bytes=512 * MIB,
                cpu_share_fraction=1.0,
                cpu_floor_cores=0.01,
                memory_base_bytes=150 * MIB,
                memory_load_bytes=40 * MIB,
                memory_limit_bytes=1024 * MIB,
                cpu_limit_cores=1.0,
            ),
        ),
        replicas=2,
        hpa=HpaSpec(2, 10, 70),
        peak_cores=0.5,
        night_fraction=0.3,
        rollouts_per_week=1.0,
    )
    checkout = ServiceSpec(
        name="checkout",
        namespace="shop",
        kind="Deployment",
        containers=(
            ContainerSpec(
                name="checkout",
                cpu_request_cores=0.8,
                memory_request_bytes=1024 * MIB,
                cpu_share_fraction=1.0,
                cpu_floor_cores=0.02,
                memory_base_bytes=420 * MIB,
                memory_load_bytes=120 * MIB,
                memory_limit_bytes=2048 * MIB,
            ),
        ),
        replicas=4,
        hpa=HpaSpec(4, 16, 70),
        peak_cores=2.4,
        night_fraction=0.2,
        weekend_fraction=0.5,
        rollouts_per_week=1.0,
    )
    redis = ServiceSpec(
        name="redis",
        namespace="shop",
        kind="StatefulSet",
        containers=(
            ContainerSpec(
                name="redis",
                cpu_request_cores=0.25,
                memory_request_bytes=512 * MIB,
                cpu_share_fraction=1.0,
                cpu_floor_cores=0.01,
                memory_base_bytes=300 * MIB,
                memory_load_bytes=30 * MIB,
                memory_growth_bytes_per_day=60 * MIB,
                memory_limit_bytes=512 * MIB,
            ),
        ),
        replicas=1,
        peak_cores=0.12,
        burst_per_day=0.2,
        rollouts_per_week=0.0,
    )
    return ClusterSpec(
        seed=seed,
        services=(frontend, cart, checkout, redis),
        days=DEMO_DAYS,
        step_s=DEMO_STEP_S,
    )


REVIEWS_BEFORE_CPU = 0.6
"""The CPU request of ``reviews`` before its merged pull request (cores)."""
REVIEWS_CPU = 0.165
"""The CPU request the merged pull request set (cores): the manifests' value, and what the
demo's plan recommends again (no change)."""
REVIEWS_LIVE_DAYS = 0.95
"""When the merged request rolled out, in days from the start of the history (the merge is
28 minutes earlier, ``bot/demo/pulls.json``): the 7 days watched after it (``verify``'s
defaults) end within the 8 recorded, and the hours of the week compared are those of the
first day, before the rollout, and of the last."""


def reviews(cpu_request_cores: float = REVIEWS_CPU) -> ServiceSpec:
    """The ``reviews`` service at ``cpu_request_cores``: two replicas, steady daytime load."""
    return ServiceSpec(
        name="reviews",
        namespace="shop",
        kind="Deployment",
        containers=(
            ContainerSpec(
                name="reviews",
                cpu_request_cores=cpu_request_cores,
                memory_request_bytes=256 * MIB,
                cpu_share_fraction=1.0,
                cpu_floor_cores=0.01,
                memory_base_bytes=120 * MIB,
                memory_load_bytes=20 * MIB,
                memory_limit_bytes=512 * MIB,
            ),
        ),
        replicas=2,
        peak_cores=0.24,
        night_fraction=0.3,
        rollouts_per_week=0.0,
    )


def demo_cluster(spec: ClusterSpec | None = None) -> SimulatedCluster:
    """The demo cluster: ``demo_spec``'s services as ``simulate`` draws them, and ``reviews``
    switched from ``REVIEWS_BEFORE_CPU`` to ``REVIEWS_CPU`` by a rollout at
    ``REVIEWS_LIVE_DAYS``, its demand and pods from streams of its own name (so it changes
    nothing of the other services)."""
    spec = spec or demo_spec()
    cluster = simulate(spec)
    before, after = reviews(REVIEWS_BEFORE_CPU), reviews()
    rng = np.random.default_rng([spec.seed, zlib.crc32(b"shop/reviews")])
    demand = demand_cores(after, cluster.t_s, rng)
    switch = round(REVIEWS_LIVE_DAYS * SECONDS_PER_DAY / spec.step_s)
    switched = simulate_switched(spec, demand, before, after, switch, rollout=True)
    return SimulatedCluster(
        replace(spec, services=(*spec.services, after)),
        cluster.t_s,
        (*cluster.services, switched),
    )
