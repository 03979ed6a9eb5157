"""One workload's effective settings, resolved once, each value with the file and line it came
from (``default`` when nobody set it).

A repository's opt-in file (``.tortoise-bot.yaml``) refines the bot's settings per workload:
the ``workloads:`` entries whose ``match`` (and ``environment``) fit the workload apply in file
order, later entries winning. For one workload ``RepositoryRules.for_workload`` gives:

- ``skip``: why the bot leaves it alone: an entry says ``ignore``, or a live Tortoise object in
  the repository manages it (the two would fight); nothing else is resolved then;
- ``recommend``: admin defaults <- the repository's ``recommend:`` <- each entry's
  ``recommend:`` (``bot.config.recommend.resolve``);
- ``containers``: per container (init containers left out), the policy per resource and
  ``min_allocated`` / ``max_allocated`` in cores and bytes, complete: a resource without a
  request is ``off``; else an entry's ``policy`` for every container, then its
  ``containers.<name>``, else the engine's default (``recommend.inputs.default_policy``: from
  the HPA); bounds per container name, else ``*`` (later entries win per resource), else a
  declared VPA's ``minAllowed`` / ``maxAllowed`` for the container (or ``*``), else none;
- ``emergency``: an entry asks for emergency mode;
- ``update_mode``: its environment's (``environments[].update_mode``; None: unset);
- each container's ``max_allocatable``: its environment's largest node (``environments[].nodes``
  or ``max_allocatable``, ``bot.settings.environment``; ``ResourceValues()``: no bound);
- ``origins``: for each of these values, where (``Origin``: file, 1-based line, key; a VPA bound
  at its manifest line; ``default`` when nobody set it).

A quantity that does not parse is a ``ConfigError`` at its own file, line and key.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
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
    DeclaredContainer,
    DeclaredWorkload,
    Policy,
    Resource,
    ResourceValues,
    WorkloadRef,
)
from bot.recommend.inputs import default_policy
from bot.settings.environment import UpdateMode, environment_settings
from bot.settings.origin import Origin

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
class WorkloadSettings:
    """What the repository's settings make of one workload (see the module doc)."""

    ref: WorkloadRef
    rules: tuple[int, ...]
    """The indexes of the ``workloads:`` entries that apply, in file order."""
    recommend: RecommendSettings
    skip: str | None = None
    emergency: bool = False
    containers: Mapping[str, ContainerSettings] = field(default_factory=dict)
    """Per container that is not an init container, its policy for every resource and its
    allocation bounds (``ResourceValues()``: none)."""
    update_mode: UpdateMode | None = None
    origins: Mapping[str, Origin] = field(default_factory=dict)
    """Per value (``ignore``, ``emergency``, ``update_mode``, ``policy.<container>.<resource>``,
    ``min_allocated.<container>.<resource>``, ``max_allocated...``, ``recommend.<key...>``),
    where it was set; a policy or bound nobody set has a ``default`` origin, ``recommend`` keys
    only where the file sets them."""


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
        environment = environment_settings(self.config, self.source, ref.environment)
        origins["update_mode"] = environment.update_mode.origin
        names = [c.name for c in declared.containers if not c.init]
        policies = self._policies(rules, names, origins)
        low = self._bounds(rules, "min_allocated", names, origins)
        high = self._bounds(rules, "max_allocated", names, origins)
        allocatable = environment.max_allocatable
        if allocatable.value != ResourceValues():
            origins["max_allocatable"] = allocatable.origin
        containers = {
            name: replace(settings, max_allocatable=allocatable.value)
            for name, settings in effective_containers(
                declared,
                policies,
                low,
                high,
                origins,
                add_missing=self.config.requests.add_missing,
            ).items()
        }
        return WorkloadSettings(
            ref,
            indexes,
            self._recommend(rules, origins),
            emergency=bool(emergency),
            containers=containers,
            update_mode=environment.update_mode.value,
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
        for env in self.config.environments:
            collect(partial(environment_settings, self.config, self.source, env.name))
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


def effective_containers(
    declared: DeclaredWorkload,
    policies: Mapping[str, Mapping[Resource, Policy]] | None = None,
    low: Mapping[str, ResourceValues] | None = None,
    high: Mapping[str, ResourceValues] | None = None,
    origins: dict[str, Origin] | None = None,
    *,
    add_missing: bool = True,
) -> dict[str, ContainerSettings]:
    """Per container of ``declared`` that is not an init container, its complete settings from
    what the opt-in file sets (``policies``, bounds ``low`` and ``high`` per container name; the
    ``origins`` of those values) and, where it sets nothing, the defaults (see the module doc);
    the origin of each default is added to ``origins``. ``add_missing``
    (``requests.add_missing``): a resource without a request is sized vertically (a request is
    proposed), else its policy is ``off``."""
    where = origins if origins is not None else {}
    vpa = {p.container: p for p in (declared.vpa.container_policies if declared.vpa else ())}
    out: dict[str, ContainerSettings] = {}
    for container in declared.containers:
        if container.init:
            continue
        name = container.name
        chosen: dict[Resource, Policy] = {}
        for resource in RESOURCES:
            chosen[resource] = _policy(
                declared, container, resource, policies or {}, where, add_missing=add_missing
            )
        declared_vpa = vpa.get(name) or vpa.get(ANY_CONTAINER)
        bounds: list[ResourceValues] = []
        pairs: tuple[tuple[Bound, ResourceValues | None], ...] = (
            ("min_allocated", (low or {}).get(name)),
            ("max_allocated", (high or {}).get(name)),
        )
        for which, configured in pairs:
            if configured is not None:  # the file's bound, whole: no resource from the VPA
                bounds.append(configured)
                continue
            if declared_vpa is not None:
                allowed = (
                    declared_vpa.min_allowed
                    if which == "min_allocated"
                    else declared_vpa.max_allowed
                )
                bounds.append(allowed)
                _vpa_origins(declared, declared_vpa.container, name, which, where)
            else:
                bounds.append(ResourceValues())
                for resource in RESOURCES:
                    key = f"{which}.{name}.{resource}"
                    where.setdefault(key, Origin.default(key))
        out[name] = ContainerSettings(chosen, bounds[0], bounds[1])
    return out


def _policy(
    declared: DeclaredWorkload,
    container: DeclaredContainer,
    resource: Resource,
    policies: Mapping[str, Mapping[Resource, Policy]],
    origins: dict[str, Origin],
    *,
    add_missing: bool,
) -> Policy:
    """One container resource's policy: without a request ``vertical`` when ``add_missing``
    (the file's ``off`` still wins) else ``off``; with one the file's, else the engine's default
    from the HPA."""
    key = f"policy.{container.name}.{resource}"
    request = container.requests.get(resource)
    if not request:
        if add_missing and policies.get(container.name, {}).get(resource) != "off":
            origins[key] = Origin.default(key)
            return "vertical"
        origins[key] = Origin.default(key)
        return "off"
    configured = policies.get(container.name, {}).get(resource)
    if configured:
        return configured
    origins[key] = Origin.default(key)
    return default_policy(container.name, resource, request, declared.hpa)


def _vpa_origins(
    declared: DeclaredWorkload,
    vpa_container: str,
    name: str,
    which: Bound,
    origins: dict[str, Origin],
) -> None:
    """The origin of a bound taken from a declared VPA: its manifest line when known."""
    group = "minAllowed" if which == "min_allocated" else "maxAllowed"
    locations = declared.vpa.locations if declared.vpa is not None else {}
    for resource in RESOURCES:
        location = locations.get(f"{vpa_container}.{group}.{resource}")
        key = f"{which}.{name}.{resource}"
        if location is None:
            origins[key] = Origin.default(key)
        else:
            origins[key] = Origin(
                location.file, location.line, ".".join(map(str, location.yaml_path))
            )
