"""``tortoise-bot explain --repo PATH WORKLOAD``: every number for one workload and its rule.

``--demo`` instead of ``--repo`` explains a workload of the embedded demo shop.

WORKLOAD is ``kind/namespace/name``, ``namespace/name`` or ``name``, optionally followed by
``@environment`` when the same workload exists in several environments.
"""

from __future__ import annotations

import argparse
import sys

from bot.commands.common import (
    add_settings_option,
    add_source_options,
    add_target_options,
    planning_target,
    print_json,
)
from bot.errors import EXIT_FAILED, EXIT_OK, UsageError
from bot.metrics.errors import MetricsError
from bot.model import Explained, Recommendation, Resource
from bot.outcome_view import outcome_json, short_names, workload_spec_matches
from bot.pipeline.plan import WorkloadOutcome, repository_outcome
from bot.redaction import visible
from bot.report import backtest as backtest_view
from bot.report import replay as replay_view
from bot.report.numbers import amount, target
from bot.report.proposal import Prices


def configure(parser: argparse.ArgumentParser) -> None:
    add_target_options(parser)
    parser.add_argument("workload", metavar="WORKLOAD", help="kind/namespace/name[@environment]")
    add_source_options(parser)
    add_settings_option(parser)
    parser.add_argument("--format", choices=("text", "json"), default="text")


def select(outcomes: tuple[WorkloadOutcome, ...], spec: str) -> WorkloadOutcome:
    """The one outcome ``spec`` names; ``UsageError`` listing candidates otherwise."""
    parts = spec.partition("@")[0].split("/")
    if not 1 <= len(parts) <= 3 or not all(parts):
        raise UsageError(f"WORKLOAD {spec!r}: expected kind/namespace/name[@environment]")
    found = [o for o in outcomes if workload_spec_matches(o.ref, spec)]
    if len(found) == 1:
        return found[0]
    names = short_names([o.ref for o in outcomes])
    known = ", ".join(names[o.ref] for o in (found or outcomes)) or "none"
    what = "is ambiguous" if found else "matches no workload"
    raise UsageError(f"WORKLOAD {spec!r} {what}; candidates: {known}")


def _line(label: str, value: Explained, unit: Resource | str) -> str:
    def show(v: float | int | None) -> str:
        return (
            amount(unit, v) if unit in ("cpu", "memory") else ("—" if v is None else f"{v}{unit}")
        )

    inputs = ", ".join(f"{k}={v}" for k, v in value.inputs.items())
    if unit == "%":
        arrow = target(value.current, value.proposed)
    elif value.changed:
        arrow = f"{show(value.current)} → {show(value.proposed)}"
    else:
        arrow = show(value.current)
    text = f"  {label:<22} {arrow:<26} [{value.rule}] {value.reason}"
    return text + (f"\n  {'':<22} inputs: {inputs}" if inputs else "")


def describe(outcome: WorkloadOutcome, prices: Prices | None = None) -> str:
    """Human-readable explanation of every value, then the replay of the proposal (at
    ``prices`` for its monthly cost)."""
    lines = [f"{outcome.ref}: {outcome.status}"]
    lines += [f"  reason: {r}" for r in outcome.reasons]
    rec = outcome.recommendation
    if rec is not None:
        for container in rec.containers:
            lines.append(f"container {container.name}")
            for res in (container.cpu, container.memory):
                lines.append(f" {res.resource} (policy {res.policy})")
                if res.usage:
                    u = res.usage
                    lines.append(
                        f"  usage                  p50 {amount(res.resource, u.p50)}, p90 {amount(res.resource, u.p90)}, "
                        f"p99 {amount(res.resource, u.p99)}, max {amount(res.resource, u.max)} ({u.samples} samples)"
                    )
                if res.vpa:
                    v = res.vpa
                    lines.append(
                        f"  vpa                    target {amount(res.resource, v.target)}, lower {amount(res.resource, v.lower_bound)}, "
                        f"upper {amount(res.resource, v.upper_bound)}, uncapped {amount(res.resource, v.uncapped_target)}, "
                        f"confidence {v.confidence:.2f}"
                    )
                lines.append(_line("request", res.request, res.resource))
                lines.append(_line("limit", res.limit, res.resource))
        if rec.hpa is not None:
            lines.append("hpa")
            lines.append(_line("minReplicas", rec.hpa.min_replicas, ""))
            lines.append(_line("maxReplicas", rec.hpa.max_replicas, ""))
            for target in rec.hpa.targets:
                lines.append(
                    _line(f"target {target.container}/{target.resource}", target.value, "%")
                )
            if rec.hpa.slots:
                slots = ", ".join(f"{k}: {lo}-{hi}" for k, (lo, hi) in rec.hpa.slots.items())
                lines.append(f"  per-slot (min-max)     {slots}")
        lines += _replay(rec, prices or Prices())
        lines += backtest_view.text(rec)
        for note in rec.notes:
            lines.append(f"note [{note.code}] {note.message}")
    if outcome.summary is not None:
        shown = set(rec.notes) if rec is not None else set()
        for note in outcome.summary.quality:
            if note not in shown:  # the engine repeats the history's notes in its own
                lines.append(f"data [{note.code}] {note.message}")
    return "\n".join(lines) + "\n"


def _replay(rec: Recommendation, prices: Prices) -> list[str]:
    """The replay section: the table, per container figures, the findings and held values."""
    replay = rec.replay
    if replay is None:
        return []
    lines = replay_view.text(rec, prices)
    per_container = replay_view.container_rows(replay)
    width = max((len(r.label) for r in per_container), default=0)
    lines += [f"  {r.label:<{width}}  {r.current} → {r.proposed}" for r in per_container]
    if replay.gate == "on":
        lines += [f"  finding: {line}" for line in replay_view.finding_lines(replay)]
    return lines


def run(args: argparse.Namespace) -> int:
    with planning_target(args) as target:
        choice = target.choice
        try:
            plan = repository_outcome(
                target.root, choice.source, target.settings, now_s=choice.now_s, charts=False
            )
        except MetricsError as exc:
            print(
                f"tortoise-bot: history unavailable from {choice.description}: {exc}",
                file=sys.stderr,
            )
            return EXIT_FAILED
    outcome = select(plan.outcomes, args.workload)
    if args.format == "json":
        print_json(outcome_json(outcome, plan.prices))
    else:
        sys.stdout.write(visible(describe(outcome, plan.prices)))
    return EXIT_FAILED if outcome.status == "error" else EXIT_OK
