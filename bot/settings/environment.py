"""One inventory environment's effective settings: the opt-in file's ``environments:`` entry of
that name, if any, else the defaults (no extra Prometheus matchers, no namespace, the
repository's ``update_mode``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from bot.config.repo import ConfigSource, RepoConfig
from bot.settings.origin import Origin, Resolved

UpdateMode = Literal["off", "auto"]


@dataclass(frozen=True, slots=True)
class EnvironmentSettings:
    """What the opt-in file says of one environment, each value with its origin."""

    name: str
    selector: Resolved[Mapping[str, str]]
    """Extra Prometheus label matchers of its workloads' history (``{}``: none)."""
    namespace: Resolved[str | None]
    """Namespace of its objects that declare none (None: none)."""
    update_mode: Resolved[UpdateMode | None]
    """``off``: its workloads are shown, never edited; None: as the repository's."""


def environment_settings(
    config: RepoConfig, source: ConfigSource, name: str
) -> EnvironmentSettings:
    """The effective settings of the inventory environment ``name`` (see the module doc)."""
    found = next(((i, e) for i, e in enumerate(config.environments) if e.name == name), None)
    if found is None:
        return EnvironmentSettings(
            name,
            Resolved({}, Origin.default("environments.selector")),
            Resolved(None, Origin.default("environments.namespace")),
            Resolved(None, Origin.default("environments.update_mode")),
        )
    index, env = found

    def origin(key: str) -> Origin:
        if key not in env.model_fields_set:
            return Origin.default(f"environments.{key}")
        loc = ("environments", index, key)
        return Origin(source.file, source.line(loc), ".".join(map(str, loc)))

    return EnvironmentSettings(
        name,
        Resolved(dict(env.selector), origin("selector")),
        Resolved(env.namespace, origin("namespace")),
        Resolved(env.update_mode, origin("update_mode")),
    )
