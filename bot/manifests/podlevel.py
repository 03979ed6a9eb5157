"""What a pod template says besides its containers' requests and limits, read and never edited:
pod-level ``spec.resources`` (Kubernetes 1.32+) and each container's ``resizePolicy``.

``pod_resources``: the pod's own requests and limits (cores, bytes; a value that is not a
quantity is left unset, the editor never touches these fields). ``restart_on_resize``: the
resources a container's ``resizePolicy`` restarts it for (``restartPolicy: RestartContainer``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bot.manifests.fields import get_path, number
from bot.manifests.quantities import QuantityError
from bot.manifests.sources import Path_
from bot.model import RESOURCES, Resource, ResourceValues


def _values(raw: Any) -> ResourceValues:
    if not isinstance(raw, dict):
        return ResourceValues()
    out: dict[Resource, float | int | None] = {}
    for resource in RESOURCES:
        try:
            out[resource] = number(resource, raw.get(resource))
        except (QuantityError, ValueError):
            out[resource] = None
    cpu, memory = out["cpu"], out["memory"]
    return ResourceValues(
        float(cpu) if cpu is not None else None, int(memory) if memory is not None else None
    )


def pod_resources(data: Mapping[str, Any], pod: Path_) -> tuple[ResourceValues, ResourceValues]:
    """The pod-level requests and limits of the pod spec at ``pod`` in ``data``."""
    resources = get_path(data, (*pod, "resources"))
    if not isinstance(resources, dict):
        return ResourceValues(), ResourceValues()
    return _values(resources.get("requests")), _values(resources.get("limits"))


def restart_on_resize(item: Mapping[str, Any]) -> tuple[Resource, ...]:
    """The resources whose in-place resize restarts the container ``item``."""
    policies = item.get("resizePolicy")
    return tuple(
        r
        for r in RESOURCES
        if isinstance(policies, list)
        and any(
            isinstance(p, dict)
            and p.get("resourceName") == r
            and p.get("restartPolicy") == "RestartContainer"
            for p in policies
        )
    )


def workload_labels(data: Mapping[str, Any], pod: Path_) -> dict[str, str]:
    """The object's ``metadata.labels`` with its pod template's over them: the labels a Job's
    runs carry, which ``prometheus.job_grouping_labels`` groups them by. Only string values."""
    out: dict[str, str] = {}
    for path in (("metadata", "labels"), (*pod[:-1], "metadata", "labels")):
        labels = get_path(data, path)
        if isinstance(labels, Mapping):
            out.update({str(k): v for k, v in labels.items() if isinstance(v, str)})
    return out
