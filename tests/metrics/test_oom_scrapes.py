"""OOM kills found whatever kube-state-metrics' scrape interval, on a real Prometheus.

One server holds the same simulated cluster five times, labelled by how kube-state-metrics was
scraped (cAdvisor every step, 60 s, always): every 1, 2 and 5 steps, and every 1 and 5 steps
with jitter (up to 50 s and 200 s late; at every step that puts two scrapes in some steps and
none in the next). ``leaky`` grows into its memory limit; ``spiky`` is OOM-killed twice by
bursts between two samples while its working set stays near 300 MiB of a 1 GiB limit, then
crash-loops (restarts for another reason, which are no OOM kills).
"""

from __future__ import annotations

import dataclasses
import math

import pytest

from bot.config.bot import BotSettings
from bot.config.metrics import PrometheusConfig
from bot.metrics import PrometheusSource
from bot.model import MIB, WorkloadHistory
from bot.pipeline.plan import repository_outcome
from bot.sim import (
    ClusterSpec,
    ContainerSpec,
    CrashLoopSpec,
    KsmScrape,
    ServiceSpec,
    SimulatedCluster,
    simulate,
    write_manifests,
)
from tests.metrics.helpers import EditedSource, requests_for
from tests.support.prometheus import prometheus_from_cluster

pytestmark = pytest.mark.prometheus

STEP_S = 60

SCRAPES = {
    "every1": KsmScrape(),
    "every2": KsmScrape(every=2),
    "every5": KsmScrape(every=5),
    "every1-jitter": KsmScrape(every=1, jitter_s=50, seed=1),
    "every5-jitter": KsmScrape(every=5, jitter_s=200, seed=2),
}
"""How kube-state-metrics was scraped, by the ``cluster`` label of each copy."""

BURSTS = (0.7 + 3 / 1440, 1.3 + 1 / 1440)
"""``spiky``'s OOM kills (days): samples 1011 and 1873, between scrapes of every 2 and 5."""


def _service(name: str, app: ContainerSpec, **more) -> ServiceSpec:
    """A StatefulSet of one pod in namespace ``oom``, never rolled out."""
    return ServiceSpec(
        name, "oom", "StatefulSet", (app,), replicas=1, rollouts_per_week=0.0, **more
    )


def _app(request_mib: int, base_mib: int, limit_mib: int, **more) -> ContainerSpec:
    return ContainerSpec(
        "app",
        cpu_request_cores=0.5,
        memory_request_bytes=request_mib * MIB,
        cpu_share_fraction=1.0,
        memory_base_bytes=base_mib * MIB,
        memory_load_bytes=10 * MIB,
        memory_limit_bytes=limit_mib * MIB,
        **more,
    )


SPEC = ClusterSpec(
    seed=4,
    days=2,
    step_s=STEP_S,
    services=(
        _service("leaky", _app(256, 200, 400, memory_growth_bytes_per_day=400 * MIB)),
        _service(
            "spiky",
            _app(1024, 300, 1024, oom_kill_days=BURSTS),
            crash_loop=CrashLoopSpec(start_day=1.6, hours=0.25, restart_every_s=120),
        ),
    ),
)
"""``leaky`` grows into its 400 MiB limit about every 12 h; ``spiky`` uses about 300 MiB of its
1 GiB request and limit."""


@pytest.fixture(scope="module")
def oom_cluster() -> SimulatedCluster:
    return simulate(SPEC)


@pytest.fixture(scope="module")
def oom_prometheus(oom_cluster, tmp_path_factory):
    with prometheus_from_cluster(
        oom_cluster, tmp_path_factory.mktemp("oom"), scrapes=SCRAPES
    ) as prom:
        yield prom


def _config(prom, variant: str, **overrides) -> PrometheusConfig:
    only = [{"label": "cluster", "op": "=", "value": variant}]
    return PrometheusConfig(url=prom.url, gzip=False, matchers=only, **overrides)


def _fetch(prom, cluster: SimulatedCluster, variant: str, **overrides):
    source = PrometheusSource(_config(prom, variant, **overrides))
    result = source.fetch(
        requests_for(cluster), start_s=float(cluster.t_s[0]), end_s=float(cluster.t_s[-1])
    )
    assert not result.errors
    return result


