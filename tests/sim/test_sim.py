"""The simulator: determinism, load shapes, HPA, pods, OOM kills, OpenMetrics and manifests."""

from __future__ import annotations

import dataclasses
import io
import re
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
from ruamel.yaml import YAML

from bot.model import MIB
from bot.sim import (
    SIDECAR_NAME,
    ClusterSpec,
    ContainerSpec,
    CrashLoopSpec,
    HpaSpec,
    KsmScrape,
    ServiceSpec,
    SimError,
    simulate,
    write_manifests,
    write_openmetrics,
)
from bot.sim.hpa import simulate_hpa
from bot.sim.load import demand_cores, diurnal_fraction, weekday
from tests.support.prometheus import TEST_SPEC, backfill

OM_LINE = re.compile(r'^([a-z_]+)\{((?:[a-z_]+="(?:[^"\\]|\\.)*",?)*)\} (\S+) (\d+)$')


def _hostile_spec() -> ClusterSpec:
    app = ContainerSpec("app", 0.5, 256 * MIB, 1.0)
    return ClusterSpec(
        seed=3,
        days=0.1,
        services=(ServiceSpec('we"ird\\na\nme', "ns", "Deployment", (app,), replicas=1),),
    )


def test_same_seed_same_cluster_other_seed_differs():
    a, b = simulate(TEST_SPEC), simulate(TEST_SPEC)
    other = simulate(ClusterSpec.generate(seed=8, services=4, namespaces=2, days=2))
    for sa, sb in zip(a.services, b.services, strict=True):
        assert [p.name for p in sa.pods] == [p.name for p in sb.pods]
        np.testing.assert_array_equal(sa.replicas, sb.replicas)
        for pa, pb in zip(sa.pods, sb.pods, strict=True):
            for ca, cb in zip(pa.containers, pb.containers, strict=True):
                np.testing.assert_array_equal(ca.cpu_cores, cb.cpu_cores)
                np.testing.assert_array_equal(ca.memory_bytes, cb.memory_bytes)
    assert [p.name for p in a.services[0].pods] != [p.name for p in other.services[0].pods]


def test_generated_mix_has_sidecar_statefulset_hpa_and_oom():
    cluster = simulate(TEST_SPEC)
    kinds = {s.spec.kind for s in cluster.services}
    assert kinds == {"Deployment", "StatefulSet"}
    assert any(SIDECAR_NAME in [c.name for c in s.spec.containers] for s in cluster.services)
    assert any(s.spec.hpa for s in cluster.services)
    ooms = sum(len(c.oom_steps) for s in cluster.services for p in s.pods for c in p.containers)
    assert ooms > 0


def test_diurnal_and_weekly_cycles():
    t = np.arange(0, 14 * 86_400, 60, dtype=np.float64) + TEST_SPEC.start_s
    hour = (t % 86_400) // 3600
    assert diurnal_fraction(t)[hour == 15].mean() > 0.95
    assert diurnal_fraction(t)[hour == 3].mean() < 0.05
    service = ServiceSpec(
        "s", "n", "Deployment", (ContainerSpec("app", 1, MIB, 1),), 1, burst_per_day=0
    )
    demand = demand_cores(service, t, np.random.default_rng(1))
    weekend = weekday(t) >= 5
    assert demand[weekend].mean() < 0.85 * demand[~weekend].mean()
    assert demand[hour == 15].mean() > 1.5 * demand[hour == 3].mean()


def test_hpa_follows_demand_within_bounds():
    hpa = HpaSpec(min_replicas=2, max_replicas=10, target_cpu_percent=50)
    demand = np.concatenate([np.full(30, 0.5), np.full(30, 4.0), np.full(30, 0.5)])
    replicas = simulate_hpa(hpa, demand, request_cores=1.0, step_s=60)
    assert replicas.min() == 2 and replicas.max() <= 10
    # 4 cores at 50 % of 1-core requests need 8 pods; scale-up is immediate (one sample late).
    assert replicas[35] == 8
    # scale-down waits for the 300 s stabilization window.
    assert replicas[62] == 8 and replicas[70] == 2


def test_pods_come_and_go_and_match_controller_patterns():
    cluster = simulate(TEST_SPEC)
    for service in cluster.services:
        for pod in service.pods:
            if service.spec.kind == "Deployment":
                assert re.fullmatch(rf"{service.spec.name}-[b-z2-9]{{10}}-[b-z2-9]{{5}}", pod.name)
                assert pod.owner_kind == "ReplicaSet"
            else:
                assert re.fullmatch(rf"{service.spec.name}-\d+", pod.name)
        alive = np.zeros(len(cluster.t_s), dtype=np.int64)
        for pod in service.pods:
            alive[pod.start : pod.stop] += 1
        np.testing.assert_array_equal(alive, service.replicas)
    assert any(len(s.pods) > s.replicas.max() for s in cluster.services)


