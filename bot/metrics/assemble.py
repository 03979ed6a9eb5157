"""Turn per-(pod, container) series of one namespace into ``WorkloadHistory`` values with notes.

Pure: no I/O. Data-quality notes (``Note.code``), never silent drops or zeros:

- ``no-data``: no CPU or memory sample for any container in the window;
- ``missing-container``: a requested container never reported;
- ``silent-pods``: pods kube-state-metrics lists for the workload that have no usage sample;
- ``gaps``: holes longer than ``GAP_STEPS`` steps inside a pod's series (count and minutes);
- ``restarts``: container restarts in the window (``rate()`` handles the CPU counter reset
  each causes; the count says how often it had to);
- ``crash-loop``: a container crash-looped (``bot/metrics/restarts.py``: at least
  ``CRASH_LOOP_RESTARTS`` restarts within ``CRASH_LOOP_WINDOW_S``); those periods are
  ``WorkloadHistory.crash_loops_s``, which the engine leaves out of the history;
- ``counter-resets``: CPU counter resets no restart explains (a counter that went back without
  its container restarting: a cAdvisor or relabelling problem); ``rate()`` still treats them as
  resets, so the CPU values around them may be off;
- ``non-finite``: NaN or ±Inf samples, dropped and counted;
- ``short-history``: samples span less than ``min_history_days``;
- ``owner-fallback``: pods mapped by name pattern because kube-state-metrics had no owner;
- ``oom-request-unknown``: OOM kills whose memory request kube-state-metrics did not report
  (``oom_request_bytes`` is NaN for those rows);
- ``prometheus-warning``: a warning the server returned with this namespace's answers;
- ``no-replicas``: usage but no replica series (with ``replicas_source: hpa``, no HPA named like
  the workload); a Rollout's and a DaemonSet's replicas are their pods counted per step.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar, cast

import numpy as np

from bot.metrics.job_groups import grouped_jobs, missing_note
from bot.metrics.mapping import PodOwner, map_pods
from bot.metrics.restarts import (
    CRASH_LOOP_RESTARTS,
    CRASH_LOOP_WINDOW_S,
    crash_loops,
    merge_intervals,
    unexplained_resets,
)
from bot.metrics.source import HistoryRequest
from bot.model import (
    SECONDS_PER_DAY,
    ContainerHistory,
    FloatArray,
    IntArray,
    Note,
    WorkloadHistory,
    WorkloadRef,
)

COUNTED_KINDS = ("Rollout", "DaemonSet", "CronJob", "Job")
"""Kinds whose replica history is their pods counted per step (``pods_per_step``):
kube-state-metrics has no replica series for an Argo Rollout or a DaemonSet."""

GAP_STEPS = 2.5
"""A hole longer than this many steps inside one pod's series counts as a gap."""


@dataclass(frozen=True, slots=True)
class Series:
    """Timestamps (unix seconds) and values of one series, time-ordered."""

    t: FloatArray
    v: FloatArray


PodKey = tuple[str, str]
"""(pod, container)."""


@dataclass
class NamespaceData:
    """Everything fetched for one namespace and selector, before mapping pods to workloads."""

    cpu: dict[PodKey, Series] = field(default_factory=dict)
    memory: dict[PodKey, Series] = field(default_factory=dict)
    restarts: dict[PodKey, int] = field(default_factory=dict)
    restart_events: dict[PodKey, FloatArray] = field(default_factory=dict)
    cpu_resets: dict[PodKey, FloatArray] = field(default_factory=dict)
    cpu_reset_counts: dict[PodKey, int] = field(default_factory=dict)
    oom: dict[PodKey, Series] = field(default_factory=dict)
    replicas: dict[tuple[str, str], Series] = field(default_factory=dict)
    owners: dict[str, PodOwner] = field(default_factory=dict)
    replicaset_owners: dict[str, PodOwner] = field(default_factory=dict)
    """The Deployment or Argo Rollout that owns each ReplicaSet."""
    job_owners: dict[str, PodOwner] = field(default_factory=dict)
    """The CronJob that owns each Job (``bot.metrics.jobs``)."""
    job_labels: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Each Job's values of ``job_grouping_labels`` (``bot.metrics.job_groups``)."""
    warnings: list[str] = field(default_factory=list)


ArrayT = TypeVar("ArrayT", bound=np.ndarray)


def _empty_f() -> FloatArray:
    return np.zeros(0, dtype=np.float64)


def _gaps(t: FloatArray, step_s: float) -> tuple[int, float]:
    """Number of holes longer than ``GAP_STEPS`` steps and their total length in seconds."""
    if len(t) < 2:
        return 0, 0.0
    d = np.diff(t)
    holes = d[d > GAP_STEPS * step_s]
    return len(holes), float((holes - step_s).sum())


