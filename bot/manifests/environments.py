"""The environments of a repository checkout, in order (``bot.manifests.discovery`` has the
rules): every Kustomize overlay (replayed for origins, rendered by ``kubectl kustomize`` once
per overlay, overlays in parallel, for values), every Helm chart values file, every plain
directory the opt-in file names, then ``default``: the raw YAML nothing else reads. Each
environment's objects are read here; a bad file or kustomization is an error, never raised.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from bot.config.manifests import EnvironmentConfig
from bot.config.repo import REPO_CONFIG_FILES, RepoConfig, repo_config_line
from bot.manifests import helm
from bot.manifests.errors import KustomizeError, ManifestError
from bot.manifests.files import RepoFiles, join, normalize
from bot.manifests.kustomize import (
    KUSTOMIZATION_FILES,
    Kustomizer,
    error_line,
    kustomization_in,
)
from bot.manifests.rendercache import render_cache, render_cached
from bot.manifests.renders import Closure, Renders, find_renders
from bot.manifests.sources import Obj, Origin, objects_in
from bot.manifests.workloads import Environment
from bot.model import (
    DEFAULT_ENVIRONMENT,
    SourceError,
)

RENDER_WORKERS = 4
"""``kubectl kustomize`` processes run at once."""


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


class EnvironmentFinder:
    """Finds the environments of one repository checkout and reads their objects (the
    module doc): ``run`` gives them with the errors met."""

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
