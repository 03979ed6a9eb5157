"""``PrometheusSource``: usage history from Prometheus in a few batched queries per namespace.

Requests are grouped by (namespace, selector). Per group, whatever its number of workloads,
containers or pods, the source sends:

- range queries ``cpu``, ``memory``, ``restarts``, ``oom`` and ``replicas`` (one per workload
  kind present), each split into chunks of at most ``max_points_per_query`` points per series;
- two instant queries for the pod owners and the ReplicaSet owners over the window.

So ``queries = groups * ((4 + kinds) * chunks + 2)``: it grows with namespaces, never with
containers or pods. Queries run on ``concurrency`` threads; each chunk's JSON is converted to
numpy and dropped before the next is read, which bounds memory by what is in flight. A query
Prometheus refuses (``QueryError``) fails the workloads of its group; an outage
(``PrometheusUnavailableError``) fails the whole fetch.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
import requests

from bot.config.metrics import PrometheusConfig
from bot.metrics.assemble import NamespaceData, PodKey, Series, assemble, merge_chunks
from bot.metrics.client import ApiResponse, PrometheusClient
from bot.metrics.errors import MetricsError, PrometheusUnavailableError, QueryError
from bot.metrics.mapping import PodOwner
from bot.metrics.promql import NamespaceQueries
from bot.metrics.source import FetchResult, FetchStats, HistoryRequest
from bot.model import WorkloadHistory, WorkloadRef

SUPPORTED_KINDS = ("Deployment", "StatefulSet")
"""Workload kinds whose pods and replicas the source can find."""

RANGE_KINDS = ("cpu", "memory", "restarts", "oom")
"""Per-(pod, container) range queries sent for every group."""

GroupKey = tuple[str, tuple[tuple[str, str], ...]]
"""(namespace, sorted selector items)."""


def chunks(start_s: float, end_s: float, step_s: int, max_points: int) -> list[tuple[float, float]]:
    """Aligned ``(first, last)`` evaluation times covering ``[start_s, end_s]``.

    Times are multiples of ``step_s`` (so repeated fetches hit the same samples and caches);
    each chunk has at most ``max_points`` points and the next starts one step after.
    """
    first = math.ceil(start_s / step_s) * step_s
    last = math.floor(end_s / step_s) * step_s
    out: list[tuple[float, float]] = []
    while first <= last:
        stop = min(last, first + (max_points - 1) * step_s)
        out.append((float(first), float(stop)))
        first = stop + step_s
    return out


def _floats(values: list[Any], column: int) -> np.ndarray[Any, np.dtype[np.float64]]:
    return np.array([v[column] for v in values], dtype=np.float64)


def _matrix(response: ApiResponse, labels: Sequence[str]) -> dict[tuple[str, ...], Series]:
    """``{label values: Series}`` of a matrix answer; string values parsed by numpy."""
    data = response.data
    if data.get("resultType") != "matrix":
        raise QueryError(f"expected a matrix, got {data.get('resultType')!r}")
    out: dict[tuple[str, ...], Series] = {}
    for item in data.get("result") or ():
        metric = item.get("metric", {})
        values = item.get("values") or []
        key = tuple(str(metric.get(label, "")) for label in labels)
        out[key] = Series(_floats(values, 0), _floats(values, 1))
    return out


def _vector(response: ApiResponse, labels: Sequence[str]) -> list[tuple[str, ...]]:
    data = response.data
    if data.get("resultType") != "vector":
        raise QueryError(f"expected a vector, got {data.get('resultType')!r}")
    return [
        tuple(str(item.get("metric", {}).get(label, "")) for label in labels)
        for item in data.get("result") or ()
    ]


@dataclass(frozen=True, slots=True)
class _Task:
    group: GroupKey
    kind: str
    chunk: int
    run: Callable[[], Any]


class PrometheusSource:
    """A ``HistorySource`` reading a Prometheus-compatible HTTP API (see the module doc)."""

    def __init__(
        self,
        config: PrometheusConfig,
        *,
        session: requests.Session | None = None,
        env: Mapping[str, str] | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.config = config
        self.client = PrometheusClient(config, session=session, env=env, sleep=sleep)

    def close(self) -> None:
        """Release the HTTP session."""
        self.client.close()

    # ------------------------------------------------------------------ planning

    def _queries(self, group: GroupKey, batch: Sequence[HistoryRequest]) -> NamespaceQueries:
        return NamespaceQueries(
            config=self.config,
            namespace=group[0],
            selector=group[1],
            workload_names=tuple(sorted({r.ref.name for r in batch})),
            containers=tuple(sorted({c for r in batch for c in r.containers})),
        )

    def _tasks(
        self, group: GroupKey, batch: Sequence[HistoryRequest], start_s: float, end_s: float
    ) -> Iterator[_Task]:
        q = self._queries(group, batch)
        labels = self.config.labels
        pod_labels = (labels.pod, labels.container)
        queries: dict[str, tuple[str, tuple[str, ...]]] = {
            "cpu": (q.cpu(), pod_labels),
            "memory": (q.memory(), pod_labels),
            "restarts": (q.restarts(), pod_labels),
            "oom": (q.oom(), pod_labels),
        }
        for kind in sorted({r.ref.kind for r in batch}):
            label = labels.statefulset if kind == "StatefulSet" else labels.deployment
            queries[f"replicas:{kind}"] = (q.replicas(kind), (label,))
        windows = chunks(start_s, end_s, self.config.step_s, self.config.max_points_per_query)
        for index, (a, b) in enumerate(windows):
            for name, (query, key_labels) in queries.items():
                yield _Task(group, name, index, partial(self._range, query, a, b, key_labels))
        window_s = end_s - start_s
        owners_query = q.pod_owners(window_s)
        yield _Task(
            group,
            "owners",
            0,
            partial(
                self._instant,
                owners_query,
                end_s,
                (labels.pod, labels.owner_kind, labels.owner_name),
            ),
        )
        if any(r.ref.kind == "Deployment" for r in batch):
            rs_query = q.replicaset_owners(window_s)
            yield _Task(
                group,
                "replicasets",
                0,
                partial(self._instant, rs_query, end_s, (labels.replicaset, labels.owner_name)),
            )

    def _range(
        self, query: str, a: float, b: float, key_labels: tuple[str, ...]
    ) -> tuple[dict[tuple[str, ...], Series], tuple[str, ...]]:
        response = self.client.query_range(query, start_s=a, end_s=b, step_s=self.config.step_s)
        try:
            return _matrix(response, key_labels), response.warnings
        except (QueryError, KeyError, TypeError, ValueError, IndexError) as exc:
            raise QueryError(f"unreadable answer: {exc}", query=query, url=self.client.url) from exc

    def _instant(
        self, query: str, at: float, key_labels: tuple[str, ...]
    ) -> tuple[list[tuple[str, ...]], tuple[str, ...]]:
        response = self.client.query(query, time_s=at)
        try:
            return _vector(response, key_labels), response.warnings
        except (QueryError, KeyError, TypeError, ValueError) as exc:
            raise QueryError(f"unreadable answer: {exc}", query=query, url=self.client.url) from exc

    # ------------------------------------------------------------------ fetching

    def fetch(
        self, requests: Sequence[HistoryRequest], *, start_s: float, end_s: float
    ) -> FetchResult:
        """History of every request over ``[start_s, end_s]``; see the module doc for the cost."""
        began = time.perf_counter()
        before = (
            self.client.stats.requests,
            self.client.stats.retries,
            self.client.stats.bytes_received,
        )
        errors: dict[WorkloadRef, MetricsError] = {}
        groups: dict[GroupKey, list[HistoryRequest]] = {}
        for request in requests:
            problem = self._invalid(request)
            if problem:
                errors[request.ref] = QueryError(problem)
                continue
            key = (request.ref.namespace, tuple(sorted(request.selector.items())))
            groups.setdefault(key, []).append(request)
        if end_s <= start_s:
            raise MetricsError(f"empty window: start {start_s} >= end {end_s}")
        tasks = [t for g, batch in groups.items() for t in self._tasks(g, batch, start_s, end_s)]
        results: dict[GroupKey, dict[tuple[str, int], Any]] = {g: {} for g in groups}
        failed: dict[GroupKey, MetricsError] = {}
        outage = threading.Event()

        def run(task: _Task) -> Any:
            if outage.is_set():  # another query found the server down: stop asking
                return None
            try:
                return task.run()
            except PrometheusUnavailableError:
                outage.set()
                raise

        with ThreadPoolExecutor(max_workers=self.config.concurrency) as pool:
            futures: dict[Future[Any], _Task] = {pool.submit(run, t): t for t in tasks}
            pending = set(futures)
            while pending:
                done, pending = wait(pending, return_when=FIRST_EXCEPTION)
                for future in done:
                    task = futures[future]
                    exc = future.exception()
                    if isinstance(exc, PrometheusUnavailableError):
                        for other in pending:
                            other.cancel()
                        raise exc
                    if isinstance(exc, MetricsError):
                        failed.setdefault(task.group, exc)
                    elif exc is not None:
                        raise exc
                    else:
                        results[task.group][(task.kind, task.chunk)] = future.result()
        histories: dict[WorkloadRef, WorkloadHistory] = {}
        warnings: list[str] = []
        for group, batch in groups.items():
            if group in failed:
                for request in batch:
                    errors[request.ref] = failed[group]
                continue
            data = self._namespace_data(results[group])
            warnings.extend(data.warnings)
            histories.update(
                assemble(
                    batch,
                    data,
                    start_s=start_s,
                    end_s=end_s,
                    step_s=self.config.step_s,
                    min_history_days=self.config.min_history_days,
                )
            )
        stats = self.client.stats
        return FetchResult(
            histories=histories,
            errors=errors,
            warnings=tuple(dict.fromkeys(warnings)),
            stats=FetchStats(
                queries=stats.requests - before[0],
                retries=stats.retries - before[1],
                bytes_received=stats.bytes_received - before[2],
                seconds=time.perf_counter() - began,
            ),
        )

    @staticmethod
    def _invalid(request: HistoryRequest) -> str | None:
        ref = request.ref
        if ref.kind not in SUPPORTED_KINDS:
            return f"{ref}: kind {ref.kind} is not supported (only {', '.join(SUPPORTED_KINDS)})"
        if not ref.namespace or not ref.name:
            return f"{ref}: namespace and name are required"
        if not request.containers or not all(request.containers):
            return f"{ref}: no container names requested"
        return None

    def _namespace_data(self, parts: dict[tuple[str, int], Any]) -> NamespaceData:
        data = NamespaceData()
        by_kind: dict[str, list[Mapping[PodKey, Series]]] = {}
        for (kind, _chunk), (payload, warnings) in sorted(parts.items(), key=lambda kv: kv[0]):
            data.warnings.extend(warnings)
            if kind == "owners":
                for pod, owner_kind, owner_name in payload:
                    data.owners[pod] = PodOwner(owner_kind, owner_name)
            elif kind == "replicasets":
                for replicaset, owner_name in payload:
                    data.replicaset_owners[replicaset] = owner_name
            elif kind.startswith("replicas:"):
                workload_kind = kind.split(":", 1)[1]
                by_kind.setdefault(kind, []).append(
                    {(workload_kind, key[0]): s for key, s in payload.items()}
                )
            else:
                by_kind.setdefault(kind, []).append(payload)
        data.cpu = merge_chunks(by_kind.get("cpu", []))
        data.memory = merge_chunks(by_kind.get("memory", []))
        data.oom = merge_chunks(by_kind.get("oom", []))
        for key, series in merge_chunks(by_kind.get("restarts", [])).items():
            data.restarts[key] = int(np.nansum(series.v))
        for kind in [k for k in by_kind if k.startswith("replicas:")]:
            data.replicas.update(merge_chunks(by_kind[kind]))
        return data
