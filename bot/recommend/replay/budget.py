"""The absolute budget: CPU minutes over request a vertical container may have, in the replay
and in the backtest (``replay.max_over_request``, default 1 % of its minutes).

The gate (``replay.gate``) compares a proposal with the current values; a current value that
was itself far over its request let a proposal pass that is still far over. ``apply_budget``
raises, per container whose CPU policy is ``vertical``, the proposed request (or the current
one where nothing was proposed) to the larger of:

* ``replay.budget``: the least request whose replayed minutes over request are within the
  budget on the last ``forecast.horizon_days`` of the window (the last cycle, the one most like
  the coming one): the weighted ``1 − budget`` quantile of one pod's usage on the replayed
  replicas (``recent_usage``);
* ``replay.backtest_raise``: that request × ``k``, ``k`` the least factor by which the
  backtest's request (decided one horizon ago by the same method, ``bot.recommend.backtest``)
  would have stayed within the budget on the days since: ``k = q_(1 − budget)(usage /
  backtest request)``, at most ``replay.max_backtest_raise``; applied when the backtest was
  over the budget: the method fell short by ``k`` a horizon ago, and is corrected by it now.

``expected`` then gives, per container, what the backtest predicts for the proposal: the share
of the days since with usage above the backtest's request × the same ``k`` (1 where it was not
raised), out of sample.

A raise is a risk fix: it passes minChange and may go above the current value (a raised value
still below the current one is a cut, and passes minChange as any cut), never above a
ceiling (the container's max allocated, the node's allocatable, Tortoise's maximum request).
HPA-scaled (``horizontal``) requests are reported, not raised: the HPA sizes their pods.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from bot.config.recommend import RecommendSettings
from bot.model import (
    Backtest,
    ContainerRecommendation,
    Explained,
    Recommendation,
    ReplayComparison,
)
from bot.recommend import noise, units
from bot.recommend.inputs import ContainerInput, WorkloadInput
from bot.recommend.quantiles import weighted_upper_quantile
from bot.recommend.replay.compare import proposed_values
from bot.recommend.replay.figures import (
    replay,
)
from bot.recommend.replay.gate import LimitOf, ReplayContext
from bot.recommend.replay.recent import recent_usage
from bot.recommend.replay.series import ReplaySeries
from bot.recommend.rules import Rule


def usage_factor(series: ReplaySeries, container: str, request: float, share: float) -> float:
    """The least factor ``k`` with one pod's recorded usage above ``k × request`` in at most
    ``share`` of ``container``'s samples of ``series`` (1.0 without samples)."""
    cs = series.containers.get(container)
    if cs is None or not cs.cpu_cores.size or request <= 0:
        return 1.0
    return weighted_upper_quantile(cs.cpu_cores / request, None, share)


def _ceiling(container: ContainerInput, settings: RecommendSettings) -> float:
    return min(
        float(container.max_allocated.get("cpu") or math.inf),
        float(container.max_allocatable.get("cpu") or math.inf),
        settings.admin.maximum_cpu_request_cores,
    )


def _pct(share: float) -> str:
    return f"{share * 100:.2f} %"


