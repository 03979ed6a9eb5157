"""Where an effective setting came from: a file, its 1-based line and the dotted key, or
``default`` when nobody set it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")

DEFAULT = "default"
"""The ``file`` of a value nobody set: the bot's own default (or the engine's rule)."""


@dataclass(frozen=True, slots=True)
class Origin:
    """Where a value was set: the file as shown to users (the opt-in file, a manifest, the bot
    config; ``default`` when nobody set it), its 1-based line (0: unknown) and the dotted key
    (``workloads.2.min_allocated.app.cpu``)."""

    file: str
    line: int
    key: str

    @classmethod
    def default(cls, key: str) -> Origin:
        """The origin of ``key`` when nobody set it."""
        return cls(DEFAULT, 0, key)

    @property
    def is_default(self) -> bool:
        return self.file == DEFAULT

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.key}" if self.line else f"{self.file}: {self.key}"


@dataclass(frozen=True, slots=True)
class Resolved(Generic[T]):
    """An effective setting: its value and where it came from."""

    value: T
    origin: Origin
