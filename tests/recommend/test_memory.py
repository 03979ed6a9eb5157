"""The memory rules (``bot/recommend/memory.py``, docs/recommendations.md §2-§4): after an OOM
kill the request rises and is never lowered (``oom.raise``), a leak's request covers its working
set and its limit its growth until a restart (``oom.leak_quantile``, ``oom.leak_cadence``), a
limit keeps a margin over the observed peak (``limits.peak_headroom``), and no request is
proposed above the largest node (``node.max_allocatable``). Each against its known answer and
against the setting that restores the former behaviour."""

from __future__ import annotations

import math

import numpy as np
import pytest

from bot.config.recommend import RecommendSettings, resolve
from bot.model import GIB, MIB, Resource, ResourceValues
from bot.recommend.engine import recommend
from bot.recommend.inputs import WorkloadInput
from bot.recommend.leak import find_leak, restart_cadence
from tests.recommend.factories import (
    DAY_S,
    NOW_S,
    container,
    container_history,
    history,
    sawtooth_history,
    series,
    workload,
)

DEFAULT = RecommendSettings()


def _memory(inp: WorkloadInput, settings: RecommendSettings = DEFAULT):
    return recommend(inp, settings, now_s=NOW_S).containers[0].memory


def _mib_up(value: float) -> int:
    """``value`` rounded up to the manifest grid (1 MiB)."""
    return math.ceil(value / MIB) * MIB


# -- oom.raise -----------------------------------------------------------------------------

BUMP_OF_512 = math.trunc(512 * MIB * 1.2)
"""The VPA OOM bump of a kill at 512 MiB requested above a 300 MiB working set:
max(512 MiB + 100 MiB, trunc(512 MiB × 1.2)) = 614.4 MiB."""


def _killed_four_days_ago(request_mib: int, limit_mib: int) -> WorkloadInput:
    """A steady 300 MiB working set, OOM-killed four days before now at 512 MiB requested."""
    oom = [(NOW_S - 4 * DAY_S, 0, 512.0 * MIB)]
    return workload(
        container("app", 0.5, request_mib * MIB, mem_limit=limit_mib * MIB),
        hist=history(container_history("app", 0.2, 300 * MIB, oom=oom)),
    )


def test_an_oom_kill_raises_the_request_to_the_bump_and_the_limit_keeps_its_ratio():
    memory = _memory(_killed_four_days_ago(512, 1024))
    assert memory.request.rule == "oom.raise"
    assert memory.request.inputs["oom_bump"] == BUMP_OF_512
    assert memory.request.proposed == _mib_up(BUMP_OF_512) == 615 * MIB
    # limit/request 2 kept: floor(1024 MiB × 615/512), within request × limits.max_ratio 2
    assert memory.limit.proposed == 1230 * MIB
    assert memory.limit.proposed >= BUMP_OF_512


def test_an_oom_kill_raises_a_guaranteed_containers_limit_with_its_request():
    memory = _memory(_killed_four_days_ago(512, 512))
    assert memory.request.proposed == 615 * MIB
    assert memory.limit.proposed == memory.request.proposed


def test_a_request_above_the_bump_is_never_lowered_after_a_kill():
    # Usage asks for ~345 MiB; the kill four days ago keeps the 1 GiB request as it is.
    memory = _memory(_killed_four_days_ago(1024, 2048))
    assert memory.request.proposed == 1024 * MIB
    assert memory.request.rule == "oom.raise"
    assert "never lowered" in memory.request.reason
    assert memory.limit.proposed == 2048 * MIB


def test_the_former_response_puts_the_bump_into_the_limit_and_cuts_the_request():
    bounded = resolve(DEFAULT, {"noise": {"oom_response": "bounded"}})
    memory = _memory(_killed_four_days_ago(512, 1024), bounded)
    assert memory.request.rule == "vertical.ideal"
    assert memory.request.proposed is not None and memory.request.proposed < 512 * MIB
    assert memory.limit.proposed is not None and memory.limit.proposed >= BUMP_OF_512


# -- limits.peak_headroom ------------------------------------------------------------------


