"""The coming cycle: a vertical CPU request sized for the days it will live in Git.

A merged value lives until the next merge, ``forecast.horizon_days`` (7) days. The VPA target
(percentile of a histogram decaying with a 24 h half-life) describes the last day or two: a
weekly service whose history ends after a quiet weekend is sized for the weekend, a growing one
for the past. Two bot rules lift the value the vertical branch starts from (``base``: the VPA
target, or Tortoise's ``rec``), never lower it (``docs/recommendations.md`` §2a):

* **cycle** (``forecast.cycle``, ``forecast.seasonality: weekly``): ``cycle = q × (1 + m)``,
  ``q`` the ``vpa.cpu_target_percentile`` of the per-pod CPU samples of the last whole cycle
  of 7 days before ``now`` (the whole window when shorter), each day of it weighing the same
  (weight ``1 / samples of its day``, no decay), ``m`` = ``vpa.margin_fraction``; the value is
  ``max(base, cycle)``. A daily service's ``cycle`` is about its VPA target (an exact
  percentile, at or below the VPA's bucket upper edge); a weekly one's covers its weekdays
  whatever weekday the history ends on. A history without a sample in the last cycle (samples
  that stopped more than 7 days before ``now``) has no cycle value: the rule lifts nothing and
  the workload gets a ``forecast-cycle`` note saying how old the last sample is.
* **trend** (``forecast.trend``, ``forecast.trend: theil_sen``): ``y_d`` = the same percentile
  of each whole day ``d`` (days counted back from ``now``; a day with fewer than half the
  median day's samples is left out) at ``x_d`` = its centre in days from ``now`` (< 0). The
  Theil–Sen slope ``s`` is the median of ``(y_j − y_i)/(x_j − x_i)`` over the pairs ``i < j``;
  with at least ``SEASONAL_DAYS`` days only over pairs a multiple of 7 days apart (the seasonal
  Kendall slope, Hirsch, Slack & Smith 1982), so a weekly pattern is not read as a trend. The
  line is ``y(x) = b + s·x``, ``b = median(y_d − s·x_d)``. Sen's confidence interval (Gilbert
  1987, §16.5): ``C = z × sqrt(Var S)``, ``z`` the normal quantile of ``(1 + c)/2`` for
  ``forecast.trend_confidence`` ``c``, ``Var S`` the Mann–Kendall variance (summed over the
  weekdays when paired by weekday, with the ties correction); the bounds are the sorted slopes
  at ranks ``(N − C)/2`` and ``(N + C)/2 + 1`` (1-based, interpolated), ``N`` the number of
  slopes. Growth is projected only when the lower bound is above 0 (a decline is followed by
  the decaying histogram): ``growth = min(y(H) / y(−a), forecast.max_growth_factor)``, ``H`` =
  ``forecast.horizon_days``, ``a`` the age of the value being projected: half the cycle's days
  when the cycle value is the larger, else the mean age of the decaying histogram's weight,
  ``h/ln 2 − T·2^(−T/h)/(1 − 2^(−T/h))`` days for half-life ``h`` and window ``T`` (1.44 days
  for 24 h). Equivalently ``growth = 1 + r·(H + a)`` with ``r = s / y(−a)`` per day.

The value is ``max(base, cycle) × growth``. Pure: numpy and the standard library's normal
quantile, nothing else.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from bot.config.recommend import RecommendSettings
from bot.model import SECONDS_PER_DAY, FloatArray, IntArray, Note, Number, Resource
from bot.recommend.quantiles import group_quantiles, weighted_upper_quantile
from bot.recommend.units import amount

CYCLE_DAYS = 7
"""The cycle of human demand: a week."""

SEASONAL_DAYS = 2 * CYCLE_DAYS
"""Days of history from which the trend pairs only days of the same weekday."""

MIN_TREND_DAYS = 4
"""Daily values a trend needs (fewer cannot give a confidence interval above zero at 0.9)."""


@dataclass(frozen=True, slots=True)
class Trend:
    """A Theil–Sen line through daily values, ``y(x) = level + slope_per_day × x``, ``x`` in
    days from ``now`` (module doc)."""

    slope_per_day: float
    """Units (cores) per day."""
    low_per_day: float
    """Lower bound of Sen's confidence interval (-inf when too few slopes for one)."""
    high_per_day: float
    """Upper bound of Sen's confidence interval (+inf when too few slopes for one)."""
    level: float
    """The line at ``now`` (x = 0)."""
    days: int
    """Daily values used."""
    seasonal: bool
    """Only pairs of days a multiple of 7 days apart."""
    confidence: float
    """Two-sided confidence of the interval."""

    @property
    def significant(self) -> bool:
        """Growth the interval says is real: its lower bound above 0."""
        return self.low_per_day > 0

    def at(self, days: float) -> float:
        """The line ``days`` from now (negative: in the past)."""
        return self.level + self.slope_per_day * days


