"""KEDA ``ScaledObject`` (``keda.sh/v1alpha1``): the workload it scales, read as the HPA KEDA
generates for it.

KEDA turns a ScaledObject into an ``autoscaling/v2`` HPA named ``keda-hpa-<name>`` (or
``spec.advanced.horizontalPodAutoscalerConfig.name``) that scales ``spec.scaleTargetRef`` (kind
``Deployment`` when none is given; ``StatefulSet`` and Argo ``Rollout`` too):

- ``minReplicaCount`` (KEDA's default 0) and ``maxReplicaCount`` (default 100) are its
  ``minReplicas`` / ``maxReplicas``; with 0 (scale to zero) the HPA's own minimum is 1, and KEDA
  takes the workload to 0 and back on its triggers' activity;
- each ``cpu`` / ``memory`` trigger with ``metricType: Utilization`` (or the older
  ``metadata.type``) is a resource target of ``metadata.value`` percent, a ``ContainerResource``
  one when ``metadata.containerName`` names a container; ``metadata.value`` is a string in KEDA
  and is written back as one;
- ``spec.advanced.horizontalPodAutoscalerConfig.behavior`` is its behavior.

Every other trigger (``prometheus``, ``kafka``, ``cron``, a ``cpu`` one by ``AverageValue`` ...) is
kept, never edited, and named (``KedaScaler.external``). A workload that a ScaledObject and an
HPA (or two ScaledObjects) target is reported and not proposed for: KEDA's admission webhook
refuses a second autoscaler for one workload.

Helm values hold the same block at the mapping's ``keda`` path (``keda`` by the ``helm create``
conventions): ``enabled`` (absent: on when ``triggers`` is set), ``minReplicaCount``,
``maxReplicaCount``, ``triggers``, ``advanced``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bot.config.manifests import HelmChartConfig
from bot.manifests import helm
from bot.manifests.fields import get_path
from bot.manifests.hpas import read_behavior
from bot.manifests.kinds import REPLICATED_KINDS, SCALED_OBJECT_GROUP
from bot.manifests.sources import Obj, Path_
from bot.manifests.workloads import (
    DEFAULT_NAMESPACE,
    Entry,
    Environment,
    Slot,
    WorkloadBuilder,
    hpa_location_key,
)
from bot.model import (
    RESOURCES,
    DeclaredHPA,
    FieldId,
    HpaTarget,
    KedaScaler,
    Location,
    Resource,
    SourceError,
    WorkloadRef,
)

DEFAULT_MIN_REPLICAS = 0
DEFAULT_MAX_REPLICAS = 100
"""KEDA's ``minReplicaCount`` and ``maxReplicaCount`` when a ScaledObject sets none."""
HPA_PREFIX = "keda-hpa-"
"""KEDA names the HPA it generates ``keda-hpa-<ScaledObject name>``."""


def is_scaled_object(obj: Obj) -> bool:
    """Whether ``obj`` is a KEDA ``ScaledObject``."""
    return obj.kind == "ScaledObject" and obj.api_version.startswith(SCALED_OBJECT_GROUP)


@dataclass(slots=True)
class Scaled:
    """The ScaledObjects found, per workload (two autoscalers: ``conflicts``)."""

    objects: dict[WorkloadRef, list[Obj]] = field(default_factory=dict)
    both: dict[WorkloadRef, str] = field(default_factory=dict)
    """Workloads whose Helm values turn on both an HPA and a ScaledObject, with where."""


