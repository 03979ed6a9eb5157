"""Discovery: a repository checkout -> ``Inventory`` (and the internal index the editor needs).

Environments, in order:

- every Kustomize overlay (``kustomize``): replayed for origins, rendered by ``kubectl kustomize``
  (once per overlay, overlays in parallel) for values;
- every Helm values environment (``helm``): a chart's ``values.yaml`` merged with one
  per-environment values file (or alone, as ``default``, when the chart has none);
- every directory of plain YAML the opt-in file names (``raw``, no kustomization): the YAML
  files below it, except those below a kustomization or a chart;
- ``default``: raw YAML that no kustomization reads and no such directory holds.

An opt-in ``environments`` entry names a kustomization directory, a chart values file or a plain
directory (``path``, else ``name``); ``name: default`` without ``path`` sets the namespace and
selector of the raw YAML. An entry that names none of these is an error at its line of the
opt-in file, never dropped silently. The namespace an entry sets applies to the objects of its
environment that declare none, as ``kubectl apply -n`` would.

Flux ``HelmRelease`` and Argo CD ``Application`` objects found in any environment add the
workloads their inline values describe; the repository's Argo CD and Flux objects decide where
each environment is deployed and which ones are proposed for (``bot.manifests.deployments``). A bad file, kustomization or object becomes an
``Inventory.errors`` entry; discovery itself never raises for repository content.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from bot.config.manifests import EnvironmentConfig
from bot.config.repo import REPO_CONFIG_FILES, RepoConfig, repo_config_line
from bot.manifests import helm, hpas, keda
from bot.manifests.deployments import merge, place
from bot.manifests.errors import KustomizeError, ManifestError
from bot.manifests.files import Checkpoint, RepoFiles, join, normalize
from bot.manifests.kinds import is_workload
from bot.manifests.kustomize import (
    KUSTOMIZATION_FILES,
    Kustomizer,
    error_line,
    kustomization_in,
)
from bot.manifests.namespace_bounds import attach_bounds
from bot.manifests.rendercache import render_cache, render_cached
from bot.manifests.renders import Closure, Renders, find_renders
from bot.manifests.rollouts import add_workloads
from bot.manifests.sources import Obj, Origin, objects_in
from bot.manifests.unsupported import skipped_objects
from bot.manifests.workloads import Entry, Environment, WorkloadBuilder
from bot.model import (
    DEFAULT_ENVIRONMENT,
    Inventory,
    SkippedObject,
    SourceError,
    WorkloadRef,
)

RENDER_WORKERS = 4
"""``kubectl kustomize`` processes run at once."""


@dataclass(eq=False, slots=True)
class Discovery:
    """The inventory plus the index the editor plans with."""

    inventory: Inventory
    entries: dict[WorkloadRef, Entry]
    environments: dict[str, Environment]
    file_users: dict[str, set[str]]
    files: RepoFiles
    renders: Renders = field(default_factory=Renders)

    def exclusive(self, file: str, environment: str) -> bool:
        """Whether only ``environment`` reads ``file``: no other environment of the inventory,
        and no render root of the repository but those that deploy ``environment``
        (``renders``)."""
        return not self.sharers(file, environment)

    def sharers(self, file: str, environment: str) -> list[str]:
        """Who else reads ``file``: other environments, then render roots that do not deploy
        ``environment`` (each with what deploys it)."""
        names = sorted(self.file_users.get(file, set()) - {environment})
        out = [f"environment {e!r}" for e in names]
        listed = {o.directory for o in map(self.environments.get, names) if o is not None}
        env = self.environments.get(environment)
        kind, directory = (env.kind, env.directory) if env is not None else ("", None)
        for root in self.renders.reading(file):
            if not root.deploys(kind, directory) and root.directory not in listed:
                out.append(f"{root.name} ({root.why})")
        return out


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector for a block (if it is on), then turn it back on.

    Discovery builds hundreds of thousands of small, long-lived, acyclic objects (nodes, data,
    origins); every 700 allocations the collector would re-scan all of them, which costs more
    than the parse itself (540 files / 2,000 workloads: 1.7 s of Python CPU -> 0.8 s). Reference
    counting still frees everything; cycles made meanwhile are collected after the block.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


# -------------------------------------------------------------------------- environments


@contextmanager
def _cancelled_on_error(pool: ThreadPoolExecutor) -> Iterator[None]:
    """Renders not yet begun never start when discovery stops (its deadline, an error)."""
    try:
        yield
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        raise


def _dir(path: str) -> str:
    parent = str(PurePosixPath(path).parent)
    return "" if parent == "." else parent


def _env_name(directory: str) -> str:
    return directory or "."


def _under(path: str, directory: str) -> bool:
    """Whether ``path`` lies in ``directory`` or below it ('' is the root)."""
    return not directory or path.startswith(directory + "/")


@dataclass(slots=True)
class _Chosen:
    """The opt-in file's environments, sorted by what they name."""

    kustomize: list[tuple[EnvironmentConfig, str]]
    directories: list[tuple[EnvironmentConfig, str]]
    default: EnvironmentConfig | None


