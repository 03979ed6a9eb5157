"""HPA values moved in bounded steps per pull request: targets (``replay.target_step``,
``replicas.target_step_points``) and maxReplicas cuts (``replay.max_replicas_step``,
``replicas.max_replicas_cut_fraction``), with known answers."""

from __future__ import annotations

import pytest

from bot.config.recommend import RecommendSettings, resolve
from bot.model import MIB
from bot.recommend.engine import recommend
from bot.recommend.replay.bounds import bounded_cut
from bot.recommend.replay.target_steps import next_step, step_target
from bot.recommend.rules import Rule
from tests.recommend.factories import NOW_S, container, container_history, history, hpa, workload

DEFAULT = RecommendSettings()
ONE_STEP = resolve(
    DEFAULT, {"replicas": {"target_step_points": 0, "max_replicas_cut_fraction": 1.0}}
)


def _flat(minutes: float):
    """A replay in which every target has ``minutes`` of shortfall."""
    return lambda percent: minutes


@pytest.mark.parametrize(
    ("start", "wanted", "points", "expected"),
    [
        (60, 90, 10, (70, 3)),
        (70, 90, 10, (80, 2)),
        (85, 90, 10, (90, 1)),
        (90, 65, 10, (80, 3)),
        (72, 65, 10, (65, 1)),
        (60, 90, 0, (90, 1)),
        (70, 70, 10, (70, 0)),
    ],
)
def test_next_step_moves_at_most_the_step_toward_the_replayed_target(
    start, wanted, points, expected
):
    assert next_step(start, wanted, points) == expected


def test_a_target_at_60_wanting_90_proposes_70_as_step_1_of_3():
    step = step_target(60, 90, 10, shortfall=_flat(2.0), today_minutes=2.0)
    assert (step.value, step.steps, step.held) == (70, 3, False)
    assert step.reason() == (
        "step 1 of 3 toward the replay's 90%: 60 → 70%, at most 10 points a pull request; the "
        "next run continues"
    )
    assert step.inputs() == {"replayed_target": 90, "step": 10}


def test_the_next_run_continues_from_the_merged_value():
    value, steps = 60, []
    while value != 90:
        value = step_target(value, 90, 10, shortfall=_flat(0.0), today_minutes=0.0).value
        steps.append(value)
    assert steps == [70, 80, 90]


def test_decreases_step_too():
    step = step_target(90, 65, 10, shortfall=_flat(0.0), today_minutes=0.0)
    assert (step.value, step.steps) == (80, 3)
    assert step.reason().startswith("step 1 of 3 toward the replay's 65%: 90 → 80%")


def test_a_stepped_target_with_more_shortfall_than_today_is_held_lower():
    # Shortfall grows by a minute a point above 64 %: today 0 min, at the current 60 % 0 min,
    # so the step to 70 % (6 min) steps back to 64 % (the highest with no more than today's).
    def shortfall(percent: int) -> float:
        return float(max(0, percent - 64))

    step = step_target(60, 90, 10, shortfall=shortfall, today_minutes=0.0)
    assert (step.value, step.stepped, step.held) == (64, 70, True)
    assert step.held_minutes == 6.0 and step.limit_minutes == 0.0
    assert step.reason() == (
        "held at 64%: 70% shows 6 min of replayed shortfall, over the 0 min allowed; toward "
        "the replay's 90%"
    )
    assert step.inputs()["step_shortfall_minutes"] == 6.0


def test_a_hold_to_less_than_the_noise_threshold_keeps_the_current_target():
    def shortfall(percent: int) -> float:
        return float(max(0, percent - 61))

    step = step_target(60, 90, 10, shortfall=shortfall, today_minutes=0.0, min_points=2)
    assert (step.value, step.held) == (60, True)
    assert step.reason().startswith("kept: 70% shows 9 min")


