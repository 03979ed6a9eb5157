"""``tortoise-bot explain --repo PATH WORKLOAD``: every number for one workload and its rule.

``--demo`` instead of ``--repo`` explains a workload of the embedded demo shop.

WORKLOAD is ``kind/namespace/name``, ``namespace/name`` or ``name``, optionally followed by
``@environment`` when the same workload exists in several environments.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Mapping

from bot.commands.common import (
    add_selector_options,
    add_settings_option,
    add_source_options,
    add_target_options,
    planning_target,
    print_json,
    selector_of,
)
from bot.console import WORDS, make_console, wrap_cell
from bot.errors import EXIT_FAILED, UsageError, exit_code
from bot.metrics.errors import MetricsError
from bot.model import Explained, FieldId, Recommendation
from bot.outcome_view import matching, outcome_json, short_names, written
from bot.pipeline.plan import WorkloadOutcome, repository_outcome
from bot.redaction import visible
from bot.report import backtest as backtest_view
from bot.report import replay as replay_view
from bot.report.held import finding_lines
from bot.report.numbers import amount, target
from bot.report.proposal import Prices
from bot.report.summary import inputs_text


def configure(parser: argparse.ArgumentParser) -> None:
    add_target_options(parser)
    parser.add_argument("workload", metavar="WORKLOAD", help="kind/namespace/name[@environment]")
    add_source_options(parser)
    add_settings_option(parser)
    add_selector_options(parser)
    parser.add_argument("--format", choices=("text", "json"), default="text")


def select(outcomes: tuple[WorkloadOutcome, ...], spec: str) -> WorkloadOutcome:
    """The one outcome ``spec`` names; ``UsageError`` listing candidates otherwise."""
    parts = spec.partition("@")[0].split("/")
    if not 1 <= len(parts) <= 3 or not all(parts):
        raise UsageError(f"WORKLOAD {spec!r}: expected kind/namespace/name[@environment]")
    named = matching([o.ref for o in outcomes], spec)
    found = [o for o in outcomes if o.ref in named]
    if len(found) == 1:
        return found[0]
    names = short_names([o.ref for o in outcomes])
    known = ", ".join(names[o.ref] for o in (found or outcomes)) or "none"
    what = "is ambiguous" if found else "matches no workload"
    raise UsageError(f"WORKLOAD {spec!r} {what}; candidates: {known}")


def _line(label: str, value: Explained, field: FieldId) -> str:
    """One value: current → proposed in its unit (a proposal as the edit writes it), the rule
    and reason, then the inputs in words and units (``bot.report.summary.inputs_text``)."""
    resource = field.resource if field.is_request_or_limit else None

    def show(v: float | int | None, *, proposed: bool = False) -> str:
        if resource is not None:
            return amount(resource, written(resource, v) if proposed else v)
        return "—" if v is None else f"{v}"

    if field.is_hpa_target:
        arrow = target(value.current, value.proposed)
    elif value.changed:
        arrow = f"{show(value.current)} → {show(value.proposed, proposed=True)}"
    else:
        arrow = show(value.current)
    text = f"  {label:<22} {arrow:<26} [{value.rule}] {value.reason}"
    inputs = inputs_text(field, value.inputs, superseded=True)
    return text + (f"\n  {'':<22} inputs: {inputs}" if inputs else "")


def describe(
    outcome: WorkloadOutcome, prices: Prices | None = None, *, time_zone: str = "UTC"
) -> str:
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
                lines.append(_line("request", res.request, FieldId.request(res.resource)))
                lines.append(_line("limit", res.limit, FieldId.limit(res.resource)))
        if rec.hpa is not None:
            lines.append("hpa")
            lines.append(_line("minReplicas", rec.hpa.min_replicas, FieldId.HPA_MIN_REPLICAS))
            lines.append(_line("maxReplicas", rec.hpa.max_replicas, FieldId.HPA_MAX_REPLICAS))
            for hpa_target in rec.hpa.targets:
                lines.append(
                    _line(
                        f"target {hpa_target.container}/{hpa_target.resource}",
                        hpa_target.value,
                        FieldId.hpa_target(hpa_target.resource),
                    )
                )
            if rec.hpa.slots:
                slots = ", ".join(f"{k}: {lo}-{hi}" for k, (lo, hi) in rec.hpa.slots.items())
                lines.append(f"  per-slot (min-max)     {slots}")
        marks = {c.name: c.mark for c in outcome.declared.containers if c.mark}
        lines += _replay(rec, prices or Prices(), marks)
        lines += backtest_view.text(rec, time_zone=time_zone)
        for note in rec.notes:
            lines.append(f"note [{note.code}] {note.message}")
    if outcome.summary is not None:
        shown = set(rec.notes) if rec is not None else set()
        for note in outcome.summary.quality:
            if note not in shown:  # the engine repeats the history's notes in its own
                lines.append(f"data [{note.code}] {note.message}")
    return "\n".join(lines) + "\n"


def _replay(rec: Recommendation, prices: Prices, marks: Mapping[str, str]) -> list[str]:
    """The replay section: the table, per container figures (a marked container named with
    its mark, ``sidecar (init)``), the findings and held values."""
    replay = rec.replay
    if replay is None:
        return []
    lines = replay_view.text(rec, prices)
    per_container = replay_view.container_rows(replay, marks)
    width = max((len(r.label) for r in per_container), default=0)
    lines += [f"  {r.label:<{width}}  {r.current} → {r.proposed}" for r in per_container]
    if replay.gate == "on":
        lines += [f"  finding: {line}" for line in finding_lines(replay)]
    return lines


HANGING = re.compile(r"^(\s*\S.*?\s{2,})(?=\S)")
"""A line's label and the spaces after it: where its continuation lines start."""


def fit(text: str, width: int) -> str:
    """``text`` with every line longer than ``width`` wrapped between words (never inside a
    number or a name), continuation lines under the line's value (after its label) or two
    columns in."""
    out = []
    for line in text.splitlines():
        if len(line) <= width:
            out.append(line)
            continue
        label = HANGING.match(line)
        indent = len(line) - len(line.lstrip(" "))
        hang = len(label.group(1)) if label and len(label.group(1)) <= width // 2 else indent + 2
        first, *rest = wrap_cell(line, WORDS, width)
        rest = wrap_cell(" ".join(rest), WORDS, width - hang) if rest else []
        out += [first, *(" " * hang + part for part in rest)]
    return "\n".join(out) + "\n"


def run(args: argparse.Namespace) -> int:
    with planning_target(args) as target:
        choice = target.choice
        try:
            plan = repository_outcome(
                target.root,
                choice.source,
                target.settings,
                now_s=choice.now_s,
                charts=False,
                selected=selector_of(args),
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
        width = make_console(color=args.color).width
        sys.stdout.write(
            visible(
                fit(describe(outcome, plan.prices, time_zone=plan.settings.display_zone), width)
            )
        )
    return exit_code(failures=int(outcome.failed), findings=int(outcome.status == "error"))
