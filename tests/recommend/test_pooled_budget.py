"""The budget pooled over a workload's containers (``replay.budget_scope: workload``)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import cast

import numpy as np
import pytest

from bot.config.recommend import RecommendSettings, resolve
from bot.model import MIB
from bot.recommend.engine import recommend
from bot.recommend.replay.pooled import pooled_factor, pooled_requests, pooled_share
from bot.recommend.replay.recent import RecentUsage
from bot.recommend.replay.series import ReplaySeries
from tests.recommend.factories import (
    NOW_S,
    container,
    container_history,
    history,
    series,
    workload,
)

STEP_S = 300.0
N = 2000


def _spiky(at: float, every: int, n: int = N, base: float = 0.2) -> np.ndarray:
    usage = np.full(n, base)
    usage[np.arange(n) % every == 0] = at
    return usage


def test_the_pooled_budget_buys_the_cheap_spikes_and_leaves_the_dear_ones():
    # 2 % of each container's samples over 0.2: app's at 1.0 core, sidecar's at 0.25 core.
    # Pooled, 1 % of the 2 × N samples may be over: covering the sidecar's spikes (0.05 core)
    # leaves the app's 2 % of N = 1 % of 2 × N; per container both are covered (0.85 core).
    recents = {
        "app": RecentUsage(_spiky(1.0, 50), None, 7.0),
        "sidecar": RecentUsage(_spiky(0.25, 50), None, 7.0),
    }
    wanted = {"app": 0.2, "sidecar": 0.2}
    assert pooled_share(recents, wanted) == pytest.approx(0.02)
    got = pooled_requests(recents, wanted, 0.01)
    assert got == {"app": 0.2, "sidecar": 0.25}
    assert pooled_share(recents, got) == pytest.approx(0.01)
    per_container = {n: r.least_request(0.01) for n, r in recents.items()}
    assert per_container == {"app": 1.0, "sidecar": 0.25}


def test_within_the_pooled_budget_nothing_moves_and_weights_count_pods():
    usage = _spiky(1.0, 200)  # 0.5 % over
    recents = {"a": RecentUsage(usage, None, 7.0), "b": RecentUsage(usage, None, 7.0)}
    assert pooled_requests(recents, {"a": 0.2, "b": 0.2}, 0.01) == {"a": 0.2, "b": 0.2}
    # the spikes of "a" stand for 4 pods: 2 % of its weight, pooled 4 / 5 of the total over
    pods = np.where(usage > 0.5, 4.0, 1.0)
    heavy = {"a": RecentUsage(usage, pods, 7.0), "b": RecentUsage(_spiky(0.2, 1), None, 7.0)}
    share = pooled_share(heavy, {"a": 0.2, "b": 0.2})
    spikes = np.count_nonzero(usage > 0.5)
    assert share == pytest.approx(4 * spikes / (float(pods.sum()) + N))
    assert pooled_requests(heavy, {"a": 0.2, "b": 0.2}, 0.005)["a"] == 1.0


def test_the_pooled_backtest_factor_is_one_k_for_all_containers():
    app = np.full(100, 0.5)
    app[:3] = 1.0  # 3 % of the app's samples at 2× its request 0.5
    sidecar = np.full(100, 0.1)
    s = cast(
        ReplaySeries,
        SimpleNamespace(
            containers={
                "app": SimpleNamespace(cpu_cores=app),
                "sidecar": SimpleNamespace(cpu_cores=sidecar),
            }
        ),
    )
    # pooled, 3 of 200 samples over: k may leave 1 % of 200 = 2 above it; the app's three
    # samples at 2× are tied, so k = 2; with 2 % (4 samples) nothing needs raising
    assert pooled_factor(s, {"app": 0.5, "sidecar": 0.2}, 0.01) == pytest.approx(2.0)
    assert pooled_factor(s, {"app": 0.5, "sidecar": 0.2}, 0.02) == pytest.approx(1.0)


def _two_containers():
    t = series(14.0, STEP_S)
    app = _spiky(1.0, 50, n=t.size)
    sidecar = _spiky(0.25, 50, n=t.size)
    hist = history(
        container_history("app", app, 200 * MIB, days=14.0, step_s=STEP_S),
        container_history("sidecar", sidecar, 100 * MIB, days=14.0, step_s=STEP_S),
        days=14.0,
    )
    return workload(
        container("app", 0.3, 256 * MIB, mem_limit=256 * MIB),
        container("sidecar", 0.2, 128 * MIB, mem_limit=128 * MIB),
        hist=hist,
    )


def test_the_engine_spreads_the_pooled_budget_and_says_so():
    per_container = RecommendSettings()
    pooled = resolve(per_container, {"replay": {"budget_scope": "workload"}})
    inp = _two_containers()
    a = {c.name: c.cpu.request for c in recommend(inp, per_container, now_s=NOW_S).containers}
    b = {c.name: c.cpu.request for c in recommend(inp, pooled, now_s=NOW_S).containers}
    assert a["app"].proposed is not None and a["app"].proposed >= 1.0
    assert a["app"].rule == "replay.budget"
    assert b["app"].proposed is not None and b["app"].proposed < 1.0
    assert b["sidecar"].proposed is not None and b["sidecar"].proposed >= 0.25
    assert b["sidecar"].rule == "replay.budget"
    assert "workload's containers' minutes" in b["sidecar"].reason
    total = sum(float(r.proposed or 0) for r in b.values())
    assert total < sum(float(r.proposed or 0) for r in a.values())


def test_one_container_is_the_same_in_either_scope():
    t = series(14.0, STEP_S)
    hist = history(
        container_history("app", _spiky(0.5, 20, n=t.size), 200 * MIB, days=14.0, step_s=STEP_S),
        days=14.0,
    )
    inp = workload(container("app", 0.3, 256 * MIB, mem_limit=256 * MIB), hist=hist)
    pooled = resolve(RecommendSettings(), {"replay": {"budget_scope": "workload"}})
    assert recommend(inp, pooled, now_s=NOW_S) == recommend(inp, RecommendSettings(), now_s=NOW_S)
