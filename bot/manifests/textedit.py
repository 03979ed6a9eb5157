"""Span edits: replace a scalar's text, insert keys, delete keys, then splice from the end.

Every edit is a ``TextEdit(start, end, text)`` on a file's decoded text (see ``yamldoc``). The
rest of the file is never touched: comments (also at the end of a changed line), quoting, key
order, indentation, flow style, document separators, line endings and the final newline stay as
they are. New keys are written in the file's own indentation and line ending.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TypeAlias, Union

from bot.manifests.comments import Line, kept
from bot.manifests.errors import EditError
from bot.manifests.yamldoc import YamlFile, YMap, YNode, YScalar, YSeq, walk

NewTree: TypeAlias = dict[str, Union["NewTree", str, list["NewTree"]]]
"""Keys to add: a nested mapping whose leaves are scalar texts; lists hold mappings."""

DEFAULT_INDENT = 2
"""Indentation step of a file whose own step cannot be seen."""

_PLAIN_SAFE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")


@dataclass(frozen=True, slots=True)
class TextEdit:
    """Replace ``text[start:end]`` with ``text`` (an insertion when start == end)."""

    start: int
    end: int
    text: str


def apply_edits(path: str, text: str, edits: Iterable[TextEdit]) -> str:
    """``text`` with every edit applied, last first; overlapping edits raise ``EditError``."""
    ordered = sorted(edits, key=lambda e: (e.start, e.end))
    for before, after in itertools.pairwise(ordered):
        if after.start < before.end or (after.start == before.start and before.end > before.start):
            raise EditError(path, 0, "two changes overlap in this file")
    out = text
    for edit in reversed(ordered):
        out = out[: edit.start] + edit.text + out[edit.end :]
    return out


def quote_like(node: YScalar, value: str) -> str:
    """``value`` written with the quoting ``node`` uses (plain stays plain when safe)."""
    if node.style == '"':
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if node.style == "'":
        return "'" + value.replace("'", "''") + "'"
    if node.style in ("|", ">"):
        raise EditError("", node.line + 1, "block scalars are not rewritten")
    if not _PLAIN_SAFE.match(value):
        return '"' + value + '"'
    return value


def replace_scalar(file: YamlFile, node: YNode, value: str) -> TextEdit:
    """Replace one scalar's text span with ``value`` in the scalar's own quoting style."""
    if not isinstance(node, YScalar):
        raise EditError(file.path, node.line + 1, "expected a scalar value here")
    if node.style in ("|", ">"):
        raise EditError(file.path, node.line + 1, "block scalars are not rewritten")
    new = quote_like(node, value)
    if node.start == node.end:  # an empty (null) value: ``key:`` maybe followed by a comment
        after = file.text[node.end : node.end + 1]
        lead = "" if file.text[node.start - 1 : node.start] == " " else " "
        return TextEdit(
            node.start, node.end, lead + new + ("" if after in ("", "\r", "\n", " ") else " ")
        )
    return TextEdit(node.start, node.end, new)


def _line_start(text: str, offset: int) -> int:
    return text.rfind("\n", 0, offset) + 1


def after_line(text: str, offset: int) -> int:
    """Offset of the start of the line after the one holding ``offset``."""
    if offset > 0 and text[offset - 1] == "\n":
        return offset
    index = text.find("\n", offset)
    return len(text) if index < 0 else index + 1


def _lines_at(text: str, at: int, block: str, newline: str) -> TextEdit:
    """Insert whole lines at a line start; at the end of a file without a final newline, the
    file keeps having none."""
    if at == 0 or text[at - 1] == "\n":
        return TextEdit(at, at, block)
    return TextEdit(at, at, newline + block.removesuffix(newline))


def last_end(node: YNode) -> int:
    """End offset of the last scalar or flow collection inside a block node."""
    if isinstance(node, YMap) and not node.flow and node.items:
        return last_end(node.items[-1][1])
    if isinstance(node, YSeq) and not node.flow and node.items:
        return last_end(node.items[-1])
    return node.end


def indent_style(root: YNode | None) -> tuple[int, int]:
    """(mapping indentation step, extra indentation of ``-`` under a key) a document uses."""
    step, seq = 0, -1
    if root is None:
        return DEFAULT_INDENT, 0
    for _, node in walk(root):
        if not isinstance(node, YMap) or node.flow:
            continue
        for key, value in node.items:
            if (
                step == 0
                and isinstance(value, YMap)
                and not value.flow
                and value.items
                and value.line > key.line
            ):
                step = value.column - key.column
            if seq < 0 and isinstance(value, YSeq) and not value.flow and value.items:
                first = value.items[0]
                if first.line > key.line:
                    seq = max(0, first.column - 2 - key.column)
            if step > 0 and seq >= 0:
                return step, seq
    return step or DEFAULT_INDENT, max(seq, 0)


def block_lines(
    tree: NewTree, indent: int, step: int, seq: int, path: tuple[str | int, ...] = ()
) -> list[Line]:
    """Block-style YAML lines for ``tree`` at ``indent`` columns, each with its key's path."""
    out: list[Line] = []
    pad = " " * indent
    for key, value in tree.items():
        here = (*path, key)
        if isinstance(value, str):
            out.append((here, f"{pad}{key}: {value}"))
        elif isinstance(value, dict):
            out.append((here, f"{pad}{key}:"))
            out.extend(block_lines(value, indent + step, step, seq, here))
        else:
            out.append((here, f"{pad}{key}:"))
            for index, item in enumerate(value):
                out.extend(item_lines(item, indent + seq, step, seq, (*here, index)))
    return out


