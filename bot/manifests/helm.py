"""Helm values: charts' ``values.yaml`` plus per-environment values files, and inline values of
Flux ``HelmRelease`` (``spec.values``) and Argo CD ``Application``
(``spec.source.helm.valuesObject``, or ``values`` as a YAML string).

Which values set which workload field comes from the repository's ``helm`` config
(``HelmWorkloadMapping``); without one, the ``helm create`` conventions apply (``CONVENTION``):
one Deployment named after the release (or chart), one container named after the chart,
``resources``, ``replicaCount`` and ``autoscaling.*``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bot.config.manifests import HelmChartConfig, HelmWorkloadMapping
from bot.manifests.patching import merge_map
from bot.manifests.sources import Obj, Origin, Path_, parse_inline
from bot.manifests.yamldoc import YamlFile, YMap, YScalar, node_at
from bot.model import RESOURCES, FieldId

CONVENTION: dict[str, str] = {
    "resources": "resources",
    "replicas": "replicaCount",
    "hpa_enabled": "autoscaling.enabled",
    "hpa_min_replicas": "autoscaling.minReplicas",
    "hpa_max_replicas": "autoscaling.maxReplicas",
    "hpa_target_cpu_percent": "autoscaling.targetCPUUtilizationPercentage",
    "hpa_target_memory_percent": "autoscaling.targetMemoryUtilizationPercentage",
    "keda": "keda",
}
"""``helm create``'s values layout (``helm/pkg/chartutil/create.go``, ``defaultValues``), and
a KEDA ScaledObject block at ``keda`` (``bot.manifests.keda``)."""

MAPPED_FIELDS: tuple[tuple[str, FieldId], ...] = (
    ("replicas", FieldId.REPLICAS),
    ("hpa_min_replicas", FieldId.HPA_MIN_REPLICAS),
    ("hpa_max_replicas", FieldId.HPA_MAX_REPLICAS),
    ("hpa_target_cpu_percent", FieldId.HPA_TARGET_CPU),
    ("hpa_target_memory_percent", FieldId.HPA_TARGET_MEMORY),
)
"""A mapping's setting (``HelmWorkloadMapping``) -> the field its values path holds."""

VALUES_PREFIXES = ("values", "values-", "values_", "values.")
"""A chart-directory file whose name starts like this is a values file."""


@dataclass(frozen=True, slots=True)
class FieldPaths:
    """Values paths (tuples of keys) of one workload's fields; None = not mapped."""

    kind: str
    name: str
    container: str
    fields: dict[FieldId, Path_]
    hpa_enabled: Path_ | None
    keda: Path_ | None = None
    """Path of a KEDA ScaledObject block (``bot.manifests.keda``)."""


def dotted(path: str) -> Path_:
    """``a.b.c`` -> ('a', 'b', 'c')."""
    return tuple(p for p in path.split(".") if p)


def field_paths(mapping: HelmWorkloadMapping | None, name: str, chart: str) -> FieldPaths:
    """The field -> values path table of one workload (``helm create`` defaults when no mapping)."""
    source: dict[str, str | None] = (
        dict(CONVENTION)
        if mapping is None
        else {
            "resources": mapping.resources,
            "replicas": mapping.replicas,
            "hpa_enabled": mapping.hpa_enabled,
            "hpa_min_replicas": mapping.hpa_min_replicas,
            "hpa_max_replicas": mapping.hpa_max_replicas,
            "hpa_target_cpu_percent": mapping.hpa_target_cpu_percent,
            "hpa_target_memory_percent": mapping.hpa_target_memory_percent,
            "keda": mapping.keda,
        }
    )
    fields: dict[FieldId, Path_] = {}
    resources = source.get("resources")
    if resources:
        for group, of in (("requests", FieldId.request), ("limits", FieldId.limit)):
            for resource in RESOURCES:
                fields[of(resource)] = (*dotted(resources), group, resource)
    for key, field in MAPPED_FIELDS:
        value = source.get(key)
        if value:
            fields[field] = dotted(value)
    if mapping is not None:
        for text, value in mapping.fields.items():
            fields[FieldId(text)] = dotted(value)  # names checked by the config model
    enabled = source.get("hpa_enabled")
    keda = source.get("keda")
    return FieldPaths(
        mapping.kind if mapping else "Deployment",
        mapping.name if mapping else name,
        (mapping.container or mapping.name) if mapping else chart,
        fields,
        dotted(enabled) if enabled else None,
        dotted(keda) if keda else None,
    )