def _weekly_job(request_mib: int, limit_mib: int) -> WorkloadInput:
    """300 MiB but for a 672 MiB weekly run of two hours, seven days ago."""
    t = series(8)
    run = (t >= NOW_S - 7 * DAY_S) & (t < NOW_S - 7 * DAY_S + 7200)
    mem = np.where(run, 672 * MIB, 300 * MIB)
    return workload(
        container("job", 0.2, request_mib * MIB, mem_limit=limit_mib * MIB),
        hist=history(container_history("job", 0.1, mem)),
    )


def test_a_weekly_jobs_limit_keeps_the_margin_over_its_peak():
    memory = _memory(_weekly_job(512, 768))
    assert memory.request.proposed is not None and memory.request.proposed < 512 * MIB
    assert memory.limit.rule == "limits.peak_headroom"
    assert memory.limit.proposed == math.ceil(672 * MIB * 1.1)
    assert "672Mi × (1 + 0.1)" in memory.limit.reason


def test_without_the_margin_the_limit_sits_on_the_peak():
    # (the replay gate holds such a limit back: the replayed peak touches it)
    former = resolve(DEFAULT, {"limits": {"memory_peak_headroom": 0.0}, "replay": {"gate": "off"}})
    memory = _memory(_weekly_job(512, 768), former)
    assert memory.limit.rule == "noise.memory_peak_floor"
    assert memory.limit.proposed == 672 * MIB


def test_a_limit_equal_to_its_request_raises_the_request_to_keep_the_margin():
    # 680 MiB requested and limited: 1.2 % over the peak, a move below minChange that the
    # margin forces through; the pod stays Guaranteed.
    memory = _memory(_weekly_job(680, 680))
    assert memory.request.rule == "limits.peak_headroom"
    assert memory.request.proposed == _mib_up(672 * MIB * 1.1) == 740 * MIB
    assert memory.limit.proposed == memory.request.proposed


# -- oom.leak_quantile, oom.leak_cadence ---------------------------------------------------


def _leak(*, killed: int) -> WorkloadInput:
    """Four pods of three days one after the other, 300 MiB + 100 MiB a day; the first
    ``killed`` end in an OOM kill, the others are replaced, the last runs to now."""
    hist = sawtooth_history(
        "app",
        lives=4,
        life_days=3.0,
        start_bytes=300 * MIB,
        bytes_per_day=100 * MIB,
        killed=killed,
        request_bytes=512 * MIB,
    )
    return workload(
        container("app", 0.2, 512 * MIB, mem_limit=600 * MIB),
        hist=history(hist, days=12.0),
    )


def test_a_leaks_request_is_the_quantile_and_its_limit_the_growth_until_a_restart():
    memory = _memory(_leak(killed=2))
    # The working set spreads evenly over 300..600 MiB: its 97 % quantile is 300 + 0.97 × 300
    # MiB (590.9 MiB on the one-minute grid), rounded up to 591 MiB.
    assert memory.request.rule == "oom.leak_quantile"
    assert memory.request.proposed == 591 * MIB
    # Pods restart every 3 days: 300 MiB + 100 MiB/day × 3 days × (1 + 0.1) = 630 MiB.
    assert memory.limit.rule == "oom.leak_cadence"
    assert memory.limit.inputs["cadence_days"] == pytest.approx(3.0, abs=1e-3)
    assert memory.limit.proposed == pytest.approx(630 * MIB, rel=2e-3)


def test_a_leak_restarted_only_by_its_kills_holds_the_forecast_horizon():
    # Every life ended in a kill at 600 MiB after 3 days: the spacing is the limit's own doing
    # (a margin on it would raise the limit every proposal): 300 MiB + 100 MiB/day × 7 days.
    memory = _memory(_leak(killed=3))
    assert memory.limit.rule == "oom.leak_cadence"
    assert memory.limit.inputs["cadence_days"] == DEFAULT.forecast.horizon_days == 7
    assert memory.limit.proposed == pytest.approx(1000 * MIB, rel=2e-3)
    assert "every 3.0 days at the limit" in memory.limit.reason
    # The request covers a pod life under that limit in all but 3 % of its minutes:
    # 300 MiB + 100 MiB/day × 7 days × 0.97 = 979 MiB, not the window's 591 MiB (capped by
    # the old limit's kills).
    assert memory.request.rule == "oom.leak_quantile"
    assert memory.request.proposed == pytest.approx(979 * MIB, rel=2e-3)
    assert memory.request.inputs["life_days"] == 7


