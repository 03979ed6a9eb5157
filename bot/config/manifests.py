"""Where the manifests are and how they map to Prometheus: the ``paths``, ``environments`` and
``helm`` keys of the opt-in file (see ``docs/manifests.md``)."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import AfterValidator, BeforeValidator, Field, model_validator

from bot.config.base import ConfigModel
from bot.config.metrics import LabelName
from bot.model import FieldId, WorkloadKind

MAX_GLOBS = 64
"""Globs one ``paths.include`` or ``paths.exclude`` list may hold."""

MAX_GLOB_CHARS = 256
"""Characters one glob may hold."""


def _inside(value: str) -> str:
    """``value`` as a repository-relative path (``./`` dropped); absolute paths and ``..``
    segments are refused: the bot reads nothing outside the repository."""
    if value.startswith("/"):
        raise ValueError(
            f"{value!r} is an absolute path; paths are relative to the repository root"
        )
    parts = value.split("/")
    if ".." in parts:
        raise ValueError(f"{value!r} leads outside the repository (..)")
    while parts and parts[0] == "." and len(parts) > 1:
        parts.pop(0)
    return "/".join(parts)


def _field_paths(value: dict[str, str]) -> dict[str, str]:
    """``helm.workloads[].fields``: each key names a field the bot writes (``FieldId``)."""
    known = {f.text for f in FieldId}
    unknown = sorted(set(value) - known)
    if unknown:
        raise ValueError(
            f"unknown field {', '.join(map(repr, unknown))}; fields: {', '.join(sorted(known))}"
        )
    return value


def _glob(value: str) -> str:
    if len(value) > MAX_GLOB_CHARS:
        raise ValueError(f"glob longer than {MAX_GLOB_CHARS} characters")
    return _inside(value)


RepoGlob = Annotated[str, AfterValidator(_glob)]
"""A glob relative to the repository root (``bot.manifests.globs``), at most ``MAX_GLOB_CHARS``."""

RepoPath = Annotated[str, AfterValidator(_inside)]
"""A path relative to the repository root, never leading outside it."""


def _version(value: object) -> str:
    if not isinstance(value, str):
        raise ValueError(f"write the version quoted, e.g. '1.30' ({value!r} is read as a number)")
    text = value.strip()
    if not re.fullmatch(r"v?1\.\d{1,3}(\.\d{1,4})?", text):
        raise ValueError(f"{text!r} is not a Kubernetes version such as '1.30' or 'v1.30.2'")
    return text.removeprefix("v")


KubernetesVersion = Annotated[str, BeforeValidator(_version)]
"""``1.30``, ``v1.30`` or ``1.30.2`` (stored without the ``v``; write it quoted in YAML:
``1.30`` unquoted is the number 1.3)."""


class PathsConfig(ConfigModel):
    """Which files discovery reads (globs relative to the repository root)."""

    include: tuple[RepoGlob, ...] = Field(
        ("**/*.yaml", "**/*.yml"),
        max_length=MAX_GLOBS,
        description="Globs to read: ``**`` as a whole segment crosses directories, ``*`` and "
        "``?`` stay within one name.",
    )
    exclude: tuple[RepoGlob, ...] = Field(
        (), max_length=MAX_GLOBS, description="Globs to skip (applied after include)."
    )
    max_file_bytes: int = Field(
        1024 * 1024, ge=1, description="Larger files are reported and skipped, bytes."
    )


class NodeSize(ConfigModel):
    """A node's allocatable CPU and memory (``kubectl get node -o jsonpath='{.status.allocatable}'``),
    as Kubernetes quantities."""

    cpu: str | int | float | None = Field(None, description="CPU, e.g. ``7910m`` or ``8``.")
    memory: str | int | float | None = Field(None, description="Memory, e.g. ``29Gi``.")


class EnvironmentConfig(ConfigModel):
    """One environment: a Kustomize overlay directory, a Helm values file or a plain directory of
    YAML (``name: default`` without ``path``: the raw YAML), and its selector."""

    name: str = Field(description="Environment name, e.g. ``overlays/prod`` or ``prod``.")
    path: RepoPath | None = Field(
        None,
        description="Overlay directory, chart values file or plain directory of YAML; defaults "
        "to ``name``.",
    )
    selector: dict[LabelName, str] = Field(
        default_factory=dict,
        description='Extra Prometheus label matchers, e.g. ``{cluster: "prod"}``.',
    )
    namespace: str | None = Field(
        None,
        description="Namespace of the environment's objects that declare none (as "
        "``kubectl apply -n``).",
    )
    update_mode: Literal["off", "auto"] | None = Field(
        None,
        description="``off``: this environment's workloads are read and shown, never edited "
        "(its renders still keep shared files from changing); ``auto`` or unset: as the "
        "repository's ``update_mode``.",
    )
    nodes: tuple[NodeSize, ...] = Field(
        (),
        description="The sizes of the environment's nodes (their allocatable): no request is "
        "proposed above the largest one's CPU or memory (bot rule node.max_allocatable); "
        "empty: no bound.",
    )
    max_allocatable: NodeSize | None = Field(
        None,
        description="The largest request the environment's nodes can hold, per resource; "
        "unset: the largest of ``nodes``.",
    )
    kubernetes_version: KubernetesVersion | None = Field(
        None,
        description="The Kubernetes version of the environment's cluster, quoted (``'1.30'``): "
        "only what it serves is proposed. Per-container ``ContainerResource`` HPA metrics need "
        "1.27 or later (below, the pod-level ``Resource`` target is tuned instead, unless the "
        "HPA already uses ``ContainerResource``); an HPA's declared ``behavior`` ``tolerance`` "
        "is replayed from 1.33 on (below, the controller's 0.1). Unset: unknown, as for a "
        "current cluster.",
    )
    propose: bool | None = Field(
        None,
        description="``true``: propose changes for this environment even when no GitOps "
        "object deploys it or another environment reads the same pods; ``false``: never "
        "(listed only); unset: as ``gitops`` decides.",
    )

    @model_validator(mode="after")
    def _name_inside(self) -> EnvironmentConfig:
        if self.path is None:
            _inside(self.name)  # the name is the path
        return self


class GitOpsConfig(ConfigModel):
    """How the repository's Argo CD and Flux objects decide the environments (``docs/manifests.md``)."""

    read: bool = Field(
        True,
        description="Read Argo CD ``Application``/``ApplicationSet`` and Flux "
        "``Kustomization``/``HelmRelease`` objects to learn which overlays and values files are "
        "deployed, to which cluster and namespace.",
    )
    undeployed: bool = Field(
        False,
        description="Also propose changes for environments no GitOps object of this repository "
        "deploys (they are listed either way); only matters when the repository has such "
        "objects.",
    )
    repository_urls: tuple[str, ...] = Field(
        (),
        max_length=16,
        description="This repository's URLs as the GitOps objects write them (``repoURL``, a "
        "``GitRepository`` ``url``), besides the checkout's git remotes.",
    )


