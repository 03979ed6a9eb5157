"""When the values a merged pull request set run in the cluster (``docs/pull-requests.md``,
"Verification").

A merge changes Git, not the cluster: an Argo CD or Flux sync, then a rollout, puts the values
in place, minutes or days later. ``find_live`` reads from kube-state-metrics what the pods and
HPAs run with since the merge, and gives per workload the first moment at which every value
the pull request set is in place:

- a container request or limit: every pod of the workload seen at that moment
  (``kube_pod_container_resource_requests`` / ``_limits``, labels ``namespace, pod, container,
  resource``) has the merged value (cores, bytes; within 0.1 %); a removed value: no pod of the
  workload reports one;
- ``hpa.minReplicas`` / ``hpa.maxReplicas``: the HPA's
  ``kube_horizontalpodautoscaler_spec_min_replicas`` / ``_spec_max_replicas``;
- a CPU or memory target: one of the HPA's ``kube_horizontalpodautoscaler_spec_target_metric``
  series of that resource (``metric_target_type="utilization"``).

A workload's pods are found by their controller's name pattern (``promql.pod_name_pattern``),
an HPA by its name. Per namespace and selector one range query per metric the merged values
touch (at most five), whatever the number of workloads, containers or pods; the step grows
with the span so a query stays under Prometheus' 11,000 points.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from bot.config.metrics import PrometheusConfig
from bot.metrics.errors import QueryError
from bot.metrics.promql import LabelMatch, NamespaceQueries, pod_name_pattern, regex_alternatives
from bot.model import FieldId, FloatArray, Number, WorkloadRef

if TYPE_CHECKING:
    from bot.metrics.client import PrometheusClient

MAX_POINTS = 10_000
"""Points per series a range query asks for at most (Prometheus refuses above 11,000)."""
TOLERANCE = 1e-3
"""Relative difference under which a running value is the merged one (quantity rounding)."""

Rows = list[tuple[tuple[str, ...], FloatArray, FloatArray]]
"""The series of one query: each one's label values (in the order asked) and samples."""

LIVE_TABLES = ("requests", "limits", FieldId.HPA_MIN_REPLICAS.text, FieldId.HPA_MAX_REPLICAS.text)
"""The tables ``find_live`` reads besides ``targets``: requests and limits by ``(pod,
container, resource)``, the HPAs' replica bounds by ``(hpa,)``; ``targets`` by ``(hpa,
metric_name)``."""

FieldKey = tuple[str | None, FieldId]
"""``(container or None, field)`` of a merged value (None: the HPA's replica bounds and a
pod-level target)."""


@dataclass(frozen=True, slots=True)
class MergedValues:
    """What one merged pull request set for one workload: ``values`` maps ``(container or
    None, field)`` to the merged value (None: removed); ``hpa`` names its HPA when it has one;
    ``selector`` is the environment's label matchers (``{"cluster": "prod"}``)."""

    ref: WorkloadRef
    merged_s: float
    values: Mapping[FieldKey, Number | None]
    hpa: str | None = None
    selector: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class LiveResult:
    """Per workload the first moment its merged values all ran (None: not yet), and the
    number of queries sent."""

    live_s: Mapping[WorkloadRef, float | None]
    queries: int


def _same(value: FloatArray, expected: float) -> np.ndarray:
    out: np.ndarray = np.abs(value - expected) <= TOLERANCE * abs(expected) + 1e-12
    return out


def first_all(
    grid: FloatArray,
    series: Iterable[tuple[FloatArray, FloatArray]],
    expected: Number | None,
    *,
    any_of: bool = False,
) -> np.ndarray:
    """At each time of ``grid``, whether the value is in place: every series with a sample
    there holds ``expected`` and there is one (``any_of``: one of them holds it; ``expected``
    None: no series has a sample there)."""
    present = np.zeros(grid.size, dtype=bool)
    wrong = np.zeros(grid.size, dtype=bool)
    right = np.zeros(grid.size, dtype=bool)
    for t, v in series:
        index = np.searchsorted(grid, t)
        present[index] = True
        if expected is None:
            continue
        same = _same(v, float(expected))
        wrong[index[~same]] = True
        right[index[same]] = True
    if expected is None:
        out: np.ndarray = ~present
        return out
    return right if any_of else present & ~wrong