def item_lines(
    tree: NewTree, dash_column: int, step: int, seq: int, path: tuple[str | int, ...] = ()
) -> list[Line]:
    """The lines of one ``- key: value`` sequence item whose dash is at ``dash_column``."""
    lines = block_lines(tree, dash_column + 2, step, seq, path)
    if lines:
        first, text = lines[0]
        lines[0] = (first, " " * dash_column + "- " + text[dash_column + 2 :])
    return lines


def render_block(tree: NewTree, indent: int, step: int, seq: int, newline: str) -> str:
    """Block-style YAML for ``tree`` at ``indent`` columns; every line ends with ``newline``."""
    return "".join(text + newline for _, text in block_lines(tree, indent, step, seq))


def render_item(tree: NewTree, dash_column: int, step: int, seq: int, newline: str) -> str:
    """One ``- key: value`` sequence item whose dash is at ``dash_column``."""
    return "".join(text + newline for _, text in item_lines(tree, dash_column, step, seq))


def render_flow(tree: NewTree) -> str:
    """Flow-style YAML for ``tree``: ``a: {b: c}``."""
    parts = []
    for key, value in tree.items():
        if isinstance(value, str):
            parts.append(f"{key}: {value}")
        elif isinstance(value, dict):
            parts.append(f"{key}: {{{render_flow(value)}}}")
        else:
            parts.append(f"{key}: [{', '.join('{' + render_flow(v) + '}' for v in value)}]")
    return ", ".join(parts)


def insert_into_map(
    file: YamlFile, text: str, ymap: YMap, tree: NewTree, *, step: int, seq: int
) -> list[TextEdit]:
    """Edits adding ``tree``'s keys to the mapping ``ymap`` (none of them exist there)."""
    if ymap.flow:
        close = ymap.end - 1
        if text[close] != "}":
            raise EditError(file.path, ymap.line + 1, "cannot find the end of this flow mapping")
        sep = ", " if ymap.items else ""
        return [TextEdit(close, close, sep + render_flow(tree))]
    if not ymap.items:
        raise EditError(file.path, ymap.line + 1, "cannot add keys to an empty block mapping")
    indent = ymap.items[0][0].column
    at = after_line(text, last_end(ymap))
    return [_lines_at(text, at, render_block(tree, indent, step, seq, file.newline), file.newline)]


def insert_under_key(
    file: YamlFile,
    text: str,
    key: YScalar,
    value: YScalar,
    tree: NewTree,
    *,
    step: int,
    seq: int,
) -> list[TextEdit]:
    """Edits turning ``key:`` (with an empty or null value) into a block mapping of ``tree``."""
    if value.value is not None:
        raise EditError(file.path, key.line + 1, f"{key.text!r} is not a mapping")
    edits = []
    if value.end > value.start:  # ``key: ~`` or ``key: null``: drop the null
        edits.append(
            TextEdit(
                value.start - 1 if text[value.start - 1] == " " else value.start, value.end, ""
            )
        )
    at = after_line(text, max(value.end, key.end))
    block = render_block(tree, key.column + step, step, seq, file.newline)
    edits.append(_lines_at(text, at, block, file.newline))
    return edits


def append_to_seq(
    file: YamlFile, text: str, yseq: YSeq, item: NewTree, *, step: int, seq: int
) -> list[TextEdit]:
    """Edits appending one mapping item to the block sequence ``yseq``."""
    if yseq.flow or not yseq.items:
        raise EditError(file.path, yseq.line + 1, "cannot add an item to this sequence")
    first = yseq.items[0]
    dash = text.rfind("-", _line_start(text, first.start), first.start)
    if dash < 0:
        raise EditError(file.path, first.line + 1, "cannot find this sequence's dash")
    column = dash - _line_start(text, dash)
    at = after_line(text, last_end(yseq))
    return [_lines_at(text, at, render_item(item, column, step, seq, file.newline), file.newline)]


def kept_block(file: YamlFile, text: str, start: int, end: int) -> str:
    """The comment lines that stay where the whole lines ``text[start:end]`` are removed, in
    the file's line ending (none after the last one at the end of a file without one)."""
    block = "".join(line + file.newline for line in kept(text, start, end))
    if end == len(text) and not text.endswith("\n"):
        block = block.removesuffix(file.newline)
    return block


def delete_key(file: YamlFile, text: str, ymap: YMap, key: str) -> TextEdit:
    """An edit removing ``key`` and its value from ``ymap`` (whole lines in block style; their
    comments stay, as comment lines: ``comments.kept``)."""
    for index, (knode, value) in enumerate(ymap.items):
        if knode.value != key:
            continue
        if ymap.flow:
            if index + 1 < len(ymap.items):
                return TextEdit(knode.start, ymap.items[index + 1][0].start, "")
            if index > 0:
                return TextEdit(last_end(ymap.items[index - 1][1]), value.end, "")
            return TextEdit(knode.start, value.end, "")
        start = _line_start(text, knode.start)
        if text[start : knode.start].strip():
            raise EditError(file.path, knode.line + 1, f"cannot remove {key!r} from this line")
        end = after_line(text, last_end(value))
        return TextEdit(start, end, kept_block(file, text, start, end))
    raise EditError(file.path, ymap.line + 1, f"no key {key!r} here")
