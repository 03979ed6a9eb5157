"""Where the time of one plan goes: discovery, the history and its recommendations, the edit."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from bot.metrics.source import FetchResult

log = logging.getLogger("bot.pipeline")

__all__ = ["PlanTimings"]


class PlanTimings:
    """Where one plan's time goes, logged at INFO once it is edited: wall seconds of the
    discovery, of the history and its recommendations (streamed together: the engine works on
    one namespace group while Prometheus answers the next), of which the time spent waiting for
    the history, and of the edit; and the CPU seconds of the engine with its replay, summed over
    the workloads (in the worker processes when ``run.processes`` is above 1)."""

    def __init__(self) -> None:
        self.began = self.at = time.perf_counter()
        self.discovery_s = self.history_and_engine_s = self.waiting_s = self.edit_s = 0.0
        self.engine_cpu_s = 0.0

    def _lap(self) -> float:
        now = time.perf_counter()
        lap, self.at = now - self.at, now
        return lap

    def discovered(self) -> None:
        self.discovery_s = self._lap()

    def waited(self, parts: Iterable[FetchResult]) -> Iterator[FetchResult]:
        """``parts``, the time spent waiting for each added to ``waiting_s``."""
        iterator = iter(parts)
        while True:
            began = time.perf_counter()
            part = next(iterator, None)
            self.waiting_s += time.perf_counter() - began
            if part is None:
                return
            yield part

    def recommended(self) -> None:
        self.history_and_engine_s = self._lap()

    def edited(self, root: Path, workloads: int) -> None:
        self.edit_s = self._lap()
        log.info(
            "plan of %s: %d workloads in %.2f s: discovery %.2f s, history and recommendations "
            "%.2f s (waiting for the history %.2f s; the engine with its replay %.2f CPU-s), "
            "edit %.2f s",
            root,
            workloads,
            self.at - self.began,
            self.discovery_s,
            self.history_and_engine_s,
            self.waiting_s,
            self.engine_cpu_s,
            self.edit_s,
        )