def _step(start_s: float, end_s: float, step_s: int) -> float:
    return float(max(step_s, math.ceil((end_s - start_s) / MAX_POINTS)))


def series_of(
    client: PrometheusClient,
    query: str,
    span: tuple[float, float, float],
    labels: Sequence[str],
) -> Rows:
    """Every series of the range query ``query`` over ``span`` (start, end, step): its
    ``labels`` values and samples."""
    start_s, end_s, step_s = span
    response = client.query_range(query, start_s=start_s, end_s=end_s, step_s=step_s)
    data = response.data
    if data.get("resultType") != "matrix":
        raise QueryError(f"expected a matrix, got {data.get('resultType')!r}", query=query)
    out = []
    if response.series is not None:
        for metric, t, v in response.series:
            out.append((tuple(str(metric.get(k, "")) for k in labels), t, v))
        return out
    for item in data.get("result") or ():
        values = item.get("values") or []
        t = np.array([p[0] for p in values], dtype=np.float64)
        v = np.array([p[1] for p in values], dtype=np.float64)
        out.append((tuple(str(item.get("metric", {}).get(k, "")) for k in labels), t, v))
    return out


def find_live(
    client: PrometheusClient,
    config: PrometheusConfig,
    merged: Sequence[MergedValues],
    *,
    now_s: float,
) -> LiveResult:
    """Per workload of ``merged``, the first moment since its merge at which every merged
    value runs (see the module docstring); None when not yet by ``now_s``."""
    groups: dict[tuple[str, tuple[tuple[str, str], ...]], list[MergedValues]] = {}
    for item in merged:
        key = (item.ref.namespace, tuple(sorted(item.selector.items())))
        groups.setdefault(key, []).append(item)
    live: dict[WorkloadRef, float | None] = {}
    queries = 0
    for (namespace, selector), batch in sorted(groups.items()):
        found, sent = _group(client, config, (namespace, selector), batch, now_s)
        live.update(found)
        queries += sent
    return LiveResult(live, queries)


def live_queries(
    config: PrometheusConfig,
    group: tuple[str, tuple[tuple[str, str], ...]],
    names: Sequence[str],
    containers: Sequence[str],
    hpas: Sequence[str],
) -> dict[str, tuple[str, tuple[str, ...]]]:
    """Per table ``find_live`` reads (``LIVE_TABLES`` and ``targets``), its range query for the
    workloads ``names`` of one ``(namespace, selector)``, their ``containers`` and ``hpas``, and
    the labels its series are told apart by (requests and limits: none without containers; the
    HPA tables: none without HPAs)."""
    labels, metrics = config.labels, config.metrics
    q = NamespaceQueries(config, group[0], group[1], tuple(sorted(names)), tuple(containers))
    by_pod = (labels.pod, labels.container, "resource")
    out: dict[str, tuple[str, tuple[str, ...]]] = {}
    container_match = LabelMatch(labels.container, "=~", regex_alternatives(containers))
    for kind, metric in (
        ("requests", metrics.resource_requests),
        ("limits", metrics.resource_limits),
    ):
        if containers:
            query = f"max by ({', '.join(by_pod)}) ({q.ksm(metric, container_match)})"
            out[kind] = (query, by_pod)
    if not hpas:
        return out
    hpa_match = LabelMatch(labels.hpa, "=~", regex_alternatives(hpas))
    for field_id, metric in (
        (FieldId.HPA_MIN_REPLICAS, metrics.hpa_min_replicas),
        (FieldId.HPA_MAX_REPLICAS, metrics.hpa_max_replicas),
    ):
        query = f"max by ({labels.hpa}) ({q.ksm(metric, hpa_match, pods=False)})"
        out[field_id.text] = (query, (labels.hpa,))
    utilization = LabelMatch("metric_target_type", "=", "utilization")
    inner = q.ksm(metrics.hpa_target_metric, hpa_match, utilization, pods=False)
    by = (labels.hpa, "metric_name")
    out["targets"] = (f"max by ({', '.join(by)}) ({inner})", by)
    return out


