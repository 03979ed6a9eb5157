"""Time-of-week floors as KEDA cron triggers (``bot.recommend.keda_cron``): known weekly
patterns give known triggers, the replay decides, and what never takes them says why."""

from __future__ import annotations

import numpy as np
import pytest

from bot.config.recommend import RecommendSettings
from bot.model import MIB, DeclaredHPA, HpaTarget, KedaScaler
from bot.recommend import keda_cron
from bot.recommend.keda_cron import CronTrigger, plan_triggers, step_floor, triggers_for
from bot.recommend.replay.series import ReplaySeries
from bot.recommend.replay.values import ContainerValues, HpaValues, Options, Values
from bot.sim import ClusterSpec, simulate
from bot.sim.spec import ContainerSpec, HpaSpec, ServiceSpec

UTC = "Etc/UTC"
MON_FRI = (1, 2, 3, 4, 5)


def _week(base: int, *runs: tuple[tuple[int, ...], int, int, int]) -> np.ndarray:
    """168 hourly floors (Sunday 00 first): ``base``, with ``(days, start, end, floor)`` runs."""
    floors = np.full(168, base, dtype=np.int64)
    for days, start, end, floor in runs:
        for day in days:
            floors[day * 24 + start : day * 24 + end] = floor
    return floors


def _plan(floors: np.ndarray, static: int, max_triggers: int = 4, gap: int = 2):
    return plan_triggers(
        floors, static, max_triggers=max_triggers, min_gap_hours=gap, time_zone=UTC
    )


def test_office_hours_give_one_trigger_for_the_weekdays():
    found = _plan(_week(3, (MON_FRI, 9, 17, 8)), static=8)
    assert found is not None
    quiet, (trigger,) = found
    assert quiet == 3
    assert trigger == CronTrigger(MON_FRI, 9, 8, 8, UTC)
    assert trigger.metadata() == {
        "timezone": UTC,
        "start": "0 9 * * 1-5",
        "end": "0 17 * * 1-5",
        "desiredReplicas": "8",
    }


def test_each_level_and_day_pattern_is_a_trigger_until_the_limit_raises_the_quiet_floor():
    floors = _week(3, (MON_FRI, 9, 17, 8), ((6,), 10, 12, 5))
    quiet, triggers = _plan(floors, static=8) or (0, ())
    assert quiet == 3
    assert [t.label() for t in triggers] == ["Mon,Tue,Wed,Thu,Fri 09-17: 8", "Sat 10-12: 5"]
    quiet, triggers = _plan(floors, static=8, max_triggers=1) or (0, ())
    assert quiet == 5  # Saturday's 5 becomes the quiet floor: one trigger left
    assert [t.label() for t in triggers] == ["Mon,Tue,Wed,Thu,Fri 09-17: 8"]


def test_short_quiet_gaps_are_bridged_and_a_run_past_midnight_ends_the_next_day():
    floors = _week(2, ((1,), 9, 12, 6), ((1,), 13, 24, 7), ((2,), 0, 3, 5))
    (trigger,) = triggers_for(floors, 2, min_gap_hours=2, time_zone=UTC)
    assert (trigger.days, trigger.start_hour, trigger.hours) == ((1,), 9, 18)
    assert trigger.desired_replicas == 7
    assert (trigger.start, trigger.end) == ("0 9 * * 1", "0 3 * * 2")
    assert trigger.label() == "Mon 09-03 next day: 7"
    assert len(triggers_for(floors, 2, min_gap_hours=1, time_zone=UTC)) == 2


def test_a_run_over_the_end_of_the_week_is_one_trigger():
    floors = _week(3, ((6,), 20, 24, 6), ((0,), 0, 2, 6))
    (trigger,) = triggers_for(floors, 3, min_gap_hours=1, time_zone=UTC)
    assert (trigger.start, trigger.end) == ("0 20 * * 6", "0 2 * * 0")
    assert sorted(trigger.covered()) == [0, 1, 164, 165, 166, 167]


