"""An HPA's own ``behavior`` in the controller replay: one hand-made series per field, whose
replayed path changes in a known way, under both models (the fast one falls back to the
exact walk for what it cannot express)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from functools import partial
from typing import Any

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from bot.model import (
    DEFAULT_BEHAVIOR,
    MIB,
    DeclaredHPA,
    Explained,
    HpaBehavior,
    HpaRecommendation,
    HpaTarget,
    Recommendation,
    ResourceValues,
    ScalingPolicy,
    WorkloadRef,
)
from bot.recommend.inputs import WorkloadInput
from bot.recommend.replay.compare import current_values, proposed_values
from bot.recommend.replay.controller import Metric, Model, replay_fast_reach
from bot.recommend.replay.exact import fast_expresses, replay_exact_reach, replay_replicas
from bot.recommend.replay.figures import replay
from bot.recommend.replay.series import ReplaySeries
from bot.recommend.replay.values import ContainerValues, HpaValues, Values
from tests.recommend.factories import NOW_S, container_history, history, series

UP, DOWN = DEFAULT_BEHAVIOR.scale_up, DEFAULT_BEHAVIOR.scale_down
MODELS = pytest.mark.parametrize("model", ["exact", "fast"])


def _usage(*pieces: tuple[int, float]) -> np.ndarray:
    """A piecewise-constant total usage: ``(steps, cores)`` pieces one after another."""
    return np.concatenate([np.full(n, value) for n, value in pieces])


def _walk(usage: np.ndarray, behavior: HpaBehavior, model: Model, **bounds: int) -> list[int]:
    """Replicas of one CPU metric at a 1-core request and a 100 % target (one pod per core),
    minute steps, from 4 pods."""
    kw = {"min_replicas": 1, "max_replicas": 50, "initial": 4, **bounds}
    path = replay_replicas(
        [Metric(usage, 1.0, 100)], step_s=60, model=model, behavior=behavior, **kw
    )
    return path.tolist()


def _behavior(up: Mapping[str, Any] | None = None, down: Mapping[str, Any] | None = None):
    """The defaults with the fields of ``up`` and ``down`` (``ScalingRules`` names) replaced."""
    return HpaBehavior(replace(UP, **(up or {})), replace(DOWN, **(down or {})))


DROP = _usage((5, 12.0), (10, 4.0))
"""12 pods' worth of demand, then 4."""


@MODELS
def test_default_scale_down_waits_for_the_300_second_window(model):
    assert _walk(DROP, DEFAULT_BEHAVIOR, model) == [4] + [12] * 4 + [12] * 4 + [4] * 6


@MODELS
def test_a_scale_down_window_of_zero_drops_the_replicas_at_once(model):
    path = _walk(DROP, _behavior(down={"stabilization_s": 0}), model)
    assert path == [4] + [12] * 4 + [4] * 10


@MODELS
def test_a_longer_scale_down_window_holds_the_replicas_longer(model):
    path = _walk(DROP, _behavior(down={"stabilization_s": 540}), model)
    assert path == [4] + [12] * 4 + [12] * 8 + [4] * 2  # 9 minutes of 4 from step 5 on


@MODELS
def test_scale_down_disabled_never_scales_down(model):
    path = _walk(DROP, _behavior(down={"select": "Disabled"}), model)
    assert path == [4] + [12] * 14


@MODELS
def test_scale_up_disabled_never_scales_up(model):
    path = _walk(DROP, _behavior(up={"select": "Disabled"}), model)
    assert path == [4] * 15


@MODELS
def test_a_pods_policy_of_one_per_minute_adds_one_pod_a_minute(model):
    rules = {"policies": (ScalingPolicy("Pods", 1, 60),)}
    path = _walk(_usage((12, 10.0)), _behavior(up=rules), model)
    assert path == [4, 5, 6, 7, 8, 9, 10, 10, 10, 10, 10, 10]


@MODELS
def test_a_percent_policy_limits_each_period_to_a_share_of_its_start(model):
    # +50 % per 2 minutes from 4 pods: 6 at once, then 9 two minutes later (ceil(6 × 1.5)).
    rules = {"policies": (ScalingPolicy("Percent", 50, 120),)}
    path = _walk(_usage((8, 20.0)), _behavior(up=rules), model)
    assert path == [4, 6, 6, 9, 9, 14, 14, 20]


@MODELS
def test_select_policy_min_takes_the_smaller_change(model):
    # Pods 4 and Percent 100 per 15 s, 4 syncs a minute: Max allows 1 -> 5 -> 10 -> 20 -> 40,
    # Min the smaller of +4 and ×2: 1 -> 2 -> 4 -> 8 -> 12, then 16, 20, 24, 28.
    usage = _usage((3, 40.0))
    assert _walk(usage, DEFAULT_BEHAVIOR, model, initial=1) == [1, 40, 40]
    assert _walk(usage, _behavior(up={"select": "Min"}), model, initial=1) == [1, 12, 28]


@MODELS
def test_a_scale_down_pods_policy_removes_one_pod_a_minute(model):
    rules = {"stabilization_s": 0, "policies": (ScalingPolicy("Pods", 1, 60),)}
    path = _walk(_usage((8, 1.0)), _behavior(down=rules), model, initial=6)
    assert path == [6, 5, 4, 3, 2, 1, 1, 1]


@MODELS
def test_a_scale_up_window_ignores_a_short_spike(model):
    usage = _usage((3, 4.0), (1, 12.0), (6, 4.0), (4, 12.0))
    assert _walk(usage, DEFAULT_BEHAVIOR, model)[3] == 12
    path = _walk(usage, _behavior(up={"stabilization_s": 120}), model)
    # the spike is never the smallest recommendation of two minutes; the sustained rise is
    # from its second minute on
    assert path == [4] * 10 + [4, 12, 12, 12]