@dataclass
class _Family:
    t: list[FloatArray] = field(default_factory=list)
    pod: list[IntArray] = field(default_factory=list)
    v: list[FloatArray] = field(default_factory=list)

    def add(self, t: FloatArray, pod: int, v: FloatArray) -> None:
        self.t.append(t)
        self.pod.append(np.full(len(t), pod, dtype=np.int32))
        self.v.append(v)

    def arrays(self) -> tuple[FloatArray, IntArray, FloatArray]:
        if not self.t:
            return _empty_f(), np.zeros(0, np.int32), _empty_f()
        return (
            np.concatenate(self.t).astype(np.float64, copy=False),
            np.concatenate(self.pod).astype(np.int32, copy=False),
            np.concatenate(self.v).astype(np.float64, copy=False),
        )


class _Shared:
    """Equal arrays of one namespace group held once (read-only): the pods' time axes and pod
    numbers, the same for every container of a pod and often for every workload of the group.
    Memory holds them once, and a workload sent to a worker process (``run.processes``) is
    pickled with each array once, as pickle writes an object it has written before as a
    reference: about 40 % fewer bytes to copy there and back."""

    def __init__(self) -> None:
        self._seen: dict[tuple[str, int, bytes], list[np.ndarray]] = {}

    def __call__(self, array: ArrayT) -> ArrayT:
        """``array``, or the equal array seen before."""
        if not array.size:
            return array
        key = (array.dtype.str, array.size, array[[0, -1]].tobytes())
        same = self._seen.setdefault(key, [])
        for seen in same:
            if np.array_equal(seen, array):
                return cast(ArrayT, seen)
        array.flags.writeable = False
        same.append(array)
        return array


def _finite(series: Series) -> tuple[Series, int]:
    ok = np.isfinite(series.v)
    bad = int(len(ok) - ok.sum())
    return (Series(series.t[ok], series.v[ok]) if bad else series), bad