def link(builder: WorkloadBuilder, env: Environment, scaled: Scaled) -> None:
    """Attach each ScaledObject of ``env`` to the workload its ``scaleTargetRef`` names."""
    by_target = {
        (e.workload.ref.kind, e.workload.ref.namespace, e.workload.ref.name): e
        for e in builder.entries.values()
        if e.environment is env
    }
    for obj in env.objects:
        if not is_scaled_object(obj):
            continue
        ref = get_path(obj.data, ("spec", "scaleTargetRef"))
        if not isinstance(ref, dict) or not ref.get("name"):
            builder.error(obj.root, f"ScaledObject {obj.name}: no spec.scaleTargetRef.name")
            continue
        kind, name = str(ref.get("kind") or "Deployment"), str(ref["name"])
        namespace = obj.namespace or env.namespace or DEFAULT_NAMESPACE
        where = obj.origin(("spec", "scaleTargetRef", "name")) or obj.root
        if kind not in REPLICATED_KINDS:
            builder.error(
                where,
                f"ScaledObject {obj.name} targets {kind} {name}: the bot reads ScaledObjects "
                f"of {', '.join(sorted(REPLICATED_KINDS))} only; ignored",
            )
            continue
        entry = by_target.get((kind, namespace, name))
        if entry is None:
            builder.error(
                where,
                f"ScaledObject {obj.name} targets {kind} {namespace}/{name}, which is not "
                f"declared in environment {env.name!r}",
            )
            continue
        scaled.objects.setdefault(entry.workload.ref, []).append(obj)
        attach(builder, entry, obj, ("spec",), obj.name)


def helm_link(
    builder: WorkloadBuilder,
    env: Environment,
    values: Obj,
    prefix: Path_,
    *,
    names: tuple[str, str],
    mapping: HelmChartConfig | None,
    scaled: Scaled,
) -> None:
    """Attach the ScaledObject block of Helm values (module doc) to each workload they map;
    ``names`` are the release and the chart, ``mapping`` the chart's ``helm`` config."""
    release, chart = names
    mappings = mapping.workloads if mapping else ()
    plans = [helm.field_paths(m, release, chart) for m in mappings] or [
        helm.field_paths(None, helm.full_name(release, chart), chart)
    ]
    for paths in plans:
        if paths.keda is None:
            continue
        base = (*prefix, *paths.keda)
        block = get_path(values.data, base)
        if not isinstance(block, dict):
            continue
        enabled = block.get("enabled")
        if enabled is False or (enabled is None and not block.get("triggers")):
            continue
        entry = next(
            (
                e
                for e in builder.entries.values()
                if e.environment is env
                and e.workload.ref.kind == paths.kind
                and e.workload.ref.name == paths.name
            ),
            None,
        )
        if entry is None:
            continue
        if entry.workload.hpa is not None and entry.workload.hpa.keda is None:
            origin = values.origin(base) or values.root
            scaled.both[entry.workload.ref] = f"{origin.file}:{origin.line}"
        scaled.objects.setdefault(entry.workload.ref, []).append(values)
        attach(builder, entry, values, base, paths.name)


def attach(builder: WorkloadBuilder, entry: Entry, obj: Obj, base: Path_, name: str) -> None:
    """Read the ScaledObject spec at ``base`` of ``obj`` into ``entry``'s HPA and slots."""
    slots = entry.slots
    locations: dict[str, Location] = {}
    counts: dict[FieldId, int | None] = {}
    for fld, key in (
        (FieldId.HPA_MIN_REPLICAS, "minReplicaCount"),
        (FieldId.HPA_MAX_REPLICAS, "maxReplicaCount"),
    ):
        slot = Slot(obj, (*base, key), "count")
        slots[(None, fld)] = slot
        value = builder.value(slot)
        counts[fld] = None if value is None else int(value)
        where = builder.location(slot, value)
        if where is not None:
            locations[hpa_location_key(fld, None)] = where
    targets: list[HpaTarget] = []
    external: list[str] = []
    triggers = get_path(obj.data, (*base, "triggers"))
    for index, trigger in enumerate(triggers if isinstance(triggers, list) else []):
        read = _trigger(builder, obj, (*base, "triggers", index), trigger, name)
        if isinstance(read, str):
            external.append(read)
            continue
        resource, container, slot = read
        slots[(container, FieldId.hpa_target(resource))] = slot
        value = builder.value(slot)
        if value is None:
            external.append(resource)
            continue
        targets.append(HpaTarget(resource, int(value), container))
        where = builder.location(slot, value)
        if where is not None:
            locations[f"target.{resource}" + (f".{container}" if container else "")] = where
    declared_min = counts[FieldId.HPA_MIN_REPLICAS]
    declared_min = DEFAULT_MIN_REPLICAS if declared_min is None else declared_min
    max_replicas = counts[FieldId.HPA_MAX_REPLICAS]
    config = (*base, "advanced", "horizontalPodAutoscalerConfig")
    hpa_name = get_path(obj.data, (*config, "name"))
    label = "KEDA ScaledObject"
    hpa = DeclaredHPA(
        str(hpa_name) if isinstance(hpa_name, str) and hpa_name else HPA_PREFIX + name,
        max(1, declared_min),
        DEFAULT_MAX_REPLICAS if max_replicas is None else max_replicas,
        tuple(targets),
        len(external),
        locations,
        container_resource=any(t.container is not None for t in targets),
        behavior=read_behavior(obj, builder.error, (*config, "behavior"), label),
        keda=KedaScaler(name, declared_min, tuple(sorted(external))),
    )
    builder.replace(entry, hpa=hpa, files=obj.files)


