"""Argo Rollouts, DaemonSets and a KEDA-scaled Deployment against the real Prometheus: their
pods found through kube-state-metrics' owner chains, in the same batched queries as
Deployments'; the replicas of a KEDA-scaled one under the HPA KEDA names ``keda-hpa-<name>``."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import numpy as np
import pytest

from bot.metrics import HistoryRequest
from bot.model import WorkloadRef
from bot.sim import ClusterSpec, SimulatedCluster, simulate
from tests.metrics.conftest import cluster_window, source_for
from tests.metrics.helpers import assert_matches_truth, requests_for
from tests.support.prometheus import (
    TEST_LABELS,
    TEST_SPEC,
    RunningPrometheus,
    prometheus_from_cluster,
)

pytestmark = pytest.mark.prometheus

KEDA_SCALER = "svc-2-scaler"
"""The ScaledObject that scales ``svc-2``: its HPA's series are ``keda-hpa-svc-2-scaler``'s."""


def _kinds_spec() -> ClusterSpec:
    """``TEST_SPEC`` with ``svc-0`` (an HPA, a sidecar, rollouts) an Argo Rollout, the HPA of
    the Deployment ``svc-2`` made by KEDA ScaledObject ``svc-2-scaler``, and a DaemonSet of
    three nodes added in ``ns-0``."""
    services = [
        dataclasses.replace(s, kind="Rollout", rollouts_per_week=10.0)
        if s.name == "svc-0"
        else dataclasses.replace(s, hpa=dataclasses.replace(s.hpa, keda=KEDA_SCALER))
        if s.name == "svc-2" and s.hpa is not None
        else s
        for s in TEST_SPEC.services
    ]
    app = TEST_SPEC.services[2].containers[0]
    agent = dataclasses.replace(
        TEST_SPEC.services[2],
        name="node-agent",
        kind="DaemonSet",
        containers=(app,),
        replicas=3,
        hpa=None,
        rollouts_per_week=30.0,
    )
    return dataclasses.replace(TEST_SPEC, services=(*services, agent))


@pytest.fixture(scope="module")
def kinds_cluster() -> SimulatedCluster:
    return simulate(_kinds_spec())


@pytest.fixture(scope="module")
def kinds_prometheus(
    kinds_cluster: SimulatedCluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningPrometheus]:
    with prometheus_from_cluster(
        kinds_cluster, tmp_path_factory.mktemp("kinds"), labels=TEST_LABELS
    ) as prom:
        yield prom


def test_simulated_owner_chains(kinds_cluster):
    rollout = kinds_cluster.service("ns-0", "svc-0")
    agent = kinds_cluster.service("ns-0", "node-agent")
    assert len(rollout.replicasets) >= 2  # canary and stable generations
    assert {p.owner_kind for p in agent.pods} == {"DaemonSet"}
    assert len(agent.pods) > 3  # re-created on each rollout


@pytest.mark.parametrize("mode", ["raw", "range"])
def test_rollout_and_daemonset_histories_match_the_truth(kinds_cluster, kinds_prometheus, mode):
    result = source_for(kinds_prometheus, query_mode=mode).fetch(
        requests_for(kinds_cluster, TEST_LABELS), **cluster_window(kinds_cluster)
    )
    assert not result.errors
    kinds = {ref.kind for ref in result.histories}
    assert {"Rollout", "DaemonSet", "Deployment", "StatefulSet"} <= kinds
    for history in result.histories.values():
        assert_matches_truth(kinds_cluster, history)  # pods, samples and replicas
        assert not [n for n in history.quality if n.code in ("owner-fallback", "no-replicas")]
    rollout = result.histories[WorkloadRef("Rollout", "ns-0", "svc-0")]
    assert len({p.rsplit("-", 1)[0] for p in rollout.pods}) >= 2  # every ReplicaSet's pods
    agent = result.histories[WorkloadRef("DaemonSet", "ns-0", "node-agent")]
    assert set(np.unique(agent.replicas)) == {3.0}


def test_query_count_is_the_same_as_for_deployments(kinds_cluster, kinds_prometheus):
    """The new kinds widen the owner matchers of the existing queries: the same number of
    queries as the same workloads requested as Deployments, whatever the workload count."""
    source = source_for(kinds_prometheus)
    window = cluster_window(kinds_cluster)
    ns0 = [r for r in requests_for(kinds_cluster, TEST_LABELS) if r.ref.namespace == "ns-0"]
    assert {r.ref.kind for r in ns0} == {"Rollout", "DaemonSet", "Deployment"}
    as_deployments = [
        HistoryRequest(dataclasses.replace(r.ref, kind="Deployment"), r.containers, r.selector)
        for r in ns0
    ]
    new_kinds = [r for r in ns0 if r.ref.kind != "Deployment"]
    counts = [
        source.fetch(batch, **window).stats.queries
        for batch in (new_kinds[:1], new_kinds, ns0, as_deployments)
    ]
    # cpu, memory, pod owners, ReplicaSet owners, restart counts, and the replicas of the
    # Deployments (a Rollout's and a DaemonSet's are counted from their pods' samples)
    assert counts == [5, 5, 6, 6]


def test_rollout_replicas_from_its_hpa(kinds_cluster, kinds_prometheus):
    ref = WorkloadRef("Rollout", "ns-0", "svc-0")
    request = [r for r in requests_for(kinds_cluster, TEST_LABELS) if r.ref == ref]
    history = (
        source_for(kinds_prometheus, replicas_source="hpa")
        .fetch(request, **cluster_window(kinds_cluster))
        .history(ref)
    )
    truth = kinds_cluster.expected_history(ref)
    np.testing.assert_array_equal(history.replicas, truth.replicas)
    assert truth.replicas.max() > truth.replicas.min()  # the HPA scaled it


def _keda_request(cluster: SimulatedCluster, hpa: str | None) -> list[HistoryRequest]:
    ref = WorkloadRef("Deployment", "ns-0", "svc-2")
    (request,) = [r for r in requests_for(cluster, TEST_LABELS) if r.ref == ref]
    return [dataclasses.replace(request, hpa=hpa)]


@pytest.mark.parametrize("mode", ["raw", "range"])
def test_keda_scaled_replicas_from_keda_hpa(kinds_cluster, kinds_prometheus, mode):
    """The HPA KEDA generates is ``keda-hpa-<ScaledObject>``: its kube-state-metrics series are
    the replica history; looked up under the workload's name there is none."""
    ref = WorkloadRef("Deployment", "ns-0", "svc-2")
    source = source_for(kinds_prometheus, replicas_source="hpa", query_mode=mode)
    window = cluster_window(kinds_cluster)
    found = source.fetch(_keda_request(kinds_cluster, f"keda-hpa-{KEDA_SCALER}"), **window)
    truth = kinds_cluster.expected_history(ref)
    history = found.history(ref)
    np.testing.assert_array_equal(history.replicas, truth.replicas)
    assert truth.replicas.max() > truth.replicas.min()  # KEDA's HPA scaled it
    assert_matches_truth(kinds_cluster, history)  # pods map as for any Deployment
    missed = source.fetch(_keda_request(kinds_cluster, None), **window).history(ref)
    assert not len(missed.replicas)
    assert "no-replicas" in {n.code for n in missed.quality}
    assert (
        found.stats.queries
        == source.fetch(_keda_request(kinds_cluster, None), **window).stats.queries
    )
    # the Deployment's own status series by default, KEDA's HPA named or not
    own = source_for(kinds_prometheus, query_mode=mode).fetch(
        _keda_request(kinds_cluster, f"keda-hpa-{KEDA_SCALER}"), **window
    )
    np.testing.assert_array_equal(own.history(ref).replicas, truth.replicas)


def test_keda_scaled_query_count_is_flat(kinds_cluster, kinds_prometheus):
    """Naming KEDA's HPA widens the HPA matcher of the one replicas query: the namespace's
    workloads cost the same number of queries with or without it."""
    source = source_for(kinds_prometheus, replicas_source="hpa")
    window = cluster_window(kinds_cluster)
    ns0 = [r for r in requests_for(kinds_cluster, TEST_LABELS) if r.ref.namespace == "ns-0"]
    keda = [
        dataclasses.replace(r, hpa=f"keda-hpa-{KEDA_SCALER}") if r.ref.name == "svc-2" else r
        for r in ns0
    ]
    counts = [source.fetch(batch, **window).stats.queries for batch in (ns0, keda)]
    # cpu, memory, HPA replicas, pod owners, ReplicaSet owners, restart counts
    assert counts == [6, 6]
