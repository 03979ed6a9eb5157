"""Write a simulated cluster as OpenMetrics text for ``promtool tsdb create-blocks-from openmetrics``.

What promtool needs (measured, see ``docs/metrics.md``): timestamps in **seconds**, each series'
samples in ascending time (promtool silently drops out-of-order and duplicate samples), and a
final ``# EOF`` line. Families are written one after another; no ``# TYPE`` lines, so every
series is stored under exactly the name written (``..._total`` included).

Series written, with kube-prometheus-stack's names and labels:

- cAdvisor (``job="kubelet"``): ``container_cpu_usage_seconds_total`` (counter, CPU seconds),
  ``container_memory_working_set_bytes`` (gauge, bytes), per ``namespace``/``pod``/``container``;
- kube-state-metrics (``job="kube-state-metrics"``): ``kube_pod_container_status_restarts_total``,
  ``kube_pod_container_status_last_terminated_reason{reason="OOMKilled"}`` (1 from each OOM
  kill of that container until a restart for another reason, absent otherwise, as
  kube-state-metrics 2 reports the last reason only),
  ``kube_pod_container_resource_requests{resource="memory"}`` (and ``{resource="cpu"}``
  when the run carries its CPU request), ``kube_pod_owner``,
  ``kube_replicaset_owner`` (``owner_kind="Rollout"`` for a simulated Argo Rollout),
  ``kube_deployment_status_replicas``,
  ``kube_statefulset_status_replicas`` and ``kube_horizontalpodautoscaler_status_current_replicas``
  (a Rollout's HPA too; kube-state-metrics has no Rollout or DaemonSet replica series). A
  DaemonSet's pods are owned by it directly (``kube_pod_owner{owner_kind="DaemonSet"}``); a
  CronJob's and a Job's by one Job per run (``kube_pod_owner{owner_kind="Job"}``), a CronJob's
  Jobs by it (``kube_job_owner{job_name, owner_kind="CronJob"}``).

cAdvisor is scraped at every sample of the grid. kube-state-metrics is too by default;
``KsmScrape(every=k, jitter_s=j)`` scrapes it at every ``k``-th sample only (grid index
``i % k == 0``), each scrape late by a seeded whole number of seconds in ``[0, j]``: one
timestamp for every series of one scrape, as Prometheus stamps a scrape.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass
from typing import TextIO

import numpy as np

from bot.model import FloatArray
from bot.sim.cluster import ContainerRun, PodLife, SimulatedCluster, SimulatedService
from bot.sim.errors import SimError

CADVISOR_JOB = "kubelet"
"""``job`` label of cAdvisor series in kube-prometheus-stack."""

KSM_JOB = "kube-state-metrics"
"""``job`` label of kube-state-metrics series."""


def escape_label_value(value: str) -> str:
    r"""``value`` escaped for a quoted OpenMetrics label value: ``\`` -> ``\\``, ``"`` -> ``\"``, newline -> ``\n``."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _labels(pairs: Mapping[str, str]) -> str:
    return ",".join(f'{k}="{escape_label_value(v)}"' for k, v in pairs.items())


@dataclass(frozen=True, slots=True)
class KsmScrape:
    """How kube-state-metrics is scraped: every ``every`` samples of the grid, each scrape late
    by a whole number of seconds drawn from ``[0, jitter_s]`` (seed ``seed``)."""

    every: int = 1
    jitter_s: int = 0
    seed: int = 0

    def scrape_s(self, t_s: FloatArray, step_s: int) -> FloatArray:
        """The scrape time of each sample of the grid ``t_s`` (unix seconds; every ``every``-th
        sample is written)."""
        if self.every < 1 or self.jitter_s < 0:
            raise SimError(f"kube-state-metrics every {self.every}, jitter {self.jitter_s} s")
        if self.jitter_s >= self.every * step_s:
            raise SimError(
                f"jitter {self.jitter_s} s must stay below the scrape interval "
                f"{self.every * step_s} s (samples would go out of order)"
            )
        late = np.random.default_rng(self.seed).integers(0, self.jitter_s + 1, len(t_s))
        return (t_s + late).astype(np.float64)


@dataclass(frozen=True, slots=True)
class _Series:
    """One series: labels, first absolute sample index and its values (one per sample)."""

    labels: dict[str, str]
    start: int
    values: FloatArray
    integer: bool = False


