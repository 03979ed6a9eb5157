"""Renders: every way the repository is deployed, and the files each one reads.

A *render root* is one thing a cluster is given, found in the whole checkout (whatever
``paths`` selects, whatever the opt-in file lists):

- every kustomization directory (``kubectl kustomize DIR`` builds it: a base as much as an
  overlay; Components, which do not build alone, are never roots);
- a directory a Flux ``Kustomization`` (``kustomize.toolkit.fluxcd.io``, ``spec.path``) or an
  Argo CD ``Application`` (``argoproj.io``, ``spec.source.path``, ``spec.sources[].path``)
  points at, with or without a kustomization;
- a directory the opt-in file names as an environment.

Each root knows the files its render reads (``kubectl kustomize`` of a kustomization: every
resource, component, patch, transformer, generator and configuration file it names, through
every kustomization it includes; a plain directory: its YAML files, below it too unless an
Argo CD ``Application`` does not ``recurse``, and a kustomization below it as a whole, as Flux
generates one) and the kustomization directories it includes.

The editor writes a file in place only when every root that reads it *deploys the environment
the change names*: the root is the environment's directory, includes it (a cluster
kustomization listing the overlay), or, for a plain directory environment, holds it. Any other
root must render byte-identically after the edit, so the value goes into the environment's own
overlay patch instead, or the field is skipped with the reason (``plan``). ``changed_renders``
proves it after the fact by rendering every such root that reads an edited file before and
after the edit.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from bot.manifests.errors import ManifestError
from bot.manifests.files import RepoFiles, join, normalize
from bot.manifests.kustomize import KUSTOMIZATION_FILES, Kustomizer, kustomization_in
from bot.manifests.rendering import render_text
from bot.manifests.yamldoc import YMap, YNode, YScalar, YSeq

YAML_SUFFIXES = (".yaml", ".yml")
"""Files a plain directory root applies (``kubectl apply -f DIR``, Flux's generated
kustomization)."""
DEPLOYERS = re.compile(rb"kustomize\.toolkit\.fluxcd\.io|argoproj\.io")
"""Bytes a file must hold to be parsed for Flux ``Kustomization``/Argo CD ``Application``."""
_FILE_LISTS = ("transformers", "generators", "validators", "configurations", "crds")
"""Kustomization keys listing files (or kustomization directories) the build reads."""
_GENERATORS = ("configMapGenerator", "secretGenerator")
_PLUGINS = ("transformers", "generators", "validators", "helmCharts")
"""Kustomization keys whose entries may read files no kustomization names (plugin
configurations with their own ``path``, charts): a build using them is not ``sealed``."""


def _under(path: str, directory: str) -> bool:
    """Whether ``path`` lies below ``directory`` ('' is the root)."""
    return not directory or path.startswith(directory + "/")


def _dir(path: str) -> str:
    parent = str(PurePosixPath(path).parent)
    return "" if parent == "." else parent


@dataclass(frozen=True, slots=True)
class RenderRoot:
    """One deployed render: its directory, what it reads, and why it is a root."""

    directory: str
    kustomization: str | None
    """Its kustomization file; None for a plain directory of YAML."""
    files: frozenset[str]
    """Every file its render reads (repository-relative)."""
    includes: frozenset[str]
    """Every kustomization directory its render includes, its own too."""
    why: str
    """What deploys it: ``a kustomization no other one includes``, ``Flux Kustomization
    apps (clusters/prod/apps.yaml:5)``..."""

    @property
    def name(self) -> str:
        """The directory as shown to users (``.`` for the root)."""
        return self.directory or "."

    def deploys(self, kind: str, directory: str | None) -> bool:
        """Whether this render deploys the environment of ``kind`` (``kustomize``, ``raw``,
        ``helm``) at ``directory`` (None: the raw YAML no kustomization reads)."""
        if kind == "kustomize" and directory is not None:
            return directory in self.includes
        if kind == "raw" and directory is not None:
            return self.directory == directory or (
                self.kustomization is None
                and (_under(directory, self.directory) or _under(self.directory, directory))
            )
        return kind == "raw" and self.kustomization is None


def _strings(node: YNode | None) -> list[str]:
    if isinstance(node, YScalar) and isinstance(node.value, str):
        return [node.value]
    if not isinstance(node, YSeq):
        return []
    return [i.value for i in node.items if isinstance(i, YScalar) and isinstance(i.value, str)]


def _local(ref: str) -> bool:
    return "\n" not in ref and "://" not in ref and not ref.startswith(("git@", "github.com/"))


class Closure:
    """What a kustomization's build reads, cached per directory."""

    def __init__(self, files: RepoFiles, kustomizer: Kustomizer | None = None) -> None:
        self.files = files
        self.kustomizer = kustomizer or Kustomizer(files)
        self._reads: dict[str, tuple[list[str], list[str]]] = {}
        self._of: dict[str, tuple[frozenset[str], frozenset[str]]] = {}
        self._open: set[str] = set()
        """Kustomization directories that read something their files do not name (remote
        resources, paths outside the repository, plugins) or cannot be read."""

    def reads(self, directory: str) -> tuple[list[str], list[str]]:
        """(kustomization directories, files) one kustomization names; ``ManifestError`` when
        it cannot be read."""
        known = self._reads.get(directory)
        if known is not None:
            return known
        dirs, files = self.kustomizer.references(directory)
        _, _, root = self.kustomizer.load(directory)
        named: list[str] = []
        for key in _FILE_LISTS:
            named.extend(_strings(root.get(key)))
        openapi = root.get("openapi")
        if isinstance(openapi, YMap):
            named.extend(_strings(openapi.get("path")))
        for key in _GENERATORS:
            for entry in _items(root.get(key)):
                for ref in _strings(entry.get("files")):
                    named.append(ref.partition("=")[2] or ref)
                named.extend(_strings(entry.get("envs")) + _strings(entry.get("env")))
        for entry in _items(root.get("helmCharts")):
            named.extend(_strings(entry.get("valuesFile")))
            named.extend(_strings(entry.get("additionalValuesFiles")))
        for entry in _items(root.get("replacements")):
            named.extend(_strings(entry.get("path")))
        dirs, files = list(dirs), list(files)
        listed = [r for k in ("resources", "bases", "components") for r in _strings(root.get(k))]
        if any(root.get(k) is not None for k in _PLUGINS) or any(
            not _local(r) for r in named + listed
        ):
            self._open.add(directory)
        for ref in filter(_local, named):
            target = join(directory, ref)
            if self.files.is_dir(target) and kustomization_in(self.files, target):
                dirs.append(target)
            else:
                files.append(target)
        if any(p.startswith("../") for p in dirs + files):
            self._open.add(directory)
        self._reads[directory] = dirs, files
        return dirs, files

    def of(self, directory: str) -> tuple[set[str], set[str]]:
        """(files, kustomization directories) a build of ``directory`` reads, transitively;
        a kustomization that cannot be read counts as read, with its file. Each directory's
        answer is kept, so a base shared by many overlays is walked once."""
        known = self._of.get(directory)
        if known is not None:
            return set(known[0]), set(known[1])
        files: set[str] = set()
        dirs: set[str] = set()
        self._of[directory] = (frozenset(), frozenset())  # a cycle reads nothing more
        kfile = kustomization_in(self.files, directory)
        if kfile is not None and not directory.startswith("../"):
            dirs.add(directory)
            try:
                subdirs, refs = self.reads(directory)
            except ManifestError:
                subdirs, refs = [], [kfile]
                self._open.add(directory)
            files.update(r for r in refs if not r.startswith("../"))
            for sub in subdirs:
                sub_files, sub_dirs = self.of(sub)
                files |= sub_files
                dirs |= sub_dirs
        self._of[directory] = (frozenset(files), frozenset(dirs))
        return files, dirs

    def sealed(self, directory: str) -> bool:
        """Whether the files ``of`` lists are everything a build of ``directory`` reads: no
        remote resource, no path outside the repository, no plugin, every kustomization read."""
        _, dirs = self.of(directory)
        return bool(dirs) and not (dirs & self._open)