class _Discoverer:
    def __init__(self, root: Path, config: RepoConfig, files: RepoFiles) -> None:
        self.root = root
        self.config = config
        self.files = files
        self.kustomizer = Kustomizer(files)
        self.closure = Closure(files, self.kustomizer)
        self.renders = Renders()
        self.cache = None if files.overrides else render_cache()
        """Renders of unchanged inputs from earlier runs (``rendercache``); not for files
        that are not on disk."""
        self.errors: list[SourceError] = []
        self.referenced: set[str] = set()
        self.broken: dict[str, set[str]] = {}
        """Overlays that failed, with the files they would read: never edited as exclusive."""

    def fail(self, exc: ManifestError) -> None:
        """Record a repository problem and go on."""
        self.errors.append(exc.as_source_error())

    def run(self, only: set[str] | None = None) -> tuple[list[Environment], list[SourceError]]:
        """Every environment (or those in ``only``) with its objects, and the problems found."""
        listing = [p for p in self.files.listing() if p not in REPO_CONFIG_FILES]
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
        chosen = self.choose(charts)
        envs: list[Environment] = []
        with ThreadPoolExecutor(max_workers=RENDER_WORKERS) as pool, _cancelled_on_error(pool):
            pending = self.start_overlays(kdirs, chosen.kustomize, only, pool)
            # kubectl runs meanwhile
            self.renders = find_renders(
                self.closure,
                charts,
                [(e.name, d) for e, d in chosen.kustomize + chosen.directories],
            )
            envs.extend(self.charts(charts, listing, only))
            held: set[str] = set()
            for config_env, directory in chosen.directories:
                env = self.directory(config_env, directory, listing, kdirs, in_chart)
                held |= env.files
                if only is None or env.name in only:
                    envs.append(env)
            named_default = any(e.name == DEFAULT_ENVIRONMENT for e, _ in chosen.directories)
            if (only is None or DEFAULT_ENVIRONMENT in only) and not named_default:
                raw = self.raw(listing, in_chart, held)
                raw.namespace = chosen.default.namespace if chosen.default else None
                if raw.objects:
                    envs.append(raw)
            envs[:0] = self.finish_overlays(pending)
        return envs, self.errors

    def choose(self, charts: list[str]) -> _Chosen:
        """Sort the opt-in file's environments by what their path names; an entry naming
        nothing in the repository is an error at its line."""
        chosen = _Chosen([], [], None)
        for index, env in enumerate(self.config.environments):
            path = normalize(env.path or env.name)
            if path.startswith("../"):
                pass
            elif kustomization_in(self.files, path):
                chosen.kustomize.append((env, path))
                continue
            elif any(_under(path, c) for c in charts) and self.files.exists(path):
                continue  # a values file: ``charts`` reads it
            elif env.path is None and env.name == DEFAULT_ENVIRONMENT:
                chosen.default = env
                continue
            elif self.files.is_dir(path) and path not in charts:
                chosen.directories.append((env, path))
                continue
            file, line = repo_config_line(self.root, ("environments", index))
            self.errors.append(
                SourceError(
                    file,
                    line,
                    f"environment {env.name!r}: {path or '.'!r} is not a kustomization "
                    "directory, a chart values file or a directory of YAML files in this "
                    "repository (paths.include / paths.exclude may hide it)",
                )
            )
        return chosen

    def directory(
        self,
        config_env: EnvironmentConfig,
        directory: str,
        listing: list[str],
        kdirs: list[str],
        in_chart: Callable[[str], str | None],
    ) -> Environment:
        """A configured plain directory: every YAML object in the files below it, except files
        below a kustomization (its own overlay) or a chart."""
        env = Environment(
            config_env.name, "raw", directory=directory, namespace=config_env.namespace
        )
        inner = [d for d in kdirs if _under(d, directory) or d == directory]
        self.read_objects(
            env,
            (
                path
                for path in listing
                if _under(path, directory)
                and PurePosixPath(path).suffix in (".yaml", ".yml")
                and not any(_under(path, d) for d in inner)
                and in_chart(path) is None
            ),
        )
        return env

    def read_objects(self, env: Environment, paths: Iterable[str]) -> None:
        """Add the objects of ``paths`` to ``env`` (a file that does not parse is an error)."""
        for path in paths:
            try:
                found = objects_in(self.files.parse(path))
            except ManifestError as exc:
                self.fail(exc)
                continue
            env.objects.extend(found)
            if found:
                env.files.add(path)

    # ------------------------------------------------------------------------ Kustomize

    def raw(
        self, listing: list[str], in_chart: Callable[[str], str | None], held: set[str]
    ) -> Environment:
        """The ``default`` environment: every object no kustomization, chart or configured
        directory reads."""
        raw = Environment(DEFAULT_ENVIRONMENT, "raw")
        self.read_objects(
            raw,
            (
                path
                for path in listing
                if path not in self.referenced
                and path not in held
                and PurePosixPath(path).name not in KUSTOMIZATION_FILES
                and in_chart(path) is None
            ),
        )
        return raw

    def start_overlays(
        self,
        kdirs: list[str],
        configured: list[tuple[EnvironmentConfig, str]],
        only: set[str] | None,
        pool: ThreadPoolExecutor,
    ) -> list[tuple[Environment, Future[list[dict[str, Any]]]]]:
        """Choose the overlays and start rendering each with ``kubectl kustomize``."""
        referenced_dirs: set[str] = set()
        components: set[str] = set()
        for directory in kdirs:
            try:
                dirs, refs = self.closure.reads(directory)
                if self.kustomizer.kind(directory) == "Component":
                    components.add(directory)
            except ManifestError as exc:
                self.fail(exc)
                continue
            referenced_dirs.update(dirs)
            self.referenced.update(refs)
        if configured:
            chosen = [(env.name, path, env.namespace) for env, path in configured]
        else:
            chosen = [
                (_env_name(d), d, None)
                for d in kdirs
                if d not in referenced_dirs and d not in components
            ]
        pending = []
        for name, directory, namespace in chosen:
            if only is not None and name not in only:
                continue
            env = Environment(name, "kustomize", directory=directory, namespace=namespace)
            kfile = kustomization_in(self.files, directory) or directory
            inputs: tuple[frozenset[str], frozenset[str]] | None = None
            if self.cache is not None and self.closure.sealed(directory):
                files, includes = self.closure.of(directory)
                inputs = frozenset(files), frozenset(includes)
            job = pool.submit(render_cached, self.cache, self.root, directory, kfile, inputs)
            pending.append((env, job))
        return pending

    def finish_overlays(
        self, pending: list[tuple[Environment, Future[list[dict[str, Any]]]]]
    ) -> list[Environment]:
        """Replay each overlay for origins, then take its values from the render."""
        envs = []
        for env, future in pending:
            assert env.directory is not None
            self.files.checkpoint(f"reading overlay {env.directory or '.'}")
            try:
                build = self.kustomizer.build(env.directory)
            except ManifestError as exc:
                self.fail(exc)
                future.cancel()
                self.broken[env.name] = self._closure(env.directory)
                continue
            env.objects, env.files, env.spread = build.objects, build.files, build.spread
            self.referenced.update(build.files)
            if self._render(env, future):
                envs.append(env)
            else:
                self.broken[env.name] = set(build.files)
        return envs

    def _closure(self, directory: str) -> set[str]:
        """Every file a kustomization refers to, directly or through other kustomizations."""
        seen: set[str] = set()
        files: set[str] = set()
        todo = [directory]
        while todo:
            current = todo.pop()
            if current in seen:
                continue
            seen.add(current)
            try:
                dirs, refs = self.kustomizer.references(current)
            except ManifestError:
                continue
            files.update(refs)
            todo.extend(dirs)
        return files

    def _render(self, env: Environment, future: Future[list[dict[str, Any]]]) -> bool:
        assert env.directory is not None
        kfile = kustomization_in(self.files, env.directory) or env.directory
        try:
            rendered = future.result()
        except KustomizeError as exc:
            try:
                line = error_line(self.files.parse(kfile), exc, self.files)
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
                # the document it most likely comes from (renamed by something not replayed),
                # for reasons to name; never a place for its keys (``modelled``)
                like = [
                    o
                    for o in env.objects
                    if o.kind == kind and o.modelled and (o.original_name or o.name) in name
                ]
                root = like[0].root if len(like) == 1 else Origin(kfile, 0, (), kroot)
                found = Obj({}, {}, root, {kfile, root.file}, modelled=False)
            found.data = data
            objects.append(found)
        env.objects = objects
        return True

    # ----------------------------------------------------------------------------- Helm

    def charts(
        self, charts: list[str], listing: list[str], only: set[str] | None
    ) -> list[Environment]:
        """One environment per chart values file (``values.yaml`` alone: ``default``)."""
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
                if p not in env_files
                and p.startswith(chart + "/")
                and p != base
                and self.files.exists(p)
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
                    self.broken[name] = {p for p in (base, values_file) if p}
                    continue
                if not parsed:
                    continue
                env.files = {f.path for f in parsed}
                env.objects = [helm.values_object(parsed)]
                env.objects[0].original_name = chart_name
                envs.append(env)
        return envs


