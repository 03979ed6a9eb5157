"""A floor that varies per step (KEDA ``cron`` triggers): the walks keep it, go straight to a
raised floor, and take a constant one exactly as the scalar."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest

from bot.recommend.replay.controller import Metric, floor_parts
from bot.recommend.replay.exact import replay_reach
from tests.recommend.replay.test_controller import _sim_metrics, _usage

BOTH = pytest.mark.parametrize("model", ["exact", "fast"])


@pytest.fixture(scope="module")
def sim_cases() -> list[tuple[list[Metric], int, int, int]]:
    return _sim_metrics(1)


@BOTH
def test_a_constant_floor_array_gives_the_scalar_path_and_reach(model, sim_cases):
    assert sim_cases
    for metrics, low, high, initial in sim_cases:
        n = metrics[0].usage.size
        walk = partial(replay_reach, metrics, max_replicas=high, initial=initial, step_s=60)
        scalar, scalar_reach = walk(min_replicas=low, model=model)
        array, array_reach = walk(min_replicas=np.full(n, low), model=model)
        assert array.tolist() == scalar.tolist()
        assert array_reach == scalar_reach


@BOTH
def test_replicas_go_straight_to_a_raised_floor_and_fall_after_it(model):
    # 1 core at 0.5 core × 50 %: 4 pods carry it; the floor asks for 9 during steps 20..39.
    usage = _usage((60, 1.0))
    floor = np.full(60, 2)
    floor[20:40] = 9
    path, _ = replay_reach(
        [Metric(usage, 0.5, 50)],
        min_replicas=floor,
        max_replicas=20,
        initial=4,
        step_s=60,
        model=model,
    )
    assert path[:20].tolist() == [4] * 20
    assert path[20:40].tolist() == [9] * 20
    assert path[50:].tolist() == [4] * 10  # back to the load's 4 once the window is past
    assert (path >= floor).all()


@BOTH
def test_a_floor_above_max_replicas_is_clamped_by_it(model):
    usage = _usage((30, 1.0))
    floor = np.full(30, 1)
    floor[10:20] = 50
    path, _ = replay_reach(
        [Metric(usage, 0.5, 50)],
        min_replicas=floor,
        max_replicas=12,
        initial=4,
        step_s=60,
        model=model,
    )
    assert path[10:20].tolist() == [12] * 10


def test_fast_stays_close_to_exact_with_a_varying_floor(sim_cases):
    for metrics, low, high, initial in sim_cases:
        n = metrics[0].usage.size
        floor = np.full(n, low)
        floor[(np.arange(n) // 60) % 24 >= 12] = low + 3  # the afternoons raised
        walk = partial(replay_reach, metrics, max_replicas=high, initial=initial, step_s=60)
        exact, _ = walk(min_replicas=floor, model="exact")
        fast, _ = walk(min_replicas=floor, model="fast")
        assert (exact >= np.minimum(floor, high)).all()
        assert (fast >= np.minimum(floor, high)).all()
        assert abs(fast.mean() / exact.mean() - 1) < 0.02


def test_a_floor_of_the_wrong_length_is_refused():
    with pytest.raises(ValueError, match="a floor of 3 steps, a series of 5"):
        floor_parts(np.array([1, 2, 3]), 5)
    assert floor_parts(np.array([2, 2, 2]), 3) == (2, None)
    assert floor_parts(4, 3) == (4, None)
