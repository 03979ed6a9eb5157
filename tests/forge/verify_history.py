"""A recorded history around the merges the verification tests make, as OpenMetrics for a real
Prometheus: per pod of a workload its CPU counter, working set, requests (kube-state-metrics,
CPU and memory), CPU limit and CFS periods when it has one, restart counter and OOM
terminations, plus each Deployment's replicas and its HPA's replica bounds.

A rollout is two generations of pods: the old ones run the previous values until ``switch_s``,
the new ones the merged values from half an hour before it, so the requests series change
mid-history as kube-state-metrics shows a rolling update.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import accumulate
from pathlib import Path

from bot.model import MIB

STEP_S = 300
"""One sample every 5 minutes (the tests' ``prometheus.step_s``)."""


@dataclass(frozen=True)
class Generation:
    """Pods ``names`` running from ``start_s`` to ``end_s`` with these requests and usage."""

    names: tuple[str, ...]
    start_s: float
    end_s: float
    cpu_request: float
    cpu_cores: float
    memory_request: float = 256 * MIB
    memory_bytes: float = 100 * MIB
    oom_at_s: tuple[float, ...] = ()
    throttled_share: float | None = None
    """Share of CFS periods throttled (None: no CPU limit, so no CFS series)."""
    cpu_limit: float | None = None
    """The CPU limit kube-state-metrics reports (None: none)."""
    spike_every: int = 0
    spike_cores: float = 0.0
    """Every ``spike_every``-th sample interval runs at ``spike_cores`` instead (0: never)."""

    def cores(self, count: int) -> list[float]:
        """The cores of each of ``count`` sample intervals."""
        every = self.spike_every
        return [
            self.spike_cores if every and i % every == 0 else self.cpu_cores for i in range(count)
        ]


@dataclass(frozen=True)
class HpaSpec:
    """The bounds of a workload's HPA (named like it) from ``start_s`` to ``end_s``."""

    start_s: float
    end_s: float
    min_replicas: int
    max_replicas: int


@dataclass(frozen=True)
class Workload:
    name: str
    generations: tuple[Generation, ...] = field(default_factory=tuple)
    hpa: tuple[HpaSpec, ...] = ()
    """The HPA's bounds over time, in order (empty: no HPA)."""


def rollout(
    name: str,
    *,
    start_s: float,
    switch_s: float,
    end_s: float,
    before: dict[str, float],
    after: dict[str, float] | None = None,
    oom_at_s: tuple[float, ...] = (),
) -> Workload:
    """Two pods of ``name`` with ``before`` (``Generation`` fields) until ``switch_s``, two new
    ones with ``after`` from half an hour before it (no rollout when ``after`` is None)."""
    old = (f"{name}-7c9d8b-bcdfg", f"{name}-7c9d8b-hjklm")
    if after is None:
        return Workload(name, (generation(old, start_s, end_s, before),))
    new = (f"{name}-5f6g7h-nprst", f"{name}-5f6g7h-vwxz2")
    return Workload(
        name,
        (
            generation(old, start_s, switch_s, before),
            generation(new, switch_s - 1800, end_s, after, oom_at_s),
        ),
    )


def generation(
    names: tuple[str, ...],
    start_s: float,
    end_s: float,
    values: dict[str, float],
    oom_at_s: tuple[float, ...] = (),
) -> Generation:
    """A ``Generation`` whose CPU request and usage (cores) are ``values``."""
    return Generation(
        names,
        start_s,
        end_s,
        values["cpu_request"],
        values["cpu_cores"],
        oom_at_s=oom_at_s,
        throttled_share=values.get("throttled_share"),
        cpu_limit=values.get("cpu_limit"),
        spike_every=int(values.get("spike_every", 0)),
        spike_cores=values.get("spike_cores", 0.0),
    )


def _times(start_s: float, end_s: float) -> list[int]:
    first = int(start_s) - int(start_s) % STEP_S
    return [t for t in range(first, int(end_s), STEP_S) if t >= start_s]


def write(workloads: Sequence[Workload], path: Path, namespace: str = "shop") -> int:
    """Write the OpenMetrics file; the number of samples written."""
    families: dict[str, list[str]] = {}

    def add(metric: str, labels: dict[str, str], points: list[tuple[int, float]]) -> None:
        text = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
        families.setdefault(metric, []).extend(f"{metric}{{{text}}} {v:g} {t}" for t, v in points)

    for workload in workloads:
        counts: dict[int, int] = {}
        for gen in workload.generations:
            times = _times(gen.start_s, gen.end_s)
            for t in times:
                counts[t] = counts.get(t, 0) + len(gen.names)
            for pod in gen.names:
                ids = {"namespace": namespace, "pod": pod, "container": "app"}
                cadvisor, ksm = {**ids, "job": "kubelet"}, {**ids, "job": "kube-state-metrics"}
                steps = (c * STEP_S for c in gen.cores(len(times) - 1))
                seconds = list(accumulate(steps, initial=0.0))[: len(times)]
                add(
                    "container_cpu_usage_seconds_total",
                    cadvisor,
                    list(zip(times, seconds, strict=True)),
                )
                add(
                    "container_memory_working_set_bytes",
                    cadvisor,
                    [(t, gen.memory_bytes) for t in times],
                )
                add(
                    "kube_pod_container_resource_requests",
                    {**ksm, "resource": "cpu", "unit": "core"},
                    [(t, gen.cpu_request) for t in times],
                )
                add(
                    "kube_pod_container_resource_requests",
                    {**ksm, "resource": "memory", "unit": "byte"},
                    [(t, gen.memory_request) for t in times],
                )
                if gen.cpu_limit is not None:
                    add(
                        "kube_pod_container_resource_limits",
                        {**ksm, "resource": "cpu", "unit": "core"},
                        [(t, gen.cpu_limit) for t in times],
                    )
                if gen.throttled_share is not None:  # 10 CFS periods a second
                    periods = [(t, 10.0 * STEP_S * i) for i, t in enumerate(times)]
                    add("container_cpu_cfs_periods_total", cadvisor, periods)
                    add(
                        "container_cpu_cfs_throttled_periods_total",
                        cadvisor,
                        [(t, v * gen.throttled_share) for t, v in periods],
                    )
                kills = sorted(gen.oom_at_s) if pod == gen.names[0] else []
                add(
                    "kube_pod_container_status_restarts_total",
                    ksm,
                    [(t, sum(1 for k in kills if k <= t)) for t in times],
                )
                if kills:
                    add(
                        "kube_pod_container_status_last_terminated_reason",
                        {**ksm, "reason": "OOMKilled"},
                        [(t, 1) for t in times if t >= kills[0]],
                    )
        add(
            "kube_deployment_status_replicas",
            {"namespace": namespace, "deployment": workload.name, "job": "kube-state-metrics"},
            [(t, min(c, 2)) for t, c in sorted(counts.items())],
        )
        hpa = {"namespace": namespace, "horizontalpodautoscaler": workload.name}
        hpa["job"] = "kube-state-metrics"
        for spec in workload.hpa:
            for suffix, value in (("min", spec.min_replicas), ("max", spec.max_replicas)):
                add(
                    f"kube_horizontalpodautoscaler_spec_{suffix}_replicas",
                    hpa,
                    [(t, value) for t in _times(spec.start_s, spec.end_s)],
                )
    lines = []
    for samples in families.values():  # no TYPE lines: every family is untyped, as the sim's
        lines += _grouped(samples)
    path.write_text("\n".join([*lines, "# EOF", ""]))
    return sum(len(s) for s in families.values())


def _grouped(samples: list[str]) -> list[str]:
    """The samples of one family, each series' samples together and in time order (promtool
    drops out-of-order samples silently)."""
    by_series: dict[str, list[str]] = {}
    for line in samples:
        by_series.setdefault(line.rsplit(" ", 2)[0], []).append(line)
    return [line for lines in by_series.values() for line in lines]
