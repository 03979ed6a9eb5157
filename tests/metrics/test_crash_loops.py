"""Crash loops and unexplained counter resets, fetched from a real Prometheus; the HPA's replicas.

The cluster: ``looper`` (a Deployment with an HPA) whose app container restarts every 2 min for
30 min while the replica count jumps to 12, and ``glitch`` (a StatefulSet) whose CPU counter goes
back once without a restart.
"""

from __future__ import annotations

import dataclasses
import json
import zipfile

import numpy as np
import pytest

from bot.config.bot import BotSettings
from bot.config.metrics import PrometheusConfig
from bot.config.recommend import AdminSettings, RecommendSettings
from bot.config.replay_rules import ReplicaRules
from bot.metrics import FetchResult, HistorySource, PrometheusSource
from bot.metrics.restarts import CRASH_LOOP_PAD_S
from bot.metrics.snapshot import SnapshotSource, record_snapshot
from bot.model import WorkloadHistory
from bot.pipeline.plan import repository_outcome
from bot.sim import (
    ClusterSpec,
    ContainerSpec,
    CrashLoopSpec,
    HpaSpec,
    ServiceSpec,
    SimulatedCluster,
    simulate,
    write_manifests,
)
from tests.metrics.helpers import EditedSource, assert_matches_truth, requests_for
from tests.support.prometheus import TEST_LABELS, prometheus_from_cluster

pytestmark = pytest.mark.prometheus

LOOP = CrashLoopSpec(start_day=0.5 + 15 / 1440, hours=0.5, restart_every_s=120, replicas=12)
"""12:15 to 12:45 on the first day: inside one hourly slot, which keeps samples outside it."""

RESET_STEP = 1000
"""Sample index at which ``glitch``'s CPU counter goes back without a restart."""


def _app(name: str = "app") -> ContainerSpec:
    return ContainerSpec(
        name=name, cpu_request_cores=0.5, memory_request_bytes=256 << 20, cpu_share_fraction=0.8
    )


SPEC = ClusterSpec(
    seed=3,
    days=2,
    step_s=60,
    services=(
        ServiceSpec(
            name="looper",
            namespace="crash",
            kind="Deployment",
            containers=(_app(), _app("istio-proxy")),
            replicas=2,
            hpa=HpaSpec(2, 6, 70),
            peak_cores=2.0,
            rollouts_per_week=0.0,
            crash_loop=LOOP,
        ),
        ServiceSpec(
            name="glitch",
            namespace="crash",
            kind="StatefulSet",
            containers=(_app(),),
            replicas=1,
            rollouts_per_week=0.0,
        ),
    ),
)


def _with_counter_glitch(cluster: SimulatedCluster) -> SimulatedCluster:
    """``glitch``'s CPU counter restarts from its own increment at ``RESET_STEP``, no restart."""
    service = cluster.service("crash", "glitch")
    (pod,) = service.pods
    (run,) = pod.containers
    counter = run.cpu_counter_s.copy()
    k = RESET_STEP - pod.start
    counter[k:] -= counter[k - 1]
    pod = dataclasses.replace(pod, containers=(dataclasses.replace(run, cpu_counter_s=counter),))
    glitched = dataclasses.replace(service, pods=(pod,))
    services = tuple(glitched if s is service else s for s in cluster.services)
    return dataclasses.replace(cluster, services=services)


@pytest.fixture(scope="module")
def crash_cluster() -> SimulatedCluster:
    return _with_counter_glitch(simulate(SPEC))


@pytest.fixture(scope="module")
def crash_prometheus(crash_cluster, tmp_path_factory):
    with prometheus_from_cluster(crash_cluster, tmp_path_factory.mktemp("crash")) as prom:
        yield prom


def _window(cluster: SimulatedCluster) -> dict[str, float]:
    return {"start_s": float(cluster.t_s[0]), "end_s": float(cluster.t_s[-1])}


def _expected_loop(cluster: SimulatedCluster) -> tuple[float, float]:
    first = cluster.t_s[0] + LOOP.start_day * 86_400
    restarts = np.arange(first, first + LOOP.hours * 3600, LOOP.restart_every_s)
    return (float(restarts[0]) - CRASH_LOOP_PAD_S, float(restarts[-1]) + CRASH_LOOP_PAD_S)


def _fetch(prom, cluster, **config) -> FetchResult:
    source = PrometheusSource(PrometheusConfig(url=prom.url, gzip=False, **config))
    return source.fetch(requests_for(cluster), **_window(cluster))


def test_simulated_crash_loop_restarts_the_app_and_forces_replicas(crash_cluster):
    looper = crash_cluster.service("crash", "looper")
    start, end = _expected_loop(crash_cluster)
    t = crash_cluster.t_s
    inside = (t >= start + CRASH_LOOP_PAD_S) & (t <= end - CRASH_LOOP_PAD_S)
    assert set(looper.replicas[inside].tolist()) == {12}
    assert looper.replicas[~inside].max() <= 6
    first = next(p for p in looper.pods if p.start == 0)
    app, sidecar = first.containers
    assert app.restarts[-1] == LOOP.hours * 3600 / LOOP.restart_every_s  # 15 restarts
    assert sidecar.restarts[-1] == 0
    assert int((np.diff(app.cpu_counter_s) < 0).sum()) == 15


