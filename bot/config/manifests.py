"""Where the manifests are and how they map to Prometheus: the ``paths`` and ``environments`` keys."""

from __future__ import annotations

from pydantic import Field

from bot.config.base import ConfigModel


class PathsConfig(ConfigModel):
    """Which files discovery reads (globs relative to the repository root)."""

    include: tuple[str, ...] = Field(("**/*.yaml", "**/*.yml"), description="Globs to read.")
    exclude: tuple[str, ...] = Field((), description="Globs to skip (applied after include).")


class EnvironmentConfig(ConfigModel):
    """One environment: a Kustomize overlay directory or a Helm values file, and its selector."""

    name: str = Field(description="Environment name, e.g. ``overlays/prod`` or ``prod``.")
    path: str | None = Field(
        None, description="Overlay directory or values file; defaults to ``name``."
    )
    selector: dict[str, str] = Field(
        default_factory=dict,
        description='Extra Prometheus label matchers, e.g. ``{cluster: "prod"}``.',
    )
    namespace: str | None = Field(
        None, description="Namespace to assume when the manifests do not set one."
    )
