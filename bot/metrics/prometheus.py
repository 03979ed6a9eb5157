"""``PrometheusSource``: usage history from Prometheus in a few batched queries per namespace.

Requests are grouped by (namespace, selector). Per group, whatever its number of workloads,
containers or pods, the source sends:

- CPU and memory, per chunk of at most ``max_points_per_query`` steps: in ``query_mode: raw``
  (default) one instant query of a range vector each, raw samples turned into step values on the
  client (``bot/metrics/raw.py``); in ``query_mode: range`` one range query each,
  ``max by (namespace, pod, container) (rate(...))`` / ``(max_over_time(...))``;
- replicas, per chunk: one range query per workload kind present (``replicas_source:
  workload``), or one of the HPAs' current replicas (``replicas_source: hpa``);
- three instant queries over the window: pod owners, ReplicaSet owners, restart counts (plus,
  in range mode, CPU counter resets);
- then, only for pods whose containers restarted, two range queries per chunk: the restart
  counter (restart times, for crash loops and counter-reset checks) and the steps at which the
  last termination reason is ``OOMKilled`` with the memory request; the client pairs them into
  OOM kills (``bot/metrics/restarts.py``, ``oom_kills``), whatever the scrape interval.

So ``queries = groups * ((2 + kinds) * chunks + 3) + groups_with_restarts * 2 * chunks`` in raw
mode (``kinds`` is 1 with ``replicas_source: hpa``): it grows with namespaces, never with
containers or pods. Queries run on ``concurrency`` threads; each
chunk's JSON is converted to numpy and dropped as soon as it is read. A query Prometheus refuses
(``QueryError``) fails the workloads of its group; an outage (``PrometheusUnavailableError``)
fails the whole fetch and stops every other query.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import requests

from bot.config.metrics import PrometheusConfig
from bot.metrics import xor_library
from bot.metrics.answers import (
    FetchPlan,
    RawPart,
    matrix,
    memory_by_range,
    namespace_data,
    rate_window_s,
    raw_matrix,
    vector,
)
from bot.metrics.assemble import Series, assemble
from bot.metrics.client import ApiResponse, ClientStats, PrometheusClient
from bot.metrics.cluster_state import PrometheusClusterState
from bot.metrics.errors import (
    MetricsError,
    PrometheusUnavailableError,
    QueryError,
    RemoteReadUnsupportedError,
)
from bot.metrics.job_groups import ksm_label
from bot.metrics.jobs import JOB_KINDS
from bot.metrics.promql import REPLICASET_OWNER_KINDS, NamespaceQueries, RawSelector, chunks
from bot.metrics.source import FetchResult, FetchStats, HistoryRequest, StreamingSource
from bot.model import WorkloadHistory, WorkloadRef

LOG = logging.getLogger(__name__)

WAIT_NOTICE_S = 10.0
"""Seconds without any answer after which a fetch says what it is waiting for (and again
after each further such period)."""

SUPPORTED_KINDS = ("Deployment", "StatefulSet", "Rollout", "DaemonSet", *JOB_KINDS)
"""Workload kinds whose pods the source can find."""
REPLICA_SERIES_KINDS = ("Deployment", "StatefulSet")
"""Kinds with a kube-state-metrics replica series; a Rollout's and a DaemonSet's replicas are
their pods counted per step (``assemble``)."""

GroupKey = tuple[str, tuple[tuple[str, str], ...]]
"""(namespace, sorted selector items)."""


@dataclass(frozen=True, slots=True)
class _Task:
    group: GroupKey
    kind: str
    chunk: int
    run: Callable[[], Any]


@dataclass(eq=False)
class _GroupRun:
    """One namespace group in flight: its answers so far and its own request counts."""

    batch: Sequence[HistoryRequest]
    began: float
    results: dict[tuple[str, int], Any] = field(default_factory=dict)
    failed: MetricsError | None = None
    pending: int = 0
    first: bool = True
    stats: ClientStats = field(default_factory=ClientStats)

    def restarted(self) -> list[str]:
        """Pods whose containers restarted in the window (they get the OOM queries)."""
        counts = self.results.get(("restarts", 0), ([], ()))[0]
        return sorted({key[0] for key, count in counts if count > 0})


class PrometheusSource(StreamingSource, PrometheusClusterState):
    """A ``HistorySource`` reading a Prometheus-compatible HTTP API (see the module doc for the
    cost of a fetch); ``fetch`` is every namespace group of ``iter_fetch`` merged. It also says
    what ran in the cluster (``bot.metrics.cluster_state``)."""

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
        self._remote_read = threading.Event()
        """Set while raw samples are read through remote read (``raw_api``)."""
        if config.raw_api != "query":
            self._remote_read.set()
            if xor_library.AVAILABLE:
                LOG.info("remote read: XOR chunks are decoded by the compiled decoder")
            else:
                LOG.warning(
                    "remote read: XOR chunks are decoded by the numpy decoder, about 20x slower "
                    "(the package was installed without a C compiler)"
                )

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
            hpa_names=tuple(sorted({r.hpa or r.ref.name for r in batch})),
        )

    @property
    def _memory_step_s(self) -> int:
        return self.config.memory_step_s or self.config.step_s

    def _tasks(
        self, group: GroupKey, batch: Sequence[HistoryRequest], plan: FetchPlan
    ) -> Iterator[_Task]:
        q = self._queries(group, batch)
        labels = self.config.labels
        step = self.config.step_s
        pod_labels = (labels.pod, labels.container)
        raw = self.config.query_mode == "raw"
        read: Callable[[], Any]
        for index, (a, b) in enumerate(plan.windows):
            span = b - a + step
            if raw:
                lead = rate_window_s(self.config) if index == 0 else 0.0
                yield _Task(
                    group, "cpu", index, partial(self._raw, q.cpu_raw(), span + lead, b, pod_labels)
                )
                if not memory_by_range(self.config):
                    read = partial(self._raw, q.memory_raw(), span, b, pod_labels)
                    yield _Task(group, "memory", index, read)
            else:
                yield _Task(group, "cpu", index, partial(self._range, q.cpu(), a, b, pod_labels))
            if self.config.replicas_source == "hpa":
                hpa_labels = (labels.hpa, labels.namespace)
                read = (
                    partial(self._raw, q.hpa_replicas_raw(), span, b, hpa_labels)
                    if raw
                    else partial(self._range, q.hpa_replicas(), a, b, (labels.hpa,))
                )
                yield _Task(group, "replicas:hpa", index, read)
                continue
            for kind in sorted({r.ref.kind for r in batch} & set(REPLICA_SERIES_KINDS)):
                label = labels.statefulset if kind == "StatefulSet" else labels.deployment
                read = (
                    partial(self._raw, q.replicas_raw(kind), span, b, (label, labels.namespace))
                    if raw
                    else partial(self._range, q.replicas(kind), a, b, (label,))
                )
                yield _Task(group, f"replicas:{kind}", index, read)
        if memory_by_range(self.config):
            mstep = self._memory_step_s
            memory = q.memory(mstep)
            for index, (a, b) in enumerate(plan.memory_windows):
                yield _Task(
                    group, "memory", index, partial(self._range, memory, a, b, pod_labels, mstep)
                )
        window_s = plan.end_s - plan.start_s
        owner_labels = (labels.pod, labels.owner_kind, labels.owner_name)
        yield _Task(
            group,
            "owners",
            0,
            partial(self._instant, q.pod_owners(window_s), plan.end_s, owner_labels),
        )
        if any(r.ref.kind in REPLICASET_OWNER_KINDS for r in batch):
            rs_query = q.replicaset_owners(window_s)
            rs_labels = (labels.replicaset, labels.owner_kind, labels.owner_name)
            rs_read = partial(self._instant, rs_query, plan.end_s, rs_labels)
            yield _Task(group, "replicasets", 0, rs_read)
        if any(r.ref.kind in JOB_KINDS for r in batch):
            job_query = q.job_owners(window_s)
            job_labels = (labels.job_name, labels.owner_kind, labels.owner_name)
            yield _Task(group, "jobs", 0, partial(self._instant, job_query, plan.end_s, job_labels))
            if self.config.job_grouping_labels:
                names = tuple(ksm_label(n) for n in self.config.job_grouping_labels)
                query = q.job_labels(window_s, names)
                read = partial(self._instant, query, plan.end_s, (labels.job_name, *names))
                yield _Task(group, "joblabels", 0, read)
        restarts = q.restart_counts(window_s + step)
        yield _Task(group, "restarts", 0, partial(self._instant, restarts, plan.end_s, pod_labels))
        if not raw:
            resets = q.cpu_resets(window_s + step)
            yield _Task(group, "resets", 0, partial(self._instant, resets, plan.end_s, pod_labels))

    def _oom_tasks(
        self, group: GroupKey, batch: Sequence[HistoryRequest], pods: Sequence[str], plan: FetchPlan
    ) -> Iterator[_Task]:
        labels = self.config.labels
        q = self._queries(group, batch)
        key_labels = (labels.pod, labels.container)
        oom, restarts = q.oom_reasons(pods), q.restart_series(pods)
        for index, (a, b) in enumerate(plan.windows):
            yield _Task(group, "oom", index, partial(self._range, oom, a, b, key_labels))
            yield _Task(
                group, "restart-series", index, partial(self._range, restarts, a, b, key_labels)
            )

    # ------------------------------------------------------------------ queries

    def _range(
        self,
        query: str,
        a: float,
        b: float,
        key_labels: tuple[str, ...],
        step_s: float | None = None,
    ) -> tuple[dict[tuple[str, ...], Series], tuple[str, ...]]:
        step = step_s or self.config.step_s
        response = self.client.query_range(query, start_s=a, end_s=b, step_s=step)
        try:
            return matrix(response, key_labels), response.warnings
        except (QueryError, KeyError, TypeError, ValueError, IndexError) as exc:
            raise QueryError(f"unreadable answer: {exc}", query=query, url=self.client.url) from exc

    def _raw(
        self, raw: RawSelector, range_s: float, at: float, key_labels: tuple[str, ...]
    ) -> tuple[RawPart, tuple[str, ...]]:
        response = self._read_raw(raw, range_s, at)
        try:
            return raw_matrix(response, key_labels), response.warnings
        except (QueryError, KeyError, TypeError, ValueError, IndexError) as exc:
            query = raw.promql(range_s)
            raise QueryError(f"unreadable answer: {exc}", query=query, url=self.client.url) from exc

    def _read_raw(self, raw: RawSelector, range_s: float, at: float) -> ApiResponse:
        """The raw samples of ``raw`` in ``(at - range_s, at]``: through remote read while the
        server answers it (``raw_api``), else through an instant query of a range vector."""
        query = raw.promql(range_s)
        if self._remote_read.is_set():
            start_ms, end_ms = RawSelector.window_ms(at, range_s)
            try:
                return self.client.remote_read(
                    raw.remote_matchers(), start_ms=start_ms, end_ms=end_ms, describe=query
                )
            except RemoteReadUnsupportedError as exc:
                if self.config.raw_api == "remote_read":
                    raise
                if self._remote_read.is_set():
                    self._remote_read.clear()
                    LOG.warning(
                        "%s: reading raw samples through the query API instead (%s)",
                        self.client.url,
                        exc.message if exc.status is None else f"{exc.message}, HTTP {exc.status}",
                    )
        return self.client.query(query, time_s=at, matrix=True)

    def _instant(
        self, query: str, at: float, key_labels: tuple[str, ...]
    ) -> tuple[list[tuple[tuple[str, ...], float]], tuple[str, ...]]:
        response = self.client.query(query, time_s=at)
        try:
            return vector(response, key_labels), response.warnings
        except (QueryError, KeyError, TypeError, ValueError, IndexError) as exc:
            raise QueryError(f"unreadable answer: {exc}", query=query, url=self.client.url) from exc

    # ------------------------------------------------------------------ fetching

    def iter_fetch(
        self,
        requests: Sequence[HistoryRequest],
        *,
        start_s: float,
        end_s: float,
        budget_s: float | None = None,
        groups_per_batch: int | None = None,
    ) -> Iterator[FetchResult]:
        """``fetch``, one ``FetchResult`` per namespace group, as each group completes.

        At most ``groups_per_batch`` (default ``concurrency``) groups are in flight, so memory
        holds their answers, not the whole cluster's; with 1, groups come in request order.
        An outage raises from the iterator; so does the end of the budget: ``fetch_timeout_s``
        or ``budget_s``, whichever is shorter, from the first call of the iterator on.
        """
        budget = self.config.fetch_timeout_s
        if budget_s is not None:
            budget = min(budget, budget_s)
        deadline = time.monotonic() + budget
        if end_s <= start_s:
            raise MetricsError(f"empty window: start {start_s} >= end {end_s}")
        windows = chunks(start_s, end_s, self.config.step_s, self.config.max_points_per_query)
        if not windows:
            raise MetricsError(f"window {start_s}..{end_s} holds no step of {self.config.step_s} s")
        memory_windows = chunks(
            start_s, end_s, self._memory_step_s, self.config.max_points_per_query
        )
        plan = FetchPlan(windows, start_s, end_s, memory_windows or windows)
        invalid: dict[WorkloadRef, MetricsError] = {}
        groups: dict[GroupKey, list[HistoryRequest]] = {}
        for request in requests:
            problem = self._invalid(request)
            if problem:
                invalid[request.ref] = QueryError(problem)
                continue
            key = (request.ref.namespace, tuple(sorted(request.selector.items())))
            groups.setdefault(key, []).append(request)
        if invalid:
            yield FetchResult(errors=invalid)
        size = max(1, groups_per_batch or self.config.concurrency)
        with ThreadPoolExecutor(max_workers=self.config.concurrency) as pool:
            yield from self._stream(pool, groups, plan, size, deadline)

    def _stream(
        self,
        pool: ThreadPoolExecutor,
        groups: Mapping[GroupKey, Sequence[HistoryRequest]],
        plan: FetchPlan,
        size: int,
        deadline: float,
    ) -> Iterator[FetchResult]:
        """Run the groups' queries on ``pool``, ``size`` groups at a time, and turn each group's
        answers into histories as soon as they are all in, while the other groups' queries keep
        the server busy. A group whose pods restarted gets its OOM and restart-counter queries
        once its first queries are answered. An outage cancels every query and raises.
        While no answer comes, a warning every ``WAIT_NOTICE_S`` says what is waited for and
        until when. When the consumer stops early (the iterator is closed), queries not yet
        started are dropped."""
        waiting = deque(groups.items())
        active: dict[GroupKey, _GroupRun] = {}
        futures: dict[Future[Any], _Task] = {}
        outage = threading.Event()

        def submit(run: _GroupRun, tasks: Iterator[_Task]) -> None:
            for task in tasks:
                futures[pool.submit(self._task, task, run.stats, outage, deadline)] = task
                run.pending += 1

        answered = time.monotonic()
        try:
            while waiting or active:
                while waiting and len(active) < size:
                    group, batch = waiting.popleft()
                    run = active[group] = _GroupRun(batch, time.perf_counter())
                    submit(run, self._tasks(group, batch, plan))
                done, _ = wait(futures, timeout=WAIT_NOTICE_S, return_when=FIRST_COMPLETED)
                if not done:
                    self._notice_wait(len(futures), time.monotonic() - answered, deadline)
                    continue
                answered = time.monotonic()
                for future in sorted(done, key=lambda f: f.exception() is None):  # outages first
                    task = futures.pop(future)
                    run = active[task.group]
                    run.pending -= 1
                    exc = future.exception()
                    if isinstance(exc, PrometheusUnavailableError):
                        outage.set()
                        for other in futures:
                            other.cancel()
                        raise exc
                    if outage.is_set():
                        continue  # skipped after an outage: the outage's own query raises
                    if isinstance(exc, MetricsError):
                        run.failed = run.failed or exc
                    elif exc is not None:
                        raise exc
                    else:
                        run.results[(task.kind, task.chunk)] = future.result()
                    if run.pending:
                        continue
                    restarted = run.restarted()
                    if run.first and run.failed is None and restarted:
                        run.first = False
                        submit(run, self._oom_tasks(task.group, run.batch, restarted, plan))
                        continue
                    del active[task.group]
                    yield self._finish(task.group, run, plan)
        finally:
            # the consumer stopped early (an error, a closed iterator): queries not yet
            # started are dropped, not run for nobody
            outage.set()
            for future in futures:
                future.cancel()

    def _notice_wait(self, queries: int, silent_s: float, deadline: float) -> None:
        LOG.warning(
            "%s: no answer for %.0f s (%d queries waiting); a request gives up after %g s "
            "(timeout_s), this fetch in %.0f s (fetch_timeout_s or the repository's budget)",
            self.client.url,
            silent_s,
            queries,
            self.config.timeout_s,
            max(0.0, deadline - time.monotonic()),
        )

    def _task(
        self, task: _Task, stats: ClientStats, outage: threading.Event, deadline: float
    ) -> Any:
        """Run one query before ``deadline``, counting its requests into its group's ``stats``."""
        if outage.is_set():  # another query found the server down: stop asking
            return None
        try:
            with self.client.counting(stats), self.client.bounded(deadline):
                return task.run()
        except PrometheusUnavailableError:
            outage.set()  # before this worker takes the next query
            raise

    def _finish(self, group: GroupKey, run: _GroupRun, plan: FetchPlan) -> FetchResult:
        """The histories (or the error) of one group from its answers."""
        histories: dict[WorkloadRef, WorkloadHistory] = {}
        errors: dict[WorkloadRef, MetricsError] = {}
        warnings: list[str] = []
        if run.failed is not None:
            errors = {request.ref: run.failed for request in run.batch}
        else:
            aliases = {r.hpa: r.ref.name for r in run.batch if r.hpa}
            data = namespace_data(self.config, run.results, plan, aliases)
            warnings.extend(data.warnings)
            histories.update(
                assemble(
                    run.batch,
                    data,
                    start_s=plan.start_s,
                    end_s=plan.end_s,
                    step_s=self.config.step_s,
                    min_history_days=self.config.min_history_days,
                    job_grouping_labels=self.config.job_grouping_labels,
                )
            )
        return FetchResult(
            histories=histories,
            errors=errors,
            warnings=tuple(dict.fromkeys(warnings)),
            stats=FetchStats(
                queries=run.stats.requests,
                retries=run.stats.retries,
                bytes_received=run.stats.bytes_received,
                seconds=time.perf_counter() - run.began,
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
