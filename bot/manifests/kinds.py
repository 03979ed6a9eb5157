"""Which objects are workloads, and how an Argo Rollout finds its pod template.

Kinds the bot right-sizes:

| kind | API group | pod template | replicas / HPA |
|---|---|---|---|
| Deployment, StatefulSet | ``apps/*`` | ``spec.template`` | yes |
| DaemonSet | ``apps/*`` | ``spec.template`` | no: one pod per node, vertical only |
| Rollout | ``argoproj.io/*`` | ``spec.template``, or the Deployment ``spec.workloadRef`` names | yes |
| CronJob | ``batch/*`` | ``spec.jobTemplate.spec.template`` | no: runs, vertical only |
| Job | ``batch/*`` | ``spec.template`` | no: runs, vertical only |

A Rollout with ``spec.workloadRef`` (``apiVersion: apps/v1, kind: Deployment, name: N``) runs
the pods of Deployment ``N``'s template, which Argo Rollouts scales to zero (or leaves, with
``scaleDown: never``): the Rollout is the workload (its replicas, its HPA, its pods), its
containers are edited in the Deployment's template, and the Deployment is not a workload of its
own (a note says so, ``Inventory.notes``; ``bot.manifests.rollouts``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from bot.manifests.sources import Obj

REPLICATED_KINDS: Final = frozenset({"Deployment", "StatefulSet", "Rollout"})
"""Workload kinds with ``spec.replicas`` that an HPA can scale."""
NODE_KINDS: Final = frozenset({"DaemonSet"})
"""Workload kinds with one pod per node: no replicas, no HPA, vertical only."""
JOB_KINDS: Final = frozenset({"CronJob", "Job"})
"""Workload kinds that run to completion (``batch/*``): no replicas, no HPA, vertical only,
sized on their runs (``bot.manifests.jobs``)."""
UNREPLICATED_KINDS: Final = NODE_KINDS | JOB_KINDS
"""Workload kinds without ``spec.replicas`` that no HPA can scale."""
WORKLOAD_KINDS: Final = REPLICATED_KINDS | UNREPLICATED_KINDS
"""Every kind the bot right-sizes."""
ROLLOUT_GROUP: Final = "argoproj.io/"
"""API group prefix of an Argo ``Rollout``."""


def is_workload(obj: Obj) -> bool:
    """Whether ``obj`` is a workload the bot right-sizes (kind and API group)."""
    if obj.kind == "Rollout":
        return obj.api_version.startswith(ROLLOUT_GROUP)
    if obj.kind in JOB_KINDS:
        return obj.api_version.startswith("batch/")
    return obj.kind in WORKLOAD_KINDS and obj.api_version.startswith("apps/")


def pod_spec_path(kind: str) -> tuple[str, ...]:
    """Where a workload of ``kind`` keeps its pod spec: a CronJob's is in its Job template."""
    if kind == "CronJob":
        return ("spec", "jobTemplate", "spec", "template", "spec")
    return ("spec", "template", "spec")


def unscaled_reason(kind: str) -> str:
    """Why a workload of an ``UNREPLICATED_KINDS`` kind has no replicas and no HPA."""
    if kind in JOB_KINDS:
        return f"a {kind} runs pods to completion"
    return f"a {kind} runs one pod per node"


JSON_MERGE_KINDS: Final = frozenset({"Rollout"})
"""Workload kinds Kustomize patches as JSON merge patches (custom resources without a schema):
a list in a patch replaces the whole list, containers included."""


SCALED_OBJECT_GROUP: Final = "keda.sh/"
"""API group prefix of a KEDA ``ScaledObject`` (a custom resource: JSON merge patches too)."""


def strategic_merge(data: Mapping[str, Any]) -> bool:
    """Whether Kustomize merges a patch into the object ``data`` by strategic merge (lists of
    containers merged by name) rather than by JSON merge patch (``JSON_MERGE_KINDS``, a KEDA
    ``ScaledObject``)."""
    api = str(data.get("apiVersion", ""))
    if data.get("kind") == "ScaledObject" and api.startswith(SCALED_OBJECT_GROUP):
        return False
    return not (data.get("kind") in JSON_MERGE_KINDS and api.startswith(ROLLOUT_GROUP))
