"""Workload objects of one environment into the inventory, Argo Rollouts' ``workloadRef`` resolved.

A Rollout with ``spec.workloadRef`` (``apiVersion: apps/v1, kind: Deployment, name: N``) runs
the pods of Deployment ``N``'s template, which Argo Rollouts scales to zero (or leaves, with
``scaleDown: never``): the Rollout is the workload (its replicas, its HPA, its pods), its
containers are edited in the Deployment's template, and the Deployment is not a workload of its
own (a note says so). A ``workloadRef`` that names no Deployment of the environment is an error
at its line, and that Rollout is left out.
"""

from __future__ import annotations

from bot.manifests.fields import get_path
from bot.manifests.kinds import is_workload
from bot.manifests.sources import Obj
from bot.manifests.workloads import DEFAULT_NAMESPACE, Environment, WorkloadBuilder
from bot.model import SourceError


def _namespace(env: Environment, obj: Obj) -> str:
    return obj.namespace or env.namespace or DEFAULT_NAMESPACE


def add_workloads(builder: WorkloadBuilder, env: Environment) -> list[SourceError]:
    """Add every workload object of ``env`` to ``builder``; returns the notes for Deployments
    that are a Rollout's ``workloadRef`` (edited through the Rollout, not proposed for)."""
    deployments = {
        (_namespace(env, o), o.name): o
        for o in env.objects
        if o.kind == "Deployment" and is_workload(o) and o.name
    }
    templates: dict[int, Obj] = {}  # id(rollout) -> its workloadRef Deployment
    referenced: dict[int, Obj] = {}  # id(deployment) -> the Rollout that uses it
    for obj in env.objects:
        if obj.kind != "Rollout" or not is_workload(obj):
            continue
        ref = get_path(obj.data, ("spec", "workloadRef"))
        if ref is None:
            continue
        where = obj.origin(("spec", "workloadRef")) or obj.root
        if not isinstance(ref, dict) or ref.get("kind", "Deployment") != "Deployment":
            builder.error(where, f"Rollout {obj.name}: spec.workloadRef must name a Deployment")
            templates[id(obj)] = obj  # not built: no pod template
            continue
        target = deployments.get((_namespace(env, obj), str(ref.get("name", ""))))
        if target is None:
            builder.error(
                obj.origin(("spec", "workloadRef", "name")) or where,
                f"Rollout {obj.name}: spec.workloadRef names Deployment "
                f"{_namespace(env, obj)}/{ref.get('name', '')}, which is not declared in "
                f"environment {env.name!r}",
            )
            templates[id(obj)] = obj
            continue
        templates[id(obj)] = target
        referenced[id(target)] = obj
    notes = []
    for obj in env.objects:
        if not is_workload(obj):
            continue
        if not obj.name:
            builder.error(obj.root, f"{obj.kind} without metadata.name")
            continue
        if id(obj) in referenced:
            rollout = referenced[id(obj)]
            notes.append(
                SourceError(
                    obj.root.file,
                    obj.root.line,
                    f"Deployment {_namespace(env, obj)}/{obj.name} ({env.name}) is the "
                    f"workloadRef of Rollout {rollout.name}: its pod template is edited for the "
                    "Rollout, its replicas are ignored",
                )
            )
            continue
        template = templates.get(id(obj))
        if template is obj:
            continue  # a workloadRef that names nothing usable (an error above)
        builder.add(env, builder.kubernetes(env, obj, template=template))
    return notes
