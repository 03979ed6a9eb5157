"""What the repository itself says is deployed where: Argo CD and Flux objects in its files.

Read from every YAML file of the checkout (whatever ``paths`` selects, as renders are):

- Argo CD ``Application`` (``argoproj.io``): ``spec.source`` / ``spec.sources[]`` (``repoURL``,
  ``path``, ``helm.valueFiles``, relative to the path, ``$ref/...`` through a ``ref`` source)
  and ``spec.destination`` (``name`` or ``server``, ``namespace``);
- Argo CD ``ApplicationSet``: its ``template`` for every element of a ``list`` generator and
  every directory a ``git`` ``directories`` generator matches in this checkout (``{{path}}``,
  ``{{path.basename}}``, ``{{path[N]}}``, ``{{key}}``, and the ``goTemplate`` forms
  ``{{.path.path}}``, ``{{.key}}``); any other generator is named as not understood;
- Flux ``Kustomization`` (``kustomize.toolkit.fluxcd.io``): ``spec.path``,
  ``spec.targetNamespace``, ``spec.sourceRef``, ``spec.kubeConfig.secretRef.name``;
- Flux ``HelmRelease`` (``helm.toolkit.fluxcd.io``): a chart in this repository
  (``spec.chart.spec.chart`` with a ``GitRepository`` source), ``spec.chart.spec.valuesFiles``,
  ``spec.targetNamespace``, ``spec.kubeConfig``; ``valuesFrom`` (ConfigMaps, Secrets) is named
  as not read.

Only objects that deploy *this* repository count: an Argo CD ``repoURL`` equal to one of its
URLs (``gitops.repository_urls`` and the checkout's git remotes, compared without scheme, user,
``.git`` and case), a Flux ``GitRepository`` source whose ``spec.url`` is one of them. When the
repository's URL is unknown, or a ``GitRepository`` is not in the checkout, an object whose path
exists here counts and a note says it was assumed. Every object that is skipped says why
(``GitOps.notes``).

The cluster an object deploys to: Argo CD ``destination.name``, else ``destination.server``
(``in-cluster`` and ``https://kubernetes.default.svc`` are the cluster Argo CD runs in, unnamed);
Flux ``kubeConfig.secretRef.name``, else the cluster whose Flux applies the file holding the
object: the path of each outermost Flux ``Kustomization`` that applies it (its path holds the
file, or its render reads it: a base several clusters' overlays include), named by its last
segment (``clusters/production``: ``production``); an object no other one applies is in its
own directory's cluster.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from bot.manifests.errors import ManifestError
from bot.manifests.files import RepoFiles, join, normalize
from bot.manifests.globs import matches_any
from bot.manifests.yamldoc import YMap, YScalar, to_data
from bot.model import SourceError

GITOPS_APIS = re.compile(rb"argoproj\.io|toolkit\.fluxcd\.io")
"""Bytes a file must hold to be parsed for GitOps objects."""
IN_CLUSTER = ("in-cluster", "https://kubernetes.default.svc")
"""Argo CD's names of the cluster it runs in."""
_PARAM = re.compile(r"\{\{-?\s*([^{}]*?)\s*-?\}\}")


@dataclass(frozen=True, slots=True)
class Target:
    """One thing a GitOps object deploys from this repository."""

    directory: str
    """The source path: an overlay, a plain directory or a chart (repository-relative)."""
    values_files: tuple[str, ...]
    """Helm values files it adds (repository-relative), in order; empty for Kustomize."""
    cluster: str
    """The cluster's name; '' for the unnamed cluster an Argo CD runs in."""
    namespace: str | None
    """Destination namespace (Argo CD) or ``targetNamespace`` (Flux); None: unset."""
    by: str
    """What deploys it: ``Application shop-prod (argocd/prod.yaml:12)``."""


@dataclass(slots=True)
class GitOps:
    """Every target the repository's GitOps objects deploy, and what was not understood."""

    targets: list[Target] = field(default_factory=list)
    notes: list[SourceError] = field(default_factory=list)
    objects: int = 0
    """GitOps objects found (counted or not)."""


