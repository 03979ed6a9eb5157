"""What a workload's namespace already declares that bounds its proposals: the ``LimitRange``,
``ResourceQuota`` and ``PodDisruptionBudget`` objects of the repository, attached to each
workload (``DeclaredWorkload.bounds``), and each container's runtime memory settings and
extended resources (``bot.manifests.runtime``).

Matching: objects of the workload's own environment in its namespace (an object that names no
namespace is in its environment's, as for workloads); an environment without any of a kind in
that namespace takes those of the ``default`` environment (raw YAML, e.g. a ``namespaces/``
directory beside the charts and overlays). A PDB selects a workload when every label of its
``spec.selector.matchLabels`` is in the pod template's labels (a Helm values workload has no
template to match). Several LimitRanges of one namespace all apply: they are merged into the
tightest bounds. A quantity that does not parse is an error at its file and line; the object is
then left out.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from bot.manifests.fields import get_path
from bot.manifests.quantities import bytes_from_quantity, cores_from_quantity
from bot.manifests.runtime import extended_resources, runtime_memory
from bot.manifests.sources import Obj, Path_
from bot.manifests.workloads import DEFAULT_NAMESPACE, Entry, Environment
from bot.model import (
    DEFAULT_ENVIRONMENT,
    RESOURCES,
    DeclaredContainer,
    DeclaredLimitRange,
    DeclaredPDB,
    DeclaredQuota,
    FieldId,
    NamespaceBounds,
    Resource,
    ResourceValues,
    SourceError,
    WorkloadRef,
)


class _BadBoundError(ValueError):
    """A value of a bounds object that cannot be read, at ``origin``."""

    def __init__(self, where: tuple[str, int], message: str) -> None:
        super().__init__(message)
        self.where = where


def _where(obj: Obj, path: Path_ = ()) -> tuple[str, int]:
    origin = (obj.origin(path) if path else None) or obj.root
    return origin.file, origin.line


def _label(obj: Obj) -> str:
    file, line = _where(obj)
    return f"{obj.name} ({file}:{line})"


def _amount(obj: Obj, path: Path_, resource: str) -> float | None:
    raw = get_path(obj.data, path)
    if raw is None:
        return None
    parse: Callable[[Any], float] = (
        cores_from_quantity if resource == "cpu" else bytes_from_quantity
    )
    try:
        return float(parse(raw))
    except ValueError as exc:
        raise _BadBoundError(
            _where(obj, path), f"{obj.kind} {obj.name}: {'.'.join(map(str, path))}: {exc}"
        ) from exc


def _values(obj: Obj, path: Path_) -> ResourceValues:
    cpu, memory = (_amount(obj, (*path, r), r) for r in RESOURCES)
    return ResourceValues(cpu, int(memory) if memory is not None else None)


def _pick(
    values: Iterable[ResourceValues], choose: Callable[[list[float]], float]
) -> ResourceValues:
    """Per resource, ``choose`` of the values that set it (None when none does)."""
    out: dict[Resource, float | None] = {}
    listed = list(values)
    for resource in RESOURCES:
        set_ = [float(v) for x in listed if (v := x.get(resource)) is not None]
        out[resource] = choose(set_) if set_ else None
    memory = out["memory"]
    return ResourceValues(out["cpu"], int(memory) if memory is not None else None)


def limit_range(objects: Iterable[Obj]) -> DeclaredLimitRange | None:
    """The LimitRange objects of one namespace merged into one (see module doc); raises
    ``_BadBoundError`` for a quantity that does not parse."""
    objs = list(objects)
    if not objs:
        return None
    mins, maxes, defaults, requests, pods = [], [], [], [], []
    ratios: dict[Resource, float] = {}
    for obj in objs:
        items = get_path(obj.data, ("spec", "limits"))
        for index, item in enumerate(items if isinstance(items, list) else ()):
            if not isinstance(item, dict):
                continue
            base: Path_ = ("spec", "limits", index)
            kind = item.get("type", "Container")
            if kind == "Pod":
                pods.append(_values(obj, (*base, "max")))
            if kind != "Container":
                continue
            mins.append(_values(obj, (*base, "min")))
            maxes.append(_values(obj, (*base, "max")))
            defaults.append(_values(obj, (*base, "default")))
            requests.append(_values(obj, (*base, "defaultRequest")))
            for resource in RESOURCES:
                path = (*base, "maxLimitRequestRatio", resource)
                raw = get_path(obj.data, path)
                if raw is None:
                    continue
                try:
                    value = cores_from_quantity(raw)
                except ValueError as exc:
                    raise _BadBoundError(
                        _where(obj, path), f"LimitRange {obj.name}: {exc}"
                    ) from exc
                ratios[resource] = min(value, ratios.get(resource, value))
    return DeclaredLimitRange(
        ", ".join(_label(o) for o in objs),
        min=_pick(mins, max),
        max=_pick(maxes, min),
        max_ratio=ratios,
        default_limit=_pick(defaults, min),
        default_request=_pick(requests, min),
        pod_max=_pick(pods, min),
    )


def quota(obj: Obj) -> DeclaredQuota:
    """One ResourceQuota's request and limit keys of CPU and memory (``cpu`` and ``memory``
    alone are requests); its other keys (``pods``, extended resources) are not read."""
    hard = get_path(obj.data, ("spec", "hard"))
    out: dict[FieldId, float] = {}
    for key, raw in hard.items() if isinstance(hard, dict) else ():
        bounded = FieldId.request(key) if key in RESOURCES else FieldId.parse(str(key))
        if bounded is None or not bounded.is_request_or_limit or raw is None:
            continue
        resource = bounded.resource
        assert resource is not None
        value = _amount(obj, ("spec", "hard", key), resource)
        if value is not None:
            out[bounded] = value
    file, line = _where(obj)
    return DeclaredQuota(obj.name, f"{file}:{line}", out)


def pdb(obj: Obj) -> DeclaredPDB:
    """One PodDisruptionBudget's budget as written."""
    spec = obj.data.get("spec") if isinstance(obj.data.get("spec"), dict) else {}
    assert isinstance(spec, dict)

    def budget(key: str) -> int | str | None:
        value = spec.get(key)
        return value if isinstance(value, int | str) and not isinstance(value, bool) else None

    file, line = _where(obj)
    return DeclaredPDB(obj.name, f"{file}:{line}", budget("minAvailable"), budget("maxUnavailable"))


