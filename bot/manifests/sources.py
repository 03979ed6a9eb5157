"""Kubernetes objects as an environment sees them, with the file position of every value.

An ``Obj`` holds the object's data (as rendered for the environment) and, for every path in it,
the ``Origin`` list of the YAML nodes that wrote it, last one winning (a base, then the overlay
patches that change it). YAML embedded in a string (a kustomization's inline ``patch: |``, an Argo
CD ``values: |``) is parsed too; ``Inline`` maps its offsets back into the outer file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bot.manifests.errors import ManifestParseError
from bot.manifests.yamldoc import (
    YamlFile,
    YDocument,
    YMap,
    YNode,
    YScalar,
    YSeq,
    node_at,
    parse_text,
    to_data,
    walk,
)

Path_ = tuple[Any, ...]

LIST_KINDS = frozenset({"List"})
"""Kinds whose ``items`` are objects (``kind: List``, ``v1`` lists such as ``DeploymentList``)."""

MERGE_KEYS: dict[str, str] = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "env": "name",
    "ports": "containerPort",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "imagePullSecrets": "name",
    "tolerations": "key",
}
"""Lists a strategic-merge patch merges by key (``k8s.io/api`` ``patchMergeKey`` tags)."""


@dataclass(eq=False, slots=True)
class Inline:
    """YAML inside a block scalar of ``outer``: inner line ``i`` starts at ``starts[i]`` outside."""

    outer: YamlFile
    inner_text: str
    starts: list[int]
    first_line: int
    """0-based outer line of inner line 0."""
    indent: int = 0
    """Columns of the block's indentation in the outer file."""

    def to_outer(self, offset: int) -> int:
        """The outer-file offset of an offset in the inner text."""
        line = self.inner_text.count("\n", 0, offset)
        line_start = self.inner_text.rfind("\n", 0, offset) + 1
        return self.starts[line] + (offset - line_start)


@dataclass(eq=False, slots=True)
class Origin:
    """Where one node is written: file, document index, YAML path in that document, node."""

    file: str
    document: int
    path: Path_
    node: YNode
    inline: Inline | None = None

    @property
    def line(self) -> int:
        """1-based line in the (outer) file."""
        if self.inline is not None:
            return self.inline.first_line + self.node.line + 1
        return self.node.line + 1


PatchKey = tuple[str, int, int]
"""One patch document: (file, document index, first line of an inline patch or -1)."""


def patch_key(file: str, document: int, inline: Inline | None) -> PatchKey:
    """The ``PatchKey`` of a document of ``file`` (inside ``inline`` when given)."""
    return (file, document, inline.first_line if inline is not None else -1)


@dataclass(eq=False, slots=True)
class Obj:
    """One object in one environment."""

    data: dict[str, Any]
    table: dict[Path_, list[Origin]] | None
    """Origins by path; None until a patch changes the object (then read from ``root``)."""
    root: Origin
    files: set[str] = field(default_factory=set)
    original_name: str = ""
    source_namespace: str | None = None
    extra: dict[Path_, list[Origin]] = field(default_factory=dict)
    """Single values set on top of an unbuilt table (Kustomize ``namespace:``, ``replicas:``)."""
    modelled: bool = True
    """False for a rendered object the replay did not produce (a generator, a transformer it
    does not model): ``root`` then names the kustomization, which is no place for its keys."""

    @property
    def kind(self) -> str:
        """``kind`` as rendered."""
        return str(self.data.get("kind", ""))

    @property
    def api_version(self) -> str:
        """``apiVersion`` as rendered."""
        return str(self.data.get("apiVersion", ""))

    @property
    def name(self) -> str:
        """``metadata.name`` as rendered (empty when missing)."""
        meta = self.data.get("metadata")
        name = meta.get("name") if isinstance(meta, dict) else None
        return str(name) if name is not None else ""

    @property
    def namespace(self) -> str | None:
        """``metadata.namespace`` as rendered, or None."""
        meta = self.data.get("metadata")
        ns = meta.get("namespace") if isinstance(meta, dict) else None
        return str(ns) if ns is not None else None

    @property
    def origins(self) -> dict[Path_, list[Origin]]:
        """Every path's origins (built from the defining document on first use)."""
        if self.table is None:
            root = self.root
            self.table = origins_of(root.file, root.document, root.node, root.path, root.inline)
            self.table.update(self.extra)
            self.extra = {}
        return self.table

    def set_origin(self, path: Path_, where: Origin) -> None:
        """Record that ``where`` alone writes the scalar at ``path``."""
        if self.table is None:
            self.extra[path] = [where]
        else:
            self.table[path] = [where]

    def origins_at(self, path: Path_) -> list[Origin]:
        """The origins of one path, last one winning, without building the whole table."""
        if self.table is not None:
            return self.table.get(path, [])
        if path in self.extra:
            return self.extra[path]
        root = self.root
        node = node_at(root.node, path)
        if node is None:
            return []
        return [Origin(root.file, root.document, (*root.path, *path), node, root.inline)]

    def origin(self, path: Path_) -> Origin | None:
        """The node that writes ``path`` last, or None."""
        found = self.origins_at(path)
        return found[-1] if found else None