@MODELS
def test_a_tolerance_of_five_percent_reacts_to_a_seven_percent_excess(model):
    usage = _usage((6, 4.28))  # 107 % of the request at 4 pods
    assert _walk(usage, DEFAULT_BEHAVIOR, model) == [4] * 6
    tight = _behavior(up={"tolerance": 0.05}, down={"tolerance": 0.05})
    assert _walk(usage, tight, model) == [4] + [5] * 5


@MODELS
def test_the_scale_down_tolerance_is_its_own(model):
    usage = _usage((6, 3.72))  # 93 % at 4 pods: ceil(0.93 × 4) = 4 anyway; at 8 pods 46 %
    loose = _behavior(down={"tolerance": 0.6, "stabilization_s": 0})
    assert _walk(usage, loose, model, initial=8) == [8] * 6
    assert _walk(usage, _behavior(down={"stabilization_s": 0}), model, initial=8) == [8] + [4] * 5


def test_the_fast_model_expresses_windows_and_tolerances_only():
    assert fast_expresses(DEFAULT_BEHAVIOR)
    assert fast_expresses(_behavior(down={"stabilization_s": 0, "tolerance": 0.05}))
    assert fast_expresses(_behavior(up={"tolerance": 0.2}))
    assert not fast_expresses(_behavior(up={"stabilization_s": 60}))
    assert not fast_expresses(_behavior(up={"select": "Min"}))
    assert not fast_expresses(_behavior(down={"select": "Disabled"}))
    assert not fast_expresses(_behavior(down={"policies": (ScalingPolicy("Pods", 1, 60),)}))


@settings(max_examples=40, deadline=None)
@given(
    levels=st.lists(st.floats(0.5, 30.0), min_size=2, max_size=8),
    window=st.sampled_from([0, 60, 120, 600]),
    tolerance=st.sampled_from([0.02, 0.1, 0.25]),
)
@example(levels=[26.0, 24.25], window=600, tolerance=0.02)
def test_both_models_settle_where_the_declared_tolerance_holds_the_replicas(
    levels, window, tolerance
):
    """Each level lasts an hour, several scale-down windows: a fall settles in stages (26 →
    25 → 24 pods at 24.2 cores and a 2 % tolerance, a window each), and both models settle on
    a count the controller keeps under the declared tolerance (within it, or
    ``ceil(ratio × R) = R``)."""
    behavior = _behavior(
        up={"tolerance": tolerance}, down={"stabilization_s": window, "tolerance": tolerance}
    )
    usage = np.repeat(np.round(levels, 1), 60)
    kw = {"min_replicas": 1, "max_replicas": 60, "initial": 3, "step_s": 60, "behavior": behavior}
    metrics = [Metric(usage, 1.0, 100)]
    ends = np.arange(59, usage.size, 60)
    for walk in (replay_exact_reach, replay_fast_reach):
        path, _ = walk(metrics, **kw)
        for end in ends.tolist():
            replicas, level = int(path[end]), float(usage[end])
            ratio = np.floor(level * 100 / replicas) / 100
            within = 1 - tolerance <= ratio <= 1 + tolerance
            assert within or int(np.ceil(ratio * replicas)) == replicas, (walk, end)


def test_the_exact_walk_keeps_its_default_path_when_given_the_defaults():
    usage = _usage((10, 1.0), (10, 3.0), (10, 1.0))
    walk = partial(replay_exact_reach, min_replicas=2, max_replicas=20, initial=4, step_s=60)
    metric = [Metric(usage, 0.5, 50)]
    assert walk(metric)[0].tolist() == walk(metric, behavior=HpaBehavior())[0].tolist()


def test_the_replay_figures_and_the_gate_inputs_use_the_declared_behaviour():
    """``HpaValues.behavior`` reaches the replay: a load that falls at mid-day costs fewer
    pod-hours with no scale-down window, and none fall with scale-down disabled; the values
    the gate compares carry the declared behaviour on both sides."""
    days = 1
    n = series(days).size
    demand = np.where(np.arange(n) % 20 < 10, 4.0, 1.0)  # ten minutes busy, ten quiet
    hist = history(container_history("app", demand, 300 * MIB, days=days), replicas=1, days=days)
    replayed = ReplaySeries.build(hist, ("app",), now_s=NOW_S)
    assert replayed is not None
    target = (HpaTarget("cpu", 50, "app"),)
    app = (ContainerValues("app", ResourceValues(0.5, 512 * MIB)),)

    def pod_hours(behavior: HpaBehavior) -> float:
        return replay(replayed, Values(app, HpaValues(1, 20, target, behavior))).replicas.pod_hours

    default = pod_hours(DEFAULT_BEHAVIOR)
    assert pod_hours(_behavior(down={"stabilization_s": 0})) < default * 0.9
    assert pod_hours(_behavior(down={"select": "Disabled"})) > default * 1.2

    declared = _behavior(down={"select": "Disabled"})
    hpa = DeclaredHPA("web", 1, 20, target, behavior=declared)
    inp = WorkloadInput(WorkloadRef("Deployment", "shop", "web", "prod"), (), hist, hpa=hpa)
    now = current_values(inp)
    assert now.hpa is not None and now.hpa.behavior == declared
    bound = Explained(20, 12, "test", "a lower maxReplicas")
    low = Explained(1, None, "test", "kept")
    rec = Recommendation(inp.ref, "changes", hpa=HpaRecommendation(low, bound))
    proposed = proposed_values(now, rec)
    assert proposed.hpa is not None and proposed.hpa.max_replicas == 12
    assert proposed.hpa.behavior == declared