def values_object(files: list[YamlFile]) -> Obj:
    """Values merged in order (later files win, maps merge, lists replace) with origins."""
    first = files[0]
    root = first.documents[0].root if first.documents else None
    obj = Obj({}, {}, Origin(first.path, 0, (), root or YMap(0, 0, 0, 0)), set())
    for file in files:
        obj.files.add(file.path)
        node = file.documents[0].root if file.documents else None
        if isinstance(node, YMap):
            merge_map(obj, obj.data, (), node, Origin(file.path, 0, (), node), merge_lists=False)
    return obj


def release_values(
    obj: Obj, parse: Callable[[str], YamlFile]
) -> tuple[Obj, Path_, str, str, str | None] | None:
    """For a HelmRelease or Application: (values holder, values prefix, release, chart, namespace).

    The holder is ``obj`` itself for ``spec.values``/``valuesObject``; for Argo CD's ``values``
    string it is a new object over the parsed string (its origins point into the string).
    """
    spec = _mapping(obj.data.get("spec"))
    if obj.kind == "HelmRelease" and obj.api_version.startswith("helm.toolkit.fluxcd.io/"):
        chart_spec = _mapping(_mapping(spec.get("chart")).get("spec"))
        chart = str(chart_spec.get("chart") or obj.name)
        release = str(spec.get("releaseName") or obj.name)
        namespace = spec.get("targetNamespace") or obj.namespace
        return obj, ("spec", "values"), release, chart, _text(namespace)
    if obj.kind == "Application" and obj.api_version.startswith("argoproj.io/"):
        source = _mapping(spec.get("source"))
        helm = source.get("helm")
        if not isinstance(helm, dict):
            return None
        chart = str(
            source.get("chart") or str(source.get("path") or obj.name).rstrip("/").split("/")[-1]
        )
        release = str(helm.get("releaseName") or obj.name)
        namespace = _text(_mapping(spec.get("destination")).get("namespace"))
        prefix = ("spec", "source", "helm")
        if "valuesObject" in helm:
            return obj, (*prefix, "valuesObject"), release, chart, namespace
        origin = obj.origin((*prefix, "values"))
        if isinstance(helm.get("values"), str) and origin is not None:
            file_root = origin.node
            docs, inline = parse_inline(parse(origin.file), file_root, "spec.source.helm.values")
            root = docs[0].root if docs else None
            holder = Obj({}, {}, origin, {origin.file})
            if isinstance(root, YMap):
                merge_map(
                    holder,
                    holder.data,
                    (),
                    root,
                    Origin(origin.file, origin.document, (), root, inline),
                    merge_lists=False,
                )
            return holder, (), release, chart, namespace
        return obj, (*prefix, "valuesObject"), release, chart, namespace
    return None


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _text(value: Any) -> str | None:
    return str(value) if value is not None and value != "" else None


def full_name(release: str, chart: str) -> str:
    """``helm create``'s ``fullname``: the release name when it contains the chart name."""
    return release if chart in release else f"{release}-{chart}"


def mapping_for(
    configs: tuple[HelmChartConfig, ...],
    *,
    chart_dir: str | None = None,
    release: str | None = None,
) -> HelmChartConfig | None:
    """The config entry for a chart directory or a release name."""
    for config in configs:
        if chart_dir is not None and config.chart == chart_dir:
            return config
        if release is not None and config.release == release:
            return config
    return None


def get_path(data: Any, path: Path_) -> Any:
    """The value at ``path`` in nested dicts, or None."""
    for part in path:
        if not isinstance(data, dict):
            return None
        data = data.get(part)
    return data


def chart_name(chart_file: YamlFile, default: str) -> str:
    """The ``name`` in Chart.yaml."""
    root = chart_file.documents[0].root if chart_file.documents else None
    node = node_at(root, ("name",))
    return str(node.value) if isinstance(node, YScalar) and node.value else default
