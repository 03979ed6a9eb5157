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

``expected`` then gives, per container, what the backtest predicts for the proposal: its share
of minutes over request when the proposal's own values (its current ones where nothing is
proposed, raise included; with an HPA, its targets and replica bounds too) are replayed on the
days the backtest scored (the last horizon). The backtest's request
× ``k`` is within the budget there by construction (``k`` is fitted on those days), while the
proposal applies ``k`` to a base already sized on them (``replay.budget`` judges the same
days), so the proposal itself, not the backtest's value × ``k``, is what the figure describes.

A raise is a risk fix: it passes minChange and may go above the current value (a raised value
still below the current one is a cut, and passes minChange as any cut), never above a
ceiling (the container's max allocated, the node's allocatable, Tortoise's maximum request).
HPA-scaled (``horizontal``) requests are reported, not raised: the HPA sizes their pods.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from bot.config.recommend import RecommendSettings
from bot.model import (
    Backtest,
    ContainerRecommendation,
    Explained,
    Recommendation,
    ReplayComparison,
)
from bot.recommend import namespace, noise, units
from bot.recommend.inputs import ContainerInput, WorkloadInput
from bot.recommend.quantiles import weighted_upper_quantile
from bot.recommend.replay.compare import current_values, proposed_values
from bot.recommend.replay.context import ReplayContext
from bot.recommend.replay.figures import over_request_share, replay
from bot.recommend.replay.gate import LimitOf
from bot.recommend.replay.pooled import pooled_factor, pooled_requests, pooled_share
from bot.recommend.replay.recent import RecentUsage, recent_usage
from bot.recommend.replay.series import ReplaySeries
from bot.recommend.replay.values import Options
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
        _cap.value if (_cap := namespace.request_cap(container, "cpu")) is not None else math.inf,
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
    days = settings.forecast.horizon_days
    wanted: dict[str, float] = {}
    recents: dict[str, RecentUsage] = {}
    for cr in rec.containers:
        container = by_name.get(cr.name)
        request = cr.cpu.request
        start = request.proposed if request.proposed is not None else request.current
        if container is None or container.policy("cpu") != "vertical" or start is None:
            continue
        if request.rule in (Rule.POLICY_OFF, Rule.TORTOISE_EMERGENCY_FROZEN):
            continue
        wanted[cr.name] = float(start)
        recent = recent_usage(series, values, cr.name, options, days=days)
        if recent is not None:
            recents[cr.name] = recent
    pooled = settings.replay.budget_scope == "workload" and len(recents) > 1
    least = (
        pooled_requests(recents, {n: wanted[n] for n in recents}, budget)
        if pooled
        else {n: r.least_request(budget) for n, r in recents.items()}
    )
    factors = _backtest_factors(backtest, backtest_series, wanted, settings, pooled=pooled)
    raised: dict[str, Explained] = {}
    for cr in rec.containers:
        container = by_name.get(cr.name)
        if container is None or cr.name not in wanted:
            continue
        request = cr.cpu.request
        value, rule, why, inputs = wanted[cr.name], None, "", {}
        recent = recents.get(cr.name)
        target = least.get(cr.name)
        if recent is not None and target is not None and target > value * (1 + 1e-9):
            over = pooled_share(recents, wanted) if pooled else recent.over_share(value)
            whose = "the workload's containers' minutes" if pooled else "the container's minutes"
            least_of = (
                "this container's part of the least total request within it"
                if pooled
                else "the least request within it"
            )
            why = (
                f"raised to {units.amount(target, 'cpu')}: at {units.amount(value, 'cpu')} the "
                f"replay of the last {recent.days:.3g} days has CPU above the request in "
                f"{_pct(over)} of {whose}, over the budget of {_pct(budget)}; "
                f"{units.amount(target, 'cpu')} is {least_of}"
            )
            inputs = {"over_request_share": over, "budget_share": budget, "days": recent.days}
            value, rule = target, Rule.REPLAY_BUDGET
        raise_ = factors.get(cr.name)
        if raise_ is not None and value * raise_.factor > value * (1 + 1e-9):
            base, k = value, raise_.factor
            value, rule = base * k, Rule.REPLAY_BACKTEST_RAISE
            why = (
                f"raised ×{k:.3f} from {units.amount(base, 'cpu')}: the backtest's "
                f"request {units.amount(raise_.request, 'cpu')} (decided on the "
                f"history as it stood {days:g} days ago) was exceeded in "
                f"{_pct(raise_.share)} of the minutes since"
                f"{' (pooled over the workload)' if pooled else ''}, over the budget "
                f"of {_pct(budget)}; ×{k:.3f} would have kept it within"
            )
            inputs = {
                **inputs,
                "raised_from": base,
                "backtest_request": raise_.request,
                "backtest_over_request_share": raise_.share,
                "raise_factor": k,
                "budget_share": budget,
            }
        if rule is None:
            continue
        value = min(
            noise.round_up_to_step(value, "cpu", settings.noise), _ceiling(container, settings)
        )
        if value <= wanted[cr.name]:
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
            {**request.inputs, **inputs, "wanted": wanted[cr.name], "wanted_rule": request.rule},
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
    if not context.report:  # the values are read, not the figures
        return out
    after = replay(
        series, proposed_values(context.now, out), recorded=context.now, options=context.options
    )
    comparison = (
        replace(rec.replay, proposed=after)
        if rec.replay is not None
        else ReplayComparison(context.before, after, settings.replay.gate)
    )
    return replace(out, replay=comparison)


@dataclass(frozen=True, slots=True)
class _Raise:
    """A backtest raise: its factor, the backtest's request and its share over it."""

    factor: float
    request: float
    share: float


def _backtest_factors(
    backtest: Backtest | None,
    series: ReplaySeries | None,
    wanted: dict[str, float],
    settings: RecommendSettings,
    *,
    pooled: bool,
) -> dict[str, _Raise]:
    """Per container of ``wanted`` whose backtest was over the budget, its raise (module doc);
    ``pooled``: one factor for all, when the backtest's pooled share was over it."""
    if backtest is None or backtest.proposed is None or series is None:
        return {}
    budget, cap = settings.replay.max_over_request, settings.replay.max_backtest_raise
    past = {
        name: cpu
        for name in wanted
        if (cpu := backtest.proposed.container_cpu(name)) is not None and cpu.request_cores
    }
    if pooled and len(past) > 1:
        sizes = {
            n: float(series.containers[n].cpu_cores.size) for n in past if n in series.containers
        }
        total = sum(sizes.values())
        share = sum(past[n].over_request_share * w for n, w in sizes.items()) / max(total, 1e-12)
        if share <= budget:
            return {}
        requests = {n: float(c.request_cores or 0) for n, c in past.items()}
        k = min(pooled_factor(series, requests, budget), cap)
        return {n: _Raise(k, requests[n], share) for n in past}
    out = {}
    for name, cpu in past.items():
        if cpu.over_request_share > budget:
            request = float(cpu.request_cores or 0)
            k = min(usage_factor(series, name, request, budget), cap)
            out[name] = _Raise(k, request, cpu.over_request_share)
    return out


def expected(
    inp: WorkloadInput,
    backtest: Backtest,
    backtest_series: ReplaySeries | None,
    rec: Recommendation,
    settings: RecommendSettings,
) -> Backtest:
    """``backtest`` with ``expected``: per container of its figures, the share of its minutes
    over request when ``rec``'s values (requests, limits and, with an HPA, its targets and
    bounds) are replayed on the scored days (the days since the backtest's cut; module doc).
    Without an HPA that is the share of one pod's samples above the proposed request (the
    current one where nothing is proposed); with one, the pods the proposal's HPA would have
    run carry the load (``figures.over_request_share``)."""
    if backtest.proposed is None or backtest_series is None:
        return backtest
    options = Options(settings.replay.hpa_model, settings.replay.pod_startup_s)
    values = proposed_values(current_values(inp), rec)
    shares = []
    for cpu in backtest.proposed.cpu:
        cv, cs = values.container(cpu.container), backtest_series.containers.get(cpu.container)
        if cv is None or not cv.requests.cpu_cores or cs is None or not cs.cpu_cores.size:
            continue
        share = over_request_share(backtest_series, values, cpu.container, options)
        shares.append((cpu.container, share))
    return replace(backtest, expected=tuple(shares))
