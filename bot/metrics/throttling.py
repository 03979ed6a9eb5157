"""CPU throttling of the verified workloads: per container, summed over its pods, the CFS
periods and the throttled ones per step (``container_cpu_cfs_periods_total``,
``container_cpu_cfs_throttled_periods_total``), for the verification of a CPU limit
(``docs/pull-requests.md``, "Verification"), as ``(times, throttled, periods)`` arrays that
``bot.recommend.outcome.Throttling`` holds.

Per namespace and selector two range queries per chunk of at most ``max_points_per_query``
steps, whatever the number of workloads, containers or pods; pods are matched to their
workload by the controller's name pattern (``promql.pod_name_pattern``). A container without
a CPU limit has no throttled periods and is left out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from bot.config.metrics import PrometheusConfig
from bot.metrics.live import series_of
from bot.metrics.promql import NamespaceQueries, chunks, duration, pod_name_pattern
from bot.metrics.source import HistoryRequest
from bot.model import FloatArray, WorkloadRef

if TYPE_CHECKING:
    from bot.metrics.client import PrometheusClient

Periods = tuple[FloatArray, FloatArray, FloatArray]
"""``(t_s, throttled, periods)``: per step, the increases summed over a container's pods."""

THROTTLING_TABLES = ("throttled", "periods")
"""The tables ``fetch_throttling`` reads: per step the increase of the throttled and of all
CFS periods, by ``(pod, container)``."""


def fetch_throttling(
    client: PrometheusClient,
    config: PrometheusConfig,
    requests: Sequence[HistoryRequest],
    *,
    start_s: float,
    end_s: float,
) -> dict[WorkloadRef, dict[str, Periods]]:
    """Per workload of ``requests`` and container, its CFS periods over ``[start_s, end_s]``."""
    groups: dict[tuple[str, tuple[tuple[str, str], ...]], list[HistoryRequest]] = {}
    for request in requests:
        key = (request.ref.namespace, tuple(sorted(request.selector.items())))
        groups.setdefault(key, []).append(request)
    out: dict[WorkloadRef, dict[str, Periods]] = {}
    for (namespace, selector), batch in sorted(groups.items()):
        out.update(_group(client, config, (namespace, selector), batch, (start_s, end_s)))
    return out


def throttling_queries(
    config: PrometheusConfig,
    group: tuple[str, tuple[tuple[str, str], ...]],
    names: Sequence[str],
    containers: Sequence[str],
) -> dict[str, tuple[str, tuple[str, ...]]]:
    """Per table of ``THROTTLING_TABLES``, its range query (at ``config.step_s``) for the
    workloads ``names`` of one ``(namespace, selector)`` and their ``containers``, and the
    labels its series are told apart by."""
    labels, metrics, step = config.labels, config.metrics, config.step_s
    q = NamespaceQueries(config, group[0], group[1], tuple(sorted(names)), tuple(containers))
    by = (labels.pod, labels.container)
    return {
        kind: (f"sum by ({', '.join(by)}) (increase({q.cadvisor(metric)}[{duration(step)}]))", by)
        for kind, metric in (
            ("throttled", metrics.cpu_throttled_periods),
            ("periods", metrics.cpu_periods),
        )
    }


def read_chunked(
    client: PrometheusClient,
    config: PrometheusConfig,
    query: tuple[str, tuple[str, ...]],
    span: tuple[float, float],
) -> dict[tuple[str, ...], tuple[FloatArray, FloatArray]]:
    """The series of the range query ``query`` (text, labels) over ``span`` at
    ``config.step_s``, one query per chunk of at most ``max_points_per_query`` steps, each
    series' chunks joined."""
    step = config.step_s
    found: dict[tuple[str, ...], list[tuple[FloatArray, FloatArray]]] = {}
    for a, b in chunks(*span, step, config.max_points_per_query):
        for key, t, v in series_of(client, query[0], (a, b, float(step)), query[1]):
            found.setdefault(key, []).append((t, v))
    return {
        k: (np.concatenate([t for t, _ in parts]), np.concatenate([v for _, v in parts]))
        for k, parts in found.items()
    }


def _group(
    client: PrometheusClient,
    config: PrometheusConfig,
    group: tuple[str, tuple[tuple[str, str], ...]],
    batch: Sequence[HistoryRequest],
    span: tuple[float, float],
) -> dict[WorkloadRef, dict[str, Periods]]:
    """``fetch_throttling`` for the workloads of one ``(namespace, selector)``."""
    queries = throttling_queries(
        config,
        group,
        [r.ref.name for r in batch],
        sorted({c for r in batch for c in r.containers}),
    )
    read = {kind: read_chunked(client, config, query, span) for kind, query in queries.items()}
    return {r.ref: periods_of(r, read) for r in batch}


def periods_of(
    request: HistoryRequest,
    read: Mapping[str, Mapping[tuple[str, ...], tuple[FloatArray, FloatArray]]],
) -> dict[str, Periods]:
    """The throttling of each container of ``request``'s workload, its pods summed per step,
    from the ``THROTTLING_TABLES`` of its namespace and selector (whoever read them)."""
    pattern = pod_name_pattern(request.ref.kind, request.ref.name)
    out: dict[str, Periods] = {}
    for container in request.containers:
        parts: dict[str, tuple[list[FloatArray], list[FloatArray]]] = {}
        for kind, series in read.items():
            mine = [
                (t, v)
                for (pod, name), (t, v) in series.items()
                if name == container and pattern.fullmatch(pod)
            ]
            parts[kind] = ([t for t, _ in mine], [v for _, v in mine])
        if not parts["periods"][0] or not parts["throttled"][0]:
            continue
        times = np.unique(np.concatenate(parts["periods"][0] + parts["throttled"][0]))
        summed: list[FloatArray] = []
        for kind in ("throttled", "periods"):
            t, v = np.concatenate(parts[kind][0]), np.concatenate(parts[kind][1])
            index = np.searchsorted(times, t)
            summed.append(np.bincount(index, weights=v, minlength=times.size).astype(np.float64))
        out[container] = (times, summed[0], summed[1])
    return out


__all__ = [
    "THROTTLING_TABLES",
    "Periods",
    "fetch_throttling",
    "periods_of",
    "read_chunked",
    "throttling_queries",
]
