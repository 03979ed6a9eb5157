"""One workload's history on the replay grid with the current values and their replayed
figures (``ReplayContext``): built once per workload, read by the replica rules, noise control,
the budget and the gate."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from bot.config.recommend import RecommendSettings
from bot.model import ReplayFigures
from bot.recommend.inputs import WorkloadInput
from bot.recommend.replay.compare import current_values
from bot.recommend.replay.figures import replay
from bot.recommend.replay.series import ReplaySeries
from bot.recommend.replay.values import Options, Values


@dataclass(frozen=True, slots=True)
class ReplayContext:
    """One workload's history on the replay grid, with the current values and their figures:
    built once per workload, shared by the replica rules, noise control and the gate."""

    series: ReplaySeries
    options: Options
    now: Values
    before: ReplayFigures
    report: bool = True
    """Whether the result's replay figures are read (its ``replay`` comparison, the per-hour
    profile, the 95th percentiles): False for the backtest's run one horizon ago, whose
    values alone are read, so the replays only its figures need are left out."""

    @classmethod
    def build(
        cls,
        inp: WorkloadInput,
        settings: RecommendSettings,
        *,
        now_s: float,
        hours: Callable[[np.ndarray], np.ndarray] | None = None,
        time_zone: str = "UTC",
        report: bool = True,
    ) -> ReplayContext | None:
        """None when the history has no CPU sample to replay. ``hours``: the hour of the week
        of unix times (for the per-hour profile and the hours named in reasons; left out
        without ``report``)."""
        series = ReplaySeries.build(
            inp.history,
            tuple(c.name for c in inp.containers),
            now_s=now_s,
            excluded=inp.excluded_intervals_s,
        )
        if series is None:
            return None
        options = Options(
            settings.replay.hpa_model,
            settings.replay.pod_startup_s,
            hours(series.times_s) if hours is not None and report else None,
            time_zone,
        )
        now = current_values(inp)
        return cls(series, options, now, replay(series, now, options=options), report)
