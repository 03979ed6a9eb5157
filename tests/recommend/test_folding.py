"""The bot's folding rules (docs/recommendations.md §7): how estimates become one manifest value.

Each rule is tested with the defaults and, where it departs from upstream, against the setting
that restores upstream (``upstream_settings`` or the rule's own key).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from bot.config.recommend import RecommendSettings, resolve, upstream_settings
from bot.model import MIB, ResourceValues
from bot.recommend.changes import field_changes
from bot.recommend.engine import recommend
from bot.recommend.inputs import WorkloadInput
from tests.recommend.factories import (
    DAY_S,
    NOW_S,
    container,
    container_history,
    history,
    hpa,
    series,
    workload,
)

DEFAULT = RecommendSettings()
BOUNDED = resolve(DEFAULT, {"noise": {"oom_response": "bounded"}})
"""The former OOM response: a burstable container's bump goes into its limit only."""


def _rec(inp: WorkloadInput, settings: RecommendSettings = DEFAULT):
    return recommend(inp, settings, now_s=NOW_S)


def _daily(days: float, low: float, high: float) -> np.ndarray:
    """A load between ``low`` and ``high``, peaking every day at 15:00 UTC."""
    t = series(days)
    return low + (high - low) * (0.5 + 0.5 * np.cos(2 * np.pi * ((t % DAY_S) / 3600 - 15) / 24))


def _hpa_service(floor: int, *, days: float = 8.0, bursts: bool = False) -> WorkloadInput:
    """One recorded pod carrying a service's whole demand (0.6 to 2.4 cores a day); an HPA on
    0.5-core requests at 60 %. ``bursts``: at 03:00 each night the demand jumps to 3 cores for
    five minutes, when the HPA sits lowest."""
    demand = _daily(days, 0.6, 2.4)
    if bursts:
        t = series(days)
        demand = np.where((t % DAY_S >= 3 * 3600) & (t % DAY_S < 3 * 3600 + 300), 3.0, demand)
    return workload(
        container("app", 0.5, 512 * MIB, cpu_policy="horizontal"),
        hist=history(
            container_history("app", demand, 300 * MIB, days=days), replicas=1.0, days=days
        ),
        hpa=hpa(floor, 30, ("app", "cpu", 60)),
    )


def test_a_floor_that_never_binds_comes_down_to_the_lowest_allowed():
    rec = _rec(_hpa_service(8))
    assert rec.hpa is not None
    low = rec.hpa.min_replicas
    assert low.rule == "tortoise.replicas.min_by_replay"
    # 0.6 core at night needs 2 or 3 pods: a floor of 8 is paid, never used. The new floor
    # adds no shortfall, and one pod less would (the hours are named), unless it is the
    # lowest allowed, min(current 8, minimum_min_replicas 3).
    assert low.proposed is not None and 3 <= low.proposed < 8
    assert low.inputs["shortfall_minutes"] <= low.inputs["baseline_minutes"]
    if low.proposed == 3:
        assert low.inputs["floor"] == 3 and "a floor, not usage" in low.reason
    else:
        assert "one pod less adds shortfall on" in low.reason
    assert rec.replay is not None
    assert rec.replay.proposed.core_hours < rec.replay.current.core_hours


def test_a_floor_that_absorbs_night_bursts_is_kept_and_its_hours_named():
    rec = _rec(_hpa_service(8, bursts=True))
    assert rec.hpa is not None
    low = rec.hpa.min_replicas
    # The 3-core bursts at 03:00 need 10 pods; from a floor below 8 the new pods start while
    # the serving ones run above their requests: the replay keeps the floor where shortfall
    # does not grow, and names the hours (Asia/Tokyo: 03:00 UTC is 12:00 there).
    assert low.proposed is not None and low.proposed > 3
    assert low.inputs["shortfall_minutes"] <= low.inputs["baseline_minutes"]
    assert "12 (Asia/Tokyo)" in low.reason