@dataclass(frozen=True, slots=True)
class Forecast:
    """What the coming cycle asks of one container resource (module doc)."""

    cycle_value: float | None
    """``q × (1 + margin)`` over the last cycle (None: ``forecast.seasonality: off``, or no
    sample in the last cycle)."""
    cycle_days: float
    """Days the cycle value was measured on (7, or the whole window when shorter)."""
    percentile: float
    margin: float
    trend: Trend | None
    """The fitted line (None: ``forecast.trend: off`` or too few days)."""
    horizon_days: float
    histogram_age_days: float
    """Mean age of the decaying histogram's weight: the age of the VPA target (days)."""
    max_growth: float
    last_sample_days: float = 0.0
    """Age of the latest sample (days before ``now``)."""

    @property
    def cycle_missing(self) -> bool:
        """The cycle rule is on but has no sample in the last cycle to measure."""
        return self.cycle_value is None and self.last_sample_days >= CYCLE_DAYS

    def lift(self, base: float) -> Lift | None:
        """``max(base, cycle) × growth``, or None when it is not above ``base``."""
        cyclic = self.cycle_value is not None and self.cycle_value > base
        start = self.cycle_value if cyclic and self.cycle_value is not None else base
        age = self.cycle_days / 2 if cyclic else min(self.histogram_age_days, self.cycle_days / 2)
        growth = self.growth(age)
        value = start * growth
        if value <= base * (1 + 1e-9):
            return None
        return Lift(base, start, cyclic, growth, age, value)

    def growth(self, age_days: float) -> float:
        """``min(y(H) / y(−age), max_growth)`` for significant growth, else 1."""
        trend = self.trend
        if trend is None or not trend.significant:
            return 1.0
        then = trend.at(-age_days)
        if then <= 0:
            return 1.0
        return min(trend.at(self.horizon_days) / then, self.max_growth)


@dataclass(frozen=True, slots=True)
class Lift:
    """``Forecast.lift`` of one base value: ``value = start × growth``."""

    base: float
    start: float
    """``max(base, cycle)``."""
    cyclic: bool
    """The cycle value is the larger."""
    growth: float
    age_days: float
    """Age of ``start`` the growth is projected from (days)."""
    value: float


def forecast_of(
    times_s: FloatArray,
    pods: IntArray,
    values: FloatArray,
    *,
    now_s: float,
    settings: RecommendSettings,
    percentile: float,
    half_life_s: float,
) -> Forecast | None:
    """The ``Forecast`` of one container resource from its window's per-pod samples (module
    doc), or None when both rules are off or there are no samples."""
    fs = settings.forecast
    if (fs.seasonality == "off" and fs.trend == "off") or values.size == 0:
        return None
    age_s = now_s - times_s
    span_days = float(age_s.max()) / SECONDS_PER_DAY
    last_days = max(float(age_s.min()) / SECONDS_PER_DAY, 0.0)
    cycle_days = min(float(CYCLE_DAYS), span_days)
    day = np.floor(age_s / SECONDS_PER_DAY).astype(np.int64)
    cycle_value = None
    if fs.seasonality == "weekly":
        recent = day < CYCLE_DAYS
        if recent.any():  # none: samples that stopped a cycle ago say nothing of the next one
            q = _weighted_quantile(values[recent], day[recent], percentile)
            cycle_value = q * (1 + settings.vpa.margin_fraction)
    trend = None
    if fs.trend == "theil_sen":
        trend = _trend(day, values, percentile, fs.trend_confidence)
    return Forecast(
        cycle_value,
        cycle_days,
        percentile,
        settings.vpa.margin_fraction,
        trend,
        fs.horizon_days,
        histogram_age_days(half_life_s / SECONDS_PER_DAY, span_days),
        fs.max_growth_factor,
        last_days,
    )