def test_shortfall_the_other_values_bring_is_not_the_targets():
    # The proposed requests alone give 4 min at the current target (today 2 min): a step with
    # no more than that moves in full.
    step = step_target(60, 90, 10, shortfall=lambda p: 4.0, today_minutes=2.0)
    assert (step.value, step.held) == (70, False)


def test_step_0_is_the_one_step_jump_unchecked():
    def never(percent: int) -> float:
        raise AssertionError("no replay with target_step_points 0")

    step = step_target(60, 90, 0, shortfall=never, today_minutes=0.0)
    assert (step.value, step.steps, step.held) == (90, 1, False)


def test_a_step_is_at_least_the_noise_threshold():
    assert step_target(60, 90, 1, shortfall=_flat(0), today_minutes=0, min_points=2).value == 62


@pytest.mark.parametrize(
    ("current", "wanted", "fraction", "ceiling", "expected"),
    [
        (20, 9, 0.25, 100, 15),  # ceil(20 × 0.75)
        (10, 6, 0.25, 100, 8),  # ceil(7.5)
        (10, 6, 0.3, 100, 7),  # ceil(10 × 0.7), not 8 from 7.000000000000001
        (20, 18, 0.25, 100, 18),  # within the step: in full
        (20, 9, 1.0, 100, 9),  # off
        (20, 9, 0.0, 100, 9),  # off
        (9, 20, 0.25, 100, 20),  # increases are not bounded
        (200, 100, 0.25, 100, 100),  # the ceiling is a cap, not a cut to bound
    ],
)
def test_max_replicas_cut_is_bounded(current, wanted, fraction, ceiling, expected):
    assert bounded_cut(current, wanted, fraction, ceiling) == expected


def _one_pod_service(max_replicas: int, target: int):
    """One pod on 1 core at 0.3 core of use, an HPA on its CPU: the replayed peak is 1 pod."""
    return workload(
        container("app", 1.0, 512 * MIB, cpu_policy="horizontal"),
        hist=history(container_history("app", 0.3, 300 * MIB), replicas=1.0),
        hpa=hpa(1, max_replicas, ("app", "cpu", target)),
    )


def test_max_replicas_20_wanting_2_proposes_15_then_steps_on():
    rec = recommend(_one_pod_service(20, 70), DEFAULT, now_s=NOW_S)
    assert rec.hpa is not None
    high = rec.hpa.max_replicas
    assert high.rule == Rule.REPLAY_MAX_REPLICAS_STEP
    assert (high.current, high.proposed, high.inputs["wanted"]) == (20, 15, 2)
    assert high.reason.startswith("step toward 2 = replayed peak 1 pods")
    assert high.reason.endswith(": 20 → 15 = ceil(20 × 0.75), at most 25% less a pull request")
    after = recommend(_one_pod_service(15, 70), DEFAULT, now_s=NOW_S).hpa
    assert after is not None and after.max_replicas.proposed == 12
    one = recommend(_one_pod_service(20, 70), ONE_STEP, now_s=NOW_S).hpa
    assert one is not None
    assert one.max_replicas.rule == Rule.TORTOISE_REPLICAS_MAX_BY_REPLAY
    assert one.max_replicas.proposed == 2


def test_an_engine_target_steps_and_0_restores_the_jump():
    # 30 % of the request used: the replay puts the target at the top of the range.
    rec = recommend(_one_pod_service(20, 65), DEFAULT, now_s=NOW_S)
    one = recommend(_one_pod_service(20, 65), ONE_STEP, now_s=NOW_S)
    assert rec.hpa is not None and one.hpa is not None
    [target], [jump] = rec.hpa.targets, one.hpa.targets
    assert (jump.value.rule, jump.value.proposed) == (Rule.TORTOISE_TARGET_BY_REPLAY, 90)
    assert (target.value.rule, target.value.proposed) == (Rule.REPLAY_TARGET_STEP, 75)
    assert target.value.inputs["replayed_target"] == 90
    assert "step 1 of 3 toward the replay's 90%: 65 → 75%" in target.value.reason