def apply_budget(
    inp: WorkloadInput,
    rec: Recommendation,
    settings: RecommendSettings,
    *,
    context: ReplayContext,
    backtest: Backtest | None,
    limit_of: LimitOf,
    backtest_series: ReplaySeries | None = None,
) -> Recommendation:
    """``rec`` with every vertical CPU request raised to the budget (module doc), its replay
    recomputed when one moved; ``rec`` itself when none did."""
    budget = settings.replay.max_over_request
    if budget >= 1.0:
        return rec
    series, options = context.series, replace(context.options, slots=None)
    by_name = {c.name: c for c in inp.containers}
    values = proposed_values(context.now, rec)
    raised: dict[str, Explained] = {}
    for cr in rec.containers:
        container = by_name.get(cr.name)
        request = cr.cpu.request
        start = request.proposed if request.proposed is not None else request.current
        if container is None or container.policy("cpu") != "vertical" or start is None:
            continue
        if request.rule in (Rule.POLICY_OFF, Rule.TORTOISE_EMERGENCY_FROZEN):
            continue
        wanted = float(start)
        value, rule, why, inputs = wanted, None, "", {}
        recent = recent_usage(series, values, cr.name, options, days=settings.forecast.horizon_days)
        least = recent.least_request(budget) if recent is not None else None
        if recent is not None and least is not None and least > value * (1 + 1e-9):
            over = recent.over_share(wanted)
            value, rule = least, Rule.REPLAY_BUDGET
            why = (
                f"raised to {units.amount(least, 'cpu')}: at {units.amount(wanted, 'cpu')} the "
                f"replay of the last {recent.days:.3g} days has CPU above the request in "
                f"{_pct(over)} of the container's minutes, over the budget of {_pct(budget)}; "
                f"{units.amount(least, 'cpu')} is the least request within it"
            )
            inputs = {"over_request_share": over, "budget_share": budget, "days": recent.days}
        past = backtest.proposed.container_cpu(cr.name) if backtest and backtest.proposed else None
        if past is not None and past.request_cores and backtest_series is not None:
            past_share = past.over_request_share
            if past_share > budget:
                k = min(
                    usage_factor(backtest_series, cr.name, past.request_cores, budget),
                    settings.replay.max_backtest_raise,
                )
                base = value
                if base * k > value * (1 + 1e-9):
                    value, rule = base * k, Rule.REPLAY_BACKTEST_RAISE
                    why = (
                        f"raised ×{k:.3f} from {units.amount(base, 'cpu')}: the backtest's "
                        f"request {units.amount(past.request_cores, 'cpu')} (decided on the "
                        f"history as it stood {settings.forecast.horizon_days:g} days ago) was "
                        f"exceeded in {_pct(past_share)} of the minutes since, over the budget "
                        f"of {_pct(budget)}; ×{k:.3f} would have kept it within"
                    )
                    inputs = {
                        **inputs,
                        "raised_from": base,
                        "backtest_request": past.request_cores,
                        "backtest_over_request_share": past_share,
                        "raise_factor": k,
                        "budget_share": budget,
                    }
        if rule is None:
            continue
        value = min(
            noise.round_up_to_step(value, "cpu", settings.noise), _ceiling(container, settings)
        )
        if value <= wanted:
            continue
        current = request.current
        if current is not None and noise.same_on_grid(float(current), value, "cpu", settings.noise):
            value = float(current)
        elif current is not None and value < float(current):
            # still a cut of the current request: as any cut, it must pass minChange
            allowed, threshold = noise.passes_min_change(
                float(current), value, "cpu", settings.noise
            )
            if not allowed:
                why = (
                    f"{why}; the current request is kept: the cut left, to "
                    f"{units.amount(value, 'cpu')}, is below minChange "
                    f"{units.amount(threshold, 'cpu')}"
                )
                value = float(current)
        raised[cr.name] = Explained(
            current,
            round(value, 6),
            rule,
            why,
            {**request.inputs, **inputs, "wanted": wanted, "wanted_rule": request.rule},
        )
    if not raised:
        return rec
    containers = []
    for cr in rec.containers:
        new = raised.get(cr.name)
        if new is None:
            containers.append(cr)
            continue
        cpu = replace(cr.cpu, request=new, limit=limit_of(cr.name, "cpu", new))
        containers.append(ContainerRecommendation(cr.name, cpu, cr.memory))
    out = replace(rec, containers=tuple(containers))
    after = replay(
        series, proposed_values(context.now, out), recorded=context.now, options=context.options
    )
    comparison = (
        replace(rec.replay, proposed=after)
        if rec.replay is not None
        else ReplayComparison(context.before, after, settings.replay.gate)
    )
    return replace(out, replay=comparison)


def expected(
    backtest: Backtest, backtest_series: ReplaySeries | None, rec: Recommendation
) -> Backtest:
    """``backtest`` with ``expected``: per container of its figures, the share of the scored
    samples with one pod's CPU above its request × the factor ``rec`` raised that container by
    (``replay.backtest_raise``'s ``raise_factor``, else 1)."""
    if backtest.proposed is None or backtest_series is None:
        return backtest
    factors = {
        cr.name: float(cr.cpu.request.inputs.get("raise_factor") or 1.0)
        if cr.cpu.request.rule == Rule.REPLAY_BACKTEST_RAISE
        else 1.0
        for cr in rec.containers
    }
    shares = []
    for cpu in backtest.proposed.cpu:
        cs = backtest_series.containers.get(cpu.container)
        if cs is None or not cs.cpu_cores.size or not cpu.request_cores:
            continue
        threshold = cpu.request_cores * factors.get(cpu.container, 1.0)
        shares.append(
            (cpu.container, float(np.count_nonzero(cs.cpu_cores > threshold) / cs.cpu_cores.size))
        )
    return replace(backtest, expected=tuple(shares))