def cycle_note(forecast: Forecast | None, container: str) -> Note | None:
    """The ``forecast-cycle`` note of a container whose cycle rule found no sample in the last
    cycle (module doc), or None."""
    if forecast is None or not forecast.cycle_missing:
        return None
    return Note(
        "forecast-cycle",
        f"no CPU sample in the last {CYCLE_DAYS} days (the latest is "
        f"{forecast.last_sample_days:.3g} days old): the weekly cycle lifts nothing",
        container,
    )


def histogram_age_days(half_life_days: float, window_days: float) -> float:
    """Mean age of weight ``2^(−age/h)`` over ``[0, T]`` (days): ``h/ln 2 − T·2^(−T/h)/(1 −
    2^(−T/h))``; ``T/2`` for a window too short to decay."""
    k = math.log(2) / half_life_days
    if window_days * k < 1e-6:
        return window_days / 2
    tail = math.exp(-k * window_days)
    return 1 / k - window_days * tail / (1 - tail)


def _weighted_quantile(values: FloatArray, groups: np.ndarray, p: float) -> float:
    """The ``p`` quantile of ``values`` with every group (day) weighing the same: the smallest
    value whose cumulative weight reaches ``p ×`` the total, each sample weighing ``1 / size of
    its group`` (groups: small integers, counted by one ``bincount``)."""
    offsets = groups - groups.min()
    return weighted_upper_quantile(values, 1.0 / np.bincount(offsets)[offsets], 1.0 - p)


def daily_values(day: np.ndarray, values: FloatArray, p: float) -> tuple[FloatArray, FloatArray]:
    """Per whole day (``day`` = days back from now), its centre ``x = −(day + 0.5)`` and the
    ``p`` quantile of its samples (``inverted_cdf``: an observed sample); days with fewer than
    half the median day's samples are left out."""
    days, counts, quantiles = group_quantiles(day, values, p)
    full = counts >= 0.5 * float(np.median(counts)) if counts.size else counts.astype(bool)
    return -(days[full].astype(np.float64) + 0.5), quantiles[full].astype(np.float64)


def _trend(day: np.ndarray, values: FloatArray, p: float, confidence: float) -> Trend | None:
    """The Theil–Sen line of the daily values with Sen's interval (module doc), or None with
    fewer than ``MIN_TREND_DAYS`` daily values."""
    x, y = daily_values(day, values, p)
    if x.size < MIN_TREND_DAYS:
        return None
    return theil_sen(x, y, confidence, seasonal=float(x.max() - x.min()) + 1 >= SEASONAL_DAYS)


def theil_sen(x: FloatArray, y: FloatArray, confidence: float, *, seasonal: bool) -> Trend | None:
    """Theil–Sen slope, intercept and Sen's interval of ``y`` over ``x`` (days; module doc);
    ``seasonal``: only pairs a multiple of ``CYCLE_DAYS`` apart, the variance summed over the
    weekdays. None without a pair."""
    order = np.argsort(x, kind="stable")
    x, y = x[order], y[order]
    position = np.arange(x.size)
    i, j = np.nonzero(position[:, None] < position)  # the pairs i < j, as np.triu_indices
    lag = x[j] - x[i]
    keep = lag != 0
    if seasonal:
        keep &= (np.remainder(np.round(lag), CYCLE_DAYS) == 0) & (lag > 0.5)
    i, j, lag = i[keep], j[keep], lag[keep]
    if i.size == 0:
        return None
    slopes = np.sort((y[j] - y[i]) / lag)
    slope = _median_of_sorted(slopes)
    level = _median_of_sorted(np.sort(y - slope * x))
    seasons = (
        np.remainder(np.round(x - x.min()), CYCLE_DAYS).astype(np.int64)
        if seasonal
        else np.zeros(x.size, dtype=np.int64)
    )
    variance = sum(_mann_kendall_variances(seasons, y))
    z = NormalDist().inv_cdf((1 + confidence) / 2)
    c = z * math.sqrt(variance)
    n = slopes.size
    low_rank, high_rank = (n - c) / 2, (n + c) / 2 + 1
    low = _at_rank(slopes, low_rank) if low_rank >= 1 else -math.inf
    high = _at_rank(slopes, high_rank) if high_rank <= n else math.inf
    return Trend(slope, low, high, level, int(x.size), seasonal, confidence)


def _median_of_sorted(ordered: FloatArray) -> float:
    """The median of ascending ``ordered`` (not empty): its middle value, or the mean of its
    two middle values; NaN when it holds a NaN (sorted last), as ``np.median`` gives."""
    n = ordered.size
    if math.isnan(ordered[-1]):
        return math.nan
    middle = n // 2
    return float(ordered[middle]) if n % 2 else float((ordered[middle - 1] + ordered[middle]) / 2)


