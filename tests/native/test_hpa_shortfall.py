"""The compiled shortfall steps of a replica path and their numpy twin: the same steps."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot import native
from bot.model import MIB, HpaTarget, ResourceValues
from bot.native import hpa
from bot.recommend.replay.figures import ContainerValues, HpaValues, Options, Values, replica_path
from bot.recommend.replay.series import ReplaySeries
from tests.recommend.factories import NOW_S, container_history, history, series


def _short(cpu: np.ndarray, values: Values, options: Options, *, off: bool) -> np.ndarray:
    hist = history(
        container_history("app", cpu, 300 * MIB, days=1, pods=2),
        container_history("side", cpu * 0.2, 100 * MIB, days=1, pods=2),
        replicas=2.0,
        days=1,
    )
    built = ReplaySeries.build(hist, ("app", "side"), now_s=NOW_S)
    assert built is not None
    with pytest.MonkeyPatch.context() as m:
        if off:
            m.setenv(native.SWITCH, "off")
        walk = replica_path(built, values, options)
    assert walk.replayed
    return walk.short


@settings(max_examples=40, deadline=None)
@given(
    st.integers(0, 2**32 - 1),
    st.integers(1, 12),
    st.sampled_from([0.0, 30.0, 60.0, 240.0]),
    st.booleans(),
    st.sampled_from([None, "app"]),
)
def test_shortfall_steps_alike(seed, max_replicas, startup_s, two_targets, container):
    """Bursts that hit maxReplicas and start pods, gaps (NaN), pod-level and container
    targets, start-up times of 0 to 4 steps."""
    rng = np.random.default_rng(seed)
    n = 2 * series(1).size  # two pods
    cpu = rng.lognormal(-1.0, 0.6, n)
    cpu[rng.integers(0, n, 40)] *= 6.0
    cpu[rng.integers(0, n, 20)] = np.nan
    targets: tuple[HpaTarget, ...] = (HpaTarget("cpu", 60, container),)
    if two_targets:
        targets += (HpaTarget("cpu", 80, "side"),)
    values = Values(
        (
            ContainerValues("app", ResourceValues(0.4, 400 * MIB)),
            ContainerValues("side", ResourceValues(0.1, 128 * MIB)),
        ),
        HpaValues(1, max_replicas, targets),
    )
    options = Options(pod_startup_s=startup_s)
    got = _short(cpu, values, options, off=False)
    want = _short(cpu, values, options, off=True)
    assert np.array_equal(got, want)


def test_the_shortfall_kernel_takes_only_what_it_reads_whole():
    path = np.ones(10, dtype=np.int64)
    with pytest.raises(ValueError, match="path's length"):
        hpa.shortfall(path, [np.ones(9)], [0.5], [66.0], max_replicas=4, lag=1)
    assert hpa.shortfall(path, [np.ones(10)], [0.5], [66.0], max_replicas=4, lag=-1) is None
    assert (
        hpa.shortfall(path.astype(np.int32), [np.ones(10)], [0.5], [66.0], max_replicas=4, lag=1)
        is None
    )


@pytest.mark.parametrize("startup_s", [0.0, 120.0])
def test_a_path_short_at_its_ceiling_and_while_pods_start_alike(startup_s):
    rng = np.random.default_rng(3)
    cpu = rng.lognormal(-1.0, 0.6, 2 * series(1).size)
    cpu[1000:1100] *= 8.0
    values = Values(
        (
            ContainerValues("app", ResourceValues(0.4, 400 * MIB)),
            ContainerValues("side", ResourceValues(0.1, 128 * MIB)),
        ),
        HpaValues(1, 3, (HpaTarget("cpu", 60, "app"),)),
    )
    options = Options(pod_startup_s=startup_s)
    got = _short(cpu, values, options, off=False)
    assert 0 < np.count_nonzero(got) < got.size
    assert np.array_equal(got, _short(cpu, values, options, off=True))
