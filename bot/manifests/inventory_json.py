"""The inventory as JSON (``tortoise-bot validate --format json``).

Published schema: ``docs/schemas/inventory.schema.json``. CPU is in cores, memory in bytes,
replicas as counts, HPA targets in percent; ``null`` means the repository does not set it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bot.manifests.unsupported import unsupported_json
from bot.model import (
    DeclaredHPA,
    DeclaredVPA,
    DeclaredWorkload,
    Inventory,
    Location,
    ResourceValues,
    SourceError,
    WorkloadRef,
)


def _location(location: Location) -> dict[str, Any]:
    return {"file": location.file, "line": location.line}


def _locations(locations: Mapping[str, Location]) -> dict[str, Any]:
    return {key: _location(value) for key, value in sorted(locations.items())}


def _values(values: ResourceValues) -> dict[str, Any]:
    return {"cpu": values.cpu_cores, "memory": values.memory_bytes}


def _hpa(hpa: DeclaredHPA | None) -> dict[str, Any] | None:
    if hpa is None:
        return None
    return {
        "name": hpa.name,
        "minReplicas": hpa.min_replicas,
        "maxReplicas": hpa.max_replicas,
        "targets": [
            {"resource": t.resource, "container": t.container, "utilization": t.utilization_percent}
            for t in hpa.targets
        ],
        "otherMetrics": hpa.other_metrics,
        "containerResource": hpa.container_resource,
        "keda": (
            {
                "scaledObject": hpa.keda.name,
                "minReplicaCount": hpa.keda.min_replica_count,
                "externalTriggers": list(hpa.keda.external),
            }
            if hpa.keda is not None
            else None
        ),
        "behavior": {
            name: {
                "stabilizationWindowSeconds": rules.stabilization_s,
                "selectPolicy": rules.select,
                "policies": [
                    {"type": p.type, "value": p.value, "periodSeconds": p.period_s}
                    for p in rules.policies
                ],
                "tolerance": rules.tolerance,
            }
            for name, rules in (
                ("scaleUp", hpa.behavior.scale_up),
                ("scaleDown", hpa.behavior.scale_down),
            )
        },
        "locations": _locations(hpa.locations),
    }


def _vpa(vpa: DeclaredVPA | None) -> dict[str, Any] | None:
    if vpa is None:
        return None
    return {
        "name": vpa.name,
        "updateMode": vpa.update_mode,
        "containerPolicies": [
            {
                "container": p.container,
                "mode": p.mode,
                "minAllowed": _values(p.min_allowed),
                "maxAllowed": _values(p.max_allowed),
                "controlledResources": list(p.controlled_resources),
                "controlledValues": p.controlled_values,
            }
            for p in vpa.container_policies
        ],
        "locations": _locations(vpa.locations),
    }


def workload_json(workload: DeclaredWorkload) -> dict[str, Any]:
    """One workload as the schema's ``workload`` object."""
    ref = workload.ref
    return {
        "kind": ref.kind,
        "namespace": ref.namespace,
        "name": ref.name,
        "environment": ref.environment,
        "replicas": workload.replicas,
        "containers": [
            {
                "name": c.name,
                "init": c.init,
                "sidecar": c.sidecar,
                "init_sized": c.init_sized,
                "requests": _values(c.requests),
                "limits": _values(c.limits),
                "locations": _locations(c.locations),
            }
            for c in workload.containers
        ],
        "hpa": _hpa(workload.hpa),
        "vpa": _vpa(workload.vpa),
        "managedByTortoise": workload.managed_by_tortoise,
        "files": list(workload.files),
        "locations": _locations(workload.locations),
    }


def errors_json(errors: Sequence[SourceError]) -> list[dict[str, Any]]:
    """Errors as ``{"file", "line", "message"}`` objects."""
    return [{"file": e.file, "line": e.line, "message": e.message} for e in errors]


def inventory_json(
    inventory: Inventory, extra_errors: Sequence[SourceError] = ()
) -> dict[str, Any]:
    """The whole inventory, plus ``extra_errors`` (e.g. opt-in file problems) first."""
    return {
        "environments": list(inventory.environments),
        "workloads": [workload_json(w) for w in inventory.workloads],
        "errors": errors_json([*extra_errors, *inventory.errors]),
        "deployments": [
            {
                "environment": d.environment,
                "deployed_by": list(d.deployed_by),
                "cluster": d.cluster,
                "clusters": list(d.clusters),
                "namespace": d.namespace,
                "selector": dict(d.selector),
                "proposed": d.proposed,
                "reason": d.reason,
                "merged": list(d.merged),
            }
            for d in inventory.deployments
        ],
        "not_proposed": [
            {**_ref(ref), "reason": reason} for ref, reason in inventory.not_proposed.items()
        ],
        "skipped": [{**_ref(s.ref), **unsupported_json(s)} for s in inventory.skipped],
        "notes": errors_json(inventory.notes),
        "warnings": errors_json(inventory.warnings),
    }


def _ref(ref: WorkloadRef) -> dict[str, str]:
    return {
        "kind": ref.kind,
        "namespace": ref.namespace,
        "name": ref.name,
        "environment": ref.environment,
    }
