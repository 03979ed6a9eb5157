"""Which workload a pod belongs to: kube-state-metrics owners first, the pod-name pattern second.

1. ``kube_pod_owner{owner_kind="StatefulSet"|"DaemonSet", owner_name=N}`` -> that workload;
   ``kube_pod_owner{owner_kind="ReplicaSet", owner_name=RS}`` and
   ``kube_replicaset_owner{replicaset=RS, owner_kind="Deployment"|"Rollout", owner_name=D}`` ->
   Deployment or Argo Rollout ``D`` (every ReplicaSet of a Rollout, canary and stable alike;
   if the ReplicaSet owner is unknown, ``RS`` is matched against
   ``<name>-<pod-template-hash>`` of the requested Deployments and Rollouts).
   ``kube_pod_owner{owner_kind="Job", owner_name=J}`` -> the CronJob that owns Job ``J``
   (``kube_job_owner``), or bare Job ``J`` (``bot.metrics.jobs``).
2. A pod kube-state-metrics never saw is matched against the controllers' pod-name patterns
   (``promql.pod_name_pattern``) and counted in an ``owner-fallback`` note.

A pod owned by something not requested (a Job, another Deployment) is ignored.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from bot.metrics.jobs import JOB_KINDS, job_pod_pattern, job_workload
from bot.metrics.promql import REPLICASET_OWNER_KINDS, pod_name_pattern, replicaset_name_pattern
from bot.model import WorkloadRef

DIRECT_OWNER_KINDS = ("StatefulSet", "DaemonSet")
"""Workload kinds that own their pods directly (``kube_pod_owner``)."""


@dataclass(frozen=True, slots=True)
class PodOwner:
    """What kube-state-metrics says owns a pod."""

    kind: str
    name: str


@dataclass(frozen=True, slots=True)
class PodMapping:
    """Pod name -> workload, and which pods were mapped by name pattern only."""

    by_pod: Mapping[str, WorkloadRef]
    by_pattern: frozenset[str]
    owned: Mapping[WorkloadRef, frozenset[str]]
    """Pods kube-state-metrics lists for each workload (to find pods that never reported)."""


def map_pods(
    refs: Iterable[WorkloadRef],
    pods: Iterable[str],
    owners: Mapping[str, PodOwner],
    replicaset_owners: Mapping[str, PodOwner],
    job_owners: Mapping[str, PodOwner] | None = None,
    *,
    grouped: Mapping[str, WorkloadRef | None] | None = None,
) -> PodMapping:
    """Map every pod in ``pods`` and in ``owners`` to one of ``refs`` (see the module doc);
    ``replicaset_owners`` is the owner of each ReplicaSet, ``job_owners`` of each Job,
    ``grouped`` the bare Job each Job's labels group it under (``bot.metrics.job_groups``)."""
    by_name = {(r.kind, r.name): r for r in refs}
    deployments = [r for r in by_name.values() if r.kind in REPLICASET_OWNER_KINDS]
    by_pod: dict[str, WorkloadRef] = {}
    owned: dict[WorkloadRef, set[str]] = {}
    jobs = {job: (o.kind, o.name) for job, o in (job_owners or {}).items()}
    runs: dict[str, WorkloadRef | None] = {}  # Job -> its workload, each Job resolved once
    for pod, owner in owners.items():
        ref: WorkloadRef | None = None
        if owner.kind in DIRECT_OWNER_KINDS:
            ref = by_name.get((owner.kind, owner.name))
        elif owner.kind == "Job":
            if owner.name not in runs:
                runs[owner.name] = job_workload(owner.name, by_name, jobs, grouped or {})
            ref = runs[owner.name]
        elif owner.kind == "ReplicaSet":
            controller = replicaset_owners.get(owner.name)
            if controller is not None:
                ref = by_name.get((controller.kind, controller.name))
            else:
                ref = next(
                    (
                        d
                        for d in deployments
                        if replicaset_name_pattern(d.name).fullmatch(owner.name)
                    ),
                    None,
                )
        if ref is not None:
            by_pod[pod] = ref
            owned.setdefault(ref, set()).add(pod)
    fallback: set[str] = set()
    patterns = [
        (
            job_pod_pattern(r.kind, r.name)
            if r.kind in JOB_KINDS
            else pod_name_pattern(r.kind, r.name),
            r,
        )
        for r in by_name.values()
    ]
    for pod in pods:
        if pod in by_pod or pod in owners:
            continue
        for pattern, ref in patterns:
            if pattern.fullmatch(pod):
                by_pod[pod] = ref
                fallback.add(pod)
                break
    return PodMapping(
        by_pod=by_pod,
        by_pattern=frozenset(fallback),
        owned={ref: frozenset(p) for ref, p in owned.items()},
    )