def _needed(kind: str, fields: set[FieldId]) -> bool:
    """Whether merged values touching ``fields`` need the table ``kind``."""
    if kind == "requests":
        return any(f.is_request for f in fields)
    if kind == "limits":
        return any(f.is_limit for f in fields)
    if kind == "targets":
        return any(f.is_hpa_target for f in fields)
    return any(f.text == kind for f in fields)


def _group(
    client: PrometheusClient,
    config: PrometheusConfig,
    group: tuple[str, tuple[tuple[str, str], ...]],
    batch: Sequence[MergedValues],
    now_s: float,
) -> tuple[dict[WorkloadRef, float | None], int]:
    """``find_live`` for the workloads of one ``(namespace, selector)``."""
    containers = sorted({c for m in batch for (c, f) in m.values if c and f.is_request_or_limit})
    start = min(m.merged_s for m in batch)
    end = max(now_s, start)
    span = (start, end, _step(start, end, config.step_s))
    fields = {f for m in batch for (_, f) in m.values}
    hpas = sorted({m.hpa for m in batch if m.hpa})
    queries = live_queries(config, group, [m.ref.name for m in batch], containers, hpas)
    read = {
        kind: series_of(client, query, span, by)
        for kind, (query, by) in queries.items()
        if _needed(kind, fields)
    }
    return live_of_tables(batch, read), len(read)


def live_of_tables(
    batch: Sequence[MergedValues], read: Mapping[str, Rows]
) -> dict[WorkloadRef, float | None]:
    """The live moment of each workload of ``batch`` (one namespace and selector) from the
    series ``read`` (``LIVE_TABLES`` and ``targets``), whoever read them: every time any of
    them has a sample is a candidate."""
    times = [t for rows in read.values() for _, t, _ in rows]
    grid = np.unique(np.concatenate(times)) if times else np.empty(0)
    return {m.ref: _live_of(m, read, grid) for m in batch}


def _live_of(
    item: MergedValues,
    read: Mapping[str, Rows],
    grid: FloatArray,
) -> float | None:
    """The first time of ``grid`` at or after the merge at which every value of ``item``
    runs."""
    if grid.size == 0:
        return None
    pattern = pod_name_pattern(item.ref.kind, item.ref.name)
    ok = grid >= item.merged_s
    for (container, field_id), value in item.values.items():
        resource = field_id.resource
        if field_id.is_request_or_limit:
            rows = read.get("requests" if field_id.is_request else "limits", [])
            series = [
                (t, v)
                for (pod, name, res), t, v in rows
                if name == container and res == resource and pattern.fullmatch(pod)
            ]
            ok &= first_all(grid, series, value)
        elif field_id.is_hpa_target:
            rows = read.get("targets", [])
            series = [
                (t, v) for (hpa, metric), t, v in rows if hpa == item.hpa and metric == resource
            ]
            ok &= first_all(grid, series, value, any_of=True)
        elif field_id.is_hpa:
            rows = read.get(field_id.text, [])
            ok &= first_all(grid, [(t, v) for (hpa,), t, v in rows if hpa == item.hpa], value)
    hits = np.flatnonzero(ok)
    return float(grid[hits[0]]) if hits.size else None


__all__ = [
    "LIVE_TABLES",
    "LiveResult",
    "MergedValues",
    "Rows",
    "find_live",
    "first_all",
    "live_of_tables",
    "live_queries",
    "series_of",
]