def test_the_former_leak_rule_keeps_the_request_and_holds_constant_days():
    former = resolve(DEFAULT, {"noise": {"leak_hold_days": 7, "leak_over_request_share": None}})
    memory = _memory(_leak(killed=2), former)
    assert memory.request.rule == "oom.leak"
    assert memory.request.proposed == 512 * MIB
    assert memory.limit.proposed == pytest.approx((300 + 100 * 7) * MIB, rel=2e-3)


def test_the_restart_cadence_is_the_longest_pod_that_ended_before_the_window():
    t = np.array([0.0, 100.0, 200.0, 200.0, 9000.0, 20000.0])
    pods = np.array([0, 0, 0, 1, 1, 2], dtype=np.int32)
    # pod 0 lived 200 s and ended; pod 1 lived 8800 s and ended; pod 2 runs to the end
    none, no_pod = np.zeros(0), np.zeros(0, dtype=np.int32)
    assert restart_cadence(t, pods, none, no_pod) == 8800.0
    assert restart_cadence(t[:3], pods[:3], none, no_pod) is None
    # pod 1 ended in an OOM kill: the kill, not a restart, ended it
    assert restart_cadence(t, pods, np.array([9060.0]), np.array([1], dtype=np.int32)) == 200.0
    leak = find_leak(
        np.arange(10.0),
        np.zeros(10, dtype=np.int32),
        np.arange(10.0),
        np.zeros(0),
        np.zeros(0, dtype=np.int32),
        over_request_share=0.1,
    )
    assert leak is None  # no kills, no leak


# -- node.max_allocatable ------------------------------------------------------------------


def _busy(cpu: float, mem_gib: float, *, allocatable: ResourceValues) -> WorkloadInput:
    """A container using 2.5 cores and 3 GiB, requesting ``cpu`` and ``mem_gib``."""
    app = container("app", cpu, int(mem_gib * GIB), max_allocatable=allocatable)
    return workload(app, hist=history(container_history("app", 2.5, 3 * GIB)))


@pytest.mark.parametrize(
    ("allocatable", "cpu", "memory"),
    [
        # no node sizes declared: the usage (VPA target above 2.5 cores and 3 GiB) as it is
        (ResourceValues(), None, None),
        # nodes above the need: nothing clamps
        (ResourceValues(8.0, 32 * GIB), None, None),
        # 2-core nodes: CPU at 2 cores; memory free
        (ResourceValues(2.0, 32 * GIB), 2.0, None),
        # 2.5 GiB nodes: memory at 2.5 GiB, the working-set peak floor included
        (ResourceValues(8.0, int(2.5 * GIB)), None, int(2.5 * GIB)),
    ],
)
def test_no_request_above_the_largest_node(allocatable, cpu, memory):
    rec = recommend(_busy(1.0, 2.0, allocatable=allocatable), DEFAULT, now_s=NOW_S)
    got = rec.containers[0]
    free = recommend(_busy(1.0, 2.0, allocatable=ResourceValues()), DEFAULT, now_s=NOW_S)
    pairs: tuple[tuple[Resource, float | None], ...] = (("cpu", cpu), ("memory", memory))
    for resource, clamped in pairs:
        mine = got.resource(resource).request
        unclamped = free.containers[0].resource(resource).request
        if clamped is None:
            assert mine.proposed == unclamped.proposed
            assert mine.rule != "node.max_allocatable"
        else:
            assert unclamped.proposed is not None and unclamped.proposed > clamped
            assert mine.proposed == clamped
            assert mine.rule == "node.max_allocatable"
            assert "largest node's allocatable" in mine.reason


def test_a_request_already_above_the_node_comes_down_to_it():
    # (the folding's value; the replay gate may hold a cut back, whatever the node)
    no_gate = resolve(DEFAULT, {"replay": {"gate": "off"}})
    rec = recommend(_busy(3.0, 2.0, allocatable=ResourceValues(2.0, None)), no_gate, now_s=NOW_S)
    cpu = rec.containers[0].cpu.request
    assert (cpu.current, cpu.proposed, cpu.rule) == (3.0, 2.0, "node.max_allocatable")
    # the gate may hold the cut back, but never above what the node holds
    gated = recommend(_busy(3.0, 2.0, allocatable=ResourceValues(2.0, None)), DEFAULT, now_s=NOW_S)
    proposed = gated.containers[0].cpu.request.proposed
    assert proposed is not None and proposed <= 2.0
