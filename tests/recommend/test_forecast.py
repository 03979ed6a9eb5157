"""The coming cycle (``bot.recommend.forecast``, rules ``forecast.cycle`` and ``forecast.trend``):
hand-made series with known answers."""

from __future__ import annotations

import math

import numpy as np
import pytest

from bot.config.recommend import RecommendSettings, resolve
from bot.model import MIB, Recommendation
from bot.recommend.engine import recommend
from bot.recommend.forecast import (
    Forecast,
    _mann_kendall_variances,
    forecast_of,
    histogram_age_days,
    theil_sen,
)
from tests.recommend.factories import (
    DAY_S,
    NOW_S,
    container,
    container_history,
    history,
    series,
    weekly_load,
    workload,
)

DEFAULT = RecommendSettings()
OFF = resolve(
    DEFAULT,
    {
        "forecast": {"seasonality": "off", "trend": "off"},
        # the budget and the backtest off too: the VPA target alone is what is compared
        "replay": {"max_over_request": 1.0, "backtest": "off"},
    },
)
MONDAY_S = NOW_S - 2 * DAY_S
"""2023-11-13T00:00:00Z, a Monday: the history ends after a weekend."""
THURSDAY_S = NOW_S + DAY_S
"""2023-11-16T00:00:00Z, a Thursday: the history ends after three weekdays."""
STEP_S = 300.0


def _engine(
    cpu: np.ndarray, *, days: float, now_s: float, settings: RecommendSettings = DEFAULT
) -> Recommendation:
    ch = container_history("app", cpu, 300 * MIB, days=days, step_s=STEP_S, now_s=now_s)
    inp = workload(container("app", 0.2, 512 * MIB), hist=history(ch, days=days, now_s=now_s))
    return recommend(inp, settings, now_s=now_s)


def _forecast(
    cpu: np.ndarray, *, days: float, now_s: float, settings: RecommendSettings = DEFAULT
) -> Forecast:
    t = series(days, STEP_S, now_s=now_s)
    found = forecast_of(
        t,
        np.zeros(t.size, dtype=np.int32),
        cpu,
        now_s=now_s,
        settings=settings,
        percentile=0.9,
        half_life_s=DAY_S,
    )
    assert found is not None
    return found


def test_a_weekly_service_after_its_weekend_is_sized_for_its_weekdays():
    cpu = weekly_load(14, now_s=MONDAY_S)
    t = series(14, STEP_S, now_s=MONDAY_S)
    last_week = cpu[t >= MONDAY_S - 7 * DAY_S]
    weekdays = cpu[(t >= MONDAY_S - 7 * DAY_S) & (cpu > 0.45)]  # the weekend ramps end at 0.45
    weekday_p90 = float(np.quantile(weekdays, 0.9))
    assert weekday_p90 == pytest.approx(1.4, rel=0.01)
    request = _engine(cpu, days=14, now_s=MONDAY_S).containers[0].cpu.request
    target = request.inputs["vpa_target"]
    assert isinstance(target, float) and target < weekday_p90  # the weekend-dominated VPA target
    assert request.rule == "forecast.cycle"
    cycle = float(np.quantile(last_week, 0.9, method="inverted_cdf")) * 1.15
    assert request.inputs["cycle_value"] == pytest.approx(cycle)
    assert request.proposed == math.ceil(cycle * 1000) / 1000
    assert request.proposed >= weekday_p90
    assert "max(VPA target" in request.reason and "weekly p90 × 1.15" in request.reason


def test_the_same_service_after_three_weekdays_is_about_its_vpa_target():
    cpu = weekly_load(14, now_s=THURSDAY_S)
    request = _engine(cpu, days=14, now_s=THURSDAY_S).containers[0].cpu.request
    target = request.inputs["vpa_target"]
    assert isinstance(target, float) and request.proposed is not None
    assert request.proposed == pytest.approx(target, rel=0.05)


def test_a_linear_trend_of_3_percent_a_day_is_projected_to_the_horizon():
    cpu = weekly_load(14, weekend=1.0, growth_per_day=0.03)
    forecast = _forecast(cpu, days=14, now_s=NOW_S)
    trend = forecast.trend
    assert trend is not None and trend.seasonal and trend.days == 14
    # Daily p90 = 1.4 × (1 + 0.03 d): 0.042 cores a day.
    assert trend.slope_per_day == pytest.approx(0.042, rel=0.03)
    assert trend.low_per_day > 0 and trend.low_per_day <= trend.slope_per_day
    assert trend.high_per_day >= trend.slope_per_day
    level = lambda days_ago: 1 + 0.03 * (14 - days_ago)  # noqa: E731 - the load's own line
    expected = level(-7) / level(3.5)
    assert forecast.growth(3.5) == pytest.approx(expected, rel=0.02)
    assert forecast.growth(3.5) == pytest.approx(1.24, abs=0.01)


