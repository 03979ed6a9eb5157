"""A service simulated without a break while its values switch (``bot.sim.continuous``)."""

from __future__ import annotations

import dataclasses
import io
import re

import numpy as np
import pytest

from bot.model import MIB
from bot.sim import ClusterSpec, ContainerSpec, HpaSpec, ServiceSpec, SimError
from bot.sim.cluster import SimulatedCluster, SimulatedService, draw_demand, simulate
from bot.sim.continuous import prefix, simulate_switched
from bot.sim.openmetrics import write_openmetrics
from bot.sim.profiles import archetype_cluster
from bot.sim.spec import JobRuns
from bot.sim.values import service_ref

DAY = 1440


def _leaky(limit_mib: int) -> ServiceSpec:
    """One pod, flat load, 100 MiB growing 100 MiB a day."""
    app = ContainerSpec(
        "app",
        0.5,
        256 * MIB,
        1.0,
        0.0,
        100 * MIB,
        0,
        memory_growth_bytes_per_day=100 * MIB,
        memory_limit_bytes=limit_mib * MIB,
    )
    return ServiceSpec(
        "s",
        "ns",
        "Deployment",
        (app,),
        1,
        noise_fraction=0.0,
        burst_per_day=0.0,
        rollouts_per_week=0.0,
    )


def test_the_pod_alive_at_the_switch_keeps_its_working_set_and_age():
    before, after = _leaky(1024), _leaky(250)
    spec = ClusterSpec(seed=1, services=(before,), days=4)
    sim = simulate_switched(spec, np.ones(4 * DAY), before, after, 2 * DAY)
    (pod,) = sim.pods  # not restarted at the switch
    (run,) = pod.containers
    # 300 MiB at the switch, above the new 250 MiB limit: killed there, not before
    assert run.oom_steps.tolist()[0] == 2 * DAY
    assert run.memory_bytes[2 * DAY - 1] == pytest.approx(300 * MIB, rel=0.05)
    assert run.memory_request_bytes == after.containers[0].memory_request_bytes
    fresh = simulate_switched(spec, np.ones(4 * DAY), after, after, 0)
    assert fresh.pods[0].containers[0].oom_steps.tolist()[0] == pytest.approx(1.5 * DAY, abs=30)


def test_the_prefix_is_what_a_shorter_run_gives_whatever_comes_after():
    spec = archetype_cluster(2, days=6, names=("frontend-hpa",))
    (frontend,) = spec.services
    demand = draw_demand(spec)["quality/frontend-hpa"]
    app, sidecar = frontend.containers
    cheaper = dataclasses.replace(
        frontend, containers=(dataclasses.replace(app, cpu_request_cores=0.2), sidecar)
    )
    full = simulate_switched(spec, demand, frontend, cheaper, 3 * DAY)
    short = simulate_switched(spec, demand, frontend, frontend, 3 * DAY, steps=3 * DAY)
    ref = service_ref(frontend)
    a = prefix(spec, full, 3 * DAY).expected_history(ref)
    b = prefix(spec, short, 3 * DAY).expected_history(ref)
    assert a.pods == b.pods
    for name in a.containers:
        assert np.array_equal(a.containers[name].cpu_cores, b.containers[name].cpu_cores)
        assert np.array_equal(a.containers[name].mem_bytes, b.containers[name].mem_bytes)
    # after the switch the HPA reads the lower request: more pods for the same demand
    assert full.replicas[3 * DAY :].mean() > short.replicas.mean()
    assert a.end_s == spec.times_s()[3 * DAY - 1]


