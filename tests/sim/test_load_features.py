"""Load shapes of ``ServiceSpec``: per-weekday factors, level changes, holidays, periodic jobs."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from bot.model import MIB, SECONDS_PER_DAY
from bot.sim import ClusterSpec, ContainerSpec, LevelChange, PeriodicBurst, ServiceSpec, SimError
from bot.sim.load import demand_cores, weekday
from bot.sim.spec import DEFAULT_START_S


def _quiet(**fields: object) -> ServiceSpec:
    """Peak 1 core, no noise, bursts or weekends, no daily cycle unless ``night_fraction`` is given."""
    app = ContainerSpec("app", 0.5, 256 * MIB, 1.0)
    base = ServiceSpec(
        "s",
        "ns",
        "Deployment",
        (app,),
        1,
        noise_fraction=0.0,
        burst_per_day=0.0,
        night_fraction=1.0,
        weekend_fraction=1.0,
    )
    return dataclasses.replace(base, **fields)  # type: ignore[arg-type]


def _demand(service: ServiceSpec, days: float = 14) -> tuple[np.ndarray, np.ndarray]:
    spec = ClusterSpec(seed=1, services=(service,), days=days)
    t = spec.times_s()
    return t, demand_cores(service, t, np.random.default_rng(0))


def test_weekday_factors_set_each_day_monday_first():
    factors = (1.5, 1.0, 1.0, 1.0, 1.0, 0.4, 0.4)
    t, demand = _demand(_quiet(weekday_factors=factors))
    for day in range(7):
        assert demand[weekday(t) == day] == pytest.approx(factors[day])
    assert weekday(np.array([DEFAULT_START_S]))[0] == 3  # the default start is a Thursday


def test_level_changes_compound_from_their_day():
    changes = (LevelChange(2.0, 1.5), LevelChange(5.0, 0.5))
    t, demand = _demand(_quiet(level_changes=changes), days=7)
    days = (t - t[0]) / SECONDS_PER_DAY
    assert demand[days < 2] == pytest.approx(1.0)
    assert demand[(days >= 2) & (days < 5)] == pytest.approx(1.5)
    assert demand[days >= 5] == pytest.approx(0.75)


def test_a_holiday_stays_at_the_night_level_all_day():
    t, demand = _demand(_quiet(night_fraction=0.2, holidays=(3.5,)), days=7)
    day = np.floor((t - t[0]) / SECONDS_PER_DAY)
    assert demand[day == 3] == pytest.approx(0.2)  # the UTC day that holds day 3.5
    assert demand[day == 2].max() == pytest.approx(1.0, abs=1e-3)  # a normal day peaks


def test_a_periodic_job_runs_every_period_for_its_minutes():
    burst = PeriodicBurst(period_hours=6, minutes=30, factor=4.0, phase_hours=1)
    t, demand = _demand(_quiet(periodic_burst=burst), days=2)
    minute_of_period = ((t - 3600) % (6 * 3600)) / 60
    assert demand[minute_of_period < 30] == pytest.approx(4.0)
    assert demand[minute_of_period >= 30] == pytest.approx(1.0)
    assert np.count_nonzero(demand > 2) == 8 * 30  # 4 jobs a day for 2 days


def test_malformed_shapes_are_refused():
    with pytest.raises(SimError, match="7 values"):
        ClusterSpec(seed=1, services=(_quiet(weekday_factors=(1.0,) * 5),))
    with pytest.raises(SimError, match="fit its period"):
        ClusterSpec(seed=1, services=(_quiet(periodic_burst=PeriodicBurst(1, 90, 2.0)),))
