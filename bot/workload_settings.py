"""One workload's effective settings, resolved once, each value with the file and line it came
from.

A repository's opt-in file (``.tortoise-bot.yaml``) refines the bot's settings per workload:
the ``workloads:`` entries whose ``match`` (and ``environment``) fit the workload apply in file
order, later entries winning. For one workload ``RepositoryRules.for_workload`` gives:

- ``skip``: why the bot leaves it alone: an entry says ``ignore``, or a live Tortoise object in
  the repository manages it (the two would fight); nothing else is resolved then;
- ``recommend``: admin defaults <- the repository's ``recommend:`` <- each entry's
  ``recommend:`` (``bot.config.recommend.resolve``);
- ``containers``: per container, the policy per resource (an entry's ``policy`` for every
  container, then its ``containers.<name>``) and ``min_allocated`` / ``max_allocated`` in cores
  and bytes (per container name, else ``*``; later entries win per resource);
- ``emergency``: an entry asks for emergency mode;
- ``origins``: for each value set by the file, where (``Origin``: file, 1-based line, key).

A quantity that does not parse is a ``ConfigError`` at its own file, line and key.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import ValidationError

from bot.config.errors import ConfigError, ConfigProblem
from bot.config.load import validation_problems
from bot.config.recommend import RecommendSettings, resolve
from bot.config.repo import ConfigSource, RepoConfig, WorkloadConfig, repo_config_source
from bot.manifests.quantities import bytes_from_quantity, cores_from_quantity
from bot.model import (
    ANY_CONTAINER,
    RESOURCES,
    ContainerSettings,
    DeclaredWorkload,
    Policy,
    Resource,
    ResourceValues,
    WorkloadRef,
)

N = TypeVar("N", int, float)

Bound = Literal["min_allocated", "max_allocated"]

Layer = tuple[tuple[int | str, ...], Mapping[str, Any]]
"""A ``recommend:`` mapping of the opt-in file and where it sits (``("workloads", 2,
"recommend")``)."""

IGNORED = "ignored by the repository config"
MANAGED_BY_TORTOISE = (
    "a Tortoise object in the repository manages this workload; the two would fight"
)


@dataclass(frozen=True, slots=True)
class Origin:
    """Where a value was set: the opt-in file as shown to users, its 1-based line (0: unknown)
    and the dotted key (``workloads.2.min_allocated.app.cpu``)."""

    file: str
    line: int
    key: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.key}" if self.line else f"{self.file}: {self.key}"


@dataclass(frozen=True, slots=True)
class WorkloadSettings:
    """What the repository's settings make of one workload (see the module doc)."""

    ref: WorkloadRef
    rules: tuple[int, ...]
    """The indexes of the ``workloads:`` entries that apply, in file order."""
    recommend: RecommendSettings
    skip: str | None = None
    emergency: bool = False
    containers: Mapping[str, ContainerSettings] = field(default_factory=dict)
    origins: Mapping[str, Origin] = field(default_factory=dict)
    """Per value (``ignore``, ``emergency``, ``policy.<container>.<resource>``,
    ``min_allocated.<container>.<resource>``, ``max_allocated...``, ``recommend.<key...>``),
    where the file sets it."""


def matches(rule: WorkloadConfig, ref: WorkloadRef) -> bool:
    """Whether a ``workloads:`` entry applies to ``ref``: ``match`` is ``name``,
    ``namespace/name`` or ``Kind/namespace/name`` (globs), ``environment`` a glob."""
    parts = rule.match.split("/")
    names = {
        1: (ref.name,),
        2: (ref.namespace, ref.name),
        3: (ref.kind, ref.namespace, ref.name),
    }.get(len(parts))
    if names is None:
        return False
    if not all(fnmatch.fnmatchcase(n, p) for n, p in zip(names, parts, strict=True)):
        return False
    return rule.environment is None or fnmatch.fnmatchcase(ref.environment, rule.environment)


