"""The budget pooled over a workload's containers (``replay.budget_scope: workload``): the
share of the workload's container-minutes with CPU above the request stays within
``replay.max_over_request``, spread where it costs least.

Per container ``i`` with samples of one pod's usage ``u`` weighing ``w`` (pods; ``W_i`` their
total) and a wanted request ``a_i``: the requests ``r_i ≥ a_i`` minimising ``Σ r_i`` subject to
``Σ_i over_i(r_i) ≤ budget × Σ_i W_i``, ``over_i(r)`` the weight of ``u > r``. Solved by the
Lagrangian: for a price ``λ`` (cores per unit of weight over), each container takes the ``r``
among ``a_i`` and its samples above ``a_i`` that minimises ``r + λ × over_i(r)``; ``λ`` is the
least price (bisected) whose choices fit the budget. With one container it is the
per-container budget's least request.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from bot.model import FloatArray
from bot.recommend.quantiles import weighted_upper_quantile
from bot.recommend.replay.recent import RecentUsage
from bot.recommend.replay.series import ReplaySeries

BISECTIONS = 60
"""Halvings of the price interval (far below any request's rounding)."""


@dataclass(frozen=True, slots=True)
class _Candidates:
    """One container's requests to choose from, descending, and the weight above each."""

    requests: FloatArray
    over: FloatArray

    def choose(self, price: float) -> int:
        return int(np.argmin(self.requests + price * self.over))


def _candidates(recent: RecentUsage, wanted: float) -> _Candidates:
    weight = np.ones(recent.usage.size) if recent.weight is None else recent.weight
    above = recent.usage > wanted
    values, weights = recent.usage[above], weight[above]
    order = np.argsort(-values, kind="stable")
    values, weights = values[order], weights[order]
    before = np.concatenate(([0.0], np.cumsum(weights)))
    return _Candidates(np.append(values, wanted), before)


def _weight(recent: RecentUsage) -> float:
    return float(recent.usage.size if recent.weight is None else recent.weight.sum())


def pooled_share(recents: Mapping[str, RecentUsage], requests: Mapping[str, float]) -> float:
    """The weighted share of the containers' samples above their ``requests``, pooled."""
    total = sum(_weight(recents[name]) for name in requests)
    over = sum(recents[name].over_share(r) * _weight(recents[name]) for name, r in requests.items())
    return over / max(total, 1e-12)


def pooled_requests(
    recents: Mapping[str, RecentUsage], wanted: Mapping[str, float], budget: float
) -> dict[str, float]:
    """The requests ``r_i ≥ wanted_i`` of the module doc; ``wanted`` itself when it already
    fits the pooled budget."""
    if pooled_share(recents, wanted) <= budget:
        return dict(wanted)
    allowed = budget * sum(_weight(recents[name]) for name in wanted)
    options = {name: _candidates(recents[name], a) for name, a in wanted.items()}

    def over_at(price: float) -> tuple[float, dict[str, float]]:
        chosen = {name: c.choose(price) for name, c in options.items()}
        over = sum(float(options[n].over[i]) for n, i in chosen.items())
        return over, {n: float(options[n].requests[i]) for n, i in chosen.items()}

    low, high = 0.0, 1.0
    while over_at(high)[0] > allowed and high < 1e12:
        low, high = high, high * 2
    for _ in range(BISECTIONS):
        middle = (low + high) / 2
        if over_at(middle)[0] > allowed:
            low = middle
        else:
            high = middle
    return over_at(high)[1]


def pooled_factor(series: ReplaySeries, requests: Mapping[str, float], share: float) -> float:
    """The least common factor ``k`` with one pod's recorded usage above ``k × request`` in at
    most ``share`` of the containers' samples of ``series``, pooled (1.0 without samples): the
    workload-scope form of ``budget.usage_factor``."""
    ratios = [
        series.containers[name].cpu_cores / request
        for name, request in requests.items()
        if name in series.containers and series.containers[name].cpu_cores.size and request > 0
    ]
    if not ratios:
        return 1.0
    return weighted_upper_quantile(np.concatenate(ratios), None, share)
