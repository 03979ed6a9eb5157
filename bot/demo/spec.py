"""The demo shop's simulated cluster: the same services, containers and requests as the
manifests in ``bot/demo/repo`` (namespace ``shop``, cluster label ``demo``).

- ``frontend``: app + istio-proxy, an HPA at 60 %; sized for launch day, runs at a third.
- ``cart`` (Kustomize overlay ``prod``): 500m requested, about 120m used.
- ``checkout`` (Helm values ``values-prod.yaml``): busy weekdays, quiet weekends.
- ``redis`` (StatefulSet, vertical): memory grows towards its 512Mi limit and is OOM-killed.

``scripts/make_demo_snapshot.py`` runs this through a real Prometheus and records
``bot/demo/snapshot.zip``.
"""

from __future__ import annotations

from bot.model import MIB
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