def _trigger(
    builder: WorkloadBuilder, obj: Obj, path: Path_, trigger: Any, name: str
) -> str | tuple[Resource, str | None, Slot]:
    """One trigger: (resource, container, slot of its value) for a ``cpu``/``memory``
    Utilization one, else the name it is listed under."""
    if not isinstance(trigger, dict):
        return "?"
    kind = str(trigger.get("type", "?"))
    if kind not in RESOURCES:
        return kind
    metadata = trigger.get("metadata")
    metadata = metadata if isinstance(metadata, Mapping) else {}
    metric_type = trigger.get("metricType") or metadata.get("type")
    if metric_type is None:
        builder.error(
            obj.origin(path) or obj.root,
            f"KEDA ScaledObject {name}: a {kind} trigger needs metricType "
            "(Utilization or AverageValue); it is left alone",
        )
        return kind
    if metric_type != "Utilization":
        return f"{kind} ({metric_type})"
    container = metadata.get("containerName")
    slot = Slot(obj, (*path, "metadata", "value"), "percent", string=True)
    return kind, str(container) if container else None, slot


def conflicts(
    hpas: Mapping[WorkloadRef, Sequence[Obj]], scaled: Scaled
) -> tuple[tuple[SourceError, ...], dict[WorkloadRef, str]]:
    """The warnings of workloads that a ScaledObject and another autoscaler (an HPA, a second
    ScaledObject) target, and why each such workload is not proposed for."""
    warnings: list[SourceError] = []
    reasons: dict[WorkloadRef, str] = {}
    for ref, where in scaled.both.items():
        why = (
            f"its Helm values ({where}) turn on both an HPA and a KEDA ScaledObject: KEDA "
            "refuses a second autoscaler for one workload; keep one"
        )
        reasons[ref] = why
        file, _, line = where.rpartition(":")
        warnings.append(SourceError(file, int(line), f"{ref}: {why}; none is edited"))
    for ref, objs in scaled.objects.items():
        others = list(hpas.get(ref, ())) + objs[1:]
        if not others:
            continue
        named = ", ".join(
            f"{'KEDA ScaledObject' if o in objs else 'HorizontalPodAutoscaler'} {o.name} "
            f"({o.root.file}:{o.root.line})"
            for o in [objs[0], *others]
        )
        why = f"{named} all scale it: KEDA refuses a second autoscaler for one workload; keep one"
        reasons[ref] = why
        for obj in others:
            warnings.append(
                SourceError(
                    obj.root.file,
                    obj.root.line,
                    f"{ref.kind} {ref.namespace}/{ref.name} in environment "
                    f"{ref.environment!r}: {why}; none is edited",
                )
            )
    return tuple(sorted(warnings, key=lambda e: (e.file, e.line, e.message))), reasons
