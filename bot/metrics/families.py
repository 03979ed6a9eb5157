"""The metric families the bot reads for workloads of given kinds: each one's setting, source,
the labels its queries match or group by, and whether a plan needs it (what ``tortoise-bot
doctor`` checks, ``bot.metrics.doctor``)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from bot.config.metrics import PrometheusConfig

Source = Literal["cadvisor", "kube-state-metrics"]


@dataclass(frozen=True, slots=True)
class Family:
    """One metric the bot reads, the labels its queries use and whether a plan needs it."""

    key: str
    """The ``prometheus.metrics`` setting naming it (``cpu_usage``)."""
    metric: str
    source: Source
    labels: tuple[tuple[str, str], ...]
    """(``prometheus.labels`` setting, label name) pairs the queries match or group by."""
    required: bool
    why: str
    """What the bot reads it for (shown next to a problem)."""


def families(
    config: PrometheusConfig, kinds: Iterable[str] = ("Deployment", "StatefulSet")
) -> tuple[Family, ...]:
    """The families ``bot/metrics/promql.py`` reads for workloads of ``kinds``."""
    names, lb = config.metrics, config.labels
    kinds = set(kinds)
    ids = (("namespace", lb.namespace), ("pod", lb.pod), ("container", lb.container))
    owner = (("owner_kind", lb.owner_kind), ("owner_name", lb.owner_name))
    ns = ("namespace", lb.namespace)
    out = [
        Family("cpu_usage", names.cpu_usage, "cadvisor", ids, True, "CPU usage"),
        Family("memory_working_set", names.memory_working_set, "cadvisor", ids, True, "memory"),
        Family("restarts", names.restarts, "kube-state-metrics", ids, True, "restarts"),
        Family(
            "last_terminated_reason",
            names.last_terminated_reason,
            "kube-state-metrics",
            ids,
            False,
            "OOM kills (series exist only once a container has terminated)",
        ),
        Family(
            "resource_requests",
            names.resource_requests,
            "kube-state-metrics",
            ids,
            True,
            "the memory request at each OOM kill",
        ),
        Family(
            "pod_owner",
            names.pod_owner,
            "kube-state-metrics",
            ((ns, ("pod", lb.pod), *owner)),
            True,
            "pod to workload mapping",
        ),
    ]
    by_workload = config.replicas_source == "workload"
    if "Deployment" in kinds:
        out.append(
            Family(
                "replicaset_owner",
                names.replicaset_owner,
                "kube-state-metrics",
                (ns, ("replicaset", lb.replicaset), *owner),
                True,
                "ReplicaSet to Deployment mapping",
            )
        )
        if by_workload:
            out.append(
                Family(
                    "deployment_replicas",
                    names.deployment_replicas,
                    "kube-state-metrics",
                    (ns, ("deployment", lb.deployment)),
                    True,
                    "replica history",
                )
            )
    if "StatefulSet" in kinds and by_workload:
        out.append(
            Family(
                "statefulset_replicas",
                names.statefulset_replicas,
                "kube-state-metrics",
                (ns, ("statefulset", lb.statefulset)),
                True,
                "replica history",
            )
        )
    if kinds & {"CronJob", "Job"}:  # a CronJob's runs are Jobs: pod -> Job -> CronJob
        out.append(
            Family(
                "job_owner",
                names.job_owner,
                "kube-state-metrics",
                (ns, ("job_name", lb.job_name), *owner),
                "CronJob" in kinds,
                "Job to CronJob mapping (a CronJob's runs)",
            )
        )
    if not by_workload:
        out.append(
            Family(
                "hpa_current_replicas",
                names.hpa_current_replicas,
                "kube-state-metrics",
                (ns, ("hpa", lb.hpa)),
                True,
                "replica history (replicas_source: hpa)",
            )
        )
    return tuple(out)
