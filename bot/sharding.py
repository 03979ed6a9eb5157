"""Stable hash-partitioning of repositories across shards (``run --shard I/N``).

A repository's shard is ``int(sha256(full_name.lower())[:16], 16) % N``: it depends only on the
name, so the same repository lands in the same shard on every run and on every machine (a
GitHub Actions matrix or a Kubernetes Indexed Job with ``JOB_COMPLETION_INDEX``), and adding a
repository never moves the others.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass

_SHARD = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


@dataclass(frozen=True, slots=True)
class Shard:
    """Shard ``index`` of ``count`` (0-based)."""

    index: int
    count: int

    @classmethod
    def parse(cls, text: str) -> Shard:
        """``"I/N"`` with 0 <= I < N; raises ``ValueError`` with the expected form."""
        match = _SHARD.match(text)
        if not match:
            raise ValueError(f"--shard expects I/N, e.g. 0/4, got {text!r}")
        index, count = int(match.group(1)), int(match.group(2))
        if count < 1 or not 0 <= index < count:
            raise ValueError(f"--shard {text}: need N >= 1 and 0 <= I < N")
        return cls(index, count)

    def owns(self, repository: str) -> bool:
        """Whether ``repository`` (``owner/name``, case-insensitive) belongs to this shard."""
        digest = hashlib.sha256(repository.lower().encode()).hexdigest()
        return int(digest[:16], 16) % self.count == self.index

    def select(self, repositories: Iterable[str]) -> list[str]:
        return [r for r in repositories if self.owns(r)]