def test_upstream_folds_the_slots_by_their_maximum():
    slots = resolve(DEFAULT, {"replicas": {"min_replicas": "slots", "max_replicas": "slots"}})
    rec = _rec(_hpa_service(8), slots)
    assert rec.hpa is not None
    assert rec.hpa.min_replicas.rule.startswith("tortoise.replicas.min")
    assert rec.hpa.min_replicas.rule != "tortoise.replicas.min_by_replay"
    assert rec.hpa.max_replicas.rule == "tortoise.replicas.max"


def test_max_replicas_from_the_replayed_peak_with_headroom():
    unbounded = resolve(DEFAULT, {"replicas": {"max_replicas_cut_fraction": 1.0}})
    rec = _rec(_hpa_service(3), unbounded)
    assert rec.hpa is not None
    high = rec.hpa.max_replicas
    assert high.rule == "tortoise.replicas.max_by_replay"
    peak = high.inputs["peak"]
    # 2.4 cores at the proposed target (between 60 and 90 % of 0.5 core): 6 to 8 pods
    assert isinstance(peak, int) and 5 <= peak <= 9
    assert high.proposed == math.ceil(peak * 1.5)
    assert "Asia/Tokyo" in high.reason
    # By default the cut from 30 is at most 25 % a pull request: ceil(30 × 0.75) = 23.
    stepped = _rec(_hpa_service(3)).hpa
    assert stepped is not None
    assert stepped.max_replicas.rule == "replay.max_replicas_step"
    assert stepped.max_replicas.proposed == 23


def test_noise_control_in_proportion():
    def cpu(current: float, usage: float, settings: RecommendSettings = DEFAULT):
        inp = workload(
            container("app", current, 512 * MIB),
            hist=history(container_history("app", usage, 300 * MIB)),
        )
        return _rec(inp, settings).containers[0].cpu.request

    hvpa = resolve(DEFAULT, {"noise": {"proportional": False}})
    # A 200m sidecar using 100m moves; HVPA's 200m minChange would hold it forever.
    sidecar = cpu(0.2, 0.1)
    assert sidecar.proposed is not None and sidecar.proposed < 0.18
    assert cpu(0.2, 0.1, hvpa).rule == "noise.min_change"
    # A 4-core service wanting a few percent less does not churn by it.
    big = cpu(4.0, 3.3)
    assert big.rule == "noise.min_change"
    wanted = big.inputs["unfiltered"]
    assert isinstance(wanted, float) and 0.04 < 4.0 - wanted < 0.4


def test_an_increase_that_removes_measured_risk_is_never_held():
    # 0.55 core of usage on a 0.5 request, a third of the time: the increase is below a
    # minChange of the whole request, yet the minutes over the request are a measured risk.
    cpu = np.where(np.arange(series(8).size) % 3 == 0, 0.55, 0.35)
    strict = resolve(DEFAULT, {"noise": {"proportional_fraction": 1.0}})
    inp = workload(
        container("app", 0.5, 512 * MIB), hist=history(container_history("app", cpu, 300 * MIB))
    )
    request = _rec(inp, strict).containers[0].cpu.request
    assert request.proposed is not None and request.proposed > 0.5
    assert "container-minutes" in request.reason
    calm = resolve(strict, {"noise": {"risk_minutes": 1e9}})
    # the absolute budget still raises it: a third of the minutes over request is over 1 %
    assert _rec(inp, calm).containers[0].cpu.request.rule == "replay.budget"
    no_budget = resolve(calm, {"replay": {"max_over_request": 1.0}})
    assert _rec(inp, no_budget).containers[0].cpu.request.rule == "noise.min_change"


