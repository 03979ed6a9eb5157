"""One inventory environment's effective settings: the opt-in file's ``environments:`` entry of
that name, if any, else the defaults (no extra Prometheus matchers, no namespace, the
repository's ``update_mode``, no node bound).

``max_allocatable``: the largest request the environment's nodes can hold, per resource, in cores
and bytes: the entry's ``max_allocatable`` where it sets a resource, else the largest of its
``nodes`` (bot rule ``node.max_allocatable``); a quantity that does not parse is a
``ConfigError`` at its line."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from bot.config.errors import ConfigError, ConfigProblem
from bot.config.manifests import NodeSize
from bot.config.repo import ConfigSource, RepoConfig
from bot.manifests.quantities import bytes_from_quantity, cores_from_quantity
from bot.model import KubernetesVersion, ResourceValues
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
    max_allocatable: Resolved[ResourceValues]
    """The largest request its nodes can hold (module doc); ``ResourceValues()``: no bound."""
    kubernetes_version: Resolved[KubernetesVersion | None]
    """Its cluster's (major, minor) Kubernetes version; None: unknown
    (``bot.recommend.kubernetes``)."""


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
            Resolved(ResourceValues(), Origin.default("environments.max_allocatable")),
            Resolved(None, Origin.default("environments.kubernetes_version")),
        )
    index, env = found

    def origin(key: str) -> Origin:
        if key not in env.model_fields_set:
            return Origin.default(f"environments.{key}")
        loc = ("environments", index, key)
        return Origin(source.file, source.line(loc), ".".join(map(str, loc)))

    def located(key: tuple[int | str, ...]) -> Origin:
        loc = ("environments", index, *key)
        return Origin(source.file, source.line(loc), ".".join(map(str, loc)))

    def largest(resource: str) -> tuple[float | int | None, Origin]:
        """The entry's ``max_allocatable`` of ``resource``, else the largest node's."""
        if env.max_allocatable is not None and getattr(env.max_allocatable, resource) is not None:
            return _parsed(env.max_allocatable, resource, located(("max_allocatable", resource)))
        found: tuple[float | int | None, Origin] = (None, origin("nodes"))
        for i, node in enumerate(env.nodes):
            value, where = _parsed(node, resource, located(("nodes", i, resource)))
            if value is not None and (found[0] is None or value > found[0]):
                found = (value, where)
        return found

    cpu, cpu_origin = largest("cpu")
    memory, memory_origin = largest("memory")
    bound_origin = memory_origin if memory is not None and cpu is None else cpu_origin
    return EnvironmentSettings(
        name,
        Resolved(dict(env.selector), origin("selector")),
        Resolved(env.namespace, origin("namespace")),
        Resolved(env.update_mode, origin("update_mode")),
        Resolved(
            ResourceValues(
                float(cpu) if cpu is not None else None, int(memory) if memory else None
            ),
            bound_origin,
        ),
        Resolved(_version(env.kubernetes_version), origin("kubernetes_version")),
    )


def _version(text: str | None) -> KubernetesVersion | None:
    """``1.30`` or ``1.30.2`` (as the opt-in file's check leaves it) as ``(1, 30)``."""
    if text is None:
        return None
    major, minor = text.split(".")[:2]
    return int(major), int(minor)


def _parsed(node: NodeSize, resource: str, where: Origin) -> tuple[float | int | None, Origin]:
    """One quantity of ``node`` in cores or bytes (None: unset), with where it is written."""
    value = getattr(node, resource)
    if value is None:
        return None, where
    try:
        return (
            cores_from_quantity(value) if resource == "cpu" else bytes_from_quantity(value)
        ), where
    except ValueError as exc:
        raise ConfigError([ConfigProblem(where.file, where.line, where.key, str(exc))]) from exc
