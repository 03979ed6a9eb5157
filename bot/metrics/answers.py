"""A fetch's answers read into numpy: matrix and vector answers decoded (from either
decoder), raw samples turned into step values (``bot/metrics/raw.py``), and one namespace
group's answers gathered into its ``NamespaceData`` (owners, restarts, CPU, memory, OOM kills,
replicas) for ``assemble``."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from bot.config.metrics import PrometheusConfig
from bot.metrics.assemble import NamespaceData, PodKey, Series, merge_chunks
from bot.metrics.client import ApiResponse
from bot.metrics.errors import QueryError
from bot.metrics.mapping import PodOwner
from bot.metrics.raw import combine_max, counter_rates, step_max
from bot.metrics.restarts import oom_kills, restart_events
from bot.model import FloatArray

HPA_KINDS = ("Deployment", "StatefulSet", "Rollout")
"""Kinds an HPA scales (``replicas_source: hpa``)."""

RawPart = list[tuple[PodKey, tuple[tuple[str, str], ...], Series]]
"""Raw series of one chunk: ((pod, container), full label set, samples)."""


@dataclass(frozen=True, slots=True)
class FetchPlan:
    """Evaluation grid of one fetch: chunk bounds (aligned) and the window in seconds."""

    windows: list[tuple[float, float]]
    start_s: float
    end_s: float
    memory_windows: list[tuple[float, float]]

    @property
    def first_s(self) -> float:
        return self.windows[0][0]

    @property
    def last_s(self) -> float:
        return self.windows[-1][1]


def memory_by_range(config: PrometheusConfig) -> bool:
    """Memory comes from a range query (range mode, or a coarser memory step)."""
    return config.query_mode == "range" or (config.memory_step_s or config.step_s) != config.step_s


def rate_window_s(config: PrometheusConfig) -> float:
    """The CPU rate window (seconds): ``cpu_rate_window_s``, else the step."""
    return float(config.cpu_rate_window_s or config.step_s)


def _floats(values: list[Any], column: int) -> np.ndarray[Any, np.dtype[np.float64]]:
    return np.array([v[column] for v in values], dtype=np.float64)


def series_of(response: ApiResponse) -> Iterator[tuple[Mapping[str, Any], Series]]:
    """(labels, samples) of each series of a matrix answer, from either decoder."""
    data = response.data
    if data.get("resultType") != "matrix":
        raise QueryError(f"expected a matrix, got {data.get('resultType')!r}")
    if response.series is not None:
        for metric, t, v in response.series:
            yield metric, Series(t, v)
        return
    for item in data.get("result") or ():
        values = item.get("values") or []
        yield item.get("metric", {}), Series(_floats(values, 0), _floats(values, 1))


def matrix(response: ApiResponse, labels: Sequence[str]) -> dict[tuple[str, ...], Series]:
    """``{label values: Series}`` of an aggregated matrix answer (one series per key)."""
    return {
        tuple(str(metric.get(label, "")) for label in labels): series
        for metric, series in series_of(response)
    }


def raw_matrix(response: ApiResponse, labels: Sequence[str]) -> RawPart:
    """Every raw series of an instant range-vector answer, with its (pod, container) key."""
    out: RawPart = []
    for metric, series in series_of(response):
        key = (str(metric.get(labels[0], "")), str(metric.get(labels[1], "")))
        ident = tuple(sorted((str(k), str(v)) for k, v in metric.items()))
        out.append((key, ident, series))
    return out


def vector(response: ApiResponse, labels: Sequence[str]) -> list[tuple[tuple[str, ...], float]]:
    data = response.data
    if data.get("resultType") != "vector":
        raise QueryError(f"expected a vector, got {data.get('resultType')!r}")
    return [
        (
            tuple(str(item.get("metric", {}).get(label, "")) for label in labels),
            float(item.get("value", [0, "nan"])[1]),
        )
        for item in data.get("result") or ()
    ]


def from_raw(
    config: PrometheusConfig,
    parts: Sequence[RawPart],
    plan: FetchPlan,
    *,
    counter: bool,
    resets: dict[PodKey, FloatArray] | None = None,
) -> dict[PodKey, Series]:
    """Step values per (pod, container) from raw chunks (``bot/metrics/raw.py``)."""
    samples: dict[tuple[tuple[str, str], ...], list[Series]] = {}
    keys: dict[tuple[tuple[str, str], ...], PodKey] = {}
    for part in parts:
        for key, ident, series in part:
            samples.setdefault(ident, []).append(series)
            keys[ident] = key
    per_key: dict[PodKey, list[tuple[FloatArray, FloatArray]]] = {}
    step = float(config.step_s)
    for ident, pieces in samples.items():
        t = np.concatenate([p.t for p in pieces])
        v = np.concatenate([p.v for p in pieces])
        if counter:
            if resets is not None:
                dropped = t[1:][np.diff(v) < 0]
                if len(dropped):
                    old = resets.get(keys[ident], np.zeros(0, np.float64))
                    resets[keys[ident]] = np.concatenate([old, dropped])
            stepped = counter_rates(
                t,
                v,
                first_s=plan.first_s,
                last_s=plan.last_s,
                step_s=step,
                max_gap_s=rate_window_s(config),
            )
        else:
            stepped = step_max(t, v, first_s=plan.first_s, last_s=plan.last_s, step_s=step)
        per_key.setdefault(keys[ident], []).append(stepped)
    out: dict[PodKey, Series] = {}
    for key, pieces_ in per_key.items():
        t_, v_ = combine_max(pieces_)
        if len(t_):
            out[key] = Series(t_, v_)
    return out


def replicas_of(
    config: PrometheusConfig,
    kind: str,
    parts: Sequence[Any],
    plan: FetchPlan,
    aliases: Mapping[str, str],
) -> dict[tuple[str, str], Series]:
    """``{(workload kind, name): replicas}`` from the chunks of one ``replicas:*`` task:
    raw chunks keyed (name, namespace) in raw mode, else range answers keyed (name,); an
    HPA named otherwise than its workload (``aliases``: KEDA's ``keda-hpa-<name>``) is
    keyed by the workload's name."""
    if config.query_mode == "raw":
        per_name = {
            key[0]: series for key, series in from_raw(config, parts, plan, counter=False).items()
        }
    else:
        per_name = {key[0]: series for key, series in merge_chunks(parts).items()}
    workload_kind = kind.split(":", 1)[1]
    if workload_kind != "hpa":
        return {(workload_kind, name): series for name, series in per_name.items()}
    return {
        (k, aliases.get(name, name)): series for name, series in per_name.items() for k in HPA_KINDS
    }


def namespace_data(
    config: PrometheusConfig,
    parts: dict[tuple[str, int], Any],
    plan: FetchPlan,
    aliases: Mapping[str, str],
) -> NamespaceData:
    data = NamespaceData()
    by_kind: dict[str, list[Any]] = {}
    for (kind, _chunk), (payload, warnings) in sorted(parts.items(), key=lambda kv: kv[0]):
        data.warnings.extend(warnings)
        if kind == "owners":
            for (pod, owner_kind, owner_name), _ in payload:
                data.owners[pod] = PodOwner(owner_kind, owner_name)
        elif kind == "replicasets":
            for (replicaset, owner_kind, owner_name), _ in payload:
                data.replicaset_owners[replicaset] = PodOwner(owner_kind, owner_name)
        elif kind == "jobs":
            for (job, owner_kind, owner_name), _ in payload:
                data.job_owners[job] = PodOwner(owner_kind, owner_name)
        elif kind == "joblabels":
            data.job_labels.update((key[0], key[1:]) for key, _ in payload)
        elif kind == "restarts":
            for (pod, container), count in payload:
                if count > 0:
                    data.restarts[(pod, container)] = round(count)
        elif kind == "resets":
            for (pod, container), count in payload:
                if count > 0:
                    data.cpu_reset_counts[(pod, container)] = round(count)
        else:
            by_kind.setdefault(kind, []).append(payload)
    if config.query_mode == "raw":
        data.cpu = from_raw(
            config, by_kind.get("cpu", []), plan, counter=True, resets=data.cpu_resets
        )
    else:
        data.cpu = merge_chunks(by_kind.get("cpu", []))
    if memory_by_range(config):
        data.memory = merge_chunks(by_kind.get("memory", []))
    else:
        data.memory = from_raw(config, by_kind.get("memory", []), plan, counter=False)
    reasons = merge_chunks(by_kind.get("oom", []))
    for key, series in merge_chunks(by_kind.get("restart-series", [])).items():
        events = restart_events(series.t, series.v)
        if len(events):
            data.restart_events[key] = events
        if key in reasons:
            kills = Series(*oom_kills(series.t, series.v, reasons[key].t, reasons[key].v))
            if len(kills.t):
                data.oom[key] = kills
    for kind in [k for k in by_kind if k.startswith("replicas:")]:
        data.replicas.update(replicas_of(config, kind, by_kind[kind], plan, aliases))
    return data
