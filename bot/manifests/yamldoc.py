"""YAML files as text plus a node tree with exact character spans, parsed once.

ruamel.yaml composes the documents (its C parser when ``ruamel.yaml.clib`` is installed, else the
pure-Python one; both report the same marks); this module turns the composed nodes into light
``YMap``/``YSeq``/``YScalar`` nodes that keep ``start``/``end`` character offsets into
``YamlFile.text`` (the file decoded, byte-order mark removed). The editor replaces those spans
and nothing else, so a file is never re-dumped.

Guards: files larger than the configured limit, non-UTF-8 files, duplicate keys, documents
nested deeper than ``bot.nesting.MAX_NESTING`` (checked before composing: the C composer
recurses per level), aliases that refer to a node containing them and alias bombs (aliases
that expand to more than ``MAX_EXPANDED_NODES`` nodes; the nodes written out in the file do not
count, so a large plain file is bounded by its size alone) raise ``ManifestParseError`` with
the line.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from bot.manifests.errors import ManifestParseError
from bot.nesting import NestingError, check_yaml

try:  # the C parser is about 25 times faster; marks are identical
    from ruamel.yaml.cyaml import CSafeLoader

    _C_LOADER: type[CSafeLoader] | None = CSafeLoader
except ImportError:  # pragma: no cover - depends on the installed wheel
    _C_LOADER = None

BOM = "\ufeff"
"""UTF-8 byte-order mark, kept aside and written back unchanged."""
MAX_EXPANDED_NODES = 250_000
"""Nodes the aliases of one file may expand to; more is an alias bomb."""

_MERGE_TAG = "tag:yaml.org,2002:merge"
_TAG = "tag:yaml.org,2002:"


@dataclass(eq=False, slots=True)
class YNode:
    """A node with its character span ``[start, end)`` in the file text and 0-based line."""

    start: int
    end: int
    line: int
    column: int


@dataclass(eq=False, slots=True)
class YScalar(YNode):
    """A scalar: ``value`` resolved (str, int, float, bool, None), ``text`` as composed, ``style``."""

    value: Any = None
    text: str = ""
    style: str = ""
    """``''`` plain, ``"`` or ``'`` quoted, ``|`` or ``>`` block."""


@dataclass(eq=False, slots=True)
class YMap(YNode):
    """A mapping; ``items`` in file order as (key scalar, value node)."""

    items: list[tuple[YScalar, YNode]] = field(default_factory=list)
    flow: bool = False

    def get(self, key: str) -> YNode | None:
        """The value node of ``key``, or None."""
        for k, v in self.items:
            if k.value == key:
                return v
        return None

    def key_node(self, key: str) -> YScalar | None:
        """The key node of ``key``, or None."""
        for k, _ in self.items:
            if k.value == key:
                return k
        return None


@dataclass(eq=False, slots=True)
class YSeq(YNode):
    """A sequence."""

    items: list[YNode] = field(default_factory=list)
    flow: bool = False


@dataclass(eq=False, slots=True)
class YDocument:
    """One document of a file: ``index`` 0-based, ``root`` None for an empty document."""

    index: int
    root: YNode | None


@dataclass(eq=False, slots=True)
class YamlFile:
    """A parsed file: repository-relative ``path``, original ``raw`` bytes, decoded ``text``."""

    path: str
    raw: bytes
    text: str
    bom: bool
    newline: str
    documents: list[YDocument]
    problems: tuple[ManifestParseError, ...] = ()
    """Documents that do not parse (the others are in ``documents``): the file is read-only."""

    def line_of(self, offset: int) -> int:
        """1-based line of a character offset."""
        return self.text.count("\n", 0, offset) + 1

    def encode(self, text: str) -> bytes:
        """Bytes of a new text of this file (BOM restored)."""
        return ((BOM if self.bom else "") + text).encode("utf-8")


