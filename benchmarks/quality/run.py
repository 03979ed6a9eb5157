"""One run per seed and split weekday, in worker processes.

A run (``run_key``): the services of the chosen set, sized for the seed, their demand drawn once
for ``days + score_days`` days from ``split_start(weekday, days)`` (per service from a stream of
its own name, so a service's figures do not depend on which others run). Each service is
simulated without a break (``bot.sim.continuous.simulate_switched``): the current values until
the split, then each candidate's, the pods alive at the split keeping their working set and age.
The product and the baselines read the training days under the current values (the prefix of
that run; a later round of the merge loop reads them re-simulated under its merged values);
every candidate is scored on the days after the split (``scores.score``). The budget-matched
oracle is a candidate row; the risk-matched oracle's core-hours are filled in per candidate,
matched on its pooled share over the services of each set (``oracles``), so a set's figures are
the same whether it runs alone or with the other.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

import numpy as np

from benchmarks.quality.candidates import decide, krr_simple, tortoise_rounds, vpa_defaults
from benchmarks.quality.options import CANDIDATES, ORACLE, Options
from benchmarks.quality.oracles import Curve, budget, budget_matched, curves, risk_matched
from benchmarks.quality.scores import HOUR_S, Key, Score, score
from benchmarks.quality.sets import build, set_of, split_start
from bot.config.bot import BotSettings
from bot.config.recommend import RecommendSettings
from bot.model import SECONDS_PER_DAY, FieldChange, Recommendation, WorkloadHistory
from bot.sim.cluster import SimulatedService
from bot.sim.continuous import prefix, simulate_switched
from bot.sim.load import demand_cores
from bot.sim.spec import ClusterSpec, ServiceSpec
from bot.sim.values import service_ref


@dataclass(frozen=True)
class Pair:
    """A decision's backtest (its over-request share on the training days) and the truth (the
    proposal's share on the scored days)."""

    service: str
    key: Key
    backtest: float
    truth: float


@dataclass(frozen=True)
class Run:
    """What runs found: per run, service and candidate the score; the services that leak memory;
    per run and service each pull request tortoise-bot proposed; the backtest/truth pairs."""

    scores: dict[Key, dict[str, dict[str, Score]]]
    leaking: list[str]
    proposals: dict[Key, dict[str, tuple[tuple[FieldChange, ...], ...]]]
    pairs: list[Pair]


def backtest_share(rec: Recommendation | None) -> float | None:
    """The over-request share a recommendation's ``backtest`` predicts, if it has one (a
    figure named ``cpu_over_request`` / ``over_request_share``, or its ``proposed`` figures'
    over-request minutes per container-minute)."""
    found = getattr(rec, "backtest", None)
    if found is None:
        return None
    expected = dict(getattr(found, "expected", ()) or ())
    if expected:  # what the backtest predicts for the proposal itself
        return max(float(v) for v in expected.values())
    for name in ("cpu_over_request", "over_request_share", "over_request_fraction"):
        value = getattr(found, name, None)
        if isinstance(value, float | int) and not isinstance(value, bool):
            return float(value)
    proposed = getattr(found, "proposed", found)
    minutes = getattr(proposed, "container_minutes", None)
    over = getattr(proposed, "over_request_minutes", None)
    if isinstance(minutes, float | int) and isinstance(over, float | int) and minutes > 0:
        return float(over) / float(minutes)
    return None


def _reuse(
    first: ServiceSpec, history: WorkloadHistory, train: Callable[[ServiceSpec], WorkloadHistory]
) -> Callable[[ServiceSpec], WorkloadHistory]:
    """``train``, with ``history`` already known for ``first``."""
    return lambda values: history if values == first else train(values)