def _items(node: YNode | None) -> list[YMap]:
    return [i for i in node.items if isinstance(i, YMap)] if isinstance(node, YSeq) else []


@dataclass(slots=True)
class Renders:
    """Every render root of a checkout and, per file, the roots that read it."""

    roots: list[RenderRoot] = field(default_factory=list)
    readers: dict[str, list[RenderRoot]] = field(default_factory=dict)

    def reading(self, path: str) -> list[RenderRoot]:
        """The roots whose render reads ``path``."""
        return self.readers.get(path, [])

    def others(
        self, paths: Iterable[str], environments: Sequence[tuple[str, str | None]]
    ) -> list[RenderRoot]:
        """The roots that read one of ``paths`` and deploy none of ``environments``
        (``(kind, directory)`` pairs)."""
        out: dict[str, RenderRoot] = {}
        for path in paths:
            for root in self.reading(path):
                if not any(root.deploys(kind, d) for kind, d in environments):
                    out[root.directory] = root
        return [out[d] for d in sorted(out)]


def find_renders(
    closure: Closure, charts: Sequence[str], environments: Sequence[tuple[str, str]]
) -> Renders:
    """The render roots of the checkout ``closure`` reads (``charts``: chart directories, whose
    files are never roots; ``environments``: (name, directory) of configured environments)."""
    files = closure.files
    every = files.everything()

    def in_chart(path: str) -> bool:
        return any(_under(path, c) or path == c for c in charts)

    kdirs = sorted(
        {
            _dir(p)
            for p in every
            if PurePosixPath(p).name in KUSTOMIZATION_FILES and not in_chart(_dir(p))
        }
    )
    included: set[str] = set()
    components: set[str] = set()
    for directory in kdirs:
        try:
            dirs, _ = closure.reads(directory)
            if closure.kustomizer.kind(directory) == "Component":
                components.add(directory)
        except ManifestError:
            continue
        included.update(dirs)
    wanted: dict[str, tuple[list[str], bool]] = {
        d: (
            [
                "a kustomization other ones include"
                if d in included
                else "a kustomization no other one includes"
            ],
            True,
        )
        for d in kdirs
        if d not in components
    }
    for name, directory in environments:
        wanted.setdefault(directory, ([], True))[0].append(f"environment {name!r}")
    for directory, why, recurse in _deployers(files, every):
        whys, recursive = wanted.setdefault(directory, ([], recurse))
        whys.append(why)
        wanted[directory] = (whys, recursive or recurse)
    renders = Renders()
    for directory, (whys, recurse) in sorted(wanted.items()):
        kfile = kustomization_in(files, directory)
        if kfile is not None:
            read, includes = closure.of(directory)
        else:
            read, includes = _plain(
                directory,
                recurse=recurse,
                every=every,
                kdirs=kdirs,
                closure=closure,
                in_chart=in_chart,
            )
        why = "; ".join(dict.fromkeys(whys))
        root = RenderRoot(directory, kfile, frozenset(read), frozenset(includes), why)
        renders.roots.append(root)
        for path in read:
            renders.readers.setdefault(path, []).append(root)
    return renders