def _leaves(mapping: Mapping[str, Any], path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """The key paths of the values of a nested mapping (a list is one value)."""
    for key, value in mapping.items():
        if isinstance(value, Mapping) and value:
            yield from _leaves(value, (*path, key))
        else:
            yield (*path, key)


class RepositoryRules:
    """A repository's settings, read once: its opt-in file's model, where each key is written
    (``ConfigSource``) and the bot's recommend settings they refine."""

    def __init__(
        self, config: RepoConfig, base: RecommendSettings, source: ConfigSource | None = None
    ) -> None:
        self.config = config
        self.base = base
        self.source = source if source is not None else ConfigSource(".tortoise-bot.yaml")

    @classmethod
    def of_checkout(
        cls, root: Path, config: RepoConfig, base: RecommendSettings
    ) -> RepositoryRules:
        """The rules of the checkout at ``root``, whose opt-in file ``config`` was read from."""
        return cls(config, base, repo_config_source(root))

    def origin(self, *loc: int | str) -> Origin:
        return Origin(self.source.file, self.source.line(loc), ".".join(map(str, loc)))

    def rules(self, ref: WorkloadRef) -> tuple[int, ...]:
        """The indexes of the ``workloads:`` entries that apply to ``ref``, in file order."""
        return tuple(i for i, rule in enumerate(self.config.workloads) if matches(rule, ref))

    def for_workload(self, declared: DeclaredWorkload) -> WorkloadSettings:
        """The effective settings of ``declared`` (see the module doc); raises ``ConfigError``
        for a quantity that does not parse."""
        ref = declared.ref
        indexes = self.rules(ref)
        rules = [(i, self.config.workloads[i]) for i in indexes]
        origins: dict[str, Origin] = {}
        ignored = [i for i, rule in rules if rule.ignore]
        if ignored:
            origins["ignore"] = self.origin("workloads", ignored[-1], "ignore")
            return WorkloadSettings(ref, indexes, self.base, IGNORED, origins=origins)
        if declared.managed_by_tortoise:
            return WorkloadSettings(ref, indexes, self.base, MANAGED_BY_TORTOISE)
        emergency = [i for i, rule in rules if rule.emergency]
        if emergency:
            origins["emergency"] = self.origin("workloads", emergency[-1], "emergency")
        names = [c.name for c in declared.containers if not c.init]
        policies = self._policies(rules, names, origins)
        low = self._bounds(rules, "min_allocated", names, origins)
        high = self._bounds(rules, "max_allocated", names, origins)
        return WorkloadSettings(
            ref,
            indexes,
            self._recommend(rules, origins),
            emergency=bool(emergency),
            containers={
                name: ContainerSettings(policies[name], low.get(name), high.get(name))
                for name in names
            },
            origins=origins,
        )

    def _recommend(
        self, rules: Sequence[tuple[int, WorkloadConfig]], origins: dict[str, Origin]
    ) -> RecommendSettings:
        """Admin defaults <- repository ``recommend:`` <- each entry's ``recommend:``."""
        layers: list[Layer] = [
            (("recommend",), self.config.recommend),
            *((("workloads", i, "recommend"), rule.recommend) for i, rule in rules),
        ]
        for loc, override in layers:
            for path in _leaves(override):
                origins[".".join(("recommend", *path))] = self.origin(*loc, *path)
        return self._resolve(layers)

    def _resolve(self, layers: Sequence[Layer]) -> RecommendSettings:
        """``resolve`` of the layers; a value the settings refuse is a ``ConfigError`` at the
        line of the layer that sets it (each layer checked over the admin defaults alone; a
        refusal only the layers together cause is put on the last one)."""
        try:
            return resolve(self.base, *(override for _, override in layers))
        except ValidationError as together:
            problems: list[ConfigProblem] = []
            for loc, override in layers:
                try:
                    resolve(self.base, override)
                except ValidationError as exc:
                    problems += self._problems(exc, loc)
            raise ConfigError(problems or self._problems(together, layers[-1][0])) from together

    def _problems(self, exc: ValidationError, loc: tuple[int | str, ...]) -> list[ConfigProblem]:
        return validation_problems(exc, RecommendSettings, self.source.file, self.source.line, loc)

    def problems(self) -> list[ConfigProblem]:
        """Every problem of the file's settings, whichever workloads they meet: the
        ``recommend:`` overrides (the repository's, then over them each entry's) and every
        ``min_allocated`` / ``max_allocated`` quantity. ``for_workload`` finds these only for
        the entries a workload matches; a repository is checked whole before any workload."""
        found: list[ConfigProblem] = []

        def collect(check: Callable[[], object]) -> None:
            try:
                check()
            except ConfigError as exc:
                found.extend(p for p in exc.problems if p not in found)

        repository: Layer = (("recommend",), self.config.recommend)
        collect(partial(self._resolve, [repository]))
        for i, rule in enumerate(self.config.workloads):
            entry: Layer = (("workloads", i, "recommend"), rule.recommend)
            collect(partial(self._resolve, [repository, entry]))
            for which in ("min_allocated", "max_allocated"):
                for key, bounds in getattr(rule, which).items():
                    loc = ("workloads", i, which, key)
                    collect(partial(self._quantity, bounds.cpu, cores_from_quantity, (*loc, "cpu")))
                    collect(
                        partial(
                            self._quantity, bounds.memory, bytes_from_quantity, (*loc, "memory")
                        )
                    )
        return found

    def _policies(
        self,
        rules: Sequence[tuple[int, WorkloadConfig]],
        names: Sequence[str],
        origins: dict[str, Origin],
    ) -> dict[str, dict[Resource, Policy]]:
        """Per container and resource, the policy the entries set (absent: the default)."""
        out: dict[str, dict[Resource, Policy]] = {}
        for name in names:
            chosen: dict[Resource, Policy] = {}
            for i, rule in rules:
                for loc, policy in (
                    (("workloads", i, "policy"), rule.policy),
                    (("workloads", i, "containers", name), rule.containers.get(name)),
                ):
                    if policy is None:
                        continue
                    for resource in RESOURCES:
                        value = getattr(policy, resource)
                        if value is not None:
                            chosen[resource] = value
                            origins[f"policy.{name}.{resource}"] = self.origin(*loc, resource)
            out[name] = chosen
        return out

    def _bounds(
        self,
        rules: Sequence[tuple[int, WorkloadConfig]],
        which: Bound,
        names: Sequence[str],
        origins: dict[str, Origin],
    ) -> dict[str, ResourceValues]:
        """``min_allocated`` or ``max_allocated`` per container name (its own entry, else
        ``*``), in cores and bytes; later entries win per key and resource."""
        merged: dict[str, ResourceValues] = {}
        where: dict[tuple[str, Resource], Origin] = {}
        for i, rule in rules:
            for key, bounds in getattr(rule, which).items():
                old = merged.get(key, ResourceValues())
                loc = ("workloads", i, which, key)
                cpu = self._quantity(bounds.cpu, cores_from_quantity, (*loc, "cpu"))
                memory = self._quantity(bounds.memory, bytes_from_quantity, (*loc, "memory"))
                for resource, value in zip(RESOURCES, (cpu, memory), strict=True):
                    if value is not None:
                        where[key, resource] = self.origin(*loc, resource)
                merged[key] = ResourceValues(
                    cpu if cpu is not None else old.cpu_cores,
                    memory if memory is not None else old.memory_bytes,
                )
        out: dict[str, ResourceValues] = {}
        for name in names:
            key = name if name in merged else ANY_CONTAINER
            if key not in merged:
                continue
            out[name] = merged[key]
            for resource in RESOURCES:
                if (key, resource) in where:
                    origins[f"{which}.{name}.{resource}"] = where[key, resource]
        return out

    def _quantity(
        self,
        value: str | int | float | None,
        parse: Callable[[str | int | float], N],
        loc: tuple[int | str, ...],
    ) -> N | None:
        """``parse(value)``, None when unset; a bad quantity is a ``ConfigError`` at its line."""
        if value is None:
            return None
        try:
            return parse(value)
        except ValueError as exc:
            origin = self.origin(*loc)
            problem = ConfigProblem(origin.file, origin.line, origin.key, str(exc))
            raise ConfigError([problem]) from exc