class HelmWorkloadMapping(ConfigModel):
    """Which Helm values set one workload's fields (dotted values paths, e.g. ``web.resources``)."""

    kind: WorkloadKind = Field(
        "Deployment",
        description="Workload kind: ``Deployment``, ``StatefulSet``, ``Rollout`` (Argo Rollouts) "
        "``DaemonSet``, ``CronJob`` or ``Job`` (the last three: no replicas, no HPA).",
    )
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
    keda: str | None = Field(
        None,
        description="Path of a KEDA ScaledObject block (``enabled``, ``minReplicaCount``, "
        "``maxReplicaCount``, ``triggers``, ``advanced``) that scales this workload.",
    )
    fields: Annotated[dict[str, str], AfterValidator(_field_paths)] = Field(
        default_factory=dict,
        description="Any other field -> path, e.g. ``{requests.cpu: web.cpu}``; wins over the above.",
    )

    @model_validator(mode="after")
    def _daemonset_vertical(self) -> HelmWorkloadMapping:
        if self.kind in ("DaemonSet", "CronJob", "Job"):
            named = [k for k, v in self._replica_paths().items() if v]
            if named:
                runs = "one pod per node" if self.kind == "DaemonSet" else "pods to completion"
                raise ValueError(
                    f"workload {self.name!r}: a {self.kind} runs {runs} and has no "
                    f"replicas or HPA; remove {', '.join(named)}"
                )
        return self

    def _replica_paths(self) -> dict[str, str | None]:
        fields = {k: v for k, v in self.fields.items() if k == "replicas" or k.startswith("hpa.")}
        return {
            "replicas": self.replicas,
            "hpa_min_replicas": self.hpa_min_replicas,
            "hpa_max_replicas": self.hpa_max_replicas,
            "hpa_target_cpu_percent": self.hpa_target_cpu_percent,
            "hpa_target_memory_percent": self.hpa_target_memory_percent,
            "hpa_enabled": self.hpa_enabled,
            "keda": self.keda,
            **{f"fields.{k}": v for k, v in fields.items()},
        }


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
