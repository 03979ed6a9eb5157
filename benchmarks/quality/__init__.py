"""Quality of recommendations: each candidate's values replayed on a held-out week.

Run: ``.venv/bin/python -m benchmarks.quality [--seeds 4] [--services a,b] [--days 14]
[--score-days 7] [--set KEY=VALUE] [--json] [--changes]``. How to read it: ``docs/quality.md``.

Per seed, the nine archetypes of ``bot.sim.profiles`` draw ``days + score_days`` days of demand
once (``bot.sim.cluster.draw_demand``). The first ``days`` are the training history (simulated
under the current values, or under merged values for later rounds of the bot); every candidate
(``benchmarks.quality.candidates``) is then scored on the remaining ``score_days``: that part of
the same demand re-simulated under its values, so the HPA reacts to its requests and targets and
OOM kills happen at its limits (``benchmarks.quality.scores``). Deterministic for given options.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from benchmarks.quality.candidates import (
    MAX_ROUNDS,
    decide,
    krr_simple,
    oracle,
    tortoise_rounds,
    vpa_defaults,
)
from benchmarks.quality.report import (
    CANDIDATES,
    aim_lines,
    aims,
    as_json,
    proposal_lines,
    proposals_json,
    service_names,
    table,
)
from benchmarks.quality.scores import Score, pool, score
from bot.config.bot import BotSettings
from bot.config.errors import ConfigError
from bot.config.recommend import RecommendSettings, resolve
from bot.model import FieldChange, Recommendation, WorkloadHistory
from bot.sim.cluster import SimulatedService, draw_demand, simulate_window
from bot.sim.profiles import ARCHETYPES, archetype_cluster
from bot.sim.spec import ServiceSpec
from bot.sim.values import service_ref


@dataclass(frozen=True)
class Options:
    """What to run: seeds, archetype names, training and scored days."""

    seeds: tuple[int, ...] = (1, 2, 3, 4)
    services: tuple[str, ...] = tuple(ARCHETYPES)
    days: float = 14.0
    score_days: float = 7.0


def _reuse(
    first: ServiceSpec, history: WorkloadHistory, train: Callable[[ServiceSpec], WorkloadHistory]
) -> Callable[[ServiceSpec], WorkloadHistory]:
    """``train``, with ``history`` already known for ``first``."""
    return lambda values: history if values is first else train(values)


@dataclass(frozen=True)
class Run:
    """What a run found: per seed, service and candidate the score; the services that leak
    memory; per seed and service the changes of each pull request tortoise-bot proposed."""

    scores: dict[int, dict[str, dict[str, Score]]]
    leaking: list[str]
    proposals: dict[int, dict[str, tuple[tuple[FieldChange, ...], ...]]]


def run_seed(seed: int, options: Options, settings: RecommendSettings) -> Run:
    """One seed of ``options`` (module doc)."""
    spec = archetype_cluster(seed, days=options.days + options.score_days, names=options.services)
    demand = draw_demand(spec)

    def window(values: ServiceSpec, start_day: float, days: float) -> SimulatedService:
        part = simulate_window(spec, demand, start_day=start_day, days=days, services=[values])
        return part.services[0]

    def train(values: ServiceSpec) -> WorkloadHistory:
        part = simulate_window(spec, demand, start_day=0, days=options.days, services=[values])
        return part.expected_history(service_ref(values))

    defaults = BotSettings().recommend

    def vpa_estimates(
        service: ServiceSpec, history: WorkloadHistory, found: Recommendation | None
    ) -> Recommendation | None:
        """The VPA estimates under the default settings, whatever ``--set`` changed."""
        return found if settings == defaults else decide(service, history, defaults).recommendation

    out: dict[str, dict[str, Score]] = {}
    proposals = {}
    for service in spec.services:
        history = train(service)
        product = tortoise_rounds(service, _reuse(service, history, train), settings)
        current = window(service, options.days, options.score_days)
        candidates = {
            "tortoise-bot, one PR": product.one_pr,
            "tortoise-bot, merged": product.merged,
            "VPA defaults": vpa_defaults(
                service, vpa_estimates(service, history, product.first.recommendation)
            ),
            "KRR simple": krr_simple(service, history),
            "oracle": oracle(service, current),
        }
        scores = {"current": score(current, spec.step_s)}
        for name, values in candidates.items():
            scores[name] = score(window(values, options.days, options.score_days), spec.step_s)
        scores["tortoise-bot, merged"].rounds.append(product.rounds)
        out[service.name] = {name: scores[name] for name in CANDIDATES}
        proposals[service.name] = product.proposals
    leaking = [
        s.name for s in spec.services if any(c.memory_growth_bytes_per_day for c in s.containers)
    ]
    return Run({seed: out}, leaking, {seed: proposals})


def run(options: Options, settings: RecommendSettings) -> Run:
    """Every seed of ``options`` (deterministic)."""
    seeds = [run_seed(seed, options, settings) for seed in options.seeds]
    leaking = {name for one in seeds for name in one.leaking}
    return Run(
        {k: v for one in seeds for k, v in one.scores.items()},
        [s for s in options.services if s in leaking],
        {k: v for one in seeds for k, v in one.proposals.items()},
    )


def _options(argv: Sequence[str] | None) -> tuple[Options, argparse.Namespace]:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.quality", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--seeds", type=int, default=4, help="Seeds 1..N (default 4).")
    parser.add_argument(
        "--services", default=",".join(ARCHETYPES), help="Comma-separated archetypes (all nine)."
    )
    parser.add_argument("--days", type=float, default=14.0, help="Training days (default 14).")
    parser.add_argument(
        "--score-days", type=float, default=7.0, help="Held-out days scored (default 7)."
    )
    parser.add_argument("--json", action="store_true", help="Print JSON instead of tables.")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="Override a recommend setting for tortoise-bot, e.g. noise.min_change_fraction=0.2 "
        "or replay.gate=off (repeatable; VALUE read as JSON, else as text).",
    )
    parser.add_argument(
        "--changes",
        action="store_true",
        help="Also print each pull request tortoise-bot proposed, per service and seed.",
    )
    args = parser.parse_args(argv)
    names = tuple(n.strip() for n in args.services.split(",") if n.strip())
    unknown = [n for n in names if n not in ARCHETYPES]
    if unknown:
        parser.error(f"unknown services {', '.join(unknown)} (known: {', '.join(ARCHETYPES)})")
    if not names or args.seeds < 1 or args.days <= 0 or args.score_days <= 0:
        parser.error("expected at least one service and one seed, and positive days")
    try:
        args.settings = resolve(BotSettings().recommend, *(_override(item) for item in args.set))
    except (ValueError, ConfigError) as exc:  # pydantic's ValidationError is a ValueError
        parser.error(f"--set: {exc}")
    options = Options(tuple(range(1, args.seeds + 1)), names, args.days, args.score_days)
    return options, args


def _override(item: str) -> dict[str, Any]:
    """``a.b=VALUE`` as ``{"a": {"b": VALUE}}``; VALUE parsed as JSON, else kept as text."""
    key, sep, text = item.partition("=")
    if not sep or not key:
        raise ValueError(f"{item!r} is not KEY=VALUE")
    try:
        value: Any = json.loads(text)
    except json.JSONDecodeError:
        value = text
    for part in reversed(key.split(".")):
        value = {part: value}
    return dict(value)


def main(argv: Sequence[str] | None = None) -> int:
    """The command line (module doc)."""
    options, args = _options(argv)
    started = time.perf_counter()
    found = run(options, args.settings)
    seconds = time.perf_counter() - started
    results, leaking = found.scores, found.leaking
    if args.json:
        doc = {"options": asdict(options), "set": args.set, "seconds": round(seconds, 2)}
        doc |= as_json(results, leaking)
        doc["proposals"] = proposals_json(found.proposals)
        json.dump(doc, sys.stdout, indent=2)
        print()
        return 0
    print(
        f"== quality: {len(options.services)} services × {len(options.seeds)} seeds, trained on "
        f"{options.days:g} days, scored on the next {options.score_days:g}; per seed and week "
        f"({seconds:.1f} s){''.join(f'; --set {item}' for item in args.set)}"
    )
    for service in service_names(results):
        print(f"\n-- {service}")
        print("\n".join(table(pool(results, CANDIDATES, [service]), MAX_ROUNDS)))
    print("\n== pooled")
    print("\n".join(table(pool(results, CANDIDATES), MAX_ROUNDS)))
    print("\n== aims (docs/quality.md): one PR | merged")
    print("\n".join(aim_lines(aims(results, leaking))))
    if args.changes:
        print("\n== tortoise-bot's pull requests, merged in order")
        print("\n".join(proposal_lines(found.proposals)))
    return 0