def decode(path: str, raw: bytes) -> tuple[str, bool]:
    """The text of ``raw`` without its BOM, and whether it had one."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ManifestParseError(path, line, f"not UTF-8 text: {exc.reason}") from exc
    if text.startswith(BOM):
        return text[1:], True
    return text, False


def _compose(text: str) -> Iterator[Node]:
    if _C_LOADER is not None:
        loader = _C_LOADER(text)
        try:
            while loader.check_node():
                yield loader.get_node()
        finally:
            loader.dispose()
    else:  # pragma: no cover
        yield from YAML(typ="rt", pure=True).compose_all(text)


def _resolve(node: ScalarNode) -> Any:
    tag = node.tag or ""
    text = node.value
    if node.style or not tag.startswith(_TAG):
        return text
    kind = tag[len(_TAG) :]
    try:
        if kind == "null":
            return None
        if kind == "bool":
            return text.lower() in ("true", "yes", "on", "y")
        if kind == "int":
            digits = text.replace("_", "")
            try:
                return int(digits, 0)
            except ValueError:
                return int(digits, 10)
        if kind == "float":
            low = text.lower()
            if low.endswith("inf"):
                return -math.inf if low.startswith("-") else math.inf
            if low.endswith("nan"):
                return math.nan
            return float(text.replace("_", ""))
    except ValueError:
        return text
    return text


class _Builder:
    def __init__(self, path: str, offset: int = 0, line: int = 0) -> None:
        self.path = path
        self.offset, self.line = offset, line
        """Where the composed text starts in the file: character offset and 0-based line."""
        self.seen: dict[int, tuple[Node, YNode]] = {}
        """Built nodes by ``id`` of the composed node, which is kept alive so ids stay unique."""
        self.aliased = 0
        """Nodes the aliases seen so far stand for (the written nodes do not count)."""
        self.sizes: dict[int, int] = {}
        """Expanded node count of each built collection (aliases counted in full)."""
        self.open: set[int] = set()
        """Collections being built: an alias to one of them would make the tree infinite."""

    def build(self, node: Node) -> YNode:
        """Our node for a composed node; aliases share the node already built."""
        hit = self.seen.get(id(node))
        if hit is not None and hit[0] is node:  # an alias: count its expansion, share the node
            if id(node) in self.open:
                raise ManifestParseError(
                    self.path,
                    node.start_mark.line + self.line + 1,
                    "an alias refers to a collection that contains it",
                )
            self.aliased += self.sizes.get(id(hit[1]), 1)
            self._check(node)
            return hit[1]
        start, end = node.start_mark.index + self.offset, node.end_mark.index + self.offset
        line, col = node.start_mark.line + self.line, node.start_mark.column
        out: YNode
        if isinstance(node, ScalarNode):
            out = YScalar(start, end, line, col, _resolve(node), node.value, node.style or "")
        elif isinstance(node, SequenceNode):
            seq = YSeq(start, end, line, col, [], bool(node.flow_style))
            self.seen[id(node)] = (node, seq)
            self.open.add(id(node))
            seq.items = [self.build(item) for item in node.value]
            self.open.discard(id(node))
            out = seq
        elif isinstance(node, MappingNode):
            ymap = YMap(start, end, line, col, [], bool(node.flow_style))
            self.seen[id(node)] = (node, ymap)
            self.open.add(id(node))
            ymap.items = self._items(node)
            self.open.discard(id(node))
            out = ymap
        else:  # pragma: no cover - composer yields only these
            raise ManifestParseError(self.path, line + 1, f"unexpected node {type(node).__name__}")
        self.seen[id(node)] = (node, out)
        if isinstance(out, YMap):
            self.sizes[id(out)] = 1 + sum(self.sizes.get(id(v), 1) for _, v in out.items)
        elif isinstance(out, YSeq):
            self.sizes[id(out)] = 1 + sum(self.sizes.get(id(v), 1) for v in out.items)
        return out

    def _check(self, node: Node) -> None:
        if self.aliased > MAX_EXPANDED_NODES:
            raise ManifestParseError(
                self.path,
                node.start_mark.line + self.line + 1,
                f"aliases expand to more than {MAX_EXPANDED_NODES} nodes (alias bomb?)",
            )

    def _items(self, node: MappingNode) -> list[tuple[YScalar, YNode]]:
        items: list[tuple[YScalar, YNode]] = []
        first_line: dict[Any, int] = {}
        merged: list[tuple[YScalar, YNode]] = []
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE_TAG:
                source = self.build(value_node)
                sources = source.items if isinstance(source, YSeq) else [source]
                for src in sources:
                    if isinstance(src, YMap):
                        merged.extend(src.items)
                continue
            key = self.build(key_node)
            if not isinstance(key, YScalar):
                raise ManifestParseError(
                    self.path,
                    key_node.start_mark.line + self.line + 1,
                    "complex mapping keys are not supported",
                )
            hashable = key.value if not isinstance(key.value, float) else repr(key.value)
            if hashable in first_line:
                raise ManifestParseError(
                    self.path,
                    key.line + 1,
                    f"duplicate key {key.text!r} (first at line {first_line[hashable]})",
                )
            first_line[hashable] = key.line + 1
            items.append((key, self.build(value_node)))
        for key, value in merged:  # explicit keys win over merged ones
            if key.value not in first_line:
                first_line[key.value] = key.line + 1
                items.append((key, value))
        return items


def parse_text(path: str, text: str) -> list[YDocument]:
    """The documents of ``text`` (no BOM); raises ``ManifestParseError`` with the line."""
    return _parse_span(path, text, 0, 0, 0)


def _parse_span(path: str, text: str, offset: int, line: int, first: int) -> list[YDocument]:
    """The documents of ``text``, which starts at character ``offset`` and 0-based ``line`` of
    the file and holds its documents from index ``first`` on."""
    builder = _Builder(path, offset, line)
    docs: list[YDocument] = []
    try:
        check_yaml(text)
        for index, node in enumerate(_compose(text), start=first):
            root = builder.build(node)
            empty = isinstance(root, YScalar) and root.value is None and root.start == root.end
            docs.append(YDocument(index, None if empty else root))
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        at = mark.line + line + 1 if mark is not None else 0
        problem = exc.problem or exc.context or "invalid YAML"
        raise ManifestParseError(path, at, f"invalid YAML: {problem}") from exc
    except YAMLError as exc:
        raise ManifestParseError(path, 0, f"invalid YAML: {exc}") from exc
    except NestingError as exc:
        raise ManifestParseError(path, exc.line + line, str(exc)) from exc
    return docs


_DOCUMENT_START = re.compile(r"^---(?=[ \t\r\n]|$)", re.MULTILINE)
"""A ``---`` marker at the start of a line: never inside a document's content (YAML 1.2,
``c-forbidden``), so a file splits into its documents there without parsing it."""


def parse_documents(path: str, text: str) -> tuple[list[YDocument], list[ManifestParseError]]:
    """Every document of ``text`` that parses, and a problem per document that does not.

    The whole text is parsed first; only when that fails is each document (split at its
    ``---`` line) parsed on its own, so one broken document does not hide the others. A broken
    document keeps its place as an empty ``YDocument`` (indices stay those of the file).
    """
    try:
        return parse_text(path, text), []
    except ManifestParseError as whole:
        starts = [m.start() for m in _DOCUMENT_START.finditer(text)]
        if not starts or starts[0] != 0:
            starts.insert(0, 0)
        if len(starts) > 1 and _only_directives(text[: starts[1]]):
            del starts[1]  # directives and comments belong to the document after them
        if len(starts) < 2:
            raise whole from None
    docs: list[YDocument] = []
    problems: list[ManifestParseError] = []
    for begin, end in zip(starts, [*starts[1:], len(text)], strict=True):
        part = text[begin:end]
        line = text.count("\n", 0, begin)
        try:
            found = _parse_span(path, part, begin, line, len(docs))
        except ManifestParseError as exc:
            problems.append(exc)
            docs.append(YDocument(len(docs), None))
            continue
        docs.extend(found)
    if not any(doc.root is not None for doc in docs):
        raise problems[0]
    return docs, problems


def _only_directives(text: str) -> bool:
    """Whether ``text`` holds only ``%`` directives and comments (what precedes a ``---``)."""
    return all(not ln.strip() or ln.lstrip().startswith(("%", "#")) for ln in text.splitlines())


def newline_of(text: str) -> str:
    """The file's line ending: ``\\r\\n`` when its first line ends so, else ``\\n``."""
    first = text.find("\n")
    return "\r\n" if first > 0 and text[first - 1] == "\r" else "\n"