def discover_index(
    root: Path,
    config: RepoConfig,
    *,
    files: RepoFiles | None = None,
    only: set[str] | None = None,
    check: Checkpoint | None = None,
) -> Discovery:
    """Discover everything; ``only`` restricts to some environments (verification). ``check``
    is called before each file, overlay and object (``RepoFiles.check``; ``files`` has its own)."""
    with gc_paused():
        return _discover_index(root, config, files=files, only=only, check=check)


def _discover_index(
    root: Path,
    config: RepoConfig,
    *,
    files: RepoFiles | None,
    only: set[str] | None,
    check: Checkpoint | None,
) -> Discovery:
    repo = files or RepoFiles(root, config.paths, check=check)
    discoverer = _Discoverer(root, config, repo)
    envs, errors = discoverer.run(only)
    placed = place(root, envs, repo, discoverer.renders, config)  # sets GitOps namespaces
    builder = WorkloadBuilder(config, repo)
    scaled = keda.Scaled()
    notes: list[SourceError] = []
    skipped: list[SkippedObject] = []
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
            own = (values.original_name, values.original_name)
            keda.helm_link(builder, env, values, (), names=own, mapping=mapping, scaled=scaled)
            continue
        notes.extend(add_workloads(builder, env))
        skipped.extend(skipped_objects(env.objects, env.name, env.namespace))
        for obj in env.objects:
            repo.checkpoint(f"reading {obj.kind} {obj.name} in {env.name}")
            if is_workload(obj):
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
                keda.helm_link(
                    builder,
                    env,
                    holder,
                    prefix,
                    names=(release, chart),
                    mapping=mapping,
                    scaled=scaled,
                )
    for env in envs:
        builder.link(env)
        keda.link(builder, env, scaled)
    errors.extend(attach_bounds(builder.entries, envs))  # LimitRange, quota, PDB, runtime
    file_users: dict[str, set[str]] = {}
    for name, paths in discoverer.broken.items():
        for path in paths:
            file_users.setdefault(path, set()).add(name)
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
    broken = {p.as_source_error() for p in repo.problems()}  # documents that do not parse
    all_errors = sorted(
        set(errors) | set(builder.errors) | broken, key=lambda e: (e.file, e.line, e.message)
    )
    names = tuple(sorted({e.name for e in envs}))
    deployments, not_proposed, gitops_notes = merge(placed, workloads, config)
    warnings, ambiguous = hpas.ambiguous(builder.hpas)
    keda_warnings, keda_reasons = keda.conflicts(builder.hpas, scaled)
    inventory = Inventory(
        names,
        workloads,
        tuple(all_errors),
        deployments,
        {**not_proposed, **ambiguous, **keda_reasons},
        gitops_notes + tuple(notes),
        warnings + keda_warnings,
        tuple(
            sorted(
                skipped, key=lambda s: (s.ref.environment, s.ref.namespace, s.ref.kind, s.ref.name)
            )
        ),
    )
    return Discovery(
        inventory, entries, {e.name: e for e in envs}, file_users, repo, discoverer.renders
    )
