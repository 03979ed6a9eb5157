"""The repository opt-in file: ``.tortoise-bot.yaml`` (or ``.github/tortoise-bot.yaml``).

Its presence at the repository root opts the repository in. Every key, default and bound is
declared here (and in the section modules it composes); ``config/repo.schema.json`` is
generated from these models.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from bot.config.base import ConfigModel
from bot.config.errors import ConfigError, ConfigProblem
from bot.config.forge import PullRequestConfig
from bot.config.load import KeyLines, load_model
from bot.config.manifests import EnvironmentConfig, GitOpsConfig, HelmChartConfig, PathsConfig
from bot.model import Policy

REPO_CONFIG_FILES = (".tortoise-bot.yaml", ".github/tortoise-bot.yaml")
"""Opt-in file locations, first match wins."""


class ResourcePolicy(ConfigModel):
    """Scaling policy of one container's resources (Tortoise's ``autoscalingPolicy``)."""

    cpu: Policy | None = Field(None, description="horizontal | vertical | off")
    memory: Policy | None = Field(None, description="horizontal | vertical | off")


Quantity = str | int | float
"""A Kubernetes quantity as written (``250m``, ``1.5``, ``512Mi``); parsed, with its line, by
``bot.settings``."""


class ResourceBounds(ConfigModel):
    """CPU and memory bounds of one container, as Kubernetes quantities."""

    cpu: Quantity | None = Field(None, description="CPU, e.g. ``100m`` or ``2``.")
    memory: Quantity | None = Field(None, description="Memory, e.g. ``128Mi``.")


class WorkloadConfig(ConfigModel):
    """Settings for the workloads matching ``match`` (``kind/namespace/name``, globs allowed)."""

    match: str = Field(
        description="``Kind/namespace/name``, ``namespace/name`` or ``name``; globs."
    )
    environment: str | None = Field(None, description="Only in this environment (glob).")
    ignore: bool = Field(False, description="Never propose anything for these workloads.")
    emergency: bool = Field(False, description="Emergency mode: minReplicas = maxReplicas.")
    policy: ResourcePolicy | None = Field(None, description="Policy for every container.")
    containers: dict[str, ResourcePolicy] = Field(
        default_factory=dict, description="Policy per container name."
    )
    min_allocated: dict[str, ResourceBounds] = Field(
        default_factory=dict,
        description="Per container name (or ``*``): requests never go below (Tortoise's "
        "``minAllocatedResources``).",
    )
    max_allocated: dict[str, ResourceBounds] = Field(
        default_factory=dict,
        description="Per container name (or ``*``): requests never go above (Tortoise's "
        "``maxAllocatedResources``).",
    )
    recommend: dict[str, Any] = Field(
        default_factory=dict, description="Overrides of ``recommend`` keys for these workloads."
    )


class ContainersConfig(ConfigModel):
    """Which of a pod template's containers are sized."""

    init: Literal["skip", "propose"] = Field(
        "skip",
        description="Ordinary init containers (``initContainers`` without ``restartPolicy: "
        "Always``): ``skip`` lists them as ``skipped: init container`` and never edits them; "
        "``propose`` sizes and edits them like containers. Native sidecars are always sized.",
    )


class RequestsConfig(ConfigModel):
    """What the bot does with a container that declares no CPU or memory request."""

    add_missing: bool = Field(
        True,
        description="Propose a CPU and a memory request (the VPA target, within the bounds) for "
        "a container that has none, adding the ``resources.requests`` key; limits are never "
        "added. ``false``: such a container is listed as ``skipped: no request``.",
    )


class RepoConfig(ConfigModel):
    """The whole opt-in file."""

    SCHEMA_FILE = "repo.schema.json"

    update_mode: Literal["off", "auto"] = Field(
        "auto", description="``off``: dashboard only; ``auto``: open pull requests."
    )
    paths: PathsConfig = PathsConfig()
    environments: tuple[EnvironmentConfig, ...] = Field(
        (), description="Overlays / values files and their Prometheus selectors."
    )
    gitops: GitOpsConfig = GitOpsConfig()
    helm: tuple[HelmChartConfig, ...] = Field(
        (), description="Helm values layouts that ``helm create`` conventions do not cover."
    )
    workloads: tuple[WorkloadConfig, ...] = Field(
        (), description="Per-workload settings; later entries win."
    )
    containers: ContainersConfig = ContainersConfig()
    requests: RequestsConfig = RequestsConfig()
    recommend: dict[str, Any] = Field(
        default_factory=dict, description="Overrides of the admin ``recommend`` settings."
    )
    pull_requests: PullRequestConfig = PullRequestConfig()
    dashboard: bool = Field(True, description="Keep a dashboard issue in this repository.")


def find_repo_config(root: Path) -> Path | None:
    """The opt-in file of the checkout at ``root``, or None when the repository has not opted in."""
    for name in REPO_CONFIG_FILES:
        candidate = root / name
        if candidate.is_symlink() or candidate.is_file():
            return candidate
    return None


def _inside(root: Path, path: Path) -> bool:
    """Whether ``path``, symlinks followed, is a file of the repository at ``root``."""
    return path.resolve().is_relative_to(root.resolve())


def load_repo_config(root: Path) -> RepoConfig:
    """The repository's config; defaults when it has no opt-in file. Raises ``ConfigError``,
    also for an opt-in file that is a symlink leading outside the repository (never read)."""
    path = find_repo_config(root)
    if path is None:
        return RepoConfig()
    name = path.relative_to(root).as_posix()
    if not _inside(root, path):
        raise ConfigError(
            [ConfigProblem(name, 0, "", "symlink leads outside the repository; it is not read")]
        )
    return load_model(path, RepoConfig, display_name=name)


def repo_config_line(root: Path, loc: Sequence[int | str]) -> tuple[str, int]:
    """(opt-in file as shown to users, 1-based line of the key at ``loc``; 0 when unknown)."""
    source = repo_config_source(root)
    return source.file, source.line(loc)


class ConfigSource:
    """Where a repository's settings come from: its opt-in file as shown to users and the line
    of each of its keys, read once (``line(loc)``: 0 when unknown)."""

    def __init__(self, file: str, lines: KeyLines | None = None) -> None:
        self.file = file
        self._lines = lines

    def line(self, loc: Sequence[int | str]) -> int:
        return self._lines.line(loc) if self._lines is not None else 0


def repo_config_source(root: Path) -> ConfigSource:
    """The opt-in file of the checkout at ``root`` and its keys' lines (``ConfigSource``); the
    first file name and no lines when it has none or it cannot be read."""
    path = find_repo_config(root)
    if path is None:
        return ConfigSource(REPO_CONFIG_FILES[0])
    name = path.relative_to(root).as_posix()
    if not _inside(root, path):
        return ConfigSource(name)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError):
        return ConfigSource(name)
    return ConfigSource(name, KeyLines(text))
