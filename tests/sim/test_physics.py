"""The simulator's physics: OOM episodes, per-container HPA targets, and continuing a seeded
process under new values."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from bot.model import MIB, FieldChange, FieldId
from bot.sim import ClusterSpec, ContainerSpec, HpaSpec, ServiceSpec, SimError, simulate
from bot.sim.cluster import draw_demand, simulate_window
from bot.sim.hpa import HpaSignal, seen_factors, simulate_replicas
from bot.sim.profiles import ARCHETYPES, archetype_cluster
from bot.sim.spec import HpaMetric
from bot.sim.values import apply_changes, declared_workload
from tests.support.prometheus import TEST_SPEC


def _flat(*containers: ContainerSpec, hpa: HpaSpec | None = None, replicas: int = 1) -> ServiceSpec:
    """A service whose usage is its demand exactly (no noise, bursts or rollouts)."""
    return ServiceSpec(
        "s",
        "ns",
        "Deployment",
        containers,
        replicas,
        hpa=hpa,
        noise_fraction=0.0,
        burst_per_day=0.0,
        rollouts_per_week=0.0,
    )


def _run(service: ServiceSpec, demand: list[float]) -> ClusterSpec:
    """A one-minute grid as long as ``demand``."""
    spec = ClusterSpec(seed=1, services=(service,), days=len(demand) / 1440)
    assert spec.steps == len(demand)
    return spec


def test_a_long_episode_above_the_limit_is_one_kill_and_no_sample_passes_the_limit():
    # 200 MiB at demand 1, 400 MiB at demand 3, limit 300 MiB: two episodes of an hour
    app = ContainerSpec("app", 0.5, 256 * MIB, 1.0, 0.0, 100 * MIB, 100 * MIB)
    service = _flat(dataclasses.replace(app, memory_limit_bytes=300 * MIB))
    service = dataclasses.replace(service, peak_cores=1.0)
    demand = np.array([1.0] * 100 + [3.0] * 60 + [1.0] * 100 + [3.0] * 60)
    spec = _run(service, demand.tolist())
    ((pod,),) = [simulate(spec, demand={"ns/s": demand}).services[0].pods]
    (run,) = pod.containers
    assert run.oom_steps.tolist() == [100, 260]  # once per episode, not every minute of it
    assert run.memory_bytes.max() <= 300 * MIB
    assert run.restarts.tolist() == [0] * 100 + [1] * 160 + [2] * 60
    assert run.cpu_counter_s[100] == pytest.approx(run.cpu_cores[100] * 60)  # counter restarted


def test_a_leak_grows_to_its_limit_is_killed_and_starts_fresh():
    leak = ContainerSpec(
        "app",
        0.5,
        256 * MIB,
        1.0,
        0.0,
        100 * MIB,
        0,
        memory_growth_bytes_per_day=200 * MIB,
        memory_limit_bytes=300 * MIB,
    )
    spec = ClusterSpec(seed=1, services=(_flat(leak),), days=2.5)
    ((pod,),) = [simulate(spec).services[0].pods]
    (run,) = pod.containers
    first, second = run.oom_steps.tolist()  # past 300 MiB after a day (1 % memory noise)
    assert abs(first - 1440) < 60 and abs(second - first - 1440) < 60
    assert run.memory_bytes.max() <= 300 * MIB
    for at in run.oom_steps.tolist():
        assert run.memory_bytes[at] < 0.4 * run.memory_bytes[at - 1]  # fresh memory


def test_a_pod_born_above_its_limit_is_killed_once_at_its_first_sample():
    app = ContainerSpec(
        "app", 1.0, 256 * MIB, 1.0, 0.0, 100 * MIB, 100 * MIB, memory_limit_bytes=250 * MIB
    )
    hpa = HpaSpec(1, 3, 50)
    service = dataclasses.replace(_flat(app, hpa=hpa), peak_cores=1.0)
    demand = np.array([0.4] * 20 + [1.8] * 40 + [0.4] * 20)  # 280 MiB while busy
    cluster = simulate(_run(service, demand.tolist()), demand={"ns/s": demand})
    born_busy = [p for p in cluster.services[0].pods if p.start > 0]
    assert born_busy and all(p.containers[0].oom_steps.tolist() == [p.start] for p in born_busy)
    first = next(p for p in cluster.services[0].pods if p.start == 0)
    assert first.containers[0].oom_steps.tolist() == [20]


def test_no_generated_sample_passes_its_limit():
    cluster = simulate(TEST_SPEC)
    limited = [
        (run, spec.memory_limit_bytes)
        for service in cluster.services
        for spec in service.spec.containers
        for pod in service.pods
        for run in pod.containers
        if run.name == spec.name and spec.memory_limit_bytes is not None
    ]
    assert limited and all(run.memory_bytes.max() <= limit for run, limit in limited)
    assert any(len(run.oom_steps) for run, _ in limited)


@pytest.mark.parametrize(
    ("metrics", "replicas"),
    [
        ((HpaMetric(80, "app"),), 4),  # 1.6 cores over 0.5-core apps at 80 %
        ((HpaMetric(80, "sidecar"),), 5),  # 0.4 cores over 0.1-core sidecars at 80 %
        ((HpaMetric(80, "app"), HpaMetric(80, "sidecar")), 5),  # the metric asking for more
        ((HpaMetric(80),), 5),  # pod-level: 2 cores over 0.6-core pods (4.17 pods at 80 %)
    ],
    ids=["app", "sidecar", "both", "pod-level"],
)
def test_hpa_targets_on_any_container_or_the_pod(metrics, replicas):
    app = ContainerSpec("app", 0.5, 256 * MIB, 0.8, 0.0)
    sidecar = ContainerSpec("sidecar", 0.1, 64 * MIB, 0.2, 0.0)
    service = _flat(app, sidecar, hpa=HpaSpec(1, 10, 0, metrics))
    demand = np.full(30, 2.0)
    cluster = simulate(_run(service, demand.tolist()), demand={"ns/s": demand})
    assert cluster.services[0].replicas[-1] == replicas


def test_scale_up_is_limited_to_double_or_four_pods_per_period():
    signal = HpaSignal(np.full(5, 100.0), 0.0, 1.0, 100)
    # four 15 s periods a minute: 1 -> 5 -> 10 -> 20 -> 40, then 40 -> 100 (max)
    assert simulate_replicas([signal], 1, 100, 60).tolist() == [1, 40, 100, 100, 100]


def test_the_noise_factor_the_controller_reads_is_the_mean_over_the_first_pods():
    draws = np.array([[1.0, -20.0], [-1.0, 0.0], [3.0, 0.0]])  # pods × samples
    seen = seen_factors(draws, 0.1)
    # max(1 + 0.1 z, 0) per pod: [1.1, 0], [0.9, 1], [1.3, 1]; means over pods 0 … r − 1
    assert np.allclose(seen, [[1.1, 0.0], [1.0, 0.5], [1.1, 2 / 3]])


def test_the_controller_scales_on_the_noise_it_reads():
    """Two pods sharing 2 cores at a 1-core request and a 100 % target are at the target; if
    what the two pods report averages 1.25 times their share, the controller asks for 3."""
    quiet = HpaSignal(np.full(3, 2.0), 0.0, 1.0, 100)
    seen = np.array([[1.0, 1.0, 1.0], [1.25, 1.25, 1.25], [1.0, 1.0, 1.0]])
    noisy = dataclasses.replace(quiet, seen=seen)
    assert simulate_replicas([quiet], 2, 10, 60).tolist() == [2, 2, 2]
    assert noisy.utilisation_percent(np.array([2, 2, 3])).tolist() == pytest.approx(
        [125.0, 125.0, 200 / 3]
    )
    assert simulate_replicas([noisy], 2, 10, 60).tolist() == [2, 3, 3]


def test_a_bad_hpa_target_is_refused():
    app = ContainerSpec("app", 0.5, 256 * MIB, 1.0)
    for hpa, message in (
        (HpaSpec(1, 3, 70, (HpaMetric(70, "nope"),)), "unknown container"),
        (HpaSpec(1, 3, 0), "must be positive"),
        (HpaSpec(4, 3, 70), "min 4 > max 3"),
    ):
        with pytest.raises(SimError, match=message):
            ClusterSpec(seed=1, services=(_flat(app, hpa=hpa),))


def test_demand_is_drawn_once_and_a_continuation_under_new_values_keeps_it():
    spec = archetype_cluster(5, days=3, names=("api-daily", "frontend-hpa"))
    demand = draw_demand(spec)
    whole = simulate(spec)
    for service in whole.services:  # the same draws simulate makes
        np.testing.assert_array_equal(service.demand_cores, demand[f"quality/{service.spec.name}"])
    api, frontend = spec.services
    cheaper = dataclasses.replace(
        api, containers=(dataclasses.replace(api.containers[0], cpu_request_cores=0.3),)
    )
    assert frontend.hpa is not None
    wider = dataclasses.replace(frontend, hpa=dataclasses.replace(frontend.hpa, min_replicas=4))
    before = simulate_window(spec, demand, start_day=0, days=2)
    after = simulate_window(spec, demand, start_day=2, days=1)
    changed = simulate_window(spec, demand, start_day=2, days=1, services=[cheaper, wider])
    for key, train, old, new in zip(
        demand, before.services, after.services, changed.services, strict=True
    ):
        np.testing.assert_array_equal(train.demand_cores, demand[key][: 2 * 1440])
        np.testing.assert_array_equal(old.demand_cores, demand[key][2 * 1440 :])
        np.testing.assert_array_equal(new.demand_cores, old.demand_cores)
    # a new request alone changes neither the pods nor what they use
    old_api, new_api = after.services[0], changed.services[0]
    assert [p.name for p in old_api.pods] == [p.name for p in new_api.pods]
    for a, b in zip(old_api.pods, new_api.pods, strict=True):
        np.testing.assert_array_equal(a.containers[0].cpu_cores, b.containers[0].cpu_cores)
    assert (after.services[1].replicas.min(), changed.services[1].replicas.min()) == (2, 4)
    alone = simulate_window(spec, demand, start_day=2, days=1, services=[wider])
    np.testing.assert_array_equal(alone.services[0].replicas, changed.services[1].replicas)
    with pytest.raises(SimError, match="outside"):
        simulate_window(spec, demand, start_day=2, days=2)


def test_merged_changes_become_the_simulated_values():
    frontend = archetype_cluster(1, days=1, names=("frontend-hpa",)).services[0]
    declared = declared_workload(frontend)
    ref = declared.ref
    assert declared.hpa is not None and declared.replicas is None
    assert [t.container for t in declared.hpa.targets] == [None]  # pod-level

    def change(field: str, proposed: float | None, container: str | None = None) -> FieldChange:
        return FieldChange(ref, FieldId(field), proposed, None, container)

    merged = apply_changes(
        frontend,
        [
            change("requests.cpu", 0.4, "app"),
            change("limits.cpu", None, "istio-proxy"),
            change("hpa.minReplicas", 3),
            change("hpa.target.cpu", 75, "app"),
            change("hpa.target.cpu", 80, "istio-proxy"),
        ],
    )
    declared = declared_workload(merged)
    assert declared.hpa is not None and declared.hpa.min_replicas == 3
    targets = {(t.container, t.utilization_percent) for t in declared.hpa.targets}
    assert targets == {("app", 75), ("istio-proxy", 80)}  # the pod-level metric replaced
    app, sidecar = declared.containers
    assert (app.requests.cpu_cores, sidecar.limits.cpu_cores) == (0.4, None)
    dropped = apply_changes(merged, [change("hpa.target.cpu", None, "istio-proxy")])
    assert dropped.hpa is not None and dropped.hpa.metrics == (HpaMetric(75, "app"),)
    for bad, message in (
        (change("requests.cpu", 1, "nope"), "no container"),
        (change("hpa.target.memory", 80, "app"), "not simulated"),
        (change("hpa.maxReplicas", None), "cannot be removed"),
    ):
        with pytest.raises(SimError, match=message):
            apply_changes(frontend, [bad])


def test_archetypes_are_nine_and_seeded():
    assert len(ARCHETYPES) == 9
    a, b = archetype_cluster(1, days=1), archetype_cluster(1, days=1)
    assert a == b != archetype_cluster(2, days=1)
    names = ("tiny-exporter",)
    alone = archetype_cluster(1, days=1, names=names).services
    assert alone == tuple(s for s in a.services if s.name in names)  # same draw, alone or not
