"""The history seam: what the pipeline asks for (``HistoryRequest``) and gets (``FetchResult``).

A ``HistorySource`` answers a batch of requests over one window. Per workload the answer is a
``WorkloadHistory`` (with its data-quality notes) or a ``MetricsError`` for that workload alone;
an outage of the backend raises ``PrometheusUnavailableError`` for the whole call, so a repository is
never planned on "no data" that was really "no answer".
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from bot.metrics.errors import MetricsError
from bot.model import WorkloadHistory, WorkloadRef


@dataclass(frozen=True, slots=True)
class HistoryRequest:
    """One workload to fetch: its containers and the environment's extra label matchers.

    ``selector`` is e.g. ``{"cluster": "prod"}``; empty for the ``default`` environment, which
    selects by namespace alone.
    """

    ref: WorkloadRef
    containers: tuple[str, ...]
    selector: Mapping[str, str] = field(default_factory=dict)
    hpa: str | None = None
    """The HPA whose kube-state-metrics series carry the replicas (``replicas_source: hpa``)
    when it is not named like the workload: ``keda-hpa-<name>`` for a KEDA ScaledObject."""
    labels: Mapping[str, str] = field(default_factory=dict)
    """The workload's labels (a Job's template and metadata labels, ``job_grouping_labels``)."""


@dataclass(frozen=True, slots=True)
class FetchStats:
    """Cost of one fetch: HTTP queries sent, retries, response bytes and wall seconds."""

    queries: int = 0
    retries: int = 0
    bytes_received: int = 0
    seconds: float = 0.0


@dataclass(frozen=True, slots=True)
class FetchResult:
    """Per workload its history or its error; ``warnings`` are the backend's, de-duplicated."""

    histories: Mapping[WorkloadRef, WorkloadHistory] = field(default_factory=dict)
    errors: Mapping[WorkloadRef, MetricsError] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    stats: FetchStats = FetchStats()

    def history(self, ref: WorkloadRef) -> WorkloadHistory:
        """The history of ``ref``; raises its ``MetricsError`` if it failed."""
        if ref in self.errors:
            raise self.errors[ref]
        try:
            return self.histories[ref]
        except KeyError:
            raise MetricsError(f"{ref} was not requested") from None


def merge_results(parts: Iterable[FetchResult], *, seconds: float) -> FetchResult:
    """One ``FetchResult`` of several (e.g. one per namespace group): histories, errors,
    warnings (de-duplicated, in order) and counts added up; ``seconds`` is the wall time."""
    histories: dict[WorkloadRef, WorkloadHistory] = {}
    errors: dict[WorkloadRef, MetricsError] = {}
    warnings: list[str] = []
    queries = retries = received = 0
    for part in parts:
        histories.update(part.histories)
        errors.update(part.errors)
        warnings.extend(part.warnings)
        queries += part.stats.queries
        retries += part.stats.retries
        received += part.stats.bytes_received
    return FetchResult(
        histories=histories,
        errors=errors,
        warnings=tuple(dict.fromkeys(warnings)),
        stats=FetchStats(queries, retries, received, seconds),
    )


class HistorySource(Protocol):
    """Where usage history comes from: Prometheus, a snapshot file, or a test double."""

    def fetch(
        self,
        requests: Sequence[HistoryRequest],
        *,
        start_s: float,
        end_s: float,
        budget_s: float | None = None,
    ) -> FetchResult:
        """History of every request over ``[start_s, end_s]`` (unix seconds), within
        ``budget_s`` seconds when given (a source that waits on a server fails as an outage
        when the time is up; one that reads local data may ignore it)."""
        ...


class StreamingSource(ABC):
    """A ``HistorySource`` that answers part by part (``iter_fetch``, e.g. one namespace group
    at a time); its ``fetch`` is every part merged (``merge_results``), with the wall seconds of
    the whole call as ``stats.seconds``."""

    @abstractmethod
    def iter_fetch(
        self,
        requests: Sequence[HistoryRequest],
        *,
        start_s: float,
        end_s: float,
        budget_s: float | None = None,
    ) -> Iterator[FetchResult]:
        """The answer of ``fetch`` one part at a time, each as it arrives."""

    @property
    def answers_whole(self) -> bool:
        """Whether ``iter_fetch`` yields a single part that is already the whole answer, kept
        as it is by ``fetch`` (its own ``stats``): a wrapper of a source that cannot stream."""
        return False

    def fetch(
        self,
        requests: Sequence[HistoryRequest],
        *,
        start_s: float,
        end_s: float,
        budget_s: float | None = None,
    ) -> FetchResult:
        """History of every request over ``[start_s, end_s]`` (unix seconds): every part of
        ``iter_fetch`` merged, within ``budget_s`` seconds when given."""
        began = time.perf_counter()
        parts = list(self.iter_fetch(requests, start_s=start_s, end_s=end_s, budget_s=budget_s))
        if len(parts) == 1 and self.answers_whole:
            return parts[0]
        return merge_results(parts, seconds=time.perf_counter() - began)


def stream_history(
    source: HistorySource,
    requests: Sequence[HistoryRequest],
    *,
    start_s: float,
    end_s: float,
    budget_s: float | None = None,
) -> Generator[FetchResult, None, None]:
    """The answer of ``source`` one part at a time, so a caller can use and drop each part
    before the next arrives: a source with ``iter_fetch`` (``PrometheusSource``: one namespace
    group at a time, as each completes, while the other groups' queries keep running) streams;
    any other source answers in one part (its ``fetch``)."""
    stream: Callable[..., Iterator[FetchResult]] | None = getattr(source, "iter_fetch", None)
    if stream is None:
        yield source.fetch(requests, start_s=start_s, end_s=end_s, budget_s=budget_s)
        return
    yield from stream(requests, start_s=start_s, end_s=end_s, budget_s=budget_s)