def _mann_kendall_variances(seasons: np.ndarray, y: FloatArray) -> list[float]:
    """Per season present (ascending), ``Var S = (n(n−1)(2n+5) − Σ t(t−1)(2t+5)) / 18`` of its
    ``y``, ``n`` its values, ``t`` the sizes of its groups of equal values: the ties of every
    season found at once, by one sort on (season, value)."""
    order = np.lexsort((y, seasons))
    s, v = seasons[order], y[order]
    starts = np.flatnonzero(np.concatenate(([True], (s[1:] != s[:-1]) | (v[1:] != v[:-1]))))
    ties = np.diff(starts, append=s.size)
    tied = np.bincount(s[starts], weights=ties * (ties - 1) * (2 * ties + 5))
    n = np.bincount(s)
    return [
        (count * (count - 1) * (2 * count + 5) - float(tied[season])) / 18
        for season, count in enumerate(n.tolist())
        if count
    ]


def _at_rank(sorted_values: FloatArray, rank: float) -> float:
    """The value at 1-based ``rank`` of ``sorted_values``, linearly interpolated."""
    position = min(max(rank - 1, 0.0), sorted_values.size - 1)
    below = math.floor(position)
    above = min(below + 1, sorted_values.size - 1)
    frac = position - below
    return float(sorted_values[below] * (1 - frac) + sorted_values[above] * frac)


def explain(
    forecast: Forecast, lift: Lift, *, base_label: str, resource: Resource
) -> tuple[str, dict[str, Number | str | None]]:
    """The reason for ``lift`` and its inputs: every number of the formula beside it, e.g.
    ``max(VPA target 511m, weekly p90 × 1.15 = 590m) × growth 1.21 (Theil–Sen +2.9 %/day over
    14 days, …) = 714m``."""
    base = f"{base_label} {amount(lift.base, resource)}"
    inputs: dict[str, Number | str | None] = {
        "forecast_base": lift.base,
        "forecast_growth": lift.growth,
        "forecast_value": lift.value,
    }
    text = base
    if forecast.cycle_value is not None:
        p = f"p{forecast.percentile * 100:g}"
        text = (
            f"max({base}, {_days(forecast.cycle_days)} {p} × {1 + forecast.margin:g} = "
            f"{amount(forecast.cycle_value, resource)})"
        )
        inputs |= {"cycle_value": forecast.cycle_value, "cycle_days": forecast.cycle_days}
    trend = forecast.trend
    if lift.growth > 1 and trend is not None:
        then = trend.at(-lift.age_days)
        capped = " capped" if lift.growth >= forecast.max_growth else ""
        text += (
            f" × growth {lift.growth:.3g}{capped} (Theil–Sen {_pct(trend.slope_per_day, then)} "
            f"over {trend.days} days, {interval(trend, then)}; from {lift.age_days:.3g} days "
            f"ago, {'the cycle' if lift.cyclic else 'the VPA histogram'}'s mean age, to "
            f"{forecast.horizon_days:g} days ahead)"
        )
        inputs |= {
            "trend_slope_per_day": trend.slope_per_day,
            "trend_low_per_day": trend.low_per_day,
            "trend_high_per_day": trend.high_per_day,
            "trend_days": trend.days,
            "trend_from_days_ago": lift.age_days,
            "horizon_days": forecast.horizon_days,
        }
    return f"{text} = {amount(lift.value, resource)}", inputs


def interval(trend: Trend, level: float) -> str:
    """Sen's interval as slopes relative to ``level``, e.g. ``90 % CI +2.1…+3.6 %/day``."""
    low = _pct(trend.low_per_day, level) if math.isfinite(trend.low_per_day) else "−∞"
    high = _pct(trend.high_per_day, level) if math.isfinite(trend.high_per_day) else "+∞"
    return f"{trend.confidence * 100:g} % CI {low}…{high}"


def _pct(slope: float, level: float) -> str:
    """``slope`` as a signed percentage of ``level`` per day."""
    return f"{slope / level * 100:+.2g} %/day" if level > 0 else f"{slope:+.3g}/day"


def _days(days: float) -> str:
    """``weekly`` for a whole cycle, else ``{days}-day``."""
    return "weekly" if days >= CYCLE_DAYS else f"{days:.3g}-day"