def selects(obj: Obj, labels: Mapping[str, Any]) -> bool:
    """Whether a PDB's ``matchLabels`` (non-empty, no ``matchExpressions``) are all in
    ``labels``."""
    selector = get_path(obj.data, ("spec", "selector"))
    if not isinstance(selector, dict) or selector.get("matchExpressions"):
        return False
    match = selector.get("matchLabels")
    if not isinstance(match, dict) or not match:
        return False
    return all(str(labels.get(k)) == str(v) and k in labels for k, v in match.items())


def _pod_parts(entry: Entry) -> tuple[Mapping[str, Any], dict[str, Mapping[str, Any]]]:
    """A Kubernetes workload's pod template labels and its container items by name, found
    through the slots of its containers' resources (none for a Helm values workload)."""
    labels: Mapping[str, Any] = {}
    items: dict[str, Mapping[str, Any]] = {}
    for (container, _), slot in entry.slots.items():
        path = slot.path
        if container is None or container in items or len(path) < 6 or path[-3] != "resources":
            continue
        if path[-5] not in ("containers", "initContainers"):
            continue
        item = get_path(slot.obj.data, path[:-3])
        if isinstance(item, dict):
            items[container] = item
        if not labels:
            found = get_path(slot.obj.data, (*path[:-6], "metadata", "labels"))
            labels = found if isinstance(found, dict) else {}
    return labels, items


def attach_bounds(
    entries: dict[WorkloadRef, Entry], envs: Iterable[Environment]
) -> list[SourceError]:
    """Set each entry's ``bounds`` and its containers' runtime settings and extended resources
    (see module doc); the problems found, at their file and line."""
    errors: list[SourceError] = []
    kinds = ("LimitRange", "ResourceQuota", "PodDisruptionBudget")
    found: dict[tuple[str, str, str], list[Obj]] = {}
    for env in envs:
        for obj in env.objects:
            if obj.kind in kinds:
                namespace = obj.namespace or env.namespace or DEFAULT_NAMESPACE
                found.setdefault((env.name, namespace, obj.kind), []).append(obj)

    def of(ref: WorkloadRef, kind: str) -> list[Obj]:
        own = found.get((ref.environment, ref.namespace, kind))
        return own if own else found.get((DEFAULT_ENVIRONMENT, ref.namespace, kind), [])

    read: dict[tuple[str, str], NamespaceBounds] = {}
    for ref, entry in entries.items():
        labels, items = _pod_parts(entry)
        key = (ref.environment, ref.namespace)
        if key not in read:
            read[key] = _namespace(of(ref, "LimitRange"), of(ref, "ResourceQuota"), errors)
        pdbs = tuple(
            pdb(o) for o in of(ref, "PodDisruptionBudget") if labels and selects(o, labels)
        )
        containers = tuple(_with_runtime(c, items.get(c.name)) for c in entry.workload.containers)
        bounds = dataclasses.replace(read[key], pdbs=pdbs) if pdbs else read[key]
        if bounds != entry.workload.bounds or containers != entry.workload.containers:
            entry.workload = dataclasses.replace(
                entry.workload, containers=containers, bounds=bounds
            )
    return errors


def _with_runtime(
    container: DeclaredContainer, item: Mapping[str, Any] | None
) -> DeclaredContainer:
    """``container`` with the runtime settings and extended resources of its pod template
    ``item`` (itself when it has none)."""
    if item is None:
        return container
    runtime, extended = runtime_memory(item), extended_resources(item)
    if not runtime and not extended:
        return container
    return dataclasses.replace(container, runtime=runtime, extended=extended)


def _namespace(ranges: list[Obj], quotas: list[Obj], errors: list[SourceError]) -> NamespaceBounds:
    """One namespace's LimitRange (merged) and quotas; a bad object is an error, left out."""
    limit: DeclaredLimitRange | None = None
    try:
        limit = limit_range(ranges)
    except _BadBoundError as exc:
        errors.append(SourceError(exc.where[0], exc.where[1], str(exc)))
    read: list[DeclaredQuota] = []
    for obj in quotas:
        try:
            read.append(quota(obj))
        except _BadBoundError as exc:
            errors.append(SourceError(exc.where[0], exc.where[1], str(exc)))
    return NamespaceBounds(limit, tuple(read))
