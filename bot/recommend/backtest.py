"""The backtest: what this engine, with these settings, would have proposed one horizon ago,
scored on the days since (out-of-sample evidence beside the in-sample replay).

``run_backtest(inp, settings, now_s=..., decide=...)``: ``decide`` (the engine, without its own
backtest) runs at ``now − forecast.horizon_days``, so it sees only the samples up to then (the
engine drops later ones); its values (its current ones where it proposed nothing) and the
current values are replayed on the samples after that moment only (``figures.replay``). A
history no longer than the horizon, or one whose earlier part is still gathering data
(``min_history_s``), has no backtest, and says so.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from bot.config.recommend import RecommendSettings
from bot.model import SECONDS_PER_DAY, Backtest, Recommendation
from bot.recommend.inputs import WorkloadInput
from bot.recommend.replay.compare import current_values, proposed_values
from bot.recommend.replay.figures import replay
from bot.recommend.replay.series import ReplaySeries
from bot.recommend.replay.values import Options

Decide = Callable[[WorkloadInput, RecommendSettings, float], Recommendation]
"""The engine: ``(input, settings, now_s) -> Recommendation``."""


@dataclass(frozen=True, slots=True)
class BacktestRun:
    """A backtest and the scored days' series (for the budget's raise factor; None without)."""

    backtest: Backtest
    series: ReplaySeries | None = None


def _first_sample_s(inp: WorkloadInput) -> float | None:
    firsts = [float(ch.cpu_t.min()) for ch in inp.history.containers.values() if ch.cpu_t.size]
    return min(firsts) if firsts else None


def run_backtest(
    inp: WorkloadInput, settings: RecommendSettings, *, now_s: float, decide: Decide
) -> BacktestRun:
    """The backtest of ``inp`` at ``now_s`` (module doc)."""
    horizon_s = settings.forecast.horizon_days * SECONDS_PER_DAY
    cut_s = now_s - horizon_s
    first = _first_sample_s(inp)
    if first is None or first >= cut_s:
        have = 0.0 if first is None else max(now_s - first, 0.0) / SECONDS_PER_DAY
        return BacktestRun(
            Backtest(
                cut_s,
                unavailable=f"history of {have:.1f} days: a backtest needs more than the "
                f"horizon of {settings.forecast.horizon_days:g} days",
            )
        )
    inner = settings.model_copy(
        update={"replay": settings.replay.model_copy(update={"backtest": "off"})}
    )
    earlier = decide(inp, inner, cut_s)
    if earlier.status in ("error", "gathering-data"):
        why = "; ".join(earlier.reasons) or earlier.status
        return BacktestRun(
            Backtest(
                cut_s,
                status=earlier.status,
                unavailable=f"the history before the horizon of "
                f"{settings.forecast.horizon_days:g} days gives {earlier.status}: {why}",
            )
        )
    series = ReplaySeries.build(
        inp.history,
        tuple(c.name for c in inp.containers),
        now_s=now_s,
        excluded=(*inp.excluded_intervals_s, (float("-inf"), cut_s + 1e-6)),
    )
    if series is None:
        return BacktestRun(
            Backtest(cut_s, status=earlier.status, unavailable="no sample after the backtest's day")
        )
    options = Options(settings.replay.hpa_model, settings.replay.pod_startup_s)
    now = current_values(inp)
    then = proposed_values(now, earlier)
    return BacktestRun(
        Backtest(
            cut_s,
            proposed=replay(series, then, recorded=now, options=options),
            current=replay(series, now, options=options),
            status=earlier.status,
        ),
        series,
    )