def test_oom_restarts_the_container_and_resets_its_counter():
    cluster = simulate(TEST_SPEC)
    runs = [
        (p, c) for s in cluster.services for p in s.pods for c in p.containers if len(c.oom_steps)
    ]
    assert runs
    for pod, run in runs:
        for at in (run.oom_steps - pod.start).tolist():
            assert run.restarts[at] == run.restarts[at - 1] + 1
            assert run.memory_bytes[at] < run.memory_bytes[at - 1]
            assert run.cpu_counter_s[at] == pytest.approx(run.cpu_cores[at] * 60)
        assert np.all(np.diff(run.restarts) >= 0)


def test_expected_history_is_the_generated_truth():
    cluster = simulate(TEST_SPEC)
    service = cluster.services[0]
    truth = cluster.expected_history(service.ref)
    assert set(truth.containers) == {c.name for c in service.spec.containers}
    app = truth.containers["app"]
    assert len(app.cpu_t) == sum(p.stop - p.start for p in service.pods)
    assert np.all(app.cpu_cores > 0)
    np.testing.assert_array_equal(truth.replicas, service.replicas)


def test_openmetrics_is_what_promtool_needs():
    cluster = simulate(_hostile_spec())
    out = io.StringIO()
    written = write_openmetrics(cluster, out, labels={"cluster": "c"})
    lines = out.getvalue().splitlines()
    assert lines[-1] == "# EOF"
    last: dict[str, int] = {}
    per_series: dict[str, int] = defaultdict(int)
    for line in lines[:-1]:
        found = OM_LINE.match(line)
        assert found, line
        key = found.group(1) + found.group(2)
        t = int(found.group(4))
        assert 1_700_000_000 < t < 2_000_000_000  # seconds, never milliseconds
        assert t > last.get(key, 0)
        last[key] = t
        per_series[key] += 1
    assert written == len(lines) - 1
    assert 'pod="we\\"ird\\\\na\\nme-' in out.getvalue()


