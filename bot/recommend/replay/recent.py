"""One pod's CPU over the last days of the replayed window: what the budget and the gate's CPU
finding are judged on (``docs/recommendations.md`` §9).

A value in Git lives through the coming ``forecast.horizon_days``; the last cycle of that length
is the one most like it. A regime that ended earlier (a load halved a week ago) neither holds a
cut back nor raises a request; the backtest checks what the last cycle misses.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bot.model import SECONDS_PER_DAY, FloatArray
from bot.recommend.quantiles import weighted_upper_quantile
from bot.recommend.replay.figures import per_pod_load, replica_path
from bot.recommend.replay.series import ReplaySeries
from bot.recommend.replay.values import Options, Values


@dataclass(frozen=True, slots=True)
class RecentUsage:
    """One pod's CPU of a container on the replayed replicas over the last ``days`` of the
    window: per sample the usage (cores) and how many pods it stands for (None: one)."""

    usage: FloatArray
    weight: FloatArray | None
    days: float

    def least_request(self, share: float) -> float:
        """The least request with the weight of samples above it at most ``share``."""
        return weighted_upper_quantile(self.usage, self.weight, share)

    def over_share(self, request: float) -> float:
        """The weighted share of samples above ``request``."""
        above = self.usage > request
        if self.weight is None:
            return float(np.count_nonzero(above)) / max(self.usage.size, 1)
        return float(self.weight[above].sum() / max(float(self.weight.sum()), 1e-12))


def recent_usage(
    series: ReplaySeries, values: Values, container: str, options: Options, *, days: float
) -> RecentUsage | None:
    """``container``'s ``RecentUsage`` under ``values`` over the last ``days`` of the window
    (the whole window when shorter); None without samples there. The budget is judged on the
    last cycle, the one most like the coming one: a regime that ended earlier (a load halved
    mid-history) does not size the request, the backtest checks what the last cycle misses."""
    cs = series.containers.get(container)
    if cs is None or not cs.cpu_cores.size:
        return None
    first = max(series.steps - round(days * SECONDS_PER_DAY / series.step_s), 0)
    keep = cs.cpu_step >= first
    if not keep.any():
        return None
    steps = cs.cpu_step[keep]
    scale, pods = per_pod_load(series, replica_path(series, values, options))
    usage = cs.cpu_cores[keep] if scale is None else cs.cpu_cores[keep] * scale[steps]
    weight = None if pods is None else pods[steps]
    return RecentUsage(usage, weight, (series.steps - first) * series.step_s / SECONDS_PER_DAY)