def _plain(
    directory: str,
    *,
    recurse: bool,
    every: list[str],
    kdirs: list[str],
    closure: Closure,
    in_chart: Callable[[str], bool],
) -> tuple[set[str], set[str]]:
    """(files, kustomization directories) a plain directory root applies: its YAML files (below
    it too when ``recurse``) but a chart's (values and templates are not manifests), a
    kustomization below it as a whole."""
    inner = [d for d in kdirs if _under(d, directory)]
    if not recurse:
        inner = [d for d in inner if _dir(d) == directory]
    read: set[str] = set()
    includes: set[str] = set()
    for sub in inner:
        if any(_under(sub, other) for other in inner):
            continue  # inside another kustomization below the directory
        found, dirs = closure.of(sub)
        read |= found
        includes |= dirs
    for path in every:
        if (
            _under(path, directory)
            and PurePosixPath(path).suffix in YAML_SUFFIXES
            and (recurse or _dir(path) == directory)
            and not any(_under(path, d) for d in inner)
            and not in_chart(path)
        ):
            read.add(path)
    return read, includes


def _deployers(files: RepoFiles, every: list[str]) -> list[tuple[str, str, bool]]:
    """(directory, why, recurse) of every Flux ``Kustomization`` / Argo CD ``Application`` path
    that names a directory of this checkout."""
    out = []
    for path in every:
        if PurePosixPath(path).suffix not in YAML_SUFFIXES:
            continue
        try:
            if not DEPLOYERS.search(files.read(path)):
                continue
            documents = files.parse(path).documents
        except ManifestError:
            continue
        for doc in documents:
            root = doc.root
            if not isinstance(root, YMap):
                continue
            api, kind = _text(root.get("apiVersion")), _text(root.get("kind"))
            meta = root.get("metadata")
            name = _text(meta.get("name")) if isinstance(meta, YMap) else ""
            spec = root.get("spec")
            if not isinstance(spec, YMap):
                continue
            sources: list[tuple[YNode | None, bool]] = []
            if api.startswith("kustomize.toolkit.fluxcd.io/") and kind == "Kustomization":
                sources.append((spec.get("path"), True))
            elif api.startswith("argoproj.io/") and kind == "Application":
                for source in [spec.get("source"), *_items(spec.get("sources"))]:
                    if isinstance(source, YMap):
                        directory = source.get("directory")
                        recurse = isinstance(directory, YMap) and _text(
                            directory.get("recurse")
                        ) in ("true", "True")
                        sources.append((source.get("path"), recurse))
            for node, recurse in sources:
                target = normalize(_text(node))
                if node is None or target.startswith("../") or not files.is_dir(target):
                    continue
                assert isinstance(node, YScalar)
                why = f"{kind} {name} ({path}:{node.line + 1})"
                out.append((target, why, recurse))
    return out


def _text(node: YNode | None) -> str:
    return str(node.value) if isinstance(node, YScalar) and node.value is not None else ""


def changed_renders(
    before: Path, after: Path, roots: Iterable[RenderRoot], changed: set[str]
) -> list[tuple[RenderRoot, str]]:
    """The roots whose render differs between the checkouts ``before`` and ``after``, with why.

    A kustomization is rendered by ``kubectl kustomize`` in both and compared byte for byte (a
    render that fails in both counts as unchanged; one that fails only after has changed); a
    plain directory changes when one of its files is in ``changed``.
    """
    out = []
    for root in roots:
        if root.kustomization is None:
            hit = sorted(root.files & changed)
            if hit:
                out.append((root, f"it applies {hit[0]}"))
            continue
        old, new = _render(before, root), _render(after, root)
        if old != new:
            out.append((root, "its kubectl kustomize output changes"))
    return out


def _render(checkout: Path, root: RenderRoot) -> str:
    assert root.kustomization is not None
    try:
        return render_text(checkout, root.directory, root.kustomization)
    except ManifestError as exc:  # the same failure reads the same in both checkouts
        text = str(exc)
        for where in {str(checkout), str(checkout.resolve())}:
            text = text.replace(where, "")
        return f"error: {text}"
