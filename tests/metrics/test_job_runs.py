"""CronJobs and bare Jobs against the real Prometheus: each run's pod found through
kube-state-metrics' owner chain (pod -> Job -> CronJob) in the same batched queries, a
generator's Jobs grouped under the bare Job they are named after."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import numpy as np
import pytest

from bot.config.metrics import PrometheusConfig
from bot.metrics import HistoryRequest
from bot.metrics.client import PrometheusClient
from bot.metrics.doctor import FamilyReport, diagnose
from bot.metrics.families import families
from bot.model import WorkloadRef
from bot.sim import ClusterSpec, SimulatedCluster, simulate
from bot.sim.spec import JobRuns, Kind
from tests.metrics.conftest import cluster_window, source_for
from tests.metrics.helpers import by_pod_time, requests_for
from tests.support.prometheus import (
    TEST_LABELS,
    TEST_SPEC,
    RunningPrometheus,
    prometheus_from_cluster,
)

pytestmark = pytest.mark.prometheus

CRONJOB = WorkloadRef("CronJob", "ns-0", "nightly-report")
REINDEX = WorkloadRef("Job", "ns-0", "reindex")
SEED = WorkloadRef("Job", "ns-0", "seed")


def _jobs_spec() -> ClusterSpec:
    """``TEST_SPEC`` (2 days) with, in ``ns-0``: a CronJob running 20 minutes every 4 hours
    (12 runs), a Job a generator re-creates as ``reindex-<n>`` every 8 hours (6 runs) and a
    Job ``seed`` that ran once; the CronJob has two containers."""
    base = TEST_SPEC.services[2]
    app = base.containers[0]
    side = dataclasses.replace(app, name="uploader")

    def job(name: str, kind: Kind, runs: JobRuns, containers=(app,)):
        return dataclasses.replace(
            base,
            name=name,
            namespace="ns-0",
            kind=kind,
            containers=containers,
            replicas=1,
            hpa=None,
            runs=runs,
        )

    return dataclasses.replace(
        TEST_SPEC,
        services=(
            *TEST_SPEC.services,
            job("nightly-report", "CronJob", JobRuns(4 * 3600, 1200), (app, side)),
            job("reindex", "Job", JobRuns(8 * 3600, 600)),
            job("seed", "Job", JobRuns(duration_s=900, generated=False)),
        ),
    )


@pytest.fixture(scope="module")
def jobs_cluster() -> SimulatedCluster:
    return simulate(_jobs_spec())


@pytest.fixture(scope="module")
def jobs_prometheus(
    jobs_cluster: SimulatedCluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningPrometheus]:
    with prometheus_from_cluster(
        jobs_cluster, tmp_path_factory.mktemp("jobs"), labels=TEST_LABELS
    ) as prom:
        yield prom


def test_simulated_runs(jobs_cluster):
    report = jobs_cluster.service("ns-0", "nightly-report")
    assert len(report.pods) == 12
    assert {p.owner_kind for p in report.pods} == {"Job"}
    assert len({p.owner_name for p in report.pods}) == 12  # one Job per run
    (seed,) = jobs_cluster.service("ns-0", "seed").pods
    assert seed.name.startswith("seed-") and seed.owner_name == "seed"


@pytest.mark.parametrize("mode", ["raw", "range"])
def test_every_run_is_found_through_the_owner_chain(jobs_cluster, jobs_prometheus, mode):
    requests = [r for r in requests_for(jobs_cluster, TEST_LABELS) if r.ref.namespace == "ns-0"]
    result = source_for(jobs_prometheus, query_mode=mode).fetch(
        requests, **cluster_window(jobs_cluster)
    )
    assert not result.errors
    for ref, runs in ((CRONJOB, 12), (REINDEX, 6), (SEED, 1)):
        history = result.histories[ref]
        truth = jobs_cluster.expected_history(ref)
        assert sorted(history.pods) == sorted(truth.pods) and len(history.pods) == runs
        assert not [n for n in history.quality if n.code in ("owner-fallback", "no-replicas")]
        for name, want in truth.containers.items():
            got = history.containers[name]
            assert by_pod_time(history, got, "mem") == by_pod_time(truth, want, "mem")
        # no samples between runs: the replica history counts the pods of each run only
        assert set(np.unique(history.replicas)) == {1.0}
        assert len(history.replicas) < len(jobs_cluster.t_s) / 5


def test_query_count_stays_flat(jobs_cluster, jobs_prometheus):
    """One more instant query (the Jobs' owners) for a namespace with CronJobs or Jobs, the same
    whatever the number of CronJobs, Jobs and containers."""
    source = source_for(jobs_prometheus)
    window = cluster_window(jobs_cluster)
    ns0 = [r for r in requests_for(jobs_cluster, TEST_LABELS) if r.ref.namespace == "ns-0"]
    jobs = [r for r in ns0 if r.ref.kind in ("CronJob", "Job")]
    others = [r for r in ns0 if r.ref.kind not in ("CronJob", "Job")]
    one_container = [
        HistoryRequest(r.ref, r.containers[:1], r.selector) for r in jobs if r.ref == CRONJOB
    ]
    counts = [
        source.fetch(batch, **window).stats.queries
        for batch in (one_container, jobs[:1], jobs, others, ns0)
    ]
    # cpu, memory, pod owners, Job owners, restart counts; the Deployments' replicas and
    # ReplicaSet owners besides
    assert counts[:3] == [5, 5, 5], counts
    assert counts[4] == counts[3] + 1, counts


@pytest.mark.parametrize("kinds", [{"CronJob"}, {"Job"}])
def test_doctor_checks_the_job_owners_of_a_repository_with_jobs(
    jobs_cluster, jobs_prometheus, sim_prometheus, kinds
):
    """``kube_job_owner`` is read (its labels checked) when the repository has CronJobs or Jobs;
    its absence is an error for a CronJob (its runs cannot be found), a warning for a Job."""
    at_s = float(jobs_cluster.t_s[-1])

    def diagnosis(prom: RunningPrometheus) -> dict[str, FamilyReport]:
        config = PrometheusConfig(url=prom.url, gzip=False)
        client = PrometheusClient(config)
        try:
            found = diagnose(client, config, at_s=at_s, kinds=kinds)
        finally:
            client.close()
        return {r.family.metric: r for r in found.families}

    present = diagnosis(jobs_prometheus)["kube_job_owner"]
    assert present.status == "ok" and present.series > 0, present.problems
    assert {"namespace", "job_name", "owner_kind", "owner_name"} <= set(present.labels_seen)
    absent = diagnosis(sim_prometheus)["kube_job_owner"]  # a cluster without CronJobs
    assert absent.series == 0
    assert absent.status == ("error" if "CronJob" in kinds else "warning")
    without = {f.metric for f in families(PrometheusConfig(), {"Deployment"})}
    assert "kube_job_owner" not in without


APP_LABEL = "app.kubernetes.io/name"


def _labelled(requests: list[HistoryRequest], value: str) -> list[HistoryRequest]:
    """The bare Job ``reindex`` declared with ``app.kubernetes.io/name: <value>``."""
    return [
        dataclasses.replace(r, labels={APP_LABEL: value, "team": "search"})
        for r in requests
        if r.ref == REINDEX
    ]


@pytest.fixture(scope="module")
def reindex_requests(jobs_cluster) -> list[HistoryRequest]:
    return [r for r in requests_for(jobs_cluster, TEST_LABELS) if r.ref == REINDEX]


@pytest.mark.parametrize("mode", ["raw", "range"])
def test_runs_grouped_by_labels(jobs_cluster, jobs_prometheus, reindex_requests, mode):
    """With ``job_grouping_labels`` the Jobs whose ``kube_job_labels`` carry the declared values
    are the runs; a Job declared with other values gets none, whatever the runs' names."""
    source = source_for(jobs_prometheus, query_mode=mode, job_grouping_labels=(APP_LABEL,))
    window = cluster_window(jobs_cluster)
    same = source.fetch(_labelled(reindex_requests, "reindex"), **window)
    truth = jobs_cluster.expected_history(REINDEX)
    assert sorted(same.histories[REINDEX].pods) == sorted(truth.pods)
    assert len(truth.pods) == 6
    assert not [n for n in same.histories[REINDEX].quality if n.code == "job-labels-missing"]
    other = source.fetch(_labelled(reindex_requests, "indexer"), **window)
    assert not other.histories[REINDEX].pods


def test_labels_kube_state_metrics_does_not_export_fall_back_to_names(
    jobs_cluster, jobs_prometheus, reindex_requests
):
    """``team`` is not in the allowlist: no Job carries it, names decide and a note says so."""
    source = source_for(jobs_prometheus, job_grouping_labels=(APP_LABEL, "team"))
    result = source.fetch(_labelled(reindex_requests, "indexer"), **cluster_window(jobs_cluster))
    history = result.histories[REINDEX]
    assert sorted(history.pods) == sorted(jobs_cluster.expected_history(REINDEX).pods)
    (note,) = [n for n in history.quality if n.code == "job-labels-missing"]
    assert "--metric-labels-allowlist" in note.message and "team" in note.message


def test_grouping_by_labels_costs_one_query_per_namespace(jobs_cluster, jobs_prometheus):
    """One more instant query (the Jobs' labels) only when Jobs are requested, whatever the
    number of Jobs and containers."""
    window = cluster_window(jobs_cluster)
    ns0 = [r for r in requests_for(jobs_cluster, TEST_LABELS) if r.ref.namespace == "ns-0"]
    jobs = [r for r in ns0 if r.ref.kind in ("CronJob", "Job")]
    others = [r for r in ns0 if r.ref.kind not in ("CronJob", "Job")]
    plain, grouped = (
        source_for(jobs_prometheus),
        source_for(jobs_prometheus, job_grouping_labels=(APP_LABEL,)),
    )
    for batch in (jobs[:1], jobs):
        assert grouped.fetch(batch, **window).stats.queries == (
            plain.fetch(batch, **window).stats.queries + 1
        )
    assert (
        grouped.fetch(others, **window).stats.queries == plain.fetch(others, **window).stats.queries
    )
