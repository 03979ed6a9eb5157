"""Simulated history for declared workloads: what each workload's simulation is built from."""

from __future__ import annotations

import numpy as np

from bot.model import (
    MIB,
    DeclaredContainer,
    DeclaredHPA,
    DeclaredWorkload,
    HpaTarget,
    ResourceValues,
    WorkloadRef,
)
from bot.sim.declared import service_for, simulate_workloads
from bot.sim.profiles import PROFILES

END_S = 1_772_409_600.0  # 2026-03-02T00:00:00Z


def _web(**hpa_options) -> DeclaredWorkload:
    return DeclaredWorkload(
        WorkloadRef("Deployment", "shop", "web", "prod"),
        replicas=None,
        containers=(
            DeclaredContainer("init", ResourceValues(1.0, 64 * MIB), init=True),
            DeclaredContainer(
                "app", ResourceValues(0.5, 512 * MIB), ResourceValues(None, 1024 * MIB)
            ),
            DeclaredContainer("proxy", ResourceValues(0.1, None)),
        ),
        hpa=DeclaredHPA("web", 2, 8, (HpaTarget("cpu", 60, "app"),), **hpa_options),
    )


def _db(limit_mib: int) -> DeclaredWorkload:
    return DeclaredWorkload(
        WorkloadRef("StatefulSet", "shop", "db"),
        replicas=3,
        containers=(
            DeclaredContainer(
                "db", ResourceValues(0.25, 256 * MIB), ResourceValues(0.5, limit_mib * MIB)
            ),
        ),
    )


def test_a_service_carries_the_declared_values():
    service = service_for(_web(), "weekly", seed=1)
    assert service is not None
    assert [c.name for c in service.containers] == ["app", "proxy"]  # no init container
    app, proxy = service.containers
    assert (app.cpu_request_cores, app.memory_request_bytes) == (0.5, 512 * MIB)
    assert (app.memory_limit_bytes, app.cpu_limit_cores) == (1024 * MIB, None)
    assert proxy.memory_request_bytes == 256 * MIB  # unset: the default
    assert service.hpa is not None
    assert (service.hpa.min_replicas, service.hpa.max_replicas) == (2, 8)
    assert service.hpa.target_cpu_percent == 60
    assert 2 * 0.5 * 0.6 <= service.peak_cores <= 8 * 0.5 * 0.6  # between min and max at target
    assert service.weekend_fraction == PROFILES["weekly"].weekend_fraction


def test_a_statefulset_keeps_its_replicas():
    service = service_for(_db(512), "daily", seed=1)
    assert service is not None and service.hpa is None
    assert (service.kind, service.replicas, service.rollouts_per_week) == ("StatefulSet", 3, 0.0)


def test_histories_are_keyed_by_the_declared_ref_and_cover_the_window():
    web, db = _web(), _db(512)
    histories = simulate_workloads(
        [web, db], profile="weekly", seed=3, days=2, step_s=60, end_s=END_S + 30
    )
    assert set(histories) == {web.ref, db.ref}
    history = histories[web.ref]
    assert history.end_s == END_S and history.start_s == END_S - (2 * 1440 - 1) * 60
    assert set(history.containers) == {"app", "proxy"}
    assert history.replicas.min() >= 2 and history.replicas.max() <= 8
    assert [n.code for n in history.quality] == ["simulated"]
    assert len(histories[db.ref].pods) == 3  # db-0, db-1, db-2


def test_a_workload_does_not_change_when_another_is_added():
    alone = simulate_workloads([_db(512)], profile="weekly", seed=3, days=1, step_s=60, end_s=END_S)
    both = simulate_workloads(
        [_web(), _db(512)], profile="weekly", seed=3, days=1, step_s=60, end_s=END_S
    )
    ref = _db(512).ref
    np.testing.assert_array_equal(
        alone[ref].containers["db"].mem_bytes, both[ref].containers["db"].mem_bytes
    )


def test_growing_memory_reaches_a_tight_limit():
    histories = simulate_workloads(
        [_db(260)], profile="growing", seed=3, days=7, step_s=300, end_s=END_S
    )
    steady = simulate_workloads(
        [_db(1024)], profile="growing", seed=3, days=7, step_s=300, end_s=END_S
    )
    assert len(histories[_db(260).ref].containers["db"].oom_t) > 0
    assert len(steady[_db(1024).ref].containers["db"].oom_t) == 0
