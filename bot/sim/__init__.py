"""Seeded cluster simulator: load shapes, HPA simulation, OpenMetrics history, matching manifests.

Typical use::

    spec = ClusterSpec.generate(seed=7, services=4, days=2, step_s=60)
    cluster = simulate(spec)
    with open("history.om", "w") as out:
        write_openmetrics(cluster, out)     # then promtool tsdb create-blocks-from openmetrics
    write_manifests(spec, Path("repo"))     # Deployments/StatefulSets + HPAs as raw YAML
    truth = cluster.expected_history(cluster.services[0].ref)
"""

from bot.sim.cluster import ContainerRun, PodLife, SimulatedCluster, SimulatedService, simulate
from bot.sim.errors import SimError
from bot.sim.manifests import service_yaml, write_manifests
from bot.sim.openmetrics import KsmScrape, write_openmetrics
from bot.sim.spec import (
    SIDECAR_NAME,
    ClusterSpec,
    ContainerSpec,
    CrashLoopSpec,
    HpaSpec,
    LevelChange,
    PeriodicBurst,
    ServiceSpec,
)

__all__ = [
    "SIDECAR_NAME",
    "ClusterSpec",
    "ContainerRun",
    "ContainerSpec",
    "CrashLoopSpec",
    "HpaSpec",
    "KsmScrape",
    "LevelChange",
    "PeriodicBurst",
    "PodLife",
    "ServiceSpec",
    "SimError",
    "SimulatedCluster",
    "SimulatedService",
    "service_yaml",
    "simulate",
    "write_manifests",
    "write_openmetrics",
]