@pytest.mark.parametrize(("peak_mib", "rule"), [(41, "floor.kept"), (60, "noise.min_change")])
def test_a_floor_never_raises_a_request_alone(peak_mib, rule):
    # 41 MiB used with 64 MiB requested: the VPA's 250 MiB pod minimum would propose ~300 MiB.
    # Usage alone asks for less than 64 MiB (kept as it is) or a little more (below minChange).
    mem = np.where(np.arange(series(8).size) % 50 == 0, peak_mib * MIB, 41 * MIB)
    inp = workload(
        container("app", 0.1, 64 * MIB, mem_limit=1024 * MIB),
        hist=history(container_history("app", 0.08, mem)),
    )
    memory = _rec(inp).containers[0].memory
    assert memory.request.rule == rule
    assert memory.request.proposed == 64 * MIB
    assert memory.limit.proposed == 1024 * MIB
    if rule == "floor.kept":
        assert "a floor, not usage" in memory.request.reason
    else:
        assert memory.request.inputs["unfiltered_rule"] == "floor.usage"
    upstream = _rec(inp, upstream_settings()).containers[0].memory
    assert upstream.request.proposed is not None and upstream.request.proposed > 250 * MIB


def test_limits_follow_evidence_not_a_large_ratio():
    # A 512 MiB limit on a 32 MiB request (ratio 16): the request rises to ~400 MiB; the ratio
    # would make the limit ~6.3 GiB.
    inp = workload(
        container("app", 0.1, 32 * MIB, mem_limit=512 * MIB),
        hist=history(container_history("app", 0.08, 330 * MIB)),
    )
    memory = _rec(inp).containers[0].memory
    request, limit = memory.request.proposed, memory.limit.proposed
    assert request is not None and limit is not None
    assert limit == max(512 * MIB, request * 2, math.ceil(330 * MIB * 1.2))
    assert memory.limit.rule == "limits.evidence"
    upstream = _rec(inp, upstream_settings()).containers[0].memory
    assert upstream.limit.proposed is not None and upstream.limit.proposed > 10 * request


def _oom_killed(request_mib: int, limit_mib: int) -> WorkloadInput:
    oom = [(NOW_S - DAY_S, 0, float(request_mib * MIB))]
    mem = np.where(np.arange(series(8).size) % 200 == 0, 900 * MIB, 500 * MIB)
    return workload(
        container("app", 0.5, request_mib * MIB, mem_limit=limit_mib * MIB),
        hist=history(container_history("app", 0.3, mem, oom=oom)),
    )


def test_the_oom_response_is_bounded_where_limit_equals_request():
    memory = _rec(_oom_killed(1024, 1024), BOUNDED).containers[0].memory
    assert memory.request.rule == "oom.bounded"
    bump, target = memory.request.inputs["oom_bump"], memory.request.inputs["vpa_target"]
    assert isinstance(bump, float) and isinstance(target, float)
    assert memory.request.proposed == math.ceil(max(bump, target) / MIB) * MIB  # once
    assert memory.limit.proposed == memory.request.proposed  # the ratio 1 kept, not stacked
    stacked = _rec(_oom_killed(1024, 1024), upstream_settings()).containers[0].memory
    assert stacked.request.proposed is not None
    assert stacked.request.proposed > memory.request.proposed


def test_an_oom_kill_raises_the_limit_of_a_burstable_container_not_its_request():
    memory = _rec(_oom_killed(640, 1024), BOUNDED).containers[0].memory
    bump = _rec(_oom_killed(1024, 1024), BOUNDED).containers[0].memory.request.inputs["oom_bump"]
    assert isinstance(bump, float)
    assert memory.limit.proposed is not None and memory.limit.proposed >= bump
    assert memory.request.rule != "oom.bounded"
    assert memory.request.proposed is not None and memory.request.proposed < memory.limit.proposed


