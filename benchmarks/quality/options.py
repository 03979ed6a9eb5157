"""What a run of the benchmark covers, and the command line that chooses it."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from benchmarks.quality.sets import SETS, WEEKDAYS
from bot.config.bot import BotSettings
from bot.config.errors import ConfigError
from bot.config.recommend import resolve

ORACLE = "oracle (budget)"
"""The budget-matched oracle's row (``benchmarks.quality.oracles``)."""

CANDIDATES = (
    "current",
    "tortoise-bot, one PR",
    "tortoise-bot, merged",
    "VPA defaults",
    "KRR simple",
    ORACLE,
)
"""Candidates in the order printed."""

TORTOISE = ("tortoise-bot, one PR", "tortoise-bot, merged")


@dataclass(frozen=True)
class Options:
    """What to run: seeds, split weekdays (Monday = 0), services, training and scored days,
    worker processes."""

    seeds: tuple[int, ...] = (1, 2, 3, 4)
    weekdays: tuple[int, ...] = tuple(range(7))
    services: tuple[str, ...] = SETS["design"]
    days: float = 14.0
    score_days: float = 14.0
    jobs: int = 2


def parser(doc: str) -> argparse.ArgumentParser:
    """The command line of ``python -m benchmarks.quality``."""
    out = argparse.ArgumentParser(prog="python -m benchmarks.quality", description=doc)
    add = out.add_argument
    add("--seeds", type=int, default=4, help="Seeds 1..N (default 4).")
    add("--weekdays", default=",".join(WEEKDAYS), help="Split weekdays, e.g. mon,thu (all 7).")
    add("--set-name", choices=tuple(SETS), default="design", help="Service set (design).")
    add("--services", default="", help="Comma-separated services of the set (default all).")
    add("--days", type=float, default=14.0, help="Training days (default 14).")
    add("--score-days", type=float, default=14.0, help="Scored days after the split (14).")
    add("--jobs", type=int, default=2, help="Worker processes (default 2).")
    add("--json", action="store_true", help="Print JSON instead of tables.")
    add("--markdown", action="store_true", help="Print the tables and aims as Markdown.")
    add("--update-doc", metavar="PATH", help="Replace the marked block of PATH by --markdown.")
    add(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="Override a recommend setting for tortoise-bot, e.g. noise.min_change_fraction=0.2 "
        "or replay.gate=off (repeatable; VALUE read as JSON, else as text).",
    )
    add(
        "--changes",
        action="store_true",
        help="Also print each pull request tortoise-bot proposed, per service and run.",
    )
    return out


def parse(argv: Sequence[str] | None, doc: str) -> tuple[Options, argparse.Namespace]:
    """``Options`` and the other arguments (``args.settings``: the resolved settings)."""
    cli = parser(doc)
    args = cli.parse_args(argv)
    known = SETS[args.set_name]
    names = tuple(n.strip() for n in args.services.split(",") if n.strip()) or known
    unknown = [n for n in names if n not in known]
    if unknown:
        cli.error(
            f"unknown services {', '.join(unknown)} (set {args.set_name}: {', '.join(known)})"
        )
    days = [d.strip().lower()[:3] for d in args.weekdays.split(",") if d.strip()]
    if not days or any(d not in WEEKDAYS for d in days):
        cli.error(f"--weekdays: expected some of {','.join(WEEKDAYS)}")
    if args.seeds < 1 or args.days <= 0 or args.score_days <= 0 or args.jobs < 1:
        cli.error("expected at least one seed and one job, and positive days")
    try:
        args.settings = resolve(BotSettings().recommend, *(_override(item) for item in args.set))
    except (ValueError, ConfigError) as exc:  # pydantic's ValidationError is a ValueError
        cli.error(f"--set: {exc}")
    weekdays = tuple(sorted({WEEKDAYS.index(d) for d in days}))
    seeds = tuple(range(1, args.seeds + 1))
    options = Options(seeds, weekdays, names, args.days, args.score_days, args.jobs)
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