def test_the_growth_is_capped():
    cpu = weekly_load(14, weekend=1.0, growth_per_day=0.5)
    capped = resolve(DEFAULT, {"forecast": {"max_growth_factor": 1.1}})
    assert _forecast(cpu, days=14, now_s=NOW_S, settings=capped).growth(3.5) == 1.1


def test_a_flat_noisy_series_has_no_trend():
    rng = np.random.default_rng(7)
    cpu = 0.5 + 0.1 * rng.standard_normal(series(14, STEP_S).size)
    forecast = _forecast(cpu, days=14, now_s=NOW_S)
    trend = forecast.trend
    assert trend is not None
    assert trend.low_per_day < 0 < trend.high_per_day
    assert forecast.growth(1.44) == 1.0


def test_a_weekly_pattern_without_growth_is_not_a_trend():
    cpu = weekly_load(14, now_s=MONDAY_S)
    trend = _forecast(cpu, days=14, now_s=MONDAY_S).trend
    assert trend is not None and trend.seasonal
    assert not trend.significant
    assert trend.slope_per_day == pytest.approx(0.0, abs=1e-3)


def test_a_growing_service_is_sized_for_the_end_of_the_horizon():
    cpu = weekly_load(14, weekend=1.0, growth_per_day=0.03)
    request = _engine(cpu, days=14, now_s=NOW_S).containers[0].cpu.request
    assert request.rule == "forecast.trend"
    growth, base = request.inputs["forecast_growth"], request.inputs["forecast_base"]
    assert isinstance(growth, float) and isinstance(base, float)
    assert growth > 1.1
    assert request.proposed == pytest.approx(base * growth, abs=0.001)
    assert "Theil–Sen" in request.reason and "7 days ahead" in request.reason


def test_a_leak_is_not_projected():
    t = series(8)
    age = (t - t[0]) % (2.5 * DAY_S)
    mem = 400 * MIB + 250 * MIB * age / DAY_S
    kills = [(float(k), 0, 768.0 * MIB) for k in t[1:][np.diff(age) < 0]]
    grow = 0.1 * (1 + 0.05 * (t - t[0]) / DAY_S)
    inp = workload(
        container("app", 0.1, 768 * MIB, mem_limit=1024 * MIB),
        hist=history(container_history("app", grow, mem, oom=kills)),
    )
    app = recommend(inp, DEFAULT, now_s=NOW_S).containers[0]
    assert app.memory.request.rule == "oom.leak_quantile"  # sized on the leak, not projected
    assert "forecast_growth" not in app.memory.request.inputs
    cpu = app.cpu.request  # the CPU's own growth is projected (and may be raised by the budget)
    assert "forecast.trend" in (cpu.rule, cpu.inputs.get("wanted_rule"))


@pytest.mark.parametrize(("now_s", "growth"), [(MONDAY_S, 0.0), (THURSDAY_S, 0.0), (NOW_S, 0.03)])
def test_both_rules_off_give_the_vpa_target(now_s, growth):
    cpu = weekly_load(14, now_s=now_s, growth_per_day=growth)
    off = _engine(cpu, days=14, now_s=now_s, settings=OFF).containers[0].cpu.request
    on = _engine(cpu, days=14, now_s=now_s).containers[0].cpu.request
    target = off.inputs["vpa_target"]
    assert isinstance(target, float)
    assert off.rule == "vertical.ideal"
    assert off.proposed == math.ceil(round(target * 1000, 6)) / 1000
    assert not any(key.startswith(("forecast", "cycle", "trend")) for key in off.inputs)
    assert on.inputs["vpa_target"] == target  # the VPA part is the same either way
    assert on.proposed is not None and on.proposed >= off.proposed


def test_theil_sen_ignores_an_outlier_and_bounds_the_slope():
    x = np.arange(10, dtype=np.float64)
    y = 2 * x + 1
    y[3] = 100.0
    trend = theil_sen(x, y, 0.9, seasonal=False)
    assert trend is not None
    assert trend.slope_per_day == 2.0 and trend.level == 1.0
    assert trend.low_per_day == 2.0 and trend.significant


