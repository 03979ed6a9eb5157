"""PrometheusSource against the real Prometheus, backfilled from the simulator."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bot.config.metrics import MetricNames, PrometheusConfig
from bot.metrics import HistoryRequest, PrometheusSource, QueryError
from bot.metrics.promql import chunks
from bot.model import WorkloadRef
from bot.sim import ClusterSpec, ContainerSpec, ServiceSpec, simulate
from tests.metrics.helpers import assert_matches_truth, requests_for
from tests.support.prometheus import TEST_LABELS, prometheus_from_cluster

pytestmark = pytest.mark.prometheus


def _source(prom, **overrides) -> PrometheusSource:
    return PrometheusSource(PrometheusConfig(url=prom.url, gzip=False, **overrides))


def _window(cluster):
    return {"start_s": float(cluster.t_s[0]), "end_s": float(cluster.t_s[-1])}


def test_equal_time_axes_are_held_once_and_read_only(sim_cluster, sim_prometheus):
    """A pod's containers share one time axis and one pod numbering (memory holds them once,
    a worker process is sent them once); shared, they cannot be written through."""
    result = _source(sim_prometheus).fetch(
        requests_for(sim_cluster, TEST_LABELS), **_window(sim_cluster)
    )
    history = result.histories[sim_cluster.services[0].ref]
    app, sidecar = history.containers["app"], history.containers["istio-proxy"]
    assert np.array_equal(app.cpu_t, sidecar.cpu_t) and app.cpu_t.size > 1000
    assert app.cpu_t is sidecar.cpu_t and app.mem_pod is sidecar.mem_pod
    assert app.cpu_cores is not sidecar.cpu_cores
    with pytest.raises(ValueError, match="read-only"):
        app.cpu_t[0] = 0.0


@pytest.mark.parametrize(
    ("mode", "raw_api"), [("raw", "remote_read"), ("raw", "query"), ("range", "auto")]
)
def test_fetched_equals_generated(sim_cluster, sim_prometheus, mode, raw_api):
    result = _source(sim_prometheus, query_mode=mode, raw_api=raw_api).fetch(
        requests_for(sim_cluster, TEST_LABELS), **_window(sim_cluster)
    )
    assert not result.errors
    assert set(result.histories) == {s.ref for s in sim_cluster.services}
    for history in result.histories.values():
        assert_matches_truth(sim_cluster, history)
    oom = sum(len(c.oom_t) for h in result.histories.values() for c in h.containers.values())
    assert oom > 0
    sidecar = result.histories[sim_cluster.services[0].ref].containers["istio-proxy"]
    assert len(sidecar.cpu_t) > 1000


def test_remote_read_and_query_api_give_identical_histories(sim_cluster, sim_prometheus):
    requests, window = requests_for(sim_cluster, TEST_LABELS), _window(sim_cluster)
    fetched = [
        _source(sim_prometheus, raw_api=api).fetch(requests, **window)
        for api in ("remote_read", "query")
    ]
    remote, query = (f.histories for f in fetched)
    assert set(remote) == set(query) == {s.ref for s in sim_cluster.services}
    assert fetched[0].stats.bytes_received < fetched[1].stats.bytes_received / 2
    for ref, history in remote.items():
        other = query[ref]
        assert history.pods == other.pods and history.quality == other.quality
        assert history.crash_loops_s == other.crash_loops_s
        np.testing.assert_array_equal(history.replicas_t, other.replicas_t)
        np.testing.assert_array_equal(history.replicas, other.replicas)
        for name, container in history.containers.items():
            for field in (
                "cpu_t",
                "cpu_pod",
                "cpu_cores",
                "mem_t",
                "mem_pod",
                "mem_bytes",
                "oom_t",
            ):
                np.testing.assert_array_equal(
                    getattr(container, field), getattr(other.containers[name], field)
                )


def test_query_count_does_not_grow_with_workloads_or_containers(sim_cluster, sim_prometheus):
    source = _source(sim_prometheus)
    window = _window(sim_cluster)
    everything = requests_for(sim_cluster, TEST_LABELS)
    ns0 = [r for r in everything if r.ref.namespace == "ns-0"]
    one = ns0[:1]
    counts = [source.fetch(batch, **window).stats.queries for batch in (one, ns0)]
    # one namespace, Deployments only, one chunk: cpu, memory, replicas; pod owners,
    # ReplicaSet owners, restart counts; no restarts so no OOM query.
    assert counts == [6, 6]
    assert len(ns0) > 1
    # ns-1 adds a StatefulSet (one more replicas query) and an OOM-killed container (OOM and
    # restart-counter queries).
    assert source.fetch(everything, **window).stats.queries == 6 + 9


@pytest.mark.parametrize("mode", ["raw", "range"])
def test_chunked_fetch_equals_single_chunk(sim_cluster, sim_prometheus, mode):
    window = _window(sim_cluster)
    requests = requests_for(sim_cluster, TEST_LABELS)
    small = _source(sim_prometheus, max_points_per_query=700, concurrency=2, query_mode=mode).fetch(
        requests, **window
    )
    assert len(chunks(window["start_s"], window["end_s"], 60, 700)) == 5
    assert small.stats.queries > 20
    for history in small.histories.values():
        assert_matches_truth(sim_cluster, history)


def test_default_environment_selects_by_namespace_alone(sim_cluster, sim_prometheus):
    source = _source(sim_prometheus)
    window = _window(sim_cluster)
    plain = source.fetch(requests_for(sim_cluster), **window)
    for history in plain.histories.values():
        assert_matches_truth(sim_cluster, history)
    other = source.fetch(requests_for(sim_cluster, {"cluster": "other"}), **window)
    assert not other.errors
    for history in other.histories.values():
        assert history.quality[0].code == "no-data"
        assert all(len(c.cpu_t) == 0 for c in history.containers.values())


def test_namespace_with_no_pods_is_no_data_not_an_error(sim_cluster, sim_prometheus):
    ref = WorkloadRef("Deployment", "empty-namespace", "web")
    result = _source(sim_prometheus).fetch([HistoryRequest(ref, ("app",))], **_window(sim_cluster))
    assert not result.errors
    codes = [n.code for n in result.histories[ref].quality]
    assert codes[0] == "no-data"
    assert "missing-container" in codes


def test_missing_container_and_quality_notes(sim_cluster, sim_prometheus):
    service = sim_cluster.services[1]
    request = HistoryRequest(service.ref, ("app", "not-there"), TEST_LABELS)
    history = _source(sim_prometheus).fetch([request], **_window(sim_cluster)).history(service.ref)
    notes = {(n.code, n.container) for n in history.quality}
    assert ("missing-container", "not-there") in notes
    assert ("short-history", None) in notes  # 2 days < the default 7
    assert len(history.containers["app"].mem_t) > 0


def test_restarts_are_reported_and_explain_their_counter_resets(sim_cluster, sim_prometheus):
    leaking = next(
        s
        for s in sim_cluster.services
        if any(len(c.oom_steps) for p in s.pods for c in p.containers)
    )
    ooms = sum(len(c.oom_steps) for p in leaking.pods for c in p.containers)
    history = (
        _source(sim_prometheus)
        .fetch(requests_for(sim_cluster, TEST_LABELS), **_window(sim_cluster))
        .history(leaking.ref)
    )
    restarts = [n for n in history.quality if n.code == "restarts"]
    assert restarts and f"restarted {ooms} times" in restarts[0].message
    # every CPU counter reset comes with a restart: no unexplained-reset note, no crash loop
    assert "counter-resets" not in [n.code for n in history.quality]
    assert history.crash_loops_s == ()
    assert len(history.containers["app"].oom_t) == ooms
    # each restart's time reaches the history (the verification counts them per window)
    restart_t = history.containers["app"].restart_t
    assert len(restart_t) == ooms and np.all(np.diff(restart_t) >= 0)


def test_owner_fallback_by_pod_name(sim_cluster, sim_prometheus):
    renamed = MetricNames(pod_owner="kube_pod_owner_absent", replicaset_owner="absent_too")
    result = _source(sim_prometheus, metrics=renamed).fetch(
        requests_for(sim_cluster, TEST_LABELS), **_window(sim_cluster)
    )
    for history in result.histories.values():
        assert_matches_truth(sim_cluster, history)
        assert "owner-fallback" in [n.code for n in history.quality]


def test_bad_request_is_an_error_for_that_workload_only(sim_cluster, sim_prometheus):
    good = requests_for(sim_cluster, TEST_LABELS)[:1]
    bad = HistoryRequest(WorkloadRef("ReplicationController", "ns-0", "x"), ("app",))
    result = _source(sim_prometheus).fetch([*good, bad], **_window(sim_cluster))
    assert isinstance(result.errors[bad.ref], QueryError)
    with pytest.raises(QueryError, match="not supported"):
        result.history(bad.ref)
    assert_matches_truth(sim_cluster, result.history(good[0].ref))


HOSTILE_NAMES = ['we"ird', "back\\slash", "new\nline", 'x"}) or vector(1) #']


def test_hostile_label_values_are_escaped(tmp_path: Path):
    app = ContainerSpec("app", 0.5, 256 * 1024 * 1024, 1.0)
    services = tuple(
        ServiceSpec(name, "ns", "Deployment", (app,), replicas=1, rollouts_per_week=0)
        for name in HOSTILE_NAMES
    )
    cluster = simulate(ClusterSpec(seed=5, services=services, days=0.2))
    with prometheus_from_cluster(cluster, tmp_path) as prom:
        result = _source(prom).fetch(requests_for(cluster), **_window(cluster))
        assert not result.errors
        for history in result.histories.values():
            assert_matches_truth(cluster, history)
        # a name that tries to close the selector must match nothing, not everything
        ref = WorkloadRef("Deployment", "ns", '.*"} or up{job="')
        lone = _source(prom).fetch([HistoryRequest(ref, ("app",))], **_window(cluster))
        assert lone.histories[ref].quality[0].code == "no-data"


def test_fetch_is_stable_across_runs(sim_cluster, sim_prometheus):
    source = _source(sim_prometheus, concurrency=3)
    window = _window(sim_cluster)
    a = source.fetch(requests_for(sim_cluster, TEST_LABELS), **window)
    b = source.fetch(requests_for(sim_cluster, TEST_LABELS), **window)
    for ref, history in a.histories.items():
        other = b.histories[ref]
        assert history.pods == other.pods
        for name, container in history.containers.items():
            np.testing.assert_array_equal(container.cpu_cores, other.containers[name].cpu_cores)
            np.testing.assert_array_equal(container.mem_t, other.containers[name].mem_t)


def test_iter_fetch_streams_namespaces(sim_cluster, sim_prometheus):
    source = _source(sim_prometheus)
    requests = requests_for(sim_cluster, TEST_LABELS)
    bad = HistoryRequest(WorkloadRef("ReplicationController", "ns-0", "x"), ("app",))
    parts = list(source.iter_fetch([*requests, bad], groups_per_batch=1, **_window(sim_cluster)))
    assert set(parts[0].errors) == {bad.ref}
    namespaces = [{ref.namespace for ref in p.histories} for p in parts[1:]]
    assert namespaces == [{"ns-0"}, {"ns-1"}]
    for part in parts[1:]:
        for history in part.histories.values():
            assert_matches_truth(sim_cluster, history)
    whole = source.fetch([*requests, bad], **_window(sim_cluster))
    assert whole.stats.queries == sum(p.stats.queries for p in parts)


@pytest.mark.parametrize("mode", ["raw", "range"])
def test_coarser_memory_step_keeps_every_peak(sim_cluster, sim_prometheus, mode):
    result = _source(sim_prometheus, memory_step_s=300, query_mode=mode).fetch(
        requests_for(sim_cluster, TEST_LABELS), **_window(sim_cluster)
    )
    for ref, history in result.histories.items():
        truth = sim_cluster.expected_history(ref)
        for name, container in history.containers.items():
            want = truth.containers[name]
            assert np.all(container.mem_t % 300 == 0)
            for pod_index, pod in enumerate(history.pods):
                got = container.mem_t[container.mem_pod == pod_index]
                values = container.mem_bytes[container.mem_pod == pod_index]
                raw_t = want.mem_t[want.mem_pod == truth.pods.index(pod)]
                raw_v = want.mem_bytes[want.mem_pod == truth.pods.index(pod)]
                expected: dict[float, float] = {}
                for t, v in zip(raw_t.tolist(), raw_v.tolist(), strict=True):
                    e = -(-t // 300) * 300
                    if e <= sim_cluster.t_s[-1]:  # a trailing partial step is not evaluated
                        expected[e] = max(expected.get(e, 0.0), v)
                assert dict(zip(got.tolist(), values.tolist(), strict=True)) == expected
        assert len(history.containers["app"].cpu_t) > 0
