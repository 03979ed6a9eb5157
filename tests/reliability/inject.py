"""The CLI with one bug planted, for containment tests: ``python -m tests.reliability.inject
NAMESPACE ARGS...`` runs ``tortoise-bot ARGS...`` in which building the CPU query of
``NAMESPACE`` raises ``ValueError`` (where a hostile label name once escaped as an internal
error and stopped the run)."""

from __future__ import annotations

import sys

from bot.cli import main
from bot.metrics.promql import NamespaceQueries, RawSelector


def _plant(namespace: str) -> None:
    original = NamespaceQueries.cpu_raw

    def cpu_raw(self: NamespaceQueries) -> RawSelector:
        if self.namespace == namespace:
            raise ValueError(f"planted bug for namespace {namespace}")
        return original(self)

    NamespaceQueries.cpu_raw = cpu_raw  # type: ignore[method-assign]


if __name__ == "__main__":
    _plant(sys.argv[1])
    sys.exit(main(sys.argv[2:]))