def normalize_url(url: str) -> str:
    """A git URL without scheme, user, ``.git`` and trailing ``/``, lower case:
    ``git@github.com:Org/Repo.git`` and ``https://github.com/org/repo`` read alike."""
    text = url.strip().lower()
    text = re.sub(r"^[a-z+]+://", "", text)
    text = re.sub(r"^[^@/]+@", "", text)
    if ":" in text.split("/", 1)[0]:
        host, _, rest = text.partition(":")
        text = f"{host}/{rest}" if not rest.isdigit() else host
    text = re.sub(r"^([^/]+):\d+/", r"\1/", text)
    return text.rstrip("/").removesuffix(".git")


def checkout_urls(root: Path) -> set[str]:
    """The remote URLs of the git checkout at ``root`` (its ``.git/config``), normalized."""
    config = root / ".git" / "config"
    try:
        text = config.read_text(encoding="utf-8", errors="replace")[:1_000_000]
    except OSError:
        return set()
    return {normalize_url(m) for m in re.findall(r"(?m)^\s*url\s*=\s*(\S+)\s*$", text)}


def _holds(directory: str, path: str) -> bool:
    """Whether ``path`` lies below ``directory`` ('' is the root)."""
    return not directory or path.startswith(directory + "/")


def _str(value: Any) -> str:
    return str(value) if isinstance(value, str | int | float) and value is not None else ""


