"""Discovery: a repository checkout -> ``Inventory`` (and the internal index the editor needs).

Environments, in order:

- every Kustomize overlay (``kustomize``): replayed for origins, rendered by ``kubectl kustomize``
  (once per overlay, overlays in parallel) for values;
- every Helm values environment (``helm``): a chart's ``values.yaml`` merged with one
  per-environment values file (or alone, as ``default``, when the chart has none);
- ``default``: raw YAML that no kustomization reads.

Flux ``HelmRelease`` and Argo CD ``Application`` objects found in any environment add the
workloads their inline values describe. A bad file, kustomization or object becomes an
``Inventory.errors`` entry; discovery itself never raises for repository content.
"""

from __future__ import annotations

import dataclasses
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from bot.config.manifests import HelmWorkloadMapping
from bot.config.repo import RepoConfig
from bot.manifests import helm
from bot.manifests.errors import KustomizeError, ManifestError
from bot.manifests.files import RepoFiles, join, normalize
from bot.manifests.kustomize import (
    KUSTOMIZATION_FILES,
    Kustomizer,
    error_line,
    kustomization_in,
    render,
)
from bot.manifests.quantities import QuantityError, bytes_from_quantity, cores_from_quantity
from bot.manifests.sources import Obj, Origin, Path_, objects_in
from bot.manifests.yamldoc import YScalar
from bot.model import (
    DEFAULT_ENVIRONMENT,
    RESOURCES,
    DeclaredContainer,
    DeclaredHPA,
    DeclaredVPA,
    DeclaredWorkload,
    HpaTarget,
    Inventory,
    Location,
    ResourceValues,
    SourceError,
    VpaContainerPolicy,
    WorkloadRef,
)

WORKLOAD_KINDS = frozenset({"Deployment", "StatefulSet"})
"""Kinds the bot right-sizes (``apps/v1``)."""
RESOURCE_FIELDS = ("requests.cpu", "requests.memory", "limits.cpu", "limits.memory")
"""Container fields, as ``FieldChange.field`` names them."""
DEFAULT_NAMESPACE = "default"
"""Namespace of an object that names none, in an environment that assumes none."""
RENDER_WORKERS = 4
"""``kubectl kustomize`` processes run at once."""

Unit = Literal["cpu", "memory", "count", "percent"]
EnvKind = Literal["raw", "kustomize", "helm"]


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


@dataclass(eq=False, slots=True)
class Slot:
    """Where one workload field lives: a path in an object's data (it may not exist yet)."""

    obj: Obj
    path: Path_
    unit: Unit


@dataclass(eq=False, slots=True)
class Entry:
    """A discovered workload with the slots of its editable fields."""

    workload: DeclaredWorkload
    environment: Environment
    slots: dict[tuple[str | None, str], Slot]


@dataclass(eq=False, slots=True)
class Discovery:
    """The inventory plus the index the editor plans with."""

    inventory: Inventory
    entries: dict[WorkloadRef, Entry]
    environments: dict[str, Environment]
    file_users: dict[str, set[str]]
    files: RepoFiles

    def exclusive(self, file: str, environment: str) -> bool:
        """Whether only ``environment`` reads ``file``."""
        return self.file_users.get(file, {environment}) <= {environment}


def _number(unit: Unit, value: Any) -> float | int | None:
    if value is None or isinstance(value, bool):
        return None
    if unit == "cpu":
        return cores_from_quantity(value)
    if unit == "memory":
        return bytes_from_quantity(value)
    if isinstance(value, int | float):
        return int(value)
    return int(str(value))


def _get(data: Any, path: Path_) -> Any:
    for part in path:
        if isinstance(data, dict) and isinstance(part, str):
            data = data.get(part)
        elif isinstance(data, list) and isinstance(part, int) and 0 <= part < len(data):
            data = data[part]
        else:
            return None
    return data


