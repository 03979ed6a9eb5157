"""Where the manifests are and how they map to Prometheus: the ``paths``, ``environments`` and
``helm`` keys of the opt-in file (see ``docs/manifests.md``)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from bot.config.base import ConfigModel


class PathsConfig(ConfigModel):
    """Which files discovery reads (globs relative to the repository root)."""

    include: tuple[str, ...] = Field(("**/*.yaml", "**/*.yml"), description="Globs to read.")
    exclude: tuple[str, ...] = Field((), description="Globs to skip (applied after include).")
    max_file_bytes: int = Field(
        1024 * 1024, ge=1, description="Larger files are reported and skipped, bytes."
    )


class EnvironmentConfig(ConfigModel):
    """One environment: a Kustomize overlay directory, a Helm values file or a plain directory of
    YAML (``name: default`` without ``path``: the raw YAML), and its selector."""

    name: str = Field(description="Environment name, e.g. ``overlays/prod`` or ``prod``.")
    path: str | None = Field(
        None,
        description="Overlay directory, chart values file or plain directory of YAML; defaults "
        "to ``name``.",
    )
    selector: dict[str, str] = Field(
        default_factory=dict,
        description='Extra Prometheus label matchers, e.g. ``{cluster: "prod"}``.',
    )
    namespace: str | None = Field(
        None,
        description="Namespace of the environment's objects that declare none (as "
        "``kubectl apply -n``).",
    )


class HelmWorkloadMapping(ConfigModel):
    """Which Helm values set one workload's fields (dotted values paths, e.g. ``web.resources``)."""

    kind: Literal["Deployment", "StatefulSet"] = Field("Deployment", description="Workload kind.")
    name: str = Field(description="Workload name as rendered (e.g. the release's full name).")
    container: str | None = Field(None, description="Container name; defaults to ``name``.")
    resources: str | None = Field(
        None, description="Path of a ``resources`` block (``requests``/``limits`` below it)."
    )
    replicas: str | None = Field(None, description="Path of the replica count.")
    hpa_min_replicas: str | None = Field(None, description="Path of the HPA's minReplicas.")
    hpa_max_replicas: str | None = Field(None, description="Path of the HPA's maxReplicas.")
    hpa_target_cpu_percent: str | None = Field(
        None, description="Path of the HPA's CPU target utilisation, percent."
    )
    hpa_target_memory_percent: str | None = Field(
        None, description="Path of the HPA's memory target utilisation, percent."
    )
    hpa_enabled: str | None = Field(
        None, description="Path of a boolean that turns the HPA on (absent: on when max is set)."
    )
    fields: dict[str, str] = Field(
        default_factory=dict,
        description="Any other field -> path, e.g. ``{requests.cpu: web.cpu}``; wins over the above.",
    )


class HelmChartConfig(ConfigModel):
    """The values layout of one chart, HelmRelease or Argo CD Application."""

    chart: str | None = Field(
        None, description="Chart directory (repository-relative) this mapping applies to."
    )
    release: str | None = Field(
        None, description="Name of a Flux HelmRelease or Argo CD Application this applies to."
    )
    namespace: str | None = Field(None, description="Namespace the chart is installed into.")
    workloads: tuple[HelmWorkloadMapping, ...] = Field(
        (), description="Workloads and their values paths; empty = ``helm create`` conventions."
    )
