"""Glob matching without backtracking: repository paths (``paths.include``) and names
(``workloads[].match``).

A path glob is matched segment by segment (``/`` separates segments):

- a segment that is exactly ``**`` matches any number of path segments, none included;
- any other segment matches one path segment: ``*`` any run of characters (``**`` inside a
  segment is a plain ``*``, as in ``.gitignore``), ``?`` one character, anything else itself.

Within a segment, the literal runs between stars are placed left to right, each at its
leftmost fit, never reconsidered (for patterns whose only wildcards are ``*`` and ``?``, the
leftmost fit of each run is the one a match needs, so nothing is lost). Across segments, the
matcher keeps the set of pattern positions reachable after each path segment (at most one per
pattern segment). Cost: at most ``len(name) * len(segment)`` character comparisons per
(name, segment) pair and ``segments(path) * segments(pattern)`` pairs; a regex translation of
the same globs backtracks exponentially on patterns such as ``**a**a**a**a**a**b``.
"""

from __future__ import annotations

GLOBSTAR = "**"
"""A whole segment that matches any number of directories."""


def _fits(name: str, at: int, run: str) -> bool:
    """Whether ``run`` (literal characters and ``?``) matches ``name`` starting at ``at``."""
    if at + len(run) > len(name):
        return False
    return all(c == "?" or c == name[at + i] for i, c in enumerate(run))


def _find(name: str, run: str, start: int, stop: int) -> int:
    """The first index ``i`` in ``[start, stop - len(run)]`` where ``run`` fits, else -1."""
    if "?" not in run:
        return name.find(run, start, stop)
    for at in range(start, stop - len(run) + 1):
        if _fits(name, at, run):
            return at
    return -1


def _runs(segment: str) -> tuple[str, ...]:
    """The literal runs of a segment between its stars (``a*b**c`` -> ``a``, ``b``, ``c``)."""
    return tuple(segment.split("*"))


def match_name(name: str, pattern: str) -> bool:
    """Whether one name (no ``/`` meaning) matches a segment pattern of ``*``, ``?`` and text."""
    runs = _runs(pattern)
    if len(runs) == 1:
        return len(name) == len(pattern) and _fits(name, 0, pattern)
    head, *middle, tail = runs
    if len(head) + len(tail) > len(name):
        return False
    if not _fits(name, 0, head) or not _fits(name, len(name) - len(tail), tail):
        return False
    at, stop = len(head), len(name) - len(tail)
    for run in middle:
        if not run:
            continue
        found = _find(name, run, at, stop)
        if found < 0:
            return False
        at = found + len(run)
    return True


def _segments(pattern: str) -> tuple[str, ...]:
    return tuple(pattern.split("/"))


def match_path(path: str, pattern: str) -> bool:
    """Whether a repository-relative POSIX path matches a path glob (see the module doc)."""
    segments = _segments(pattern)
    states = _closure({0}, segments)
    for part in path.split("/"):
        following: set[int] = set()
        for state in states:
            if state == len(segments):
                continue
            segment = segments[state]
            if segment == GLOBSTAR:
                following.add(state)  # ``**`` takes this path segment and may take more
            elif match_name(part, segment):
                following.add(state + 1)
        states = _closure(following, segments)
        if not states:
            return False
    return len(segments) in states


def _closure(states: set[int], segments: tuple[str, ...]) -> set[int]:
    """``states`` plus the positions after any ``**`` they stand on (``**`` may take nothing)."""
    out = set(states)
    todo = list(states)
    while todo:
        state = todo.pop()
        if state < len(segments) and segments[state] == GLOBSTAR and state + 1 not in out:
            out.add(state + 1)
            todo.append(state + 1)
    return out


def matches_any(path: str, patterns: tuple[str, ...]) -> bool:
    """Whether ``path`` matches one of the path globs."""
    return any(match_path(path, p) for p in patterns)