def origins_of(
    file: str, document: int, node: YNode, doc_path: Path_, inline: Inline | None = None
) -> dict[Path_, list[Origin]]:
    """Origins of every node under ``node``, keyed by path relative to it."""
    n = len(doc_path)
    return {
        path[n:]: [Origin(file, document, path, sub, inline)] for path, sub in walk(node, doc_path)
    }


def objects_in(file: YamlFile, inline: Inline | None = None) -> list[Obj]:
    """Every Kubernetes object (a mapping with ``kind``) in a file, ``List`` items expanded."""
    out: list[Obj] = []
    for doc in file.documents:
        out.extend(objects_in_document(file.path, doc, inline))
    return out


def objects_in_document(path: str, doc: YDocument, inline: Inline | None = None) -> list[Obj]:
    """The objects of one document (``List`` items expanded)."""
    root = doc.root
    if not isinstance(root, YMap):
        return []
    kind = root.get("kind")
    if not isinstance(kind, YScalar) or not isinstance(kind.value, str):
        return []
    found: list[tuple[YMap, Path_]] = []
    items = root.get("items")
    if (kind.value in LIST_KINDS or kind.value.endswith("List")) and isinstance(items, YSeq):
        found.extend(
            (item, ("items", i)) for i, item in enumerate(items.items) if isinstance(item, YMap)
        )
    else:
        found.append((root, ()))
    out = []
    for node, doc_path in found:
        data = to_data(node)
        if not isinstance(data, dict) or not isinstance(data.get("kind"), str):
            continue
        obj = Obj(data, None, Origin(path, doc.index, doc_path, node, inline), {path})
        obj.original_name = obj.name
        obj.source_namespace = obj.namespace
        out.append(obj)
    return out


def parse_inline(outer: YamlFile, node: YNode, what: str) -> tuple[list[YDocument], Inline | None]:
    """Parse a string node holding YAML; the ``Inline`` is None when offsets cannot be mapped."""
    if not isinstance(node, YScalar) or not isinstance(node.value, str):
        raise ManifestParseError(outer.path, node.line + 1, f"{what} must be a YAML string")
    inner = node.value
    try:
        docs = parse_text(outer.path, inner)
    except ManifestParseError as exc:
        raise ManifestParseError(
            outer.path, node.line + 1 + exc.line, f"in {what}: {exc.message}"
        ) from exc
    return docs, _inline_map(outer, node, inner)


def _inline_map(outer: YamlFile, node: YScalar, inner: str) -> Inline | None:
    """Offsets of a literal block scalar's lines in the outer text, verified line by line."""
    if node.style != "|":
        return None
    text = outer.text
    pos = text.find("\n", node.start)
    if pos < 0:
        return None
    pos += 1
    lines = inner.split("\n")
    indent = None
    starts: list[int] = []
    first_line = outer.text.count("\n", 0, pos)
    for number, content in enumerate(lines):
        if number == len(lines) - 1 and not content:  # after the final line break
            starts.append(pos)
            break
        end = text.find("\n", pos)
        end = len(text) if end < 0 else end
        outer_line = text[pos:end].rstrip("\r")
        if content:
            if indent is None:
                indent = len(outer_line) - len(outer_line.lstrip(" "))
            if outer_line[indent:] != content:
                return None
            starts.append(pos + indent)
        else:
            if outer_line.strip() and pos < len(text):
                return None
            starts.append(pos + min(indent or 0, len(outer_line)))
        pos = end + 1
    return Inline(outer, inner, starts, first_line, indent or 0)