def parse_file(path: str, raw: bytes) -> YamlFile:
    """Decode and parse a whole file; a file where only some documents are broken is returned
    with the others and ``problems`` (such a file is read, never edited). Raises
    ``ManifestParseError`` when nothing of it can be read."""
    text, bom = decode(path, raw)
    docs, problems = parse_documents(path, text)
    return YamlFile(path, raw, text, bom, newline_of(text), docs, tuple(problems))


def plain_data(node: Node) -> Any:
    """Plain Python data of a composed node, scalars resolved as ``YScalar.value`` is.

    For generated YAML without anchors or merge keys (``kubectl kustomize`` output): twice as fast
    as ruamel.yaml's safe constructor on the same composed input, and it resolves scalars exactly
    as the source files are resolved, so rendered and replayed values compare like for like.
    """
    if isinstance(node, ScalarNode):
        return _resolve(node)
    if isinstance(node, MappingNode):
        return {plain_data(k): plain_data(v) for k, v in node.value}
    return [plain_data(item) for item in node.value]


def load_plain(text: str) -> list[Any]:
    """Every document of generated YAML as plain data (see ``plain_data``); raises
    ``bot.nesting.NestingError`` for a document nested too deeply."""
    check_yaml(text)
    return [plain_data(node) for node in _compose(text)]


def to_data(node: YNode | None) -> Any:
    """Plain Python data (dict, list, scalars) of a node; aliases become shared copies."""
    if node is None:
        return None
    if isinstance(node, YScalar):
        return node.value
    if isinstance(node, YSeq):
        return [to_data(item) for item in node.items]
    assert isinstance(node, YMap)
    return {k.value: to_data(v) for k, v in node.items}


def walk(node: YNode, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], YNode]]:
    """Every (path, node) under ``node``, ``node`` first; paths use keys and list indices."""
    yield path, node
    if isinstance(node, YMap):
        for key, value in node.items:
            yield from walk(value, (*path, key.value))
    elif isinstance(node, YSeq):
        for index, item in enumerate(node.items):
            yield from walk(item, (*path, index))


def node_at(root: YNode | None, path: tuple[Any, ...]) -> YNode | None:
    """The node at ``path`` under ``root``, or None."""
    node = root
    for part in path:
        if isinstance(node, YMap) and isinstance(part, str):
            node = node.get(part)
        elif isinstance(node, YSeq) and isinstance(part, int) and 0 <= part < len(node.items):
            node = node.items[part]
        else:
            return None
    return node