def test_no_quiet_hours_or_too_scattered_busy_hours_give_no_plan():
    assert _plan(np.full(168, 5), static=5) is None
    scattered = _week(3, *(((d,), h, h + 1, 4 + d) for d in range(7) for h in (2, 9, 20)))
    found = _plan(scattered, static=10, max_triggers=3, gap=1)
    assert found is not None and found[0] == 9  # Saturday's three hours alone above it
    assert _plan(scattered, static=10, max_triggers=2, gap=1) is None


def test_the_floor_per_step_is_the_quiet_floor_or_the_covering_trigger():
    trigger = CronTrigger(MON_FRI, 9, 8, 8, UTC)
    hours = np.array([24 + 8, 24 + 9, 24 + 16, 24 + 17, 6 * 24 + 10, 168 + 24 + 9])
    assert step_floor(hours, 3, (trigger,)).tolist() == [3, 8, 8, 3, 3, 8]


def _scaled(min_count: int, *external: str) -> DeclaredHPA:
    keda = KedaScaler("web-scaler", min_count, external)
    return DeclaredHPA(
        "keda-hpa-web-scaler", max(1, min_count), 20, (HpaTarget("cpu", 60),), keda=keda
    )


@pytest.mark.parametrize(
    ("hpa", "why"),
    [
        (_scaled(0), "minReplicaCount 0 (scale to zero)"),
        (_scaled(2, "cron"), "already has cron triggers"),
    ],
)
def test_scale_to_zero_and_existing_cron_triggers_take_none(hpa, why):
    result = keda_cron.refusal(hpa)
    assert result is not None and why in result


@pytest.fixture(scope="module")
def weekly_service():
    """Two weeks of a simulated web service scaled by a ScaledObject on CPU: busy weekdays
    (peak 12 cores at 0.5 core a pod), quiet nights and weekends; its history on the replay
    grid."""
    app = ContainerSpec("app", 0.5, 256 * MIB, 1.0)
    spec = ServiceSpec(
        "web", "shop", "Deployment", (app,), 4, HpaSpec(4, 80, 60, keda="web-scaler"),
        peak_cores=12.0, night_fraction=0.15, weekend_fraction=0.3, burst_per_day=0.0,
        noise_fraction=0.05,
    )  # fmt: skip
    cluster = simulate(ClusterSpec(1, (spec,), days=14))
    history = cluster.expected_history(cluster.services[0].ref)
    series = ReplaySeries.build(history, (app.name,), now_s=history.end_s)
    assert series is not None
    return history, series, app


def test_a_weekly_service_saves_replica_hours_at_no_added_shortfall(weekly_service):
    history, series, app = weekly_service
    settings = RecommendSettings.model_validate({"keda": {"cron_floors": "propose"}})
    floors, unseen = keda_cron.hour_floors(history.replicas_t, history.replicas, settings)
    assert unseen == 0
    static = int(floors.max())
    requests = {"cpu": app.cpu_request_cores, "memory": None}
    values = Values(
        (ContainerValues(app.name, requests),),  # type: ignore[arg-type]
        HpaValues(static, 80, (HpaTarget("cpu", 60, app.name),)),
    )
    result = keda_cron.propose(
        hpa=_scaled(static),
        static=static,
        times_s=history.replicas_t,
        replicas=history.replicas,
        series=series,
        values=values,
        options=Options(),
        settings=settings,
    )
    assert isinstance(result, keda_cron.CronFloorPlan), result
    assert result.quiet < static and 1 <= len(result.triggers) <= 4
    assert result.saved_pod_hours > 0
    assert result.cron_shortfall_minutes <= result.static_shortfall_minutes
    # reproducible from the numbers beside it
    text = result.text()
    assert f"saves {result.saved_pod_hours:.1f}" in text
    assert f"minReplicaCount {static} → {result.quiet}" in text