def _families(cluster: SimulatedCluster) -> Iterator[tuple[str, Iterator[_Series]]]:
    def ids(s: SimulatedService, p: PodLife, c: ContainerRun, job: str) -> dict[str, str]:
        return {"namespace": s.spec.namespace, "pod": p.name, "container": c.name, "job": job}

    def per_container(
        make: Callable[[SimulatedService, PodLife, ContainerRun], _Series | None],
    ) -> Iterator[_Series]:
        for service in cluster.services:
            for pod in service.pods:
                for run in pod.containers:
                    series = make(service, pod, run)
                    if series is not None:
                        yield series

    yield (
        "container_cpu_usage_seconds_total",
        per_container(
            lambda s, p, c: _Series(ids(s, p, c, CADVISOR_JOB), p.start, c.cpu_counter_s),
        ),
    )
    yield (
        "container_memory_working_set_bytes",
        per_container(
            lambda s, p, c: _Series(ids(s, p, c, CADVISOR_JOB), p.start, c.memory_bytes, True),
        ),
    )
    yield (
        "kube_pod_container_status_restarts_total",
        per_container(
            lambda s, p, c: _Series(
                ids(s, p, c, KSM_JOB), p.start, c.restarts.astype(np.float64), True
            ),
        ),
    )

    def oom_reasons() -> Iterator[_Series]:
        for s in cluster.services:
            for p in s.pods:
                for c in p.containers:
                    labels = {**ids(s, p, c, KSM_JOB), "reason": "OOMKilled"}
                    for a, b in _oom_reason_spans(p, c):
                        yield _Series(labels, a, np.ones(b - a, dtype=np.float64), True)

    yield "kube_pod_container_status_last_terminated_reason", oom_reasons()

    def requests() -> Iterator[_Series]:
        for s in cluster.services:
            for p in s.pods:
                for c in p.containers:
                    n = p.stop - p.start
                    memory = {**ids(s, p, c, KSM_JOB), "resource": "memory", "unit": "byte"}
                    yield _Series(memory, p.start, np.full(n, float(c.memory_request_bytes)), True)
                    if c.cpu_request_cores is not None:
                        cpu = {**ids(s, p, c, KSM_JOB), "resource": "cpu", "unit": "core"}
                        yield _Series(cpu, p.start, np.full(n, c.cpu_request_cores))

    yield "kube_pod_container_resource_requests", requests()

    def owners() -> Iterator[_Series]:
        for s in cluster.services:
            for p in s.pods:
                labels = {
                    "namespace": s.spec.namespace,
                    "pod": p.name,
                    "owner_kind": p.owner_kind,
                    "owner_name": p.owner_name,
                    "owner_is_controller": "true",
                    "job": KSM_JOB,
                }
                yield _Series(labels, p.start, np.ones(p.stop - p.start), True)

    yield "kube_pod_owner", owners()

    def replicasets() -> Iterator[_Series]:
        for s in cluster.services:
            for rs in s.replicasets:
                lives = [p for p in s.pods if p.owner_name == rs]
                start = min(p.start for p in lives)
                labels = {
                    "namespace": s.spec.namespace,
                    "replicaset": rs,
                    "owner_kind": "Rollout" if s.spec.kind == "Rollout" else "Deployment",
                    "owner_name": s.spec.name,
                    "owner_is_controller": "true",
                    "job": KSM_JOB,
                }
                yield _Series(labels, start, np.ones(len(cluster.t_s) - start), True)

    yield "kube_replicaset_owner", replicasets()

    def job_owners() -> Iterator[_Series]:
        for s in cluster.services:
            if s.spec.kind != "CronJob":
                continue
            for p in s.pods:  # one Job per run, listed while it exists
                labels = {
                    "namespace": s.spec.namespace,
                    "job_name": p.owner_name,
                    "owner_kind": "CronJob",
                    "owner_name": s.spec.name,
                    "owner_is_controller": "true",
                    "job": KSM_JOB,
                }
                yield _Series(labels, p.start, np.ones(p.stop - p.start), True)

    yield "kube_job_owner", job_owners()

    def job_labels() -> Iterator[_Series]:
        """Each Job's labels as kube-state-metrics exports the allowlisted
        ``app.kubernetes.io/name`` (``--metric-labels-allowlist=jobs=[...]``)."""
        for s in cluster.services:
            if s.spec.kind not in ("CronJob", "Job"):
                continue
            for p in s.pods:
                labels = {
                    "namespace": s.spec.namespace,
                    "job_name": p.owner_name,
                    "label_app_kubernetes_io_name": s.spec.name,
                    "job": KSM_JOB,
                }
                yield _Series(labels, p.start, np.ones(p.stop - p.start), True)

    yield "kube_job_labels", job_labels()

    def replicas(kind: str, label: str, hpa: bool) -> Iterator[_Series]:
        kinds = (kind, "Rollout") if hpa else (kind,)  # an HPA scales a Rollout too
        for s in cluster.services:
            if s.spec.kind not in kinds or (hpa and s.spec.hpa is None):
                continue
            named = s.spec.hpa.name(s.spec.name) if hpa and s.spec.hpa else s.spec.name
            labels = {"namespace": s.spec.namespace, label: named, "job": KSM_JOB}
            yield _Series(labels, 0, s.replicas.astype(np.float64), True)

    yield "kube_deployment_status_replicas", replicas("Deployment", "deployment", False)
    yield "kube_statefulset_status_replicas", replicas("StatefulSet", "statefulset", False)
    yield (
        "kube_horizontalpodautoscaler_status_current_replicas",
        replicas("Deployment", "horizontalpodautoscaler", True),
    )