def test_a_leak_is_not_chased_with_the_former_constant_days():
    # 250 MiB a day from 400 MiB: OOM-killed at its 1 GiB limit every ~2.5 days.
    t = series(8)
    age = (t - t[0]) % (2.5 * DAY_S)
    mem = 400 * MIB + 250 * MIB * age / DAY_S
    kills = [(float(k), 0, 768.0 * MIB) for k in t[1:][np.diff(age) < 0]]
    inp = workload(
        container("app", 0.2, 768 * MIB, mem_limit=1024 * MIB),
        hist=history(container_history("app", 0.1, mem, oom=kills)),
    )
    former = resolve(DEFAULT, {"noise": {"leak_hold_days": 7, "leak_over_request_share": None}})
    memory = _rec(inp, former).containers[0].memory
    assert memory.request.rule == "oom.leak"
    assert memory.request.proposed == 768 * MIB
    assert memory.limit.rule == "oom.leak"
    days = 7
    assert memory.limit.proposed == pytest.approx(400 * MIB + 250 * MIB * days, rel=0.05)
    assert "250" in memory.request.reason or "leak" in memory.request.reason


def test_vertical_requests_follow_the_ideal_without_hysteresis():
    # 1000m requested, p99 0.71 core: upstream's hysteresis keeps 1000m (within 1.34 × VPA).
    usage = np.random.default_rng(3).uniform(0.3, 0.72, series(8).size)
    inp = workload(
        container("app", 1.0, 512 * MIB), hist=history(container_history("app", usage, 300 * MIB))
    )
    cpu = _rec(inp).containers[0].cpu.request
    assert cpu.rule == "vertical.ideal"
    assert cpu.proposed is not None and cpu.proposed < 0.9
    assert _rec(inp, upstream_settings()).containers[0].cpu.request.proposed == 1.0


def test_decreases_move_in_full_and_upstream_steps_by_20_percent():
    inp = workload(
        container("app", 2.0, 512 * MIB), hist=history(container_history("app", 0.2, 300 * MIB))
    )
    full = _rec(inp).containers[0].cpu.request.proposed
    stepped = _rec(inp, resolve(DEFAULT, {"noise": {"step_limit": True}})).containers[0]
    assert full is not None and full < 0.4
    assert stepped.cpu.request.proposed == 1.6
    assert stepped.cpu.request.rule == "tortoise.request.step_down"


def _applied(inp: WorkloadInput, rec) -> WorkloadInput:
    """``inp`` with ``rec``'s requests, limits and replica bounds written (targets as they were:
    a target change is time-gated)."""
    assert rec.hpa is not None and inp.hpa is not None
    applied_hpa = type(inp.hpa)(
        inp.hpa.name,
        rec.hpa.min_replicas.proposed,
        int(rec.hpa.max_replicas.proposed or inp.hpa.max_replicas),
        inp.hpa.targets,
    )
    containers = tuple(
        type(c)(
            c.name,
            ResourceValues(r.cpu.request.proposed, r.memory.request.proposed),
            ResourceValues(r.cpu.limit.proposed, r.memory.limit.proposed),
            c.cpu_policy,
            c.memory_policy,
        )
        for c, r in zip(inp.containers, rec.containers, strict=True)
    )
    return workload(*containers, hist=inp.history, hpa=applied_hpa)


def test_an_hpa_proposal_once_applied_proposes_nothing_but_time_gated_targets():
    inp = _hpa_service(8, bursts=True)
    rec = _rec(inp)
    assert field_changes(rec)
    # maxReplicas 30 comes down at most 25 % a pull request (replay.max_replicas_step): the
    # runs after continue the cut, and nothing else, until it is reached.
    for _ in range(5):
        inp = _applied(inp, rec)
        rec = _rec(inp)
        again = [c for c in field_changes(rec) if not c.field.startswith("hpa.target.")]
        if not again:
            return
        assert inp.hpa is not None and rec.hpa is not None
        assert [c.field for c in again] == ["hpa.maxReplicas"], again
        high = rec.hpa.max_replicas.proposed
        assert high is not None
        assert math.ceil(inp.hpa.max_replicas * 0.75) <= high < inp.hpa.max_replicas
    raise AssertionError("maxReplicas did not settle within 5 pull requests")
