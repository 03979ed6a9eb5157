"""What ran in the cluster, read through the history source: when merged values went live
(``bot.metrics.live``) and how much a container was throttled (``bot.metrics.throttling``), for
the verification of merged pull requests (``docs/pull-requests.md``, "Verification").

A source that can answer implements ``ClusterStateSource``: ``PrometheusSource`` queries
kube-state-metrics and cAdvisor (``PrometheusClusterState``: the batched queries of
``find_live`` and ``fetch_throttling``, nothing more), a snapshot replays the same series it
recorded (``ClusterTables``). A source that cannot says why (``cluster_state_missing``), and the
verification says so instead of verifying.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from bot.config.metrics import PrometheusConfig
from bot.metrics.live import LiveResult, MergedValues, Rows, find_live, live_of_tables, live_queries
from bot.metrics.source import HistoryRequest
from bot.metrics.throttling import (
    THROTTLING_TABLES,
    Periods,
    fetch_throttling,
    periods_of,
    read_chunked,
    throttling_queries,
)
from bot.model import WorkloadRef

if TYPE_CHECKING:
    from bot.metrics.client import PrometheusClient

GroupKey = tuple[str, tuple[tuple[str, str], ...]]
"""(namespace, sorted selector items)."""

Throttled = dict[WorkloadRef, dict[str, Periods]]
"""Per workload and container, its CFS periods (``bot.metrics.throttling``)."""


def _group_key(ref: WorkloadRef, selector: Mapping[str, str]) -> GroupKey:
    return (ref.namespace, tuple(sorted(selector.items())))


@runtime_checkable
class ClusterStateSource(Protocol):
    """A history source that also says what ran: the live moment of merged values and the CPU
    throttling of containers."""

    def cluster_state_missing(self) -> str | None:
        """Why this source cannot say what ran (None: it can)."""
        ...

    def live_moments(self, merged: Sequence[MergedValues], *, now_s: float) -> LiveResult:
        """Per workload of ``merged``, the first moment its merged values all ran (``find_live``)."""
        ...

    def throttling(
        self, requests: Sequence[HistoryRequest], *, start_s: float, end_s: float
    ) -> Throttled:
        """Per workload of ``requests`` and container, its CFS periods over the window."""
        ...


def cluster_state_missing(source: object) -> str | None:
    """Why ``source`` cannot say what ran in the cluster; None when it can."""
    if not isinstance(source, ClusterStateSource):
        return "the history source does not say what ran in the cluster"
    return source.cluster_state_missing()


@dataclass(frozen=True, slots=True)
class ClusterTables:
    """The kube-state-metrics and cAdvisor series the verification reads, recorded over
    ``[start_s, end_s]`` at ``step_s``: per ``(namespace, selector)`` the tables of ``find_live``
    (``LIVE_TABLES``, ``targets``) and of ``fetch_throttling`` (``THROTTLING_TABLES``), each
    series with its label values as those functions read them."""

    start_s: float
    end_s: float
    step_s: float
    groups: Mapping[GroupKey, Mapping[str, Rows]]

    def _cut(
        self, key: GroupKey, kinds: Sequence[str] | None, start_s: float, end_s: float
    ) -> dict[str, Rows]:
        """The tables of group ``key`` (``kinds`` only, when given), samples in the window."""
        out: dict[str, Rows] = {}
        for kind, rows in self.groups.get(key, {}).items():
            if kinds is not None and kind not in kinds:
                continue
            cut: Rows = []
            for labels, t, v in rows:
                keep = (t >= start_s) & (t <= end_s)
                if keep.any():
                    cut.append((labels, t[keep], v[keep]))
            out[kind] = cut
        return out

    def live(self, merged: Sequence[MergedValues], *, now_s: float) -> LiveResult:
        """``find_live`` on the recorded series (no query)."""
        groups: dict[GroupKey, list[MergedValues]] = {}
        for item in merged:
            groups.setdefault(_group_key(item.ref, item.selector), []).append(item)
        live: dict[WorkloadRef, float | None] = {}
        for key, batch in sorted(groups.items()):
            start = min(m.merged_s for m in batch)
            tables = self._cut(key, None, start, max(now_s, start))
            tables = {k: v for k, v in tables.items() if k not in THROTTLING_TABLES}
            live.update(live_of_tables(batch, tables))
        return LiveResult(live, 0)

    def throttling(
        self, requests: Sequence[HistoryRequest], *, start_s: float, end_s: float
    ) -> Throttled:
        """``fetch_throttling`` on the recorded series (no query)."""
        out: Throttled = {}
        for request in requests:
            key = _group_key(request.ref, request.selector)
            tables = self._cut(key, THROTTLING_TABLES, start_s, end_s)
            read = {kind: {k: (t, v) for k, t, v in tables.get(kind, [])} for kind in tables}
            if all(kind in read for kind in THROTTLING_TABLES):
                out[request.ref] = periods_of(request, read)
        return out


def _grouped(requests: Sequence[HistoryRequest]) -> dict[GroupKey, list[HistoryRequest]]:
    groups: dict[GroupKey, list[HistoryRequest]] = {}
    for request in requests:
        groups.setdefault(_group_key(request.ref, request.selector), []).append(request)
    return groups


class PrometheusClusterState:
    """``ClusterStateSource`` for a source holding a Prometheus ``client`` and its ``config``
    (``PrometheusSource``), and what ``tortoise-bot snapshot`` records (``cluster_tables``)."""

    client: PrometheusClient
    config: PrometheusConfig

    def cluster_state_missing(self) -> str | None:
        """Prometheus always can (a failed query raises as any other)."""
        return None

    def live_moments(self, merged: Sequence[MergedValues], *, now_s: float) -> LiveResult:
        """``find_live``: at most five range queries per namespace and selector."""
        return find_live(self.client, self.config, merged, now_s=now_s)

    def throttling(
        self, requests: Sequence[HistoryRequest], *, start_s: float, end_s: float
    ) -> Throttled:
        """``fetch_throttling``: two range queries per namespace, selector and chunk."""
        return fetch_throttling(self.client, self.config, requests, start_s=start_s, end_s=end_s)

    def cluster_tables(
        self, requests: Sequence[HistoryRequest], *, start_s: float, end_s: float
    ) -> ClusterTables:
        """Every series the verification of ``requests``' workloads could read over
        ``[start_s, end_s]``, at ``step_s``: per namespace and selector seven range queries per
        chunk (requests, limits, the HPAs' bounds and targets, throttled and all CFS periods).
        The HPAs are those the fetch reads the replicas of (``request.hpa`` or the workload's
        name)."""
        groups: dict[GroupKey, dict[str, Rows]] = {}
        span = (start_s, end_s)
        for key, batch in sorted(_grouped(requests).items()):
            names = [r.ref.name for r in batch]
            containers = sorted({c for r in batch for c in r.containers})
            hpas = sorted({r.hpa or r.ref.name for r in batch})
            queries = {
                **live_queries(self.config, key, names, containers, hpas),
                **throttling_queries(self.config, key, names, containers),
            }
            groups[key] = {
                kind: [
                    (labels, t, v)
                    for labels, (t, v) in sorted(
                        read_chunked(self.client, self.config, query, span).items()
                    )
                ]
                for kind, query in queries.items()
            }
        return ClusterTables(start_s, end_s, float(self.config.step_s), groups)


@runtime_checkable
class ClusterTablesSource(Protocol):
    """A source that can record ``ClusterTables`` (``PrometheusSource``)."""

    def cluster_tables(
        self, requests: Sequence[HistoryRequest], *, start_s: float, end_s: float
    ) -> ClusterTables:
        """Every series the verification of ``requests``' workloads could read."""
        ...


__all__ = [
    "ClusterStateSource",
    "ClusterTables",
    "ClusterTablesSource",
    "GroupKey",
    "PrometheusClusterState",
    "Throttled",
    "cluster_state_missing",
]