class _Builder:
    """Turns the objects of each environment into workloads, errors kept aside."""

    def __init__(self, config: RepoConfig, files: RepoFiles) -> None:
        self.config = config
        self.files = files
        self.errors: list[SourceError] = []
        self.entries: dict[WorkloadRef, Entry] = {}

    def error(self, origin: Origin | None, message: str, file: str = "") -> None:
        if origin is not None:
            self.errors.append(SourceError(origin.file, origin.line, message))
        else:
            self.errors.append(SourceError(file, 0, message))

    def value(self, slot: Slot) -> float | int | None:
        raw = _get(slot.obj.data, slot.path)
        try:
            return _number(slot.unit, raw)
        except (QuantityError, ValueError):
            origin = slot.obj.origin(slot.path) or slot.obj.root
            self.error(origin, f"{'.'.join(str(p) for p in slot.path)}: not a valid value: {raw!r}")
            return None

    def location(self, slot: Slot, value: float | int | None) -> Location | None:
        origin = slot.obj.origin(slot.path)
        if origin is None or value is None or not isinstance(origin.node, YScalar):
            return None
        try:
            written = _number(slot.unit, origin.node.value)
        except (QuantityError, ValueError):
            return None
        if written is None or abs(float(written) - float(value)) > 1e-9:
            return None  # set by something the replay does not model: not editable
        return Location(origin.file, origin.line, origin.path, origin.document)

    def add(self, env: Environment, entry: Entry) -> None:
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

    def kubernetes(self, env: Environment, obj: Obj) -> Entry:
        namespace = obj.namespace or env.namespace or DEFAULT_NAMESPACE
        ref = WorkloadRef(obj.kind, namespace, obj.name, env.name)
        pod = ("spec", "template", "spec")
        slots: dict[tuple[str | None, str], Slot] = {}
        containers = []
        for list_key, init in (("initContainers", True), ("containers", False)):
            items = _get(obj.data, (*pod, list_key))
            if not isinstance(items, list):
                continue
            for index, item in enumerate(items):
                if not isinstance(item, dict) or not isinstance(item.get("name"), str):
                    continue
                name = item["name"]
                base = (*pod, list_key, index, "resources")
                values: dict[str, float | int | None] = {}
                locations: dict[str, Location] = {}
                for fld in RESOURCE_FIELDS:
                    group, resource = fld.split(".")
                    slot = Slot(
                        obj, (*base, group, resource), "cpu" if resource == "cpu" else "memory"
                    )
                    slots[(name, fld)] = slot
                    values[fld] = self.value(slot)
                    where = self.location(slot, values[fld])
                    if where is not None:
                        locations[fld] = where
                containers.append(_container(name, values, locations, init))
        replicas_slot = Slot(obj, ("spec", "replicas"), "count")
        slots[(None, "replicas")] = replicas_slot
        replicas = self.value(replicas_slot)
        locations = {}
        where = self.location(replicas_slot, replicas)
        if where is not None:
            locations["replicas"] = where
        workload = DeclaredWorkload(
            ref,
            int(replicas) if replicas is not None else None,
            tuple(containers),
            files=tuple(sorted(obj.files)),
            locations=locations,
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
        plans = [helm.field_paths(m, release, chart) for m in mappings] or [
            helm.field_paths(None, helm.full_name(release, chart), chart)
        ]
        for paths in plans:
            slots: dict[tuple[str | None, str], Slot] = {}
            nums: dict[str, float | int | None] = {}
            locs: dict[str, Location] = {}
            for fld, vpath in paths.fields.items():
                unit: Unit = (
                    "cpu"
                    if fld.endswith(".cpu") and not fld.startswith("hpa.")
                    else "memory"
                    if fld.endswith(".memory") and not fld.startswith("hpa.")
                    else "percent"
                    if fld.startswith("hpa.target")
                    else "count"
                )
                slot = Slot(values, (*prefix, *vpath), unit)
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
            container = _container(
                paths.container,
                nums,
                {k: v for k, v in locs.items() if k in RESOURCE_FIELDS},
                False,
            )
            hpa = None
            enabled = (
                helm.get_path(values.data, (*prefix, *paths.hpa_enabled))
                if paths.hpa_enabled
                else None
            )
            max_replicas = nums.get("hpa.maxReplicas")
            if max_replicas is not None and (paths.hpa_enabled is None or enabled is True):
                targets = tuple(
                    HpaTarget(res, int(v))
                    for res, v in zip(
                        RESOURCES,
                        (nums.get("hpa.target.cpu"), nums.get("hpa.target.memory")),
                        strict=True,
                    )
                    if v is not None
                )
                hpa = DeclaredHPA(
                    paths.name,
                    _int(nums.get("hpa.minReplicas")),
                    int(max_replicas),
                    targets,
                    locations={
                        k.removeprefix("hpa."): v for k, v in locs.items() if k.startswith("hpa.")
                    },
                )
            workload = DeclaredWorkload(
                ref,
                _int(nums.get("replicas")),
                (container,),
                hpa=hpa,
                files=tuple(sorted(values.files)),
                locations={k: v for k, v in locs.items() if k == "replicas"},
            )
            self.add(env, Entry(workload, env, slots))

    # -------------------------------------------------------------------------- linking

    def link(self, env: Environment) -> None:
        by_target: dict[tuple[str, str, str], Entry] = {
            (e.workload.ref.kind, e.workload.ref.namespace, e.workload.ref.name): e
            for e in self.entries.values()
            if e.environment is env
        }
        for obj in env.objects:
            kind, api = obj.kind, obj.api_version
            if kind == "HorizontalPodAutoscaler" and api.startswith("autoscaling/v2"):
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
        ref = _get(obj.data, ref_path)
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
        slots = entry.slots
        locations: dict[str, Location] = {}
        nums: dict[str, float | int | None] = {}
        for fld, path in (
            ("minReplicas", ("spec", "minReplicas")),
            ("maxReplicas", ("spec", "maxReplicas")),
        ):
            slot = Slot(obj, path, "count")
            slots[(None, f"hpa.{fld}")] = slot
            nums[fld] = self.value(slot)
            where = self.location(slot, nums[fld])
            if where is not None:
                locations[fld] = where
        targets, others = [], 0
        metrics = _get(obj.data, ("spec", "metrics"))
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
            slots[(container, f"hpa.target.{resource}")] = slot
            value = self.value(slot)
            if value is None:
                continue
            targets.append(HpaTarget(resource, int(value), container))
            where = self.location(slot, value)
            if where is not None:
                locations[f"target.{resource}" + (f".{container}" if container else "")] = where
        max_replicas = nums["maxReplicas"]
        if max_replicas is None:
            self.error(obj.root, f"HorizontalPodAutoscaler {obj.name}: no spec.maxReplicas")
            return
        hpa = DeclaredHPA(
            obj.name,
            _int(nums["minReplicas"]),
            int(max_replicas),
            tuple(targets),
            others,
            locations,
        )
        self._replace(entry, hpa=hpa, files=obj.files)

    def _vpa(
        self, env: Environment, obj: Obj, by_target: dict[tuple[str, str, str], Entry]
    ) -> None:
        entry = self._target(env, obj, ("spec", "targetRef"), by_target)
        if entry is None:
            return
        policies = []
        raw = _get(obj.data, ("spec", "resourcePolicy", "containerPolicies"))
        for policy in raw if isinstance(raw, list) else []:
            if not isinstance(policy, dict):
                continue
            controlled = policy.get("controlledResources")
            policies.append(
                VpaContainerPolicy(
                    str(policy.get("containerName", "*")),
                    policy.get("mode"),
                    _values(policy.get("minAllowed")),
                    _values(policy.get("maxAllowed")),
                    tuple(r for r in controlled if r in ("cpu", "memory"))
                    if isinstance(controlled, list)
                    else ("cpu", "memory"),
                    policy.get("controlledValues"),
                )
            )
        mode = _get(obj.data, ("spec", "updatePolicy", "updateMode"))
        vpa = DeclaredVPA(obj.name, str(mode) if mode is not None else None, tuple(policies))
        self._replace(entry, vpa=vpa, files=obj.files)

    def _tortoise(
        self, env: Environment, obj: Obj, by_target: dict[tuple[str, str, str], Entry]
    ) -> None:
        entry = self._target(env, obj, ("spec", "targetRefs", "scaleTargetRef"), by_target)
        mode = _get(obj.data, ("spec", "updateMode")) or "Off"
        if entry is not None and mode != "Off":
            self._replace(entry, managed_by_tortoise=True, files=set())

    def _replace(self, entry: Entry, *, files: set[str], **changes: Any) -> None:
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


def _container(
    name: str, values: dict[str, float | int | None], locations: dict[str, Location], init: bool
) -> DeclaredContainer:
    def rv(group: str) -> ResourceValues:
        cpu, memory = values.get(f"{group}.cpu"), values.get(f"{group}.memory")
        return ResourceValues(
            float(cpu) if cpu is not None else None, int(memory) if memory is not None else None
        )

    return DeclaredContainer(name, rv("requests"), rv("limits"), locations, init)


# -------------------------------------------------------------------------- environments


def _dir(path: str) -> str:
    parent = str(PurePosixPath(path).parent)
    return "" if parent == "." else parent


def _env_name(directory: str) -> str:
    return directory or "."


class _Discoverer:
    def __init__(self, root: Path, config: RepoConfig, files: RepoFiles) -> None:
        self.root = root
        self.config = config
        self.files = files
        self.kustomizer = Kustomizer(files)
        self.errors: list[SourceError] = []
        self.referenced: set[str] = set()

    def fail(self, exc: ManifestError) -> None:
        self.errors.append(exc.as_source_error())

    def run(self, only: set[str] | None = None) -> tuple[list[Environment], list[SourceError]]:
        listing = self.files.listing()
        self.errors.extend(e.as_source_error() for e in self.files.listing_errors)
        charts = sorted({_dir(p) for p in listing if PurePosixPath(p).name == "Chart.yaml"})

        def in_chart(path: str) -> str | None:
            return next((c for c in charts if c == "" or path.startswith(c + "/")), None)

        kdirs = sorted(
            {
                _dir(p)
                for p in listing
                if PurePosixPath(p).name in KUSTOMIZATION_FILES and in_chart(p) is None
            }
        )
        envs: list[Environment] = []
        envs.extend(self.overlays(kdirs, only))
        envs.extend(self.charts(charts, listing, only))
        if only is None or DEFAULT_ENVIRONMENT in only:
            raw = Environment(DEFAULT_ENVIRONMENT, "raw")
            for path in listing:
                name = PurePosixPath(path).name
                if (
                    path in self.referenced
                    or name in KUSTOMIZATION_FILES
                    or in_chart(path) is not None
                ):
                    continue
                try:
                    found = objects_in(self.files.parse(path))
                except ManifestError as exc:
                    self.fail(exc)
                    continue
                raw.objects.extend(found)
                if found:
                    raw.files.add(path)
            if raw.objects:
                envs.append(raw)
        return envs, self.errors

    # ------------------------------------------------------------------------ Kustomize

    def overlays(self, kdirs: list[str], only: set[str] | None) -> list[Environment]:
        referenced_dirs: set[str] = set()
        components: set[str] = set()
        for directory in kdirs:
            try:
                dirs, refs = self.kustomizer.references(directory)
                if self.kustomizer.kind(directory) == "Component":
                    components.add(directory)
            except ManifestError as exc:
                self.fail(exc)
                continue
            referenced_dirs.update(dirs)
            self.referenced.update(refs)
        configured = [
            (env, normalize(env.path or env.name))
            for env in self.config.environments
            if kustomization_in(self.files, normalize(env.path or env.name))
        ]
        if configured:
            chosen = [(env.name, path, env.namespace) for env, path in configured]
        else:
            chosen = [
                (_env_name(d), d, None)
                for d in kdirs
                if d not in referenced_dirs and d not in components
            ]
        envs = []
        for name, directory, namespace in chosen:
            if only is not None and name not in only:
                continue
            env = Environment(name, "kustomize", directory=directory, namespace=namespace)
            try:
                build = self.kustomizer.build(directory)
            except ManifestError as exc:
                self.fail(exc)
                continue
            env.objects, env.files = build.objects, build.files
            self.referenced.update(build.files)
            envs.append(env)
        with ThreadPoolExecutor(max_workers=RENDER_WORKERS) as pool:
            results = list(pool.map(self._render, envs))
        return [env for env, ok in zip(envs, results, strict=True) if ok]

    def _render(self, env: Environment) -> bool:
        assert env.directory is not None
        kfile = kustomization_in(self.files, env.directory) or env.directory
        try:
            rendered = render(self.root, env.directory, kfile)
        except KustomizeError as exc:
            try:
                line = error_line(self.files.parse(kfile), exc)
            except ManifestError:
                line = 0
            self.errors.append(SourceError(exc.file, line, exc.message))
            return False
        modelled: dict[tuple[str, str, str], Obj] = {}
        by_name: dict[tuple[str, str], list[Obj]] = {}
        for obj in env.objects:
            modelled[(obj.kind, obj.namespace or "", obj.name)] = obj
            by_name.setdefault((obj.kind, obj.name), []).append(obj)
        objects = []
        kroot = self.files.parse(kfile).documents[0].root
        for data in rendered:
            kind = str(data.get("kind", ""))
            meta = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
            assert isinstance(meta, dict)
            name, namespace = str(meta.get("name", "")), str(meta.get("namespace") or "")
            found = modelled.get((kind, namespace, name))
            if found is None and len(by_name.get((kind, name), [])) == 1:
                found = by_name[(kind, name)][0]
            if found is None:
                assert kroot is not None
                found = Obj({}, {}, Origin(kfile, 0, (), kroot), {kfile})
            found.data = data
            objects.append(found)
        env.objects = objects
        return True

    # ----------------------------------------------------------------------------- Helm

    def charts(
        self, charts: list[str], listing: list[str], only: set[str] | None
    ) -> list[Environment]:
        envs = []
        configured = {normalize(e.path or e.name): e for e in self.config.environments}
        for chart in charts:
            base = join(chart, "values.yaml")
            env_files = sorted(
                p
                for p in listing
                if _dir(p) == chart
                and p != base
                and PurePosixPath(p).name.startswith(helm.VALUES_PREFIXES)
                and PurePosixPath(p).suffix in (".yaml", ".yml")
            )
            env_files.extend(
                p
                for p in configured
                if p not in env_files and p.startswith(chart + "/") and p != base
            )
            self.referenced.update([base, *env_files])
            choices: list[str | None] = [*env_files] or [None]
            for values_file in choices:
                config_env = configured.get(values_file or "")
                name = config_env.name if config_env else (values_file or DEFAULT_ENVIRONMENT)
                if only is not None and name not in only:
                    continue
                env = Environment(
                    name,
                    "helm",
                    directory=chart,
                    values_file=values_file,
                    namespace=config_env.namespace if config_env else None,
                )
                try:
                    parsed = [
                        self.files.parse(p)
                        for p in [base, values_file]
                        if p and self.files.exists(p)
                    ]
                    chart_name = helm.chart_name(
                        self.files.parse(join(chart, "Chart.yaml")), PurePosixPath(chart).name
                    )
                except ManifestError as exc:
                    self.fail(exc)
                    continue
                if not parsed:
                    continue
                env.files = {f.path for f in parsed}
                env.objects = [helm.values_object(parsed)]
                env.objects[0].original_name = chart_name
                envs.append(env)
        return envs


def discover_index(
    root: Path, config: RepoConfig, *, files: RepoFiles | None = None, only: set[str] | None = None
) -> Discovery:
    """Discover everything; ``only`` restricts to some environments (verification)."""
    repo = files or RepoFiles(root, config.paths)
    discoverer = _Discoverer(root, config, repo)
    envs, errors = discoverer.run(only)
    builder = _Builder(config, repo)
    for env in envs:
        if env.kind == "helm":
            values = env.objects[0]
            mapping = helm.mapping_for(config.helm, chart_dir=env.directory)
            builder.helm_workloads(
                env,
                values,
                (),
                release=values.original_name,
                chart=values.original_name,
                namespace=mapping.namespace if mapping else None,
                mappings=mapping.workloads if mapping else (),
                always=False,
            )
            continue
        for obj in env.objects:
            if obj.kind in WORKLOAD_KINDS and obj.api_version.startswith("apps/"):
                builder.add(env, builder.kubernetes(env, obj))
                continue
            try:
                found = helm.release_values(obj, repo.parse)
            except ManifestError as exc:
                errors.append(exc.as_source_error())
                continue
            if found is not None:
                holder, prefix, release, chart, namespace = found
                mapping = helm.mapping_for(config.helm, release=obj.name)
                builder.helm_workloads(
                    env,
                    holder,
                    prefix,
                    release=release,
                    chart=chart,
                    namespace=(mapping.namespace if mapping else None) or namespace,
                    mappings=mapping.workloads if mapping else (),
                    always=True,
                )
    for env in envs:
        builder.link(env)
    file_users: dict[str, set[str]] = {}
    for env in envs:
        used = set(env.files)
        for obj in env.objects:
            used |= obj.files
        for path in used:
            file_users.setdefault(path, set()).add(env.name)
    entries = builder.entries
    workloads = tuple(
        sorted(
            (e.workload for e in entries.values()),
            key=lambda w: (w.ref.environment, w.ref.namespace, w.ref.kind, w.ref.name),
        )
    )
    all_errors = sorted(
        set(errors) | set(builder.errors), key=lambda e: (e.file, e.line, e.message)
    )
    inventory = Inventory(tuple(sorted({e.name for e in envs})), workloads, tuple(all_errors))
    return Discovery(inventory, entries, {e.name: e for e in envs}, file_users, repo)
