"""Configuration errors.

Hierarchy::

    ConfigError          every problem in one file at once, each with file, line and key path
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ConfigProblem:
    """One problem: ``key`` is a dotted path (``pull_requests.max_open``), ``line`` 1-based or 0."""

    file: str
    line: int
    key: str
    message: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{where}: {self.key or '<root>'}: {self.message}"


class ConfigError(Exception):
    """A configuration file is invalid; ``problems`` lists every problem found, not just the first."""

    def __init__(self, problems: list[ConfigProblem]) -> None:
        self.problems = tuple(problems)
        super().__init__("\n".join(str(p) for p in self.problems))

    def __reduce__(self) -> tuple[object, ...]:
        """Pickled with its problems (from a worker process, ``bot.worker_pool``)."""
        return (type(self), (list(self.problems),))
