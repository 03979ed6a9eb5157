"""A replica path's serving pods and shortfall steps (``figures._serving``, ``figures._shortfall``):
the rule of the module doc applied one step at a time."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.recommend.replay.controller import TOLERANCE, Metric
from bot.recommend.replay.figures import _serving, _shortfall


def _by_step(path: np.ndarray, metrics: list[Metric], max_replicas: int, lag: int) -> list[bool]:
    out = []
    for k, replicas in enumerate(path.tolist()):
        serving = min(path[max(0, k - lag) : k + 1].tolist())
        short = False
        for m in metrics:
            usage = float(m.usage[k])
            if replicas >= max_replicas and replicas * m.request > 0:
                util = math.floor(usage * 100.0 / (replicas * m.request)) if usage == usage else 0
                short |= util > m.target_percent * (1.0 + TOLERANCE)
            short |= serving < replicas and usage > serving * m.request
        out.append(short)
    return out


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(1, 8), st.floats(0.0, 10.0) | st.just(float("nan"))),
        min_size=1,
        max_size=80,
    ),
    st.integers(1, 8),
    st.integers(0, 4),
    st.booleans(),
)
def test_shortfall_steps_are_the_rule_step_by_step(rows, max_replicas, lag, two):
    """Paths that reach maxReplicas and start pods, gaps (NaN), one or two metrics, start-up
    times of 0 to 4 steps."""
    path = np.array([r for r, _ in rows], dtype=np.float64)
    usage = np.array([u for _, u in rows])
    metrics = [Metric(usage, 0.4, 60)]
    if two:
        metrics.append(Metric(usage * 0.2, 0.1, 80))
    want = _by_step(path, metrics, max_replicas, lag)
    serving = _serving(path, lag)
    assert serving.tolist() == [min(path[max(0, k - lag) : k + 1]) for k in range(path.size)]
    assert _shortfall(path, serving, metrics, max_replicas, TOLERANCE).tolist() == want