@pytest.mark.parametrize("mode", ["raw", "range"])
def test_crash_loop_period_and_unexplained_resets_are_reported(
    crash_cluster, crash_prometheus, mode
):
    result = _fetch(crash_prometheus, crash_cluster, query_mode=mode)
    assert not result.errors
    looper = result.histories[crash_cluster.service("crash", "looper").ref]
    glitch = result.histories[crash_cluster.service("crash", "glitch").ref]
    assert looper.crash_loops_s == (_expected_loop(crash_cluster),)
    codes = {(n.code, n.container) for n in looper.quality}
    assert ("crash-loop", "app") in codes
    assert ("crash-loop", "istio-proxy") not in codes
    # 15 restarts per pod explain every CPU counter reset of the loop
    assert "counter-resets" not in {code for code, _ in codes}
    assert glitch.crash_loops_s == ()
    resets = [n for n in glitch.quality if n.code == "counter-resets"]
    assert len(resets) == 1 and resets[0].message.startswith("1 CPU counter resets of app")
    assert "restarts" not in [n.code for n in glitch.quality]
    for history in (looper, glitch):
        assert_matches_truth(crash_cluster, history)


def test_crash_loops_survive_a_snapshot(crash_cluster, crash_prometheus, tmp_path):
    source = PrometheusSource(PrometheusConfig(url=crash_prometheus.url, gzip=False))
    path = tmp_path / "snap.zip"
    window = _window(crash_cluster)
    recorded = record_snapshot(
        source,
        requests_for(crash_cluster),
        path=path,
        start_s=window["start_s"],
        end_s=window["end_s"],
    )
    replayed = SnapshotSource(path).fetch(requests_for(crash_cluster), **window)
    for ref, history in recorded.histories.items():
        assert replayed.histories[ref].crash_loops_s == history.crash_loops_s
    assert any(h.crash_loops_s for h in replayed.histories.values())
    # a snapshot written before the field existed reads as "no crash loop"
    old = tmp_path / "old.zip"
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(old, "w", zipfile.ZIP_LZMA) as dst:
        for item in src.infolist():
            data = src.read(item)
            if item.filename == "meta.json":
                meta = json.loads(data)
                for history in meta["histories"]:
                    del history["crash_loops_s"]
                data = json.dumps(meta).encode()
            dst.writestr(item.filename, data)
    replayed_old = SnapshotSource(old).fetch(requests_for(crash_cluster), **window)
    assert all(h.crash_loops_s == () for h in replayed_old.histories.values())
    assert set(replayed_old.histories) == set(recorded.histories)


def _forget_loops(history: WorkloadHistory) -> WorkloadHistory:
    return dataclasses.replace(history, crash_loops_s=())


def _drop_loop_replicas(history: WorkloadHistory) -> WorkloadHistory:
    keep = np.ones(len(history.replicas_t), dtype=bool)
    for a, b in history.crash_loops_s:
        keep &= ~((history.replicas_t >= a) & (history.replicas_t < b))
    return dataclasses.replace(
        history, replicas_t=history.replicas_t[keep], replicas=history.replicas[keep]
    )


def test_the_plan_leaves_the_crash_loop_out_of_max_replicas(
    crash_cluster, crash_prometheus, tmp_path
):
    repo = tmp_path / "repo"
    write_manifests(SPEC, repo)
    config = PrometheusConfig(url=crash_prometheus.url, gzip=False, window_days=2)
    settings = BotSettings(
        prometheus=config,
        # Tortoise's slots (not the replay, which scales on demand, not recorded replicas).
        recommend=RecommendSettings(
            admin=AdminSettings(gathering_data_period_type="daily"),
            replicas=ReplicaRules(max_replicas="slots"),
        ),
    )
    source = PrometheusSource(config)
    now_s = float(crash_cluster.t_s[-1])
    looper = crash_cluster.service("crash", "looper").ref

    def max_replicas(src: HistorySource) -> int:
        plan = repository_outcome(repo, src, settings, now_s=now_s)
        (outcome,) = [o for o in plan.outcomes if o.ref.key == looper.key]
        assert outcome.recommendation is not None, outcome.reasons
        assert outcome.recommendation.hpa is not None
        proposed = outcome.recommendation.hpa.max_replicas
        assert proposed.rule.startswith("tortoise.replicas.max"), proposed
        assert proposed.proposed is not None
        return int(proposed.proposed)

    excluded = max_replicas(source)
    # the same as if the loop's replica samples had never been there...
    assert excluded == max_replicas(EditedSource(source, _drop_loop_replicas))
    # ...and within what replicas outside the loop (at most 6) drive: ceil(6 x 2) = 12, while
    # the loop's 12 replicas, were they kept, drive it above that (ceil(12 x 2) = 24, decayed)
    assert excluded <= 6 * 2
    assert max_replicas(EditedSource(source, _forget_loops)) > 6 * 2


def test_hpa_replica_source_reads_the_hpa_series(sim_cluster, sim_prometheus):
    requests = requests_for(sim_cluster, TEST_LABELS)
    source = PrometheusSource(
        PrometheusConfig(url=sim_prometheus.url, gzip=False, replicas_source="hpa")
    )
    result = source.fetch(requests, **_window(sim_cluster))
    assert not result.errors
    # one replicas query per chunk and namespace, whatever the kinds (ns-1 has two kinds)
    assert result.stats.queries == 6 + 9 - 1
    with_hpa = [s for s in sim_cluster.services if s.spec.hpa is not None]
    assert with_hpa
    for service in sim_cluster.services:
        history = result.histories[service.ref]
        if service.spec.hpa is None:
            assert len(history.replicas) == 0
            assert "no-replicas" in [n.code for n in history.quality]
            continue
        assert "no-replicas" not in [n.code for n in history.quality]
        truth = sim_cluster.expected_history(service.ref)
        np.testing.assert_array_equal(history.replicas_t, truth.replicas_t)
        np.testing.assert_array_equal(history.replicas, truth.replicas)