def _map(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


@dataclass(slots=True)
class _Found:
    kind: str
    name: str
    file: str
    line: int
    data: dict[str, Any]

    @property
    def where(self) -> str:
        return f"{self.kind} {self.name} ({self.file}:{self.line})"


class _Reader:
    def __init__(
        self, files: RepoFiles, urls: set[str], reads: Callable[[str], frozenset[str]]
    ) -> None:
        self.files = files
        self.urls = urls
        self.reads = reads
        """The files the render of a directory reads (``bot.manifests.renders``)."""
        self.out = GitOps()
        self.git_repos: dict[str, str] = {}
        """Flux ``GitRepository`` name -> normalized URL."""
        self.flux: list[_Found] = []
        """Flux Kustomizations, for the cluster of each file."""

    def note(self, obj: _Found, message: str) -> None:
        self.out.notes.append(SourceError(obj.file, obj.line, f"{obj.kind} {obj.name}: {message}"))

    def ours(self, obj: _Found, url: str, path: str) -> bool:
        """Whether ``url`` is this repository (noted when assumed or not)."""
        if not url:
            self.note(obj, "no repoURL; not read")
            return False
        if not self.urls:
            if self.files.is_dir(path):
                self.note(obj, f"this repository's URL is unknown; {url} assumed to be it")
                return True
            self.note(obj, f"{path or '.'!r} is not a directory of this repository; not read")
            return False
        if normalize_url(url) in self.urls:
            return True
        self.note(obj, f"deploys {url}, another repository; not read")
        return False

    # ------------------------------------------------------------------ Argo CD

    def application(self, obj: _Found, spec: dict[str, Any]) -> None:
        dest = _map(spec.get("destination"))
        cluster = _str(dest.get("name")) or _str(dest.get("server"))
        cluster = "" if cluster in IN_CLUSTER else cluster
        namespace = _str(dest.get("namespace")) or None
        sources = [_map(s) for s in [spec.get("source"), *_list(spec.get("sources"))] if s]
        refs = {
            _str(s.get("ref")): s
            for s in sources
            if _str(s.get("ref")) and self.ours(obj, _str(s.get("repoURL")), _str(s.get("path")))
        }
        for source in sources:
            if _str(source.get("ref")) and not _str(source.get("path")):
                continue  # a values-only source
            if _str(source.get("chart")):
                self.note(
                    obj, f"chart {_str(source.get('chart'))} from a Helm repository; not read"
                )
                continue
            path = normalize(_str(source.get("path")))
            if path.startswith("../") or not self.ours(obj, _str(source.get("repoURL")), path):
                continue
            values: list[str] = []
            for ref in _list(_map(source.get("helm")).get("valueFiles")):
                text = _str(ref)
                head, _, rest = text.partition("/")
                if head.startswith("$"):
                    if head[1:] in refs:
                        values.append(normalize(rest))
                    else:
                        self.note(obj, f"valueFiles {text}: no source of this repository {head}")
                else:
                    values.append(join(path, text))
            self.target(obj, path, values, cluster, namespace)

    def application_set(self, obj: _Found, spec: dict[str, Any]) -> None:
        template = _map(spec.get("template"))
        go = spec.get("goTemplate") is True
        for generator in _list(spec.get("generators")):
            kinds = sorted(_map(generator))
            if "list" in kinds:
                for element in _list(_map(generator["list"]).get("elements")):
                    params = {str(k): _str(v) for k, v in _map(element).items()}
                    self.generated(obj, template, params, go)
            elif "git" in kinds and _map(generator["git"]).get("directories"):
                git = _map(generator["git"])
                if not self.ours(obj, _str(git.get("repoURL")), ""):
                    continue
                for directory in self.directories(_list(git.get("directories"))):
                    parts = directory.split("/")
                    params = {"path": directory, "path.basename": parts[-1]}
                    params.update({f"path[{i}]": p for i, p in enumerate(parts)})
                    self.generated(obj, template, params, go)
            else:
                self.note(obj, f"generator {', '.join(kinds) or '?'} is not understood; not read")

    def directories(self, entries: list[Any]) -> list[str]:
        """The directories of this checkout a git generator's ``directories`` match."""
        paths = [
            (normalize(_str(_map(e).get("path"))), bool(_map(e).get("exclude"))) for e in entries
        ]
        include = tuple(p for p, out in paths if not out)
        exclude = tuple(p for p, out in paths if out)
        dirs = sorted({str(PurePosixPath(p).parent) for p in self.files.everything()} - {"."})
        every = set(dirs)
        for d in dirs:  # parents of parents
            every.update(str(p) for p in PurePosixPath(d).parents if str(p) != ".")
        return [d for d in sorted(every) if matches_any(d, include) and not matches_any(d, exclude)]

    def generated(
        self, obj: _Found, template: dict[str, Any], params: dict[str, str], go: bool
    ) -> None:
        def fill(text: str) -> str:
            def one(match: re.Match[str]) -> str:
                key = match.group(1)
                if go:
                    key = key.removeprefix(".")
                    key = {"path.path": "path"}.get(key, key)
                return params.get(key, match.group(0))

            return _PARAM.sub(one, text)

        def walk(value: Any) -> Any:
            if isinstance(value, str):
                return fill(value)
            if isinstance(value, dict):
                return {k: walk(v) for k, v in value.items()}
            if isinstance(value, list):
                return [walk(v) for v in value]
            return value

        filled = walk(template)
        name = _str(_map(filled.get("metadata")).get("name")) or obj.name
        app = _Found("Application", name, obj.file, obj.line, filled)
        app.name = f"{name} of ApplicationSet {obj.name}"
        self.application(app, _map(filled.get("spec")))

    # --------------------------------------------------------------------- Flux

    def source_ours(self, obj: _Found, ref: dict[str, Any], path: str) -> bool:
        kind, name = _str(ref.get("kind")), _str(ref.get("name"))
        if not kind:
            self.note(obj, "no sourceRef (a patch of another object?); not read")
            return False
        if kind != "GitRepository":
            self.note(obj, f"source {kind} {name} is not a git repository; not read")
            return False
        url = self.git_repos.get(name)
        if url is None:
            if self.files.is_dir(path):
                self.note(obj, f"GitRepository {name} is not in this repository; assumed to be it")
                return True
            self.note(obj, f"{path or '.'!r} is not a directory of this repository; not read")
            return False
        return self.ours(obj, url, path)

    def clusters_of(
        self, file: str, kube: dict[str, Any], seen: frozenset[str] = frozenset()
    ) -> list[str]:
        """The clusters a Flux object of ``file`` deploys to (module doc): one per outermost
        Flux ``Kustomization`` whose path holds ``file`` or whose render reads it (a base
        several clusters' overlays include)."""
        secret = _str(_map(kube.get("secretRef")).get("name"))
        if secret:
            return [secret]
        found: dict[str, None] = {}
        for parent in self.flux:
            path = normalize(_str(parent.data.get("path")))
            key = f"{parent.file}:{parent.line}"
            if key in seen or not (_holds(path, file) or file in self.reads(path)):
                continue
            if _holds(path, parent.file):  # the bootstrap sync: the cluster's own path
                found[PurePosixPath(path).name if path else ""] = None
                continue
            kube = _map(parent.data.get("kubeConfig"))
            found.update(dict.fromkeys(self.clusters_of(parent.file, kube, seen | {key})))
        if not found:
            directory = str(PurePosixPath(file).parent)
            found[PurePosixPath(directory).name if directory != "." else ""] = None
        return sorted(found)

    def kustomization(self, obj: _Found, spec: dict[str, Any]) -> None:
        path = normalize(_str(spec.get("path")))
        if path.startswith("../") or not self.source_ours(obj, _map(spec.get("sourceRef")), path):
            return
        namespace = _str(spec.get("targetNamespace")) or None
        for cluster in self.clusters_of(obj.file, _map(spec.get("kubeConfig"))):
            self.target(obj, path, [], cluster, namespace)

    def helm_release(self, obj: _Found, spec: dict[str, Any]) -> None:
        chart = _map(_map(spec.get("chart")).get("spec"))
        path = normalize(_str(chart.get("chart")))
        if not chart:
            self.note(obj, "chart from chartRef or an OCI source; not read")
            return
        if path.startswith("../") or not self.source_ours(obj, _map(chart.get("sourceRef")), path):
            return
        if spec.get("valuesFrom"):
            self.note(obj, "valuesFrom (ConfigMaps, Secrets) is not read")
        values = [normalize(_str(v)) for v in _list(chart.get("valuesFiles"))]
        namespace = _str(spec.get("targetNamespace")) or None
        for cluster in self.clusters_of(obj.file, _map(spec.get("kubeConfig"))):
            self.target(obj, path, values, cluster, namespace)

    def target(
        self, obj: _Found, path: str, values: list[str], cluster: str, namespace: str | None
    ) -> None:
        if not self.files.is_dir(path):
            self.note(obj, f"{path or '.'!r} is not a directory of this repository; not read")
            return
        self.out.targets.append(Target(path, tuple(values), cluster, namespace, obj.where))


def read_gitops(
    files: RepoFiles,
    urls: set[str],
    reads: Callable[[str], frozenset[str]] = lambda _: frozenset(),
) -> GitOps:
    """Every GitOps object of the checkout and what it deploys (module doc); ``urls``: this
    repository's URLs, normalized (``normalize_url``); ``reads``: the files the render of a
    directory reads, to tell which Flux ``Kustomization`` applies a file outside its path."""
    reader = _Reader(files, urls, reads)
    found: list[_Found] = []
    for path in files.everything():
        if PurePosixPath(path).suffix not in (".yaml", ".yml"):
            continue
        try:
            if not GITOPS_APIS.search(files.read(path)):
                continue
            documents = files.parse(path).documents
        except ManifestError:
            continue  # the file's problem is reported where it is read as a manifest
        for doc in documents:
            root = doc.root
            if not isinstance(root, YMap):
                continue
            data = to_data(root)
            if not isinstance(data, dict):
                continue
            api, kind = _str(data.get("apiVersion")), _str(data.get("kind"))
            name = _str(_map(data.get("metadata")).get("name"))
            kind_node = root.get("kind")
            line = kind_node.line + 1 if isinstance(kind_node, YScalar) else 0
            spec = _map(data.get("spec"))
            obj = _Found(kind, name, path, line, spec)
            if api.startswith("source.toolkit.fluxcd.io/") and kind == "GitRepository":
                reader.git_repos[name] = _str(spec.get("url"))
            elif (api.startswith("argoproj.io/") and kind in ("Application", "ApplicationSet")) or (
                api.startswith(("kustomize.toolkit.fluxcd.io/", "helm.toolkit.fluxcd.io/"))
                and kind in ("Kustomization", "HelmRelease")
            ):
                found.append(obj)
                if kind == "Kustomization":
                    reader.flux.append(obj)
    for obj in found:
        reader.out.objects += 1
        if obj.kind == "Application":
            reader.application(obj, obj.data)
        elif obj.kind == "ApplicationSet":
            reader.application_set(obj, obj.data)
        elif obj.kind == "Kustomization":
            reader.kustomization(obj, obj.data)
        else:
            reader.helm_release(obj, obj.data)
    return reader.out
