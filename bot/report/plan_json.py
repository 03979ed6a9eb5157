"""A ``Recommendation`` as the plan's workload JSON object (``docs/schemas/plan.schema.json``).

Pure: imports only ``bot.model``. Values are cores, bytes, replicas and percent, as in the
recommendation; every value carries its ``rule`` and one-line ``reason``; each container
resource also carries the VPA estimate (``vpa``) before any rounding to manifest quantities.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bot.model import (
    RESOURCES,
    ContainerRecommendation,
    Explained,
    HpaRecommendation,
    Recommendation,
    ResourceRecommendation,
    Usage,
    VpaEstimate,
)


def explained_json(value: Explained) -> dict[str, Any]:
    """``{current, proposed, rule, reason, inputs}``."""
    return {
        "current": value.current,
        "proposed": value.proposed,
        "rule": value.rule,
        "reason": value.reason,
        "inputs": dict(value.inputs),
    }


def usage_json(usage: Usage | None) -> dict[str, Any] | None:
    if usage is None:
        return None
    return {
        "p50": usage.p50,
        "p90": usage.p90,
        "p99": usage.p99,
        "max": usage.max,
        "samples": usage.samples,
    }


def vpa_json(vpa: VpaEstimate | None) -> dict[str, Any] | None:
    if vpa is None:
        return None
    return {
        "target": vpa.target,
        "lower_bound": vpa.lower_bound,
        "upper_bound": vpa.upper_bound,
        "uncapped_target": vpa.uncapped_target,
        "confidence": vpa.confidence,
    }


def resource_json(rr: ResourceRecommendation) -> dict[str, Any]:
    return {
        "policy": rr.policy,
        "request": explained_json(rr.request),
        "limit": explained_json(rr.limit),
        "usage": usage_json(rr.usage),
        "vpa": vpa_json(rr.vpa),
    }


def container_json(container: ContainerRecommendation) -> dict[str, Any]:
    out: dict[str, Any] = {"name": container.name}
    for resource in RESOURCES:
        out[resource] = resource_json(container.resource(resource))
    return out


def hpa_json(hpa: HpaRecommendation | None) -> dict[str, Any] | None:
    if hpa is None:
        return None
    return {
        "min_replicas": explained_json(hpa.min_replicas),
        "max_replicas": explained_json(hpa.max_replicas),
        "targets": [
            {
                "container": t.container,
                "resource": t.resource,
                "current": t.value.current,
                "proposed": t.value.proposed,
                "rule": t.value.rule,
                "reason": t.value.reason,
                "inputs": explained_json(t.value)["inputs"],
            }
            for t in hpa.targets
        ],
        "slots": {label: list(pair) for label, pair in hpa.slots.items()},
    }


def workload_json(rec: Recommendation, *, files: Sequence[str] = ()) -> dict[str, Any]:
    """The plan's object for one workload."""
    return {
        "kind": rec.ref.kind,
        "namespace": rec.ref.namespace,
        "name": rec.ref.name,
        "environment": rec.ref.environment,
        "status": rec.status,
        "reasons": list(rec.reasons),
        "files": list(files),
        "containers": [container_json(c) for c in rec.containers],
        "hpa": hpa_json(rec.hpa),
        "notes": [
            {"code": n.code, "message": n.message, "container": n.container} for n in rec.notes
        ],
    }


def plan_json(
    workloads: Sequence[tuple[Recommendation, Sequence[str]]], *, diff: str = ""
) -> dict[str, Any]:
    """The whole plan: ``{"workloads": [...], "diff": "..."}``."""
    return {
        "workloads": [workload_json(rec, files=files) for rec, files in workloads],
        "diff": diff,
    }
