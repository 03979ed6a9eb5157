"""Progress of long work on a terminal: namespaces and workloads done / total, elapsed time.

``TrackedSource`` wraps a history source and reports each namespace as its history arrives
(a source with ``iter_fetch``, such as Prometheus, delivers one namespace group at a time; any
other source delivers everything at once).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence

from bot.console import Advance
from bot.metrics.source import (
    FetchResult,
    HistoryRequest,
    HistorySource,
    StreamingSource,
    stream_history,
)

NAMESPACES = "namespaces"
"""Progress task: namespaces whose history has arrived."""
WORKLOADS = "workloads"
"""Progress task: workloads done (fetched for ``snapshot``, decided for ``plan``)."""


class TrackedSource(StreamingSource):
    """A ``HistorySource`` that reports namespaces (and, with ``count_workloads``, workloads)
    as their history arrives; ``fetch`` is the wrapped source's answer, reported as it comes."""

    def __init__(self, source: HistorySource, advance: Advance, *, count_workloads: bool) -> None:
        self.source = source
        self.advance = advance
        self.count_workloads = count_workloads

    @property
    def answers_whole(self) -> bool:
        """A wrapped source without ``iter_fetch`` answers in one part, kept as it is."""
        return not hasattr(self.source, "iter_fetch")

    def iter_fetch(
        self,
        requests: Sequence[HistoryRequest],
        *,
        start_s: float,
        end_s: float,
        budget_s: float | None = None,
    ) -> Iterator[FetchResult]:
        """The wrapped source's answer part by part (``stream_history``), reporting each part
        as it arrives; no part is kept here."""
        waiting = Counter(r.ref.namespace for r in requests)
        self.advance(NAMESPACES, 0, total=len(waiting))
        self.advance(WORKLOADS, 0, total=len(requests))
        for part in stream_history(
            self.source, requests, start_s=start_s, end_s=end_s, budget_s=budget_s
        ):
            refs = [*part.histories, *part.errors]
            done = 0
            for ref in refs:
                waiting[ref.namespace] -= 1
                done += waiting[ref.namespace] == 0
            label = refs[-1].namespace if refs else None
            self.advance(NAMESPACES, done, label=label)
            if self.count_workloads:
                self.advance(WORKLOADS, len(refs))
            yield part