def test_openmetrics_window_splits_without_losing_samples():
    cluster = simulate(TEST_SPEC)
    n = len(cluster.t_s)
    whole = write_openmetrics(cluster, io.StringIO())
    halves = sum(
        write_openmetrics(cluster, io.StringIO(), window=w) for w in ((0, n // 2), (n // 2, n))
    )
    assert halves == whole


def _parsed(text: str) -> dict[str, list[tuple[int, str]]]:
    """``{family{labels}: [(time, value)]}`` of OpenMetrics text."""
    out: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for line in text.splitlines()[:-1]:
        found = OM_LINE.match(line)
        assert found, line
        out[f"{found.group(1)}{{{found.group(2)}}}"].append((int(found.group(4)), found.group(3)))
    return out


def test_kube_state_metrics_scraped_every_k_samples_with_jitter():
    cluster = simulate(TEST_SPEC)
    default = io.StringIO()
    written = write_openmetrics(cluster, default)
    same = io.StringIO()
    assert write_openmetrics(cluster, same, ksm=KsmScrape()) == written
    assert same.getvalue() == default.getvalue()
    sparse = io.StringIO()
    ksm = KsmScrape(every=5, jitter_s=40, seed=3)
    fewer = write_openmetrics(cluster, sparse, ksm=ksm)
    assert fewer < written
    grid = {int(t): i for i, t in enumerate(cluster.t_s.tolist())}
    scrape_s = ksm.scrape_s(cluster.t_s, TEST_SPEC.step_s)
    late: set[int] = set()
    for key, samples in _parsed(sparse.getvalue()).items():
        times = [t for t, _ in samples]
        assert times == sorted(set(times))
        if 'job="kubelet"' in key:  # cAdvisor: every sample, on the grid
            assert all(t in grid for t in times) and len(times) > 5
            continue
        for t in times:  # kube-state-metrics: every 5th sample, up to 40 s late, one time a scrape
            index = int((t - cluster.t_s[0]) // TEST_SPEC.step_s)
            assert index % 5 == 0 and t == scrape_s[index]
            late.add(t - int(cluster.t_s[index]))
    assert min(late) == 0 and max(late) == 40
    with pytest.raises(SimError, match="below the scrape interval"):
        write_openmetrics(cluster, io.StringIO(), ksm=KsmScrape(every=2, jitter_s=120))


def test_oom_kills_between_samples_and_the_last_termination_reason():
    app = ContainerSpec(
        "app", 0.5, 256 * MIB, 1.0, memory_limit_bytes=1024 * MIB, oom_kill_days=(0.1, 0.12)
    )
    spec = ClusterSpec(
        seed=2,
        days=0.25,
        services=(
            ServiceSpec(
                "s",
                "ns",
                "StatefulSet",
                (app,),
                replicas=1,
                crash_loop=CrashLoopSpec(start_day=0.15, hours=0.1, restart_every_s=120),
            ),
        ),
    )
    cluster = simulate(spec)
    ((run,),) = [p.containers for p in cluster.services[0].pods]
    assert run.oom_steps.tolist() == [144, 173]  # 0.1 and 0.12 days at 60 s
    assert run.memory_bytes.max() < 200 * MIB  # never near the 1 GiB limit
    assert run.restarts[-1] == 2 + 3  # then three restarts of the crash loop (216, 218, 220)
    assert run.cpu_counter_s[144] == pytest.approx(run.cpu_cores[144] * 60)
    out = io.StringIO()
    write_openmetrics(cluster, out)
    (reason,) = [
        v
        for k, v in _parsed(out.getvalue()).items()
        if k.startswith("kube_pod_container_status_last")
    ]
    # OOMKilled from the first kill until the first restart for another reason, then absent
    first = int(cluster.t_s[0])
    assert [t for t, _ in reason] == [first + 60 * i for i in range(144, 216)]


def test_promtool_stores_every_sample_written(tmp_path: Path):
    cluster = simulate(_hostile_spec())
    files = []
    written = 0
    n = len(cluster.t_s)
    for i, window in enumerate(((0, n // 2), (n // 2, n))):
        path = tmp_path / f"part{i}.om"
        with path.open("w") as out:
            written += write_openmetrics(cluster, out, window=window)
        files.append(path)
    assert backfill(files, tmp_path / "data", expected_samples=written) == written
    assert len(list((tmp_path / "data").iterdir())) == 2


def test_manifests_match_the_spec(tmp_path: Path):
    paths = write_manifests(TEST_SPEC, tmp_path)
    assert len(paths) == len(TEST_SPEC.services)
    yaml = YAML(typ="safe")
    for service, path in zip(TEST_SPEC.services, paths, strict=True):
        docs = list(yaml.load_all(path.read_text()))
        workload = docs[0]
        assert workload["kind"] == service.kind
        assert workload["metadata"] == {"name": service.name, "namespace": service.namespace}
        names = [c["name"] for c in workload["spec"]["template"]["spec"]["containers"]]
        assert names == [c.name for c in service.containers]
        first = workload["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]
        millicores = round(service.containers[0].cpu_request_cores * 1000)
        assert first["cpu"] in (f"{millicores}m", str(millicores // 1000))
        if service.hpa:
            hpa = docs[1]
            assert hpa["apiVersion"] == "autoscaling/v2"
            assert hpa["spec"]["scaleTargetRef"]["name"] == service.name
            assert hpa["spec"]["minReplicas"] == service.hpa.min_replicas
            target = hpa["spec"]["metrics"][0]["containerResource"]["target"]
            assert target["averageUtilization"] == service.hpa.target_cpu_percent
        else:
            assert len(docs) == 1


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"days": 0}, "must be positive"),
        ({"start_s": 1_767_225_601.0}, "not a multiple"),
    ],
    ids=["zero-days", "unaligned-start"],
)
def test_bad_spec_is_refused(kwargs, message):
    with pytest.raises(SimError, match=message):
        ClusterSpec(seed=1, services=(), **kwargs)


def test_crash_loop_restarts_only_the_first_container_and_keeps_hpa_replicas_by_default():
    from bot.sim import CrashLoopSpec

    app = ContainerSpec("app", 0.5, 256 << 20, 0.8)
    sidecar = ContainerSpec("istio-proxy", 0.1, 128 << 20, 0.2)
    base = ServiceSpec(
        "svc", "ns", "Deployment", (app, sidecar), 1, HpaSpec(1, 5, 70), rollouts_per_week=0.0
    )
    loop = CrashLoopSpec(start_day=0.25, hours=1.0, restart_every_s=300)
    plain = simulate(ClusterSpec(seed=1, services=(base,), days=1))
    looping = simulate(
        ClusterSpec(seed=1, services=(dataclasses.replace(base, crash_loop=loop),), days=1)
    )
    np.testing.assert_array_equal(plain.services[0].replicas, looping.services[0].replicas)
    pod = next(p for p in looping.services[0].pods if p.start == 0)
    restarts = {c.name: int(c.restarts[-1]) for c in pod.containers}
    assert restarts == {"app": 12, "istio-proxy": 0}  # 3600 s / 300 s
    app_run = pod.containers[0]
    dropped = np.flatnonzero(np.diff(app_run.cpu_counter_s) < 0) + 1 + pod.start
    first = int(0.25 * 86_400 / 60)
    assert dropped.tolist() == list(range(first, first + 60, 5))