@pytest.mark.parametrize(("days", "seasonal"), [(14, True), (13, True), (9, False), (10, False)])
def test_theil_sen_slope_and_level_are_the_medians_of_their_definition(
    days: int, seasonal: bool
) -> None:
    """The slope is the median of the pairs' slopes (the seasonal ones: a multiple of 7 days
    apart) and the level the median of ``y − slope·x``, computed the slow way, for an odd and
    an even number of pairs and of days; a NaN day gives NaN, as ``np.median`` does."""
    rng = np.random.default_rng(days)
    x = (-(np.arange(days)[::-1] + 0.5)).astype(np.float64)
    y = 1 + 0.02 * x + rng.normal(0, 0.05, days)
    pairs = [
        (y[j] - y[i]) / (x[j] - x[i])
        for i in range(days)
        for j in range(i + 1, days)
        if not seasonal or round(x[j] - x[i]) % 7 == 0
    ]
    trend = theil_sen(x, y, 0.9, seasonal=seasonal)
    assert trend is not None and trend.seasonal == seasonal
    assert trend.slope_per_day == float(np.median(pairs))
    assert trend.level == float(np.median(y - trend.slope_per_day * x))
    y[2] = math.nan
    broken = theil_sen(x, y, 0.9, seasonal=seasonal)
    assert broken is not None and math.isnan(broken.slope_per_day) and math.isnan(broken.level)


@pytest.mark.parametrize("seed", range(6))
def test_mann_kendall_variances_per_season_count_each_seasons_ties(seed: int) -> None:
    """Gilbert's ``Var S`` with the ties correction, computed the slow way season by season."""
    rng = np.random.default_rng(seed)
    seasons = rng.integers(0, 7, 30) if seed else np.zeros(30, dtype=np.int64)
    y = np.round(rng.random(30), 1)  # ties within and across seasons
    expected = []
    for season in sorted(set(seasons.tolist())):
        mine = y[seasons == season].tolist()
        n = len(mine)
        ties = [mine.count(v) for v in set(mine)]
        tied = sum(t * (t - 1) * (2 * t + 5) for t in ties)
        expected.append((n * (n - 1) * (2 * n + 5) - tied) / 18)
    assert _mann_kendall_variances(seasons, y) == expected


def test_three_days_cannot_be_significant():
    trend = theil_sen(np.arange(3.0), np.array([1.0, 2.0, 3.0]), 0.9, seasonal=False)
    assert trend is not None and trend.low_per_day == -math.inf and not trend.significant


def test_the_age_of_a_decaying_histogram():
    assert histogram_age_days(1.0, 14.0) == pytest.approx(1 / math.log(2), rel=1e-3)
    assert histogram_age_days(1e9, 4.0) == pytest.approx(2.0)


@pytest.mark.parametrize("stopped_days", [1.5, 7.5, 12.0])
def test_samples_that_stopped_early_give_a_forecast(stopped_days: float) -> None:
    end_s = NOW_S - stopped_days * DAY_S
    t = series(14, STEP_S, now_s=end_s)
    cpu = weekly_load(14, now_s=end_s)
    found = forecast_of(
        t,
        np.zeros(t.size, dtype=np.int32),
        cpu,
        now_s=NOW_S,
        settings=DEFAULT,
        percentile=0.9,
        half_life_s=DAY_S,
    )
    assert found is not None
    assert found.last_sample_days == pytest.approx(stopped_days + STEP_S / DAY_S)
    assert found.cycle_missing is (stopped_days >= 7)
    assert (found.cycle_value is None) is (stopped_days >= 7)


@pytest.mark.parametrize("stopped_days", [1.5, 7.5, 12.0])
def test_a_history_that_ends_early_is_planned_with_a_note(stopped_days: float) -> None:
    end_s = NOW_S - stopped_days * DAY_S
    ch = container_history(
        "app", weekly_load(14, now_s=end_s), 300 * MIB, days=14, step_s=STEP_S, now_s=end_s
    )
    inp = workload(container("app", 0.2, 512 * MIB), hist=history(ch, days=14, now_s=end_s))
    rec = recommend(inp, DEFAULT, now_s=NOW_S)
    assert rec.status in {"changes", "no-change"}
    notes = [n for n in rec.notes if n.code == "forecast-cycle"]
    if stopped_days >= 7:
        assert len(notes) == 1 and notes[0].container == "app"
        assert "no CPU sample in the last 7 days" in notes[0].message
        assert rec.containers[0].cpu.request.rule != "forecast.cycle"
    else:
        assert not notes