def _oom_reason_spans(pod: PodLife, run: ContainerRun) -> Iterator[tuple[int, int]]:
    """``[a, b)`` sample ranges during which the container's last termination was an OOM kill:
    from each OOM kill to the next restart for another reason (or the pod's end)."""
    if not len(run.oom_steps):
        return
    rises = (np.flatnonzero(np.diff(run.restarts, prepend=0) > 0) + pod.start).tolist()
    ooms = set(run.oom_steps.tolist())
    begin: int | None = None
    for at in rises:
        if at in ooms and begin is None:
            begin = at
        elif at not in ooms and begin is not None:
            yield begin, at
            begin = None
    if begin is not None:
        yield begin, pod.stop


def write_openmetrics(
    cluster: SimulatedCluster,
    out: TextIO,
    *,
    window: tuple[int, int] | None = None,
    labels: Mapping[str, str] | None = None,
    families: Collection[str] | None = None,
    ksm: KsmScrape | None = None,
) -> int:
    """Write every series of ``cluster`` to ``out``; return the number of samples written.

    ``window`` = ``(first, stop)`` sample indices restricts the output to that part of the time
    grid (to backfill aligned windows in parallel); ``labels`` are added to every series (e.g.
    ``{"cluster": "prod"}``, as an external label would be); ``families`` keeps only the
    metric families named (all by default); ``ksm`` is how kube-state-metrics is scraped (every
    sample by default, see the module doc). Ends with ``# EOF``.
    """
    first, stop = window if window is not None else (0, len(cluster.t_s))
    times = [str(int(t)) for t in cluster.t_s.tolist()]
    ksm = ksm or KsmScrape()
    ksm_times = (
        times
        if ksm == KsmScrape()
        else [str(int(t)) for t in ksm.scrape_s(cluster.t_s, cluster.spec.step_s).tolist()]
    )
    extra = dict(labels or {})
    written = 0
    for family, series_iter in _families(cluster):
        if families is not None and family not in families:
            continue
        for series in series_iter:
            a = max(first, series.start)
            b = min(stop, series.start + len(series.values))
            every, stamps = 1, times
            if series.labels.get("job") == KSM_JOB:
                every, stamps = ksm.every, ksm_times
                a += -a % every
            if a >= b:
                continue
            prefix = f"{family}{{{_labels({**series.labels, **extra})}}} "
            chunk = series.values[a - series.start : b - series.start : every]
            texts = (
                [str(int(v)) for v in chunk.tolist()]
                if series.integer
                else [repr(v) for v in chunk.tolist()]
            )
            out.write(
                "".join(f"{prefix}{v} {t}\n" for v, t in zip(texts, stamps[a:b:every], strict=True))
            )
            written += len(texts)
    out.write("# EOF\n")
    return written
