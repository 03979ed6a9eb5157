"""Objects that run pods but that the bot does not right-size: listed, never ignored in silence.

An object is workload-like when it carries a pod spec (a mapping with a ``containers`` list) at
one of ``POD_SPEC_PATHS``, the one list of where pod specs are found. Every such object that
``bot.manifests.kinds.is_workload`` does not accept (a ``ReplicaSet``, a
``ReplicationController``, a ``Job`` or ``CronJob``, a Knative ``Service``, an OpenKruise
``CloneSet``, a bare ``Pod``...) becomes a ``SkippedObject``: ``validate``, ``plan`` and the
dashboard show it as ``skipped: unsupported kind <apiVersion>/<kind>`` with its file and line.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from bot.manifests.fields import get_path
from bot.manifests.kinds import is_workload
from bot.manifests.sources import Obj, Path_
from bot.manifests.workloads import DEFAULT_NAMESPACE
from bot.model import Location, SkippedObject, WorkloadRef

POD_SPEC_PATHS: Final[tuple[Path_, ...]] = (
    ("spec", "template", "spec"),  # ReplicaSet, Job, Knative Service, CloneSet, ...
    ("spec", "jobTemplate", "spec", "template", "spec"),  # CronJob
    ("spec",),  # Pod
)
"""Where an object carries the spec of the pods it runs, first match wins."""


def pod_spec(data: Mapping[str, Any]) -> tuple[Path_, Mapping[str, Any]] | None:
    """The path and value of the pod spec ``data`` carries (a mapping whose ``containers`` is a
    non-empty list), None when it carries none."""
    for path in POD_SPEC_PATHS:
        spec = get_path(data, path)
        containers = spec.get("containers") if isinstance(spec, dict) else None
        if isinstance(spec, dict) and isinstance(containers, list) and containers:
            return path, spec
    return None


def unsupported_reason(obj: Obj) -> str:
    """``unsupported kind <apiVersion>/<kind>``, what every output says of such an object."""
    return f"unsupported kind {obj.api_version or '(no apiVersion)'}/{obj.kind or '(no kind)'}"


def skipped_objects(
    objects: Iterable[Obj], environment: str, namespace: str | None
) -> list[SkippedObject]:
    """Every object of ``objects`` (one environment's, ``namespace`` assumed where they declare
    none) that carries a pod spec and is not a workload the bot right-sizes."""
    out = []
    for obj in objects:
        if is_workload(obj):
            continue
        if pod_spec(obj.data) is None:
            continue
        where = obj.origin(("kind",)) if obj.modelled else None
        origin = where or obj.root
        ref = WorkloadRef(
            obj.kind, obj.namespace or namespace or DEFAULT_NAMESPACE, obj.name, environment
        )
        out.append(
            SkippedObject(
                ref,
                obj.api_version,
                Location(origin.file, origin.line),
                unsupported_reason(obj),
            )
        )
    return out


def unsupported_json(skipped: SkippedObject) -> dict[str, Any]:
    """What and where such an object is (``validate`` and ``plan`` JSON)."""
    return {
        "apiVersion": skipped.api_version,
        "kind": skipped.ref.kind,
        "file": skipped.location.file,
        "line": skipped.location.line,
        "reason": skipped.reason,
    }
