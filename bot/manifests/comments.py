"""Comments of lines an edit rewrites or removes: every one survives.

A scalar replacement keeps its line, and with it every comment. An edit that rewrites whole
lines (a pod-level ``Resource`` metric replaced by ``ContainerResource`` items) or removes them
(a metric, a key) would take the comments of those lines with it; this module keeps them:

- ``carry``: the comments of an old block, each tied to the key path of the line it sits on
  (a trailing ``# ...``) or above (full comment lines), then ``place`` writes them at the same
  key of the new lines: above that line, or at its end. A key the new lines do not have takes
  the comments at its nearest ancestor that they have, else at their first line.
- ``kept``: the comment lines of a removed block, in order, as full lines; a trailing comment
  becomes a comment line at the indentation of the line it ended.

A comment is a ``#`` at the start of a line or after a blank, outside quotes
(YAML 1.2, 6.6: "Comments must be separated from other tokens by white space characters").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeAlias

from bot.manifests.yamldoc import YMap, YNode, YSeq

KeyPath: TypeAlias = tuple[str | int, ...]
"""Keys and list indices from the rewritten node down to one line's key."""
Line: TypeAlias = tuple[KeyPath, str]
"""One rendered line (without its line ending) and the path of the key it writes, relative to
the rendered tree (list items add their index)."""


def comment_start(line: str) -> int | None:
    """Index of the ``#`` that starts a comment in one line of YAML, or None."""
    quote = ""
    for index, char in enumerate(line):
        if quote:
            if char == quote:
                quote = ""
        elif char in "'\"" and (index == 0 or line[index - 1] in " \t[{,:-"):
            quote = char
        elif char == "#" and (index == 0 or line[index - 1] in " \t"):
            return index
    return None


def _trailing(line: str) -> str | None:
    """The comment at the end of a content line, with the blanks before it (`` # why``)."""
    at = comment_start(line)
    if at is None or not line[:at].strip():
        return None
    return line[len(line[:at].rstrip()) :]


def _key_lines(node: YNode, path: KeyPath = ()) -> dict[int, KeyPath]:
    """0-based file line -> path of the deepest key written on it, under ``node``."""
    out: dict[int, KeyPath] = {}
    if isinstance(node, YMap) and not node.flow:
        for key, value in node.items:
            here = (*path, key.value)
            out[key.line] = here
            out.update(_key_lines(value, here))
    elif isinstance(node, YSeq) and not node.flow:
        for index, item in enumerate(node.items):
            out.setdefault(item.line, (*path, index))
            out.update(_key_lines(item, (*path, index)))
    return out


@dataclass(slots=True)
class Carried:
    """Comments of an old block by the key path of the line they belong to."""

    above: dict[KeyPath, list[str]] = field(default_factory=dict)
    """Full comment lines (their own text, without the line ending) above that key's line."""
    trailing: dict[KeyPath, str] = field(default_factory=dict)
    """The comment at the end of that key's line, blanks before it included."""
    after: list[str] = field(default_factory=list)
    """Comment lines after the block's last content line."""

    def __bool__(self) -> bool:
        return bool(self.above or self.trailing or self.after)


def _lines(text: str, start: int, end: int) -> list[str]:
    """The lines of ``text[start:end]`` (whole lines), without their line endings."""
    return [line.removesuffix("\r") for line in text[start:end].split("\n")][
        : text.count("\n", start, end) + (0 if text[start:end].endswith("\n") else 1)
    ]


def carry(text: str, start: int, end: int, node: YNode) -> Carried:
    """The comments of the whole lines ``text[start:end]``, which hold ``node``."""
    first = text.count("\n", 0, start)
    keys = _key_lines(node)
    out = Carried()
    pending: list[str] = []
    current: KeyPath = ()
    for offset, line in enumerate(_lines(text, start, end)):
        if not line.strip():
            continue
        if line.lstrip().startswith("#"):
            pending.append(line)
            continue
        current = keys.get(first + offset, current)
        if pending:
            out.above.setdefault(current, []).extend(pending)
            pending = []
        comment = _trailing(line)
        if comment is not None:
            out.trailing[current] = out.trailing.get(current, "") + comment
    out.after = pending
    return out


def place(
    lines: list[Line], carried: Carried, translate: Callable[[KeyPath], KeyPath] = lambda p: p
) -> list[str]:
    """``lines`` as text, with the ``carried`` comments at the line of the same key
    (``translate`` maps an old key path to the new one)."""
    paths = {path for path, _ in lines}

    def target(path: KeyPath) -> KeyPath:
        path = translate(path)
        while path and path not in paths:
            path = path[:-1]
        return path if path in paths else lines[0][0]

    above: dict[KeyPath, list[str]] = {}
    trailing: dict[KeyPath, str] = {}
    for path, comments in carried.above.items():
        above.setdefault(target(path), []).extend(comments)
    for path, comment in carried.trailing.items():
        where = target(path)
        trailing[where] = trailing.get(where, "") + comment
    out: list[str] = []
    for path, text in lines:
        out.extend(above.pop(path, []))
        out.append(text + trailing.pop(path, ""))
    out.extend(carried.after)
    return out


def kept(text: str, start: int, end: int) -> list[str]:
    """The comments of the whole lines ``text[start:end]`` that are being removed, as comment
    lines: full comment lines as they are, trailing comments at their line's indentation."""
    out = []
    for line in _lines(text, start, end):
        stripped = line.lstrip()
        if stripped.startswith("#"):
            out.append(line)
            continue
        comment = _trailing(line)
        if comment is not None:
            out.append(line[: len(line) - len(stripped)] + comment.lstrip())
    return out