def run_key(options: Options, settings: RecommendSettings, key: Key) -> Run:
    """One seed and split weekday of ``options`` (module doc)."""
    seed, day = key
    services = tuple(build(name, seed) for name in options.services)
    start_s = split_start(day, options.days)
    spec = ClusterSpec(seed, services, days=options.days + options.score_days, start_s=start_s)
    t_s = spec.times_s()
    switch = round(options.days * SECONDS_PER_DAY / spec.step_s)
    defaults = BotSettings().recommend
    share = budget(defaults)  # the yardstick stays put whatever --set changes
    out: dict[str, dict[str, Score]] = {}
    proposals, pairs, current_runs = {}, [], {}
    for service in services:
        rng = np.random.default_rng([seed, zlib.crc32(service.name.encode())])
        demand = demand_cores(service, t_s, rng)
        ref = service_ref(service)

        def span(
            values: ServiceSpec, base: ServiceSpec = service, d: np.ndarray = demand
        ) -> SimulatedService:
            return simulate_switched(spec, d, base, values, switch)

        def train(values: ServiceSpec, d: np.ndarray = demand) -> WorkloadHistory:
            alone = simulate_switched(spec, d, values, values, switch, steps=switch)
            return prefix(spec, alone, switch).expected_history(service_ref(values))

        current = span(service)
        history = prefix(spec, current, switch).expected_history(ref)
        product = tortoise_rounds(service, _reuse(service, history, train), settings)
        first = product.first.recommendation
        vpa = first if settings == defaults else decide(service, history, defaults).recommendation
        candidates = {
            "tortoise-bot, one PR": product.one_pr,
            "tortoise-bot, merged": product.merged,
            "VPA defaults": vpa_defaults(service, vpa),
            "KRR simple": krr_simple(service, history),
        }
        scores = {"current": score(current, spec.step_s, switch)}
        for name, values in candidates.items():
            run = current if values == service else span(values)
            scores[name] = score(run, spec.step_s, switch)
        oracle = budget_matched(service, current, switch, share, span, spec.step_s)
        scores[ORACLE] = score(oracle.run, spec.step_s, switch)
        scores["tortoise-bot, merged"].rounds.append(product.rounds)
        out[service.name] = {name: scores[name] for name in CANDIDATES}
        proposals[service.name] = product.proposals
        current_runs[service.name] = current
        predicted = backtest_share(first)
        if predicted is not None and product.proposals:
            truth = scores["tortoise-bot, one PR"].figures()["cpu_over_request"]
            pairs.append(Pair(service.name, key, predicted, float(truth or 0.0)))
    for members in _by_set(out):  # matched over the services of each set
        chosen = {name: out[name] for name in members}
        runs = {name: current_runs[name] for name in members}
        _risk_matched(chosen, curves(runs, switch, spec.step_s), spec.step_s / HOUR_S)
    leaking = [s.name for s in services if any(c.memory_growth_bytes_per_day for c in s.containers)]
    return Run({key: out}, leaking, {key: proposals}, pairs)


def _risk_matched(out: dict[str, dict[str, Score]], found: list[Curve], step_hours: float) -> None:
    """Fill in each candidate's risk-matched core-hours, matched on its pooled share."""
    for name in CANDIDATES:
        over = sum(per[name].over_request_minutes for per in out.values())
        minutes = sum(per[name].container_minutes for per in out.values())
        per_service = risk_matched(found, over / max(minutes, 1.0), step_hours)
        for service, core_hours in per_service.items():
            out[service][name].risk_core_hours = core_hours


def _by_set(services: dict[str, dict[str, Score]]) -> list[list[str]]:
    """The services grouped by set (design, test), each set's in order."""
    groups: dict[str, list[str]] = {}
    for name in services:
        groups.setdefault(set_of(name), []).append(name)
    return list(groups.values())


def _one(args: tuple[Options, RecommendSettings, Key]) -> Run:
    return run_key(*args)


def run(options: Options, settings: RecommendSettings) -> Run:
    """Every seed and split weekday of ``options``, ``options.jobs`` at a time (deterministic:
    the runs are merged in order)."""
    keys = [(seed, day) for seed in options.seeds for day in options.weekdays]
    tasks = [(options, settings, key) for key in keys]
    if options.jobs > 1 and len(tasks) > 1:
        with ProcessPoolExecutor(max_workers=options.jobs) as pool:
            found = list(pool.map(_one, tasks))
    else:
        found = [_one(task) for task in tasks]
    leaking = {name for one in found for name in one.leaking}
    return Run(
        {k: v for one in found for k, v in one.scores.items()},
        [s for s in options.services if s in leaking],
        {k: v for one in found for k, v in one.proposals.items()},
        [p for one in found for p in one.pairs],
    )
