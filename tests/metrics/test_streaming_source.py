"""``StreamingSource.fetch``: every part of ``iter_fetch`` merged, once for every source that
streams (Prometheus, the progress-reporting wrapper of the commands)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pytest

from bot.commands.tracking import NAMESPACES, WORKLOADS, TrackedSource
from bot.metrics.errors import MetricsError
from bot.metrics.prometheus import PrometheusSource
from bot.metrics.source import FetchResult, FetchStats, HistoryRequest, StreamingSource
from bot.model import WorkloadRef

A = WorkloadRef("Deployment", "team-a", "web")
B = WorkloadRef("Deployment", "team-b", "api")
REQUESTS = [HistoryRequest(A, ("app",)), HistoryRequest(B, ("app",))]
PARTS = (
    FetchResult(
        errors={A: MetricsError("a")}, warnings=("w1", "w2"), stats=FetchStats(2, 1, 10, 5.0)
    ),
    FetchResult(
        errors={B: MetricsError("b")}, warnings=("w2", "w3"), stats=FetchStats(3, 0, 20, 7.0)
    ),
)


class Parts(StreamingSource):
    """Answers in ``PARTS``, noting the arguments of each call."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, float, float, float | None]] = []

    def iter_fetch(
        self,
        requests: Sequence[HistoryRequest],
        *,
        start_s: float,
        end_s: float,
        budget_s: float | None = None,
    ) -> Iterator[FetchResult]:
        self.calls.append((len(requests), start_s, end_s, budget_s))
        yield from PARTS


class Whole:
    """A source that cannot stream: one answer with its own stats."""

    def __init__(self) -> None:
        self.answer = PARTS[0]

    def fetch(
        self,
        requests: Sequence[HistoryRequest],
        *,
        start_s: float,
        end_s: float,
        budget_s: float | None = None,
    ) -> FetchResult:
        return self.answer


def test_fetch_merges_every_part_of_iter_fetch():
    source = Parts()
    result = source.fetch(REQUESTS, start_s=10.0, end_s=20.0, budget_s=3.0)
    assert source.calls == [(2, 10.0, 20.0, 3.0)]
    assert set(result.errors) == {A, B}
    assert result.warnings == ("w1", "w2", "w3")
    assert (result.stats.queries, result.stats.retries, result.stats.bytes_received) == (5, 1, 30)
    assert result.stats.seconds < 5.0  # the wall time of the call, not the parts' sum


def test_the_progress_wrapper_reports_and_keeps_a_whole_answer_as_it_is():
    events: list[tuple[str, int]] = []
    tracked = TrackedSource(
        Whole(), lambda task, n, **_: events.append((task, n)), count_workloads=True
    )
    assert tracked.answers_whole
    assert tracked.fetch(REQUESTS, start_s=0.0, end_s=1.0) is PARTS[0]
    assert events == [(NAMESPACES, 0), (WORKLOADS, 0), (NAMESPACES, 1), (WORKLOADS, 1)]


def test_the_progress_wrapper_merges_a_streaming_source():
    tracked = TrackedSource(Parts(), lambda *_, **__: None, count_workloads=False)
    assert not tracked.answers_whole
    result = tracked.fetch(REQUESTS, start_s=0.0, end_s=1.0)
    assert set(result.errors) == {A, B} and result.stats.queries == 5


@pytest.mark.parametrize("cls", [PrometheusSource, TrackedSource])
def test_every_streaming_source_fetches_through_the_one_definition(cls):
    assert issubclass(cls, StreamingSource)
    assert cls.fetch is StreamingSource.fetch
