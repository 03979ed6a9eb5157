"""Errors of the recommendation engine.

Hierarchy::

    RecommendError           anything the engine refuses, with the offending field
    ├── InputError           malformed engine input (``field`` is a dotted path)
    └── CheckpointError      a histogram checkpoint that cannot be loaded
"""

from __future__ import annotations


class RecommendError(Exception):
    """Base class: the engine refuses its input; ``field`` names what is wrong."""

    def __init__(self, message: str, field: str = "") -> None:
        super().__init__(f"{field}: {message}" if field else message)
        self.field = field
        self.message = message


class InputError(RecommendError):
    """The engine's input is malformed (wrong type, missing key, unsorted series...)."""


class CheckpointError(RecommendError):
    """A checkpoint is invalid (negative total, bucket index out of range, bad version)."""
