"""The CLI with one bug planted, for containment tests: ``python -m tests.reliability.inject
NAMESPACE ARGS...`` runs ``tortoise-bot ARGS...`` in which building the CPU query of
``NAMESPACE`` raises ``ValueError`` (where a hostile label name once escaped as an internal
error and stopped the run).

``python -m tests.reliability.inject --segfault MARKER ARGS...`` plants a crash instead:
composing YAML text that holds ``MARKER`` kills the process with SIGSEGV, as a fault in a C
extension would, in this process and in every worker process (the module is preloaded by the
workers' server process and plants itself there from ``SEGFAULT_MARKER``).
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterator
from typing import Any

from bot.cli import main
from bot.metrics.promql import NamespaceQueries, RawSelector

SEGFAULT_MARKER = "TORTOISE_BOT_TEST_SEGFAULT_MARKER"
"""The environment variable that carries the marker to the worker processes."""


def _plant(namespace: str) -> None:
    original = NamespaceQueries.cpu_raw

    def cpu_raw(self: NamespaceQueries) -> RawSelector:
        if self.namespace == namespace:
            raise ValueError(f"planted bug for namespace {namespace}")
        return original(self)

    NamespaceQueries.cpu_raw = cpu_raw  # type: ignore[method-assign]


def _plant_segfault(marker: str) -> None:
    from bot.manifests import yamldoc

    original = yamldoc._compose

    def compose(text: str) -> Iterator[Any]:
        if marker in text:
            os.kill(os.getpid(), signal.SIGSEGV)
        return original(text)

    yamldoc._compose = compose


if os.environ.get(SEGFAULT_MARKER):  # imported by the workers' server process
    _plant_segfault(os.environ[SEGFAULT_MARKER])


if __name__ == "__main__":
    if sys.argv[1] == "--segfault":
        from bot import worker_pool

        os.environ[SEGFAULT_MARKER] = sys.argv[2]
        _plant_segfault(sys.argv[2])
        worker_pool.PRELOAD.append("tests.reliability.inject")
        sys.exit(main(sys.argv[3:]))
    _plant(sys.argv[1])
    sys.exit(main(sys.argv[2:]))
