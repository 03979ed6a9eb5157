"""How deep a document may nest, checked before any parser or recursive code sees it.

Every YAML and JSON document the bot reads (manifests, opt-in files, the bot configuration,
kustomize output, snapshots, ``recommend --input``, the state in a pull request's body) passes
``check_yaml`` or ``check_json`` first. Composing a node tree, building ours, validating it and
walking it all recurse once per level: a document nested tens of thousands of levels deep would
exhaust Python's stack (a ``RecursionError``) or, in the C YAML composer, the C stack (a
segmentation fault that kills the whole process). Both checks are linear and never recurse:

* a bound first, from the text alone: every flow collection starts with ``[`` or ``{``, and a
  block collection is indented deeper than its parent (a sequence at the same column as its
  mapping key at most every other level), so the nesting is at most the count of ``[`` and
  ``{`` plus twice the longest run of indentation and block indicators (``- ``, ``? ``) that
  starts a line. Almost every file is cleared by this bound;
* else the exact depth: YAML through the parser's event stream (a state machine, no recursion),
  JSON by a scan over its brackets outside strings.

Proxy answers that are not read here: Prometheus answers are decoded by orjson, which refuses
more than 1,024 levels itself; GitHub answers are decoded by PyGithub (``json``, which raises
``RecursionError``, translated as a failed request).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.events import CollectionEndEvent, CollectionStartEvent

try:  # the C parser when ruamel.yaml.clib is installed: same events, same marks
    from ruamel.yaml.cyaml import CParser  # type: ignore[attr-defined]

    _C_PARSER: type[CParser] | None = CParser
except ImportError:  # pragma: no cover - depends on the installed wheel
    _C_PARSER = None

MAX_NESTING = 100
"""Levels of collections (mappings, sequences, objects, arrays) one document may nest: more
than any Kubernetes manifest, Helm values file or configuration needs (they stay under 30),
far less than what exhausts a stack."""

_BLOCK_PREFIX = re.compile(r"^[ \t?:-]*", re.MULTILINE)
"""What starts a line before its content: indentation and block indicators."""
_JSON_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)
"""A JSON string (skipped whole) or a bracket."""


class NestingError(ValueError):
    """A document nests deeper than ``MAX_NESTING``; ``line`` is 1-based (where the level past
    the limit opens)."""

    def __init__(self, line: int) -> None:
        super().__init__(f"nested too deeply (more than {MAX_NESTING} levels)")
        self.line = line


def _yaml_events(text: str) -> Iterator[Any]:
    if _C_PARSER is None:  # pragma: no cover - depends on the installed wheel
        yield from YAML(typ="rt", pure=True).parse(text)
        return
    parser = _C_PARSER(text)
    try:
        while parser.check_event():
            yield parser.get_event()
    finally:
        parser.dispose()


def check_yaml(text: str) -> None:
    """Raise ``NestingError`` when a document of the YAML ``text`` nests deeper than
    ``MAX_NESTING``. A syntax error met on the way is raised as the parser raises it (the parse
    that follows would raise the same)."""
    prefix = max((len(m) for m in _BLOCK_PREFIX.findall(text)), default=0)
    if text.count("[") + text.count("{") + 2 * (prefix + 1) <= MAX_NESTING:
        return
    depth = 0
    for event in _yaml_events(text):
        if isinstance(event, CollectionStartEvent):
            depth += 1
            if depth > MAX_NESTING:
                raise NestingError(event.start_mark.line + 1)
        elif isinstance(event, CollectionEndEvent):
            depth -= 1


def check_json(data: str | bytes) -> None:
    """Raise ``NestingError`` when the JSON ``data`` nests deeper than ``MAX_NESTING`` (brackets
    counted outside strings; whether it is valid JSON is the parser's to say)."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    if raw.count(b"[") + raw.count(b"{") <= MAX_NESTING:
        return
    depth = 0
    for match in _JSON_TOKEN.finditer(raw):
        token = match.group()
        if token in (b"[", b"{"):
            depth += 1
            if depth > MAX_NESTING:
                raise NestingError(raw.count(b"\n", 0, match.start()) + 1)
        elif token in (b"]", b"}"):
            depth -= 1


__all__ = ["MAX_NESTING", "NestingError", "check_json", "check_yaml"]
