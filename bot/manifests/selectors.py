"""Regular expressions a repository supplies, matched the way Kustomize matches them.

A patch ``target:`` selects objects by ``group``, ``version``, ``kind``, ``name`` and
``namespace``, each a regular expression that Kustomize anchors as ``^(?:PATTERN)$``
(``anchorRegex`` in ``api/types/selector.go``) and evaluates with Go's ``regexp``, an RE2
engine: matching takes time linear in the name, whatever the pattern. Here the same patterns run
on RE2 too (``google-re2``), never on Python's backtracking ``re``: ``name: "(a+)+"`` against a
Deployment named ``aaa…ab`` answers at once instead of doubling its time per character. A pattern
RE2 rejects is a ``KustomizeError`` at the line of the selector field, like every other mistake
in a kustomization.
"""

from __future__ import annotations

from typing import Any

import re2

from bot.manifests.errors import KustomizeError

__all__ = ["MAX_PATTERN_CHARS", "TargetPattern", "target_pattern"]

MAX_PATTERN_CHARS = 1000
"""Longest selector pattern read: RE2's time is linear in the name, its memory in the pattern."""
_MAX_MEMORY_BYTES = 8 << 20
"""Memory RE2 may use for one compiled pattern (its default; a larger program is an error)."""


class TargetPattern:
    """One anchored selector pattern, compiled once; ``matches(text)`` is linear in ``text``."""

    __slots__ = ("_compiled", "source")

    def __init__(self, source: str, compiled: Any) -> None:
        self.source = source
        self._compiled = compiled

    def matches(self, text: str) -> bool:
        """Whether the whole ``text`` matches, as Kustomize's ``MatchString`` on ``^(?:p)$``."""
        return self._compiled.search(text) is not None


def _compile(pattern: str) -> TargetPattern:
    options = re2.Options()
    options.log_errors = False  # RE2 otherwise prints every rejected pattern on stderr
    options.max_mem = _MAX_MEMORY_BYTES
    re2.compile(pattern, options)  # its own error first: the message quotes what was written
    return TargetPattern(pattern, re2.compile(f"^(?:{pattern})$", options))


def target_pattern(pattern: str, file: str, line: int, field: str) -> TargetPattern:
    """The compiled, anchored pattern of a selector ``field`` written at ``file``:``line``
    (compiled once per patch entry, matched against every object); ``KustomizeError`` there when
    RE2 (Go's syntax) rejects it or it is too long."""
    if len(pattern) > MAX_PATTERN_CHARS:
        raise KustomizeError(
            file, line, f"target {field} pattern longer than {MAX_PATTERN_CHARS} characters"
        )
    try:
        return _compile(pattern)
    except re2.error as exc:
        reason = exc.args[0] if exc.args else exc
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "replace")
        raise KustomizeError(
            file, line, f"target {field} {pattern!r} is not a valid regular expression: {reason}"
        ) from None
