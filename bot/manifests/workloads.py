"""Workloads from objects: containers, requests and limits, replicas, and the HPA, VPA and
Tortoise objects that target each one, with the location of every value.

``WorkloadBuilder`` works on the objects of one environment at a time (see ``discovery``). Each
editable field gets a ``Slot`` (object + path, whether or not the value exists yet), which is
what the editor plans with; values that cannot be read become errors with file and line.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field, replace
from typing import Any, Final, Literal, TypeAlias

from bot.config.manifests import HelmWorkloadMapping
from bot.config.repo import RepoConfig
from bot.manifests import helm
from bot.manifests.fields import (
    Unit,
    container_role,
    declared_container,
    get_path,
    number,
    unit_of,
)
from bot.manifests.files import RepoFiles
from bot.manifests.hpas import read_behavior
from bot.manifests.kinds import (
    UNREPLICATED_KINDS,
    WORKLOAD_KINDS,
    pod_spec_path,
    unscaled_reason,
)
from bot.manifests.podlevel import pod_resources, restart_on_resize, workload_labels
from bot.manifests.quantities import QuantityError, bytes_from_quantity, cores_from_quantity
from bot.manifests.sources import Obj, Origin, PatchKey, Path_
from bot.manifests.yamldoc import YScalar
from bot.model import (
    ANY_CONTAINER,
    DEFAULT_BEHAVIOR,
    RESOURCES,
    DeclaredHPA,
    DeclaredVPA,
    DeclaredWorkload,
    FieldId,
    HpaTarget,
    Location,
    ResourceValues,
    SourceError,
    VpaContainerPolicy,
    WorkloadRef,
)

RESOURCE_FIELDS = (
    FieldId.REQUESTS_CPU,
    FieldId.REQUESTS_MEMORY,
    FieldId.LIMITS_CPU,
    FieldId.LIMITS_MEMORY,
)
"""Container fields, as ``FieldChange.field`` names them."""
DEFAULT_NAMESPACE = "default"
"""Namespace of an object that names none, in an environment that assumes none."""

EnvKind = Literal["raw", "kustomize", "helm"]


HPA_LOCATION_KEYS: dict[FieldId, str] = {
    FieldId.HPA_MIN_REPLICAS: "minReplicas",
    FieldId.HPA_MAX_REPLICAS: "maxReplicas",
    FieldId.HPA_TARGET_CPU: "target.cpu",
    FieldId.HPA_TARGET_MEMORY: "target.memory",
}
"""The key of ``DeclaredHPA.locations`` of each HPA field (a target's is followed by its
container's name when it is a ``ContainerResource`` one)."""


def hpa_location_key(field: FieldId, container: str | None) -> str:
    """The key of ``DeclaredHPA.locations`` for the HPA field ``field`` (``hpa.minReplicas`` ->
    ``minReplicas``; ``hpa.target.cpu`` of container ``app`` -> ``target.cpu.app``)."""
    short = HPA_LOCATION_KEYS[field]
    return f"{short}.{container}" if field.is_hpa_target and container else short


SlotKey: TypeAlias = tuple[str | None, FieldId]
"""A slot's container (None: the workload's or its HPA's own field) and field."""

OTHER_METRICS: Final = "hpa.otherMetrics"
"""What an edit is checked for besides the fields: the HPA's metrics the bot does not set."""

CheckKey: TypeAlias = tuple[str | None, FieldId | Literal["hpa.otherMetrics"]]
"""A value an edit is checked for after it is rendered: a slot's, or ``OTHER_METRICS``."""


@dataclass(eq=False, slots=True)
class Environment:
    """One environment and what it is made of."""

    name: str
    kind: EnvKind
    directory: str | None = None
    """Overlay directory (kustomize) or chart directory (helm)."""
    values_file: str | None = None
    """The environment's own values file (helm; None when ``values.yaml`` stands alone)."""
    namespace: str | None = None
    objects: list[Obj] = field(default_factory=list)
    files: set[str] = field(default_factory=set)
    spread: set[PatchKey] = field(default_factory=set)
    """Patches (Kustomize) that a ``target:`` applies to several objects of the environment:
    a value written there is not one object's own (``Placement.exclusive``)."""


@dataclass(eq=False, slots=True)
class Slot:
    """Where one workload field lives: a path in an object's data (it may not exist yet)."""

    obj: Obj
    path: Path_
    unit: Unit
    string: bool = False
    """The number is written as a YAML string (a KEDA trigger's ``metadata.value``)."""


@dataclass(eq=False, slots=True)
class Entry:
    """A discovered workload with the slots of its editable fields."""

    workload: DeclaredWorkload
    environment: Environment
    slots: dict[SlotKey, Slot]


class WorkloadBuilder:
    """Turns the objects of each environment into workloads, errors kept aside."""

    def __init__(self, config: RepoConfig, files: RepoFiles) -> None:
        self.config = config
        self.files = files
        self.errors: list[SourceError] = []
        self.entries: dict[WorkloadRef, Entry] = {}
        self.hpas: dict[WorkloadRef, list[Obj]] = {}
        """Every HPA object that targets each workload (two or more: ``hpas.ambiguous``)."""

    def error(self, origin: Origin | None, message: str, file: str = "") -> None:
        """Record a problem at ``origin`` (or in ``file``)."""
        if origin is not None:
            self.errors.append(SourceError(origin.file, origin.line, message))
        else:
            self.errors.append(SourceError(file, 0, message))

    def value(self, slot: Slot) -> float | int | None:
        """A slot's value (None when unset; an error when unreadable)."""
        raw = get_path(slot.obj.data, slot.path)
        try:
            return number(slot.unit, raw)
        except (QuantityError, ValueError):
            origin = slot.obj.origin(slot.path) or slot.obj.root
            self.error(origin, f"{'.'.join(str(p) for p in slot.path)}: not a valid value: {raw!r}")
            return None

    def location(self, slot: Slot, value: float | int | None) -> Location | None:
        """Where a slot's value is written, when that file really sets the value read."""
        origin = slot.obj.origin(slot.path)
        if origin is None or value is None or not isinstance(origin.node, YScalar):
            return None
        try:
            written = number(slot.unit, origin.node.value)
        except (QuantityError, ValueError):
            return None
        if written is None or abs(float(written) - float(value)) > 1e-9:
            return None  # set by something the replay does not model: not editable
        return Location(origin.file, origin.line, origin.path, origin.document)

    def add(self, env: Environment, entry: Entry) -> None:
        """Add a workload; a second one with the same identity is an error."""
        ref = entry.workload.ref
        if ref in self.entries:
            first = self.entries[ref].workload.files
            self.error(
                next(iter(entry.slots.values())).obj.root if entry.slots else None,
                f"{ref.kind} {ref.namespace}/{ref.name} is declared twice in environment "
                f"{env.name!r} (first in {', '.join(first)}); the first one is used",
            )
            return
        self.entries[ref] = entry

    # -------------------------------------------------------------- Kubernetes workloads

    def kubernetes(self, env: Environment, obj: Obj, *, template: Obj | None = None) -> Entry:
        """A workload object (``bot.manifests.kinds``) as an entry; its containers are read
        from ``template``'s pod template when given (a Rollout's ``workloadRef`` Deployment),
        its replicas from ``obj`` (none for a DaemonSet, CronJob or Job)."""
        namespace = obj.namespace or env.namespace or DEFAULT_NAMESPACE
        ref = WorkloadRef(obj.kind, namespace, obj.name, env.name)
        pod = pod_spec_path(obj.kind)
        holder = template or obj
        slots: dict[SlotKey, Slot] = {}
        containers = []
        for list_key, init in (("initContainers", True), ("containers", False)):
            items = get_path(holder.data, (*pod, list_key))
            if not isinstance(items, list):
                continue
            for index, item in enumerate(items):
                if not isinstance(item, dict) or not isinstance(item.get("name"), str):
                    continue
                name = item["name"]
                base = (*pod, list_key, index, "resources")
                values: dict[FieldId, float | int | None] = {}
                locations: dict[str, Location] = {}
                for fld in RESOURCE_FIELDS:
                    group = "requests" if fld.is_request else "limits"
                    slot = Slot(holder, (*base, group, str(fld.resource)), unit_of(fld))
                    slots[(name, fld)] = slot
                    values[fld] = self.value(slot)
                    where = self.location(slot, values[fld])
                    if where is not None:
                        locations[fld] = where
                role = container_role(item, init, self.config.containers.init)
                container = declared_container(name, values, locations, role)
                resize = restart_on_resize(item)
                containers.append(replace(container, restart_on_resize=resize))
        replicas, locations = None, {}
        if obj.kind not in UNREPLICATED_KINDS:
            replicas_slot = Slot(obj, ("spec", "replicas"), "count")
            slots[(None, FieldId.REPLICAS)] = replicas_slot
            replicas = self.value(replicas_slot)
            where = self.location(replicas_slot, replicas)
            if where is not None:
                locations[FieldId.REPLICAS] = where
        workload = DeclaredWorkload(
            ref,
            int(replicas) if replicas is not None else None,
            tuple(containers),
            files=tuple(sorted(obj.files | holder.files)),
            locations=locations,
        )
        pod_requests, pod_limits = pod_resources(holder.data, pod)
        labels = workload_labels(obj.data, pod)
        workload = replace(
            workload, pod_requests=pod_requests, pod_limits=pod_limits, labels=labels
        )
        return Entry(workload, env, slots)

    # -------------------------------------------------------------------- Helm workloads

    def helm_workloads(
        self,
        env: Environment,
        values: Obj,
        prefix: Path_,
        *,
        release: str,
        chart: str,
        namespace: str | None,
        mappings: tuple[HelmWorkloadMapping, ...],
        always: bool,
    ) -> None:
        """The workloads one values object describes (mapping, else ``helm create`` conventions)."""
        plans = [helm.field_paths(m, release, chart) for m in mappings] or [
            helm.field_paths(None, helm.full_name(release, chart), chart)
        ]
        for paths in plans:
            slots: dict[SlotKey, Slot] = {}
            nums: dict[FieldId, float | int | None] = {}
            locs: dict[FieldId, Location] = {}
            for fld, vpath in paths.fields.items():
                slot = Slot(values, (*prefix, *vpath), unit_of(fld))
                key = (paths.container, fld) if fld in RESOURCE_FIELDS else (None, fld)
                slots[key] = slot
                nums[fld] = self.value(slot)
                where = self.location(slot, nums[fld])
                if where is not None:
                    locs[fld] = where
            if not always and not mappings and not any(v is not None for v in nums.values()):
                continue
            ns = namespace or env.namespace or DEFAULT_NAMESPACE
            ref = WorkloadRef(paths.kind, ns, paths.name, env.name)
            container = declared_container(
                paths.container, nums, {k: v for k, v in locs.items() if k in RESOURCE_FIELDS}
            )
            hpa = None
            enabled = (
                helm.get_path(values.data, (*prefix, *paths.hpa_enabled))
                if paths.hpa_enabled
                else None
            )
            max_replicas = nums.get(FieldId.HPA_MAX_REPLICAS)
            if max_replicas is not None and (paths.hpa_enabled is None or enabled is True):
                declared = ((res, nums.get(FieldId.hpa_target(res))) for res in RESOURCES)
                targets = tuple(HpaTarget(res, int(v)) for res, v in declared if v is not None)
                hpa = DeclaredHPA(
                    paths.name,
                    _int(nums.get(FieldId.HPA_MIN_REPLICAS)),
                    int(max_replicas),
                    targets,
                    locations={hpa_location_key(k, None): v for k, v in locs.items() if k.is_hpa},
                    container_resource=False,  # a mapping names pod-level targets only
                )
            workload = DeclaredWorkload(
                ref,
                _int(nums.get(FieldId.REPLICAS)),
                (container,),
                hpa=hpa,
                files=tuple(sorted(values.files)),
                locations={k: v for k, v in locs.items() if k == FieldId.REPLICAS},
            )
            self.add(env, Entry(workload, env, slots))

    # -------------------------------------------------------------------------- linking

    def link(self, env: Environment) -> None:
        """Attach each HPA, VPA and Tortoise of ``env`` to the workload it targets."""
        by_target: dict[tuple[str, str, str], Entry] = {
            (e.workload.ref.kind, e.workload.ref.namespace, e.workload.ref.name): e
            for e in self.entries.values()
            if e.environment is env
        }
        for obj in env.objects:
            kind, api = obj.kind, obj.api_version
            if kind == "HorizontalPodAutoscaler" and api.startswith(
                ("autoscaling/v2", "autoscaling/v1")
            ):
                self._hpa(env, obj, by_target)
            elif kind == "VerticalPodAutoscaler" and api.startswith("autoscaling.k8s.io/"):
                self._vpa(env, obj, by_target)
            elif kind == "Tortoise" and api.startswith("autoscaling.mercari.com/"):
                self._tortoise(env, obj, by_target)

    def _target(
        self,
        env: Environment,
        obj: Obj,
        ref_path: Path_,
        by_target: dict[tuple[str, str, str], Entry],
    ) -> Entry | None:
        ref = get_path(obj.data, ref_path)
        if not isinstance(ref, dict):
            self.error(obj.root, f"{obj.kind} {obj.name}: no {'.'.join(ref_path)}")
            return None
        kind, name = str(ref.get("kind", "")), str(ref.get("name", ""))
        namespace = obj.namespace or env.namespace or DEFAULT_NAMESPACE
        entry = by_target.get((kind, namespace, name))
        if entry is None and kind in WORKLOAD_KINDS:
            self.error(
                obj.origin((*ref_path, "name")) or obj.root,
                f"{obj.kind} {obj.name} targets {kind} {namespace}/{name}, which is not declared "
                f"in environment {env.name!r}",
            )
        return entry

    def _hpa(
        self, env: Environment, obj: Obj, by_target: dict[tuple[str, str, str], Entry]
    ) -> None:
        entry = self._target(env, obj, ("spec", "scaleTargetRef"), by_target)
        if entry is None:
            return
        if (kind := entry.workload.ref.kind) in UNREPLICATED_KINDS:
            self.error(
                obj.origin(("spec", "scaleTargetRef", "kind")) or obj.root,
                f"HorizontalPodAutoscaler {obj.name} targets {kind} "
                f"{entry.workload.ref.name}: {unscaled_reason(kind)} and cannot be scaled; "
                "the HPA is ignored",
            )
            return
        slots = entry.slots
        locations: dict[str, Location] = {}
        nums: dict[FieldId, float | int | None] = {}
        for fld, path in (
            (FieldId.HPA_MIN_REPLICAS, ("spec", "minReplicas")),
            (FieldId.HPA_MAX_REPLICAS, ("spec", "maxReplicas")),
        ):
            slot = Slot(obj, path, "count")
            slots[(None, fld)] = slot
            nums[fld] = self.value(slot)
            where = self.location(slot, nums[fld])
            if where is not None:
                locations[hpa_location_key(fld, None)] = where
        targets, others = [], 0
        self.hpas.setdefault(entry.workload.ref, []).append(obj)
        v1 = obj.api_version.startswith("autoscaling/v1")
        if v1:  # one CPU target: spec.targetCPUUtilizationPercentage
            slot = Slot(obj, ("spec", "targetCPUUtilizationPercentage"), "percent")
            slots[(None, FieldId.HPA_TARGET_CPU)] = slot
            value = self.value(slot)
            if value is not None:
                targets.append(HpaTarget("cpu", int(value)))
                where = self.location(slot, value)
                if where is not None:
                    locations["target.cpu"] = where
        metrics = get_path(obj.data, ("spec", "metrics"))
        for index, metric in enumerate(metrics if isinstance(metrics, list) else []):
            mtype = metric.get("type") if isinstance(metric, dict) else None
            key = {"Resource": "resource", "ContainerResource": "containerResource"}.get(str(mtype))
            body = metric.get(key) if key and isinstance(metric, dict) else None
            target = body.get("target") if isinstance(body, dict) else None
            resource = body.get("name") if isinstance(body, dict) else None
            if (
                not isinstance(target, dict)
                or resource not in ("cpu", "memory")
                or target.get("type") != "Utilization"
                or target.get("averageUtilization") is None
            ):
                others += 1
                continue
            assert isinstance(body, dict) and key is not None
            container = body.get("container") if key == "containerResource" else None
            slot = Slot(
                obj, ("spec", "metrics", index, key, "target", "averageUtilization"), "percent"
            )
            slots[(container, FieldId.hpa_target(resource))] = slot
            value = self.value(slot)
            if value is None:
                continue
            targets.append(HpaTarget(resource, int(value), container))
            where = self.location(slot, value)
            if where is not None:
                locations[f"target.{resource}" + (f".{container}" if container else "")] = where
        max_replicas = nums[FieldId.HPA_MAX_REPLICAS]
        if max_replicas is None:
            self.error(obj.root, f"HorizontalPodAutoscaler {obj.name}: no spec.maxReplicas")
            return
        hpa = DeclaredHPA(
            obj.name,
            _int(nums[FieldId.HPA_MIN_REPLICAS]),
            int(max_replicas),
            tuple(targets),
            others,
            locations,
            container_resource=not v1,
            behavior=DEFAULT_BEHAVIOR if v1 else read_behavior(obj, self.error),
        )
        self.replace(entry, hpa=hpa, files=obj.files)

    def _vpa(
        self, env: Environment, obj: Obj, by_target: dict[tuple[str, str, str], Entry]
    ) -> None:
        entry = self._target(env, obj, ("spec", "targetRef"), by_target)
        if entry is None:
            return
        policies = []
        locations: dict[str, Location] = {}
        base = ("spec", "resourcePolicy", "containerPolicies")
        raw = get_path(obj.data, base)
        for index, policy in enumerate(raw if isinstance(raw, list) else []):
            if not isinstance(policy, dict):
                continue
            name = str(policy.get("containerName", ANY_CONTAINER))
            for group in ("minAllowed", "maxAllowed"):
                for resource in RESOURCES:
                    slot = Slot(obj, (*base, index, group, resource), resource)
                    where = self.location(slot, self.value(slot))
                    if where is not None:
                        locations[f"{name}.{group}.{resource}"] = where
            controlled = policy.get("controlledResources")
            policies.append(
                VpaContainerPolicy(
                    str(policy.get("containerName", ANY_CONTAINER)),
                    policy.get("mode"),
                    _values(policy.get("minAllowed")),
                    _values(policy.get("maxAllowed")),
                    tuple(r for r in controlled if r in ("cpu", "memory"))
                    if isinstance(controlled, list)
                    else ("cpu", "memory"),
                    policy.get("controlledValues"),
                )
            )
        mode = get_path(obj.data, ("spec", "updatePolicy", "updateMode"))
        vpa = DeclaredVPA(
            obj.name, str(mode) if mode is not None else None, tuple(policies), locations
        )
        self.replace(entry, vpa=vpa, files=obj.files)

    def _tortoise(
        self, env: Environment, obj: Obj, by_target: dict[tuple[str, str, str], Entry]
    ) -> None:
        entry = self._target(env, obj, ("spec", "targetRefs", "scaleTargetRef"), by_target)
        mode = get_path(obj.data, ("spec", "updateMode")) or "Off"
        if entry is not None and mode != "Off":
            self.replace(entry, managed_by_tortoise=True, files=obj.files)

    def replace(self, entry: Entry, *, files: set[str], **changes: Any) -> None:
        """``entry``'s workload with ``changes`` and ``files`` added to its files."""
        workload = entry.workload
        merged = tuple(sorted(set(workload.files) | files))
        entry.workload = dataclasses.replace(workload, files=merged, **changes)


def _int(value: float | int | None) -> int | None:
    return None if value is None else int(value)


def _values(raw: Any) -> ResourceValues:
    if not isinstance(raw, dict):
        return ResourceValues()
    try:
        cpu = cores_from_quantity(raw["cpu"]) if raw.get("cpu") is not None else None
        memory = bytes_from_quantity(raw["memory"]) if raw.get("memory") is not None else None
    except QuantityError:
        return ResourceValues()
    return ResourceValues(cpu, memory)