def _expected_kills(
    cluster: SimulatedCluster, name: str, ksm: KsmScrape
) -> list[tuple[float, float]]:
    """(step, request) of each OOM kill: the step holding the first kube-state-metrics scrape
    at or after the kill, which is the first to show the restart."""
    scrape_s = ksm.scrape_s(cluster.t_s, STEP_S)
    first_s = float(cluster.t_s[0])
    service = cluster.service("oom", name)
    out = []
    for pod in service.pods:
        (run,) = pod.containers
        for kill in run.oom_steps.tolist():
            scrape = math.ceil(kill / ksm.every) * ksm.every
            assert scrape < pod.stop
            step = first_s + math.ceil((scrape_s[scrape] - first_s) / STEP_S) * STEP_S
            out.append((step, float(run.memory_request_bytes)))
    return out


def _kills(history: WorkloadHistory) -> list[tuple[float, float]]:
    app = history.containers["app"]
    return list(zip(app.oom_t.tolist(), app.oom_request_bytes.tolist(), strict=True))


def test_the_bursts_kill_between_samples_far_below_the_limit(oom_cluster):
    (pod,) = oom_cluster.service("oom", "spiky").pods
    (run,) = pod.containers
    assert run.oom_steps.tolist() == [1011, 1873]
    assert run.memory_bytes.max() < 0.4 * 1024 * MIB  # the limit
    assert run.restarts[-1] == 2 + 8  # two OOM kills, then 8 restarts of the crash loop
    assert all(k % 2 and k % 5 for k in run.oom_steps.tolist())  # between scrapes of every 2, 5


@pytest.mark.parametrize("variant", list(SCRAPES))
@pytest.mark.parametrize("mode", ["raw", "range"])
def test_every_oom_kill_is_found_whatever_the_scrape_interval(
    oom_cluster, oom_prometheus, variant, mode
):
    result = _fetch(oom_prometheus, oom_cluster, variant, query_mode=mode)
    for name in ("leaky", "spiky"):
        history = result.histories[oom_cluster.service("oom", name).ref]
        expected = _expected_kills(oom_cluster, name, SCRAPES[variant])
        assert expected and _kills(history) == expected, name
        assert "oom-request-unknown" not in [n.code for n in history.quality]
    # the crash loop's restarts came after the OOM kills, for another reason: no OOM rows, but
    # still a crash loop, however sparse the restart counter
    spiky = result.histories[oom_cluster.service("oom", "spiky").ref]
    (loop,) = spiky.crash_loops_s
    (restarts,) = [n for n in spiky.quality if n.code == "restarts"]
    assert "restarted 10 times" in restarts.message  # every restart, however many per scrape
    start = float(oom_cluster.t_s[0]) + 1.6 * 86_400
    assert loop[0] <= start + 120 and loop[1] >= start + 840


def test_same_kills_through_remote_read_and_the_query_api(oom_cluster, oom_prometheus):
    fetched = [
        _fetch(oom_prometheus, oom_cluster, "every5-jitter", raw_api=api)
        for api in ("remote_read", "query")
    ]
    remote, query = (f.histories for f in fetched)
    for ref, history in remote.items():
        assert _kills(history) == _kills(query[ref])
        assert history.crash_loops_s == query[ref].crash_loops_s


def _forget_ooms(history: WorkloadHistory) -> WorkloadHistory:
    containers = {
        name: dataclasses.replace(
            c, oom_t=c.oom_t[:0], oom_pod=c.oom_pod[:0], oom_request_bytes=c.oom_request_bytes[:0]
        )
        for name, c in history.containers.items()
    }
    return dataclasses.replace(history, containers=containers)


def test_an_oom_kill_between_scrapes_never_lowers_memory(oom_cluster, oom_prometheus, tmp_path):
    """Prometheus (kube-state-metrics every 2 steps) -> fetch -> plan: ``spiky``'s working set
    never came near its 1 GiB request and limit, yet it was OOM-killed: no lower request."""
    repo = tmp_path / "repo"
    write_manifests(SPEC, repo)
    config = _config(oom_prometheus, "every2", window_days=2)
    source = PrometheusSource(config)
    now_s = float(oom_cluster.t_s[-1])
    spiky = oom_cluster.service("oom", "spiky").ref
    current = float(SPEC.services[1].containers[0].memory_request_bytes)

    def memory_request(src) -> float:
        plan = repository_outcome(repo, src, BotSettings(prometheus=config), now_s=now_s)
        (outcome,) = [o for o in plan.outcomes if o.ref.key == spiky.key]
        assert outcome.recommendation is not None, outcome.reasons
        (app,) = outcome.recommendation.containers
        assert app.memory.request.current == current
        assert app.memory.usage is not None and app.memory.usage.max < 0.4 * current
        proposed = app.memory.request.proposed
        assert proposed is not None
        return float(proposed)

    assert memory_request(source) >= current
    # the kills decide it: without them the same history asks for less
    assert memory_request(EditedSource(source, _forget_ooms)) < current