def test_the_hpa_carries_its_replicas_over_the_switch():
    app = ContainerSpec("app", 1.0, 256 * MIB, 1.0, 0.0)
    hpa = ServiceSpec(
        "s",
        "ns",
        "Deployment",
        (app,),
        1,
        hpa=HpaSpec(1, 10, 50),
        noise_fraction=0.0,
        burst_per_day=0.0,
        rollouts_per_week=0.0,
    )
    spec = ClusterSpec(seed=1, services=(hpa,), days=1)
    wider = dataclasses.replace(hpa, hpa=HpaSpec(2, 10, 50))
    sim = simulate_switched(spec, np.full(DAY, 2.0), hpa, wider, DAY // 2)
    assert sim.replicas[DAY // 2 - 1] == 4  # 2 cores at 50 % of 1 core
    assert set(sim.replicas[DAY // 2 :].tolist()) == {4}  # not back to minReplicas


def _reported_ratio(sim: SimulatedService, target_percent: int) -> np.ndarray:
    """Per sample, the mean pod CPU its pods report (every container summed, as a pod-level
    ``Resource`` metric reads them) over their summed requests, divided by the target."""
    used = np.zeros(len(sim.replicas))
    for pod in sim.pods:
        for run in pod.containers:
            used[pod.start : pod.stop] += run.cpu_cores
    request = sum(c.cpu_request_cores for c in sim.spec.containers)
    return used / sim.replicas / request * 100.0 / target_percent


@pytest.mark.parametrize("simulator", ["continuous", "cluster"])
def test_the_hpa_scales_up_on_what_the_pods_report_noise_included(simulator):
    """The controller reads the pods' usage (``metrics.k8s.io``), not the demand behind it:
    it scales up after exactly the samples whose reported utilisation is above the target
    beyond the tolerance, in both simulators."""
    spec = archetype_cluster(3, days=2, names=("frontend-hpa",))
    (frontend,) = spec.services
    assert frontend.hpa is not None and frontend.noise_fraction > 0
    demand = draw_demand(spec)["quality/frontend-hpa"]
    if simulator == "continuous":
        sim = simulate_switched(spec, demand, frontend, frontend, len(demand))
    else:
        (sim,) = simulate(spec).services
        assert np.array_equal(sim.demand_cores, demand)
    target = frontend.hpa.targets("app")[0].target_percent
    ratio = _reported_ratio(sim, target)[:-1]
    now, then = sim.replicas[:-1], sim.replicas[1:]
    room = now < frontend.hpa.max_replicas
    clear = np.abs(ratio - 1.1) > 1e-9  # not on the threshold itself (rounding)
    up = then > now
    assert up.sum() >= 10
    assert np.array_equal(up[room & clear], (ratio > 1.1)[room & clear])
    # the demand alone (the pods' noise left out) would have called other samples
    share = sum(c.cpu_share_fraction for c in frontend.containers)
    floor = sum(c.cpu_floor_cores for c in frontend.containers)
    request = sum(c.cpu_request_cores for c in frontend.containers)
    quiet = (demand[:-1] * share / now + floor) / request * 100.0 / target
    assert np.count_nonzero((quiet > 1.1)[room] != up[room]) >= 5


def test_a_switch_between_different_services_is_refused():
    before = _leaky(1024)
    other = dataclasses.replace(
        before, containers=(dataclasses.replace(before.containers[0], name="x"),)
    )
    spec = ClusterSpec(seed=1, services=(before,), days=1)
    with pytest.raises(SimError, match="other containers"):
        simulate_switched(spec, np.ones(DAY), before, other, 10)
    with pytest.raises(SimError, match="outside"):
        simulate_switched(spec, np.ones(DAY), before, before, DAY + 1)


def test_a_cronjobs_pods_are_its_jobs_pods_one_per_run():
    job = dataclasses.replace(_leaky(1024), name="nightly", kind="CronJob")
    spec = ClusterSpec(seed=1, services=(job,), days=1)
    sim = simulate_switched(spec, np.ones(DAY), job, job, DAY // 2)
    runs = job.runs or JobRuns()
    assert len(sim.pods) == DAY * 60 // runs.every_s  # one pod per run, not one for the day
    for pod in sim.pods:
        assert pod.owner_kind == "Job"
        assert re.fullmatch(r"nightly-\d+", pod.owner_name), pod.owner_name
        assert re.fullmatch(rf"{pod.owner_name}-[a-z0-9]{{5}}", pod.name), pod.name
        assert (pod.stop - pod.start) * spec.step_s == runs.duration_s
    assert sim.replicasets == ()


def test_a_switch_by_rollout_starts_new_pods_that_report_the_new_requests():
    before = _leaky(1024)
    after = dataclasses.replace(
        before, containers=(dataclasses.replace(before.containers[0], cpu_request_cores=0.2),)
    )
    spec = ClusterSpec(seed=1, services=(before,), days=4)
    sim = simulate_switched(spec, np.ones(4 * DAY), before, after, 2 * DAY, rollout=True)
    old, new = sim.pods  # the pod alive at the switch stops there, a new one takes over
    assert (old.stop, new.start) == (2 * DAY, 2 * DAY)
    assert old.owner_name != new.owner_name  # a new ReplicaSet
    assert old.containers[0].cpu_request_cores == 0.5
    assert new.containers[0].cpu_request_cores == 0.2
    cluster = SimulatedCluster(spec, spec.times_s(), (sim,))
    out = io.StringIO()
    write_openmetrics(cluster, out)
    cpu = [
        line
        for line in out.getvalue().splitlines()
        if line.startswith("kube_pod_container_resource_requests{") and 'resource="cpu"' in line
    ]
    assert {line.split()[1] for line in cpu} == {"0.5", "0.2"}
    in_place = simulate_switched(spec, np.ones(4 * DAY), before, after, 2 * DAY)
    assert len(in_place.pods) == 1 and in_place.pods[0].containers[0].cpu_request_cores is None
