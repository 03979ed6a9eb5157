"""Quality of recommendations: each candidate's values run on days nobody had seen.

Run: ``.venv/bin/python -m benchmarks.quality [--set-name design|test|all] [--seeds 4]
[--weekdays mon,thu] [--services a,b] [--days 14] [--score-days 14] [--jobs 2] [--set KEY=VALUE]
[--json] [--markdown] [--update-doc docs/quality.md] [--changes]``. How to read it:
``docs/quality.md``.

Per seed and split weekday (``benchmarks.quality.run``), the services of the set are trained on
``days`` that end at 00:00 UTC of that weekday and scored on the next ``score_days``, simulated
without a break across the split; tables pool the runs (``benchmarks.quality.report``), the aims
are checked per set (``benchmarks.quality.aims``). Deterministic for given options.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict

from benchmarks.quality.aims import aim_lines, aims, aims_json
from benchmarks.quality.candidates import MAX_ROUNDS
from benchmarks.quality.options import Options, parse
from benchmarks.quality.report import (
    as_json,
    figures,
    proposal_lines,
    proposals_json,
    service_names,
    table,
)
from benchmarks.quality.run import Run, run
from benchmarks.quality.sets import WEEKDAYS, set_of
from bot.config.recommend import RecommendSettings

__all__ = ["Options", "Run", "main", "run"]

BEGIN, END = "<!-- quality:begin -->", "<!-- quality:end -->"
"""The markers of the block ``--update-doc`` replaces."""


def _sets(services: Sequence[str]) -> dict[str, list[str]]:
    """The services of each set present, design first."""
    out: dict[str, list[str]] = {}
    for name in services:
        out.setdefault(set_of(name), []).append(name)
    return dict(sorted(out.items()))


def _heading(options: Options, seconds: float, sets: Sequence[str]) -> str:
    days = ",".join(WEEKDAYS[d] for d in options.weekdays)
    return (
        f"{' + '.join(sets)} set: {len(options.services)} services × {len(options.seeds)} seeds × "
        f"split on {days}, trained on {options.days:g} days, scored on the next "
        f"{options.score_days:g}; per run and week ({seconds:.0f} s, {options.jobs} jobs)"
    )


def _markdown(found: Run, options: Options, settings: RecommendSettings, head: str) -> list[str]:
    sets = _sets(options.services)
    lines = [f"_{head}_", ""]
    for name, services in sets.items():
        lines += [f"### {name.capitalize()} set, pooled", "", "```"]
        lines += table(figures(found.scores, services), MAX_ROUNDS)
        lines += ["```", "", f"### {name.capitalize()} set, per service", ""]
        for service in services:
            lines += [f"`{service}`:", "", "```"]
            lines += table(figures(found.scores, [service]), MAX_ROUNDS)
            lines += ["```", ""]
        found_aims = aims(
            found.scores, services, found.leaking, found.proposals, found.pairs, settings
        )
        lines += [f"### Aims on the {name} set: one PR | merged", "", "```"]
        lines += aim_lines(found_aims)
        lines += ["```", ""]
    return lines


def update_doc(path: str, block: Sequence[str]) -> None:
    """Replace the lines between ``BEGIN`` and ``END`` of ``path`` by ``block``."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    head, sep, rest = text.partition(BEGIN)
    _, sep2, tail = rest.partition(END)
    if not sep or not sep2:
        raise SystemExit(f"{path}: no {BEGIN} … {END} block")
    with open(path, "w", encoding="utf-8") as f:
        f.write(head + BEGIN + "\n" + "\n".join(block).rstrip() + "\n" + END + tail)


def main(argv: Sequence[str] | None = None) -> int:
    """The command line (module doc)."""
    options, args = parse(argv, __doc__.splitlines()[0])
    started = time.perf_counter()
    found = run(options, args.settings)
    seconds = time.perf_counter() - started
    sets = _sets(options.services)
    head = _heading(options, seconds, list(sets)) + "".join(f"; --set {s}" for s in args.set)
    if args.json:
        doc = {"options": asdict(options), "set": args.set, "seconds": round(seconds, 2)}
        doc |= as_json(found.scores, sets)
        doc["aims"] = {
            name: aims_json(
                aims(found.scores, svc, found.leaking, found.proposals, found.pairs, args.settings)
            )
            for name, svc in sets.items()
        }
        doc["backtest_pairs"] = [asdict(p) for p in found.pairs]
        doc["proposals"] = proposals_json(found.proposals)
        json.dump(doc, sys.stdout, indent=2)
        print()
        return 0
    if args.markdown or args.update_doc:
        block = _markdown(found, options, args.settings, head)
        if args.update_doc:
            update_doc(args.update_doc, block)
        else:
            print("\n".join(block))
        return 0
    print(f"== quality: {head}")
    for service in service_names(found.scores):
        print(f"\n-- {service}")
        print("\n".join(table(figures(found.scores, [service]), MAX_ROUNDS)))
    for name, services in sets.items():
        print(f"\n== {name} set, pooled")
        print("\n".join(table(figures(found.scores, services), MAX_ROUNDS)))
    for name, services in sets.items():
        print(f"\n== aims on the {name} set (docs/quality.md): one PR | merged")
        found_aims = aims(
            found.scores, services, found.leaking, found.proposals, found.pairs, args.settings
        )
        print("\n".join(aim_lines(found_aims)))
    if args.changes:
        print("\n== tortoise-bot's pull requests, merged in order")
        print("\n".join(proposal_lines(found.proposals)))
    return 0