def assemble(
    requests: Sequence[HistoryRequest],
    data: NamespaceData,
    *,
    start_s: float,
    end_s: float,
    step_s: float,
    min_history_days: float,
    job_grouping_labels: tuple[str, ...] = (),
) -> dict[WorkloadRef, WorkloadHistory]:
    """One ``WorkloadHistory`` per request, pods numbered in order of their first sample."""
    refs = [r.ref for r in requests]
    pods = {p for p, _ in data.cpu} | {p for p, _ in data.memory}
    grouped = grouped_jobs(requests, data.job_labels, job_grouping_labels)
    mapping = map_pods(
        refs, pods, data.owners, data.replicaset_owners, data.job_owners, grouped=grouped
    )
    first_seen: dict[str, float] = {}
    for source in (data.cpu, data.memory):
        for (pod, _), series in source.items():
            if len(series.t):
                first_seen[pod] = min(first_seen.get(pod, np.inf), float(series.t[0]))
    out: dict[WorkloadRef, WorkloadHistory] = {}
    shared = _Shared()
    for request in requests:
        ref = request.ref
        mine = sorted(
            (p for p in pods if mapping.by_pod.get(p) == ref),
            key=lambda p: (first_seen.get(p, np.inf), p),
        )
        index = {p: i for i, p in enumerate(mine)}
        notes: list[Note] = []
        containers: dict[str, ContainerHistory] = {}
        t_min, t_max = np.inf, -np.inf
        loops: list[tuple[float, float]] = []
        for name in request.containers:
            cpu, mem, oom = _Family(), _Family(), _Family()
            bad = gaps = restarts = unknown = unexplained = 0
            gap_s = 0.0
            mine_loops: list[tuple[float, float]] = []
            restart_times: list[FloatArray] = []
            for pod in mine:
                key = (pod, name)
                if key in data.cpu:
                    series, dropped = _finite(data.cpu[key])
                    bad += dropped
                    cpu.add(series.t, index[pod], series.v)
                if key in data.memory:
                    series, dropped = _finite(data.memory[key])
                    bad += dropped
                    mem.add(series.t, index[pod], series.v)
                    count, seconds = _gaps(series.t, step_s)
                    gaps += count
                    gap_s += seconds
                if key in data.oom:
                    series = data.oom[key]
                    requests_bytes = np.where(series.v > 0, series.v, np.nan)
                    unknown += int(np.isnan(requests_bytes).sum())
                    oom.add(series.t, index[pod], requests_bytes)
                events = data.restart_events.get(key, _empty_f())
                # changes() counts one per scrape that saw restarts; the events count each restart
                restarts += max(data.restarts.get(key, 0), len(events))
                mine_loops.extend(crash_loops(events))
                restart_times.append(events)
                if key in data.cpu_resets:
                    unexplained += unexplained_resets(data.cpu_resets[key], events, step_s=step_s)
                elif key in data.cpu_reset_counts:
                    unexplained += max(0, data.cpu_reset_counts[key] - len(events))
            cpu_t, cpu_pod, cpu_v = cpu.arrays()
            mem_t, mem_pod, mem_v = mem.arrays()
            oom_t, oom_pod, oom_v = oom.arrays()
            for t in (cpu_t, mem_t):
                if len(t):
                    t_min, t_max = min(t_min, float(t.min())), max(t_max, float(t.max()))
            if not len(cpu_t) and not len(mem_t):
                notes.append(Note("missing-container", f"container {name} has no samples", name))
            if gaps:
                notes.append(
                    Note("gaps", f"{gaps} gaps totalling {gap_s / 60:.0f} min in {name}", name)
                )
            if restarts:
                notes.append(
                    Note(
                        "restarts",
                        f"{name} restarted {restarts} times; rate() handled its CPU counter resets",
                        name,
                    )
                )
            if mine_loops:
                merged = merge_intervals(mine_loops)
                loops.extend(merged)
                minutes = sum(b - a for a, b in merged) / 60
                notes.append(
                    Note(
                        "crash-loop",
                        f"{name} crash-looped {len(merged)} times ({minutes:.0f} min in all: "
                        f"{CRASH_LOOP_RESTARTS}+ restarts within {CRASH_LOOP_WINDOW_S / 60:g} min); "
                        "those periods are left out of the history",
                        name,
                    )
                )
            if unexplained:
                notes.append(
                    Note(
                        "counter-resets",
                        f"{unexplained} CPU counter resets of {name} without a restart; "
                        "rate() read them as resets, so CPU around them may be off",
                        name,
                    )
                )
            if bad:
                notes.append(Note("non-finite", f"{bad} NaN/Inf samples of {name} dropped", name))
            if unknown:
                notes.append(
                    Note(
                        "oom-request-unknown",
                        f"{unknown} OOM kills of {name} without a known memory request",
                        name,
                    )
                )
            containers[name] = ContainerHistory(
                name=name,
                cpu_t=shared(cpu_t),
                cpu_pod=shared(cpu_pod),
                cpu_cores=cpu_v,
                mem_t=shared(mem_t),
                mem_pod=shared(mem_pod),
                mem_bytes=mem_v,
                oom_t=oom_t,
                oom_pod=oom_pod,
                oom_request_bytes=oom_v,
                restart_t=np.sort(np.concatenate(restart_times)) if restart_times else _empty_f(),
            )
        if job_grouping_labels and not grouped and ref.kind == "Job":
            notes.append(missing_note(job_grouping_labels))
        if t_min == np.inf:
            notes.insert(
                0,
                Note(
                    "no-data",
                    "no usage samples in the window: the workload did not run, or the "
                    "namespace, selector or label names do not match",
                ),
            )
        elif (t_max - t_min) < min_history_days * SECONDS_PER_DAY:
            notes.append(
                Note(
                    "short-history",
                    f"{(t_max - t_min) / SECONDS_PER_DAY:.1f} days of history, "
                    f"less than {min_history_days:g}",
                )
            )
        silent = sorted(mapping.owned.get(ref, frozenset()) - set(mine))
        if silent:
            shown = ", ".join(silent[:5]) + (" ..." if len(silent) > 5 else "")
            notes.append(Note("silent-pods", f"{len(silent)} pods never reported usage: {shown}"))
        fallback = [p for p in mine if p in mapping.by_pattern]
        if fallback:
            notes.append(
                Note(
                    "owner-fallback",
                    f"{len(fallback)} pods mapped by name pattern (no kube_pod_owner)",
                )
            )
        notes.extend(Note("prometheus-warning", w) for w in dict.fromkeys(data.warnings))
        replicas = data.replicas.get((ref.kind, ref.name)) or (
            pods_per_step(containers.values())
            if ref.kind in COUNTED_KINDS
            else Series(_empty_f(), _empty_f())
        )
        replicas, _ = _finite(replicas)
        if not len(replicas.t) and t_min != np.inf:
            notes.append(
                Note(
                    "no-replicas",
                    "no replica series for the workload (with replicas_source: hpa, no HPA "
                    "named like it)",
                )
            )
        out[ref] = WorkloadHistory(
            ref=ref,
            start_s=start_s,
            end_s=end_s,
            pods=tuple(mine),
            containers=containers,
            replicas_t=shared(replicas.t),
            replicas=replicas.v,
            quality=tuple(notes),
            crash_loops_s=tuple(merge_intervals(loops)),
        )
    return out


def pods_per_step(containers: Iterable[ContainerHistory]) -> Series:
    """The number of pods with a CPU or memory sample at each step time: the replica history of
    a kind without a kube-state-metrics replica series (``COUNTED_KINDS``)."""
    times = [a for c in containers for a in (c.cpu_t, c.mem_t)]
    pods = [a for c in containers for a in (c.cpu_pod, c.mem_pod)]
    if not times or not sum(len(t) for t in times):
        return Series(_empty_f(), _empty_f())
    pairs = np.unique(
        np.stack([np.concatenate(times), np.concatenate(pods).astype(np.float64)]), axis=1
    )
    t, counts = np.unique(pairs[0], return_counts=True)
    return Series(t.astype(np.float64), counts.astype(np.float64))


def merge_chunks(parts: Sequence[Mapping[PodKey, Series]]) -> dict[PodKey, Series]:
    """Concatenate per-key series of consecutive, non-overlapping time chunks (in order)."""
    collected: dict[PodKey, list[Series]] = {}
    for part in parts:
        for key, series in part.items():
            collected.setdefault(key, []).append(series)
    return {
        key: s[0]
        if len(s) == 1
        else Series(np.concatenate([x.t for x in s]), np.concatenate([x.v for x in s]))
        for key, s in collected.items()
    }
