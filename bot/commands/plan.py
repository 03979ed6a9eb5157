"""``tortoise-bot plan``: the whole recommendation for a local checkout (or the embedded demo).

Prints the recommendation table and the unified diff the bot would open as a pull request.
``--write`` applies the edits to the working tree (no git) and lists the files it wrote
(``written`` in JSON). ``--format json`` prints one object documented by
``docs/schemas/plan.schema.json``.
"""

from __future__ import annotations

import argparse
import sys
from datetime import datetime
from pathlib import Path

from rich.console import Console

from bot.clock import zone
from bot.commands.common import (
    SourceChoice,
    add_selector_options,
    add_settings_option,
    add_source_options,
    add_target_options,
    planning_target,
    print_json,
    selector_of,
)
from bot.commands.plan_verification import (
    add_verification_options,
    plan_verification,
    verification_json,
    verification_lines,
    verification_markdown,
)
from bot.commands.tracking import NAMESPACES, WORKLOADS, TrackedSource
from bot.config.bot import BotSettings
from bot.console import (
    AFTER_ARROWS,
    LIST,
    WORDS,
    ColorMode,
    Column,
    Prose,
    make_console,
    print_table,
    print_wrapped,
    progress,
)
from bot.errors import EXIT_FAILED, exit_code
from bot.metrics.errors import MetricsError
from bot.model import SECONDS_PER_DAY
from bot.outcome_view import (
    change_summary,
    error_lines,
    nothing_found,
    plan_document,
    plan_markdown,
    replay_notes,
    replay_rows,
    short_names,
    value_rows,
)
from bot.pipeline.coexist import VPA_NOTE_CODES
from bot.pipeline.namespace_findings import NOTE_CODES
from bot.pipeline.plan import (
    RepositoryOutcome,
    WorkloadOutcome,
    history_requests,
    repository_outcome,
)
from bot.pipeline.podlevel import POD_NOTE_CODES
from bot.redaction import visible


def configure(parser: argparse.ArgumentParser) -> None:
    add_target_options(parser)
    add_source_options(parser)
    add_settings_option(parser)
    add_selector_options(parser)
    add_verification_options(parser)
    parser.add_argument(
        "--format", choices=("table", "json", "markdown"), default="table", help="Output format."
    )
    parser.add_argument(
        "--write", action="store_true", help="Apply the edits to the working tree (no git)."
    )


def run(args: argparse.Namespace) -> int:
    with planning_target(args) as target:
        return _plan_and_print(
            args, target.settings, target.root, target.choice, display=target.name
        )


def _plan_and_print(
    args: argparse.Namespace,
    settings: BotSettings,
    root: Path,
    choice: SourceChoice,
    *,
    display: str,
) -> int:
    color: ColorMode = args.color
    try:
        with progress(
            make_console(sys.stderr, color), {NAMESPACES: None, WORKLOADS: None}
        ) as advance:
            plan = repository_outcome(
                root,
                TrackedSource(choice.source, advance, count_workloads=False),
                settings,
                now_s=choice.now_s,
                write=args.write,
                on_workload=lambda ref: advance(WORKLOADS, label=ref.name),
                charts=False,
                selected=selector_of(args),
            )
    except MetricsError as exc:
        print(
            f"tortoise-bot: history unavailable from {choice.description}: {exc}", file=sys.stderr
        )
        return EXIT_FAILED
    written = [f.path for f in plan.edit.files] if args.write else []
    verified = plan_verification(args, settings, plan, choice)
    if args.format == "json":
        document = plan_document(plan, repository=display)
        document["written"] = written
        document["verification"] = verification_json(verified)
        print_json(document)
    elif args.format == "markdown":
        sys.stdout.write(plan_markdown(plan, repository=display))
        sys.stdout.write(verification_markdown(verified))
        if args.write:
            sys.stdout.write(_written_text(written, bullet="- "))
    else:
        console = make_console(color=color)
        print_plan(plan, console, repository=display, source=choice.description)
        lines = verification_lines(verified)
        if lines:
            console.print()
        for line in lines:
            print_wrapped(console, visible(line))
        if args.write:
            console.print(_written_text(written, bullet="  "), markup=False, end="")
    if _from_prometheus(args) and lacks_all_data(plan):
        from bot.commands.doctor import print_summary  # noqa: PLC0415 (this case only)

        requests = history_requests(plan.inventory, plan.settings)
        print_summary(settings, requests, at_s=choice.now_s, out=sys.stderr)
    return exit_code(
        failures=sum(o.failed for o in plan.outcomes),
        findings=len(plan.errors) + sum(o.status == "error" for o in plan.outcomes),
    )


def _from_prometheus(args: argparse.Namespace) -> bool:
    return not args.demo and getattr(args, "snapshot", None) is None


def lacks_all_data(plan: RepositoryOutcome) -> bool:
    """Every workload is gathering data: the Prometheus set-up, not the workloads, is the
    likely cause (``tortoise-bot doctor`` tells which)."""
    return bool(plan.outcomes) and all(o.status == "gathering-data" for o in plan.outcomes)


def _written_text(written: list[str], *, bullet: str) -> str:
    """What ``--write`` wrote, one repository-relative path a line."""
    if not written:
        return "\nwrote no file\n"
    head = f"\nwrote {len(written)} file{'s' if len(written) != 1 else ''}:\n"
    return head + "".join(f"{bullet}{path}\n" for path in written)


STATUS_STYLES = {"changes": "yellow", "error": "red", "gathering-data": "cyan", "skipped": "dim"}
"""Colour of a workload's summary row on a terminal, by status."""

SUMMARY = (Column("status"), Column("workload"), Column("what changes", breaks=LIST, flex=True))
"""The first table: one line per workload."""

VALUES = (
    Column("container"),
    Column("value", breaks=WORDS),
    Column("current → proposed", breaks=AFTER_ARROWS),
    Column("usage p90 / max", breaks=AFTER_ARROWS),
    Column("rule and reason", breaks=WORDS, flex=True),
)
"""A workload's table: one line per value the engine looked at."""


def _when(unix_s: float, time_zone: str) -> str:
    """``2026-01-01 09:00`` on the display clock (``report.time_zone``)."""
    return f"{datetime.fromtimestamp(unix_s, zone(time_zone)):%Y-%m-%d %H:%M}"


def print_plan(plan: RepositoryOutcome, console: Console, *, repository: str, source: str) -> None:
    """One line per workload, then each workload's values with their rule and reason, the
    errors, and the diff."""
    start_s, end_s = plan.window
    days = (end_s - start_s) / SECONDS_PER_DAY
    print_wrapped(console, f"tortoise-bot plan: {repository}", style="bold")
    clock = zone(plan.settings.display_zone).key
    print_wrapped(
        console,
        f"history {_when(start_s, clock)} to {_when(end_s, clock)} {clock} ({days:g} days) "
        f"from {source}",
    )
    console.print()
    names = short_names([o.ref for o in plan.outcomes])
    print_table(
        console,
        SUMMARY,
        [
            (o.status, names[o.ref], change_summary(o) if o.changes else Prose(change_summary(o)))
            for o in plan.outcomes
        ],
        styles=[STATUS_STYLES.get(o.status) for o in plan.outcomes],
    )
    for outcome in plan.outcomes:
        console.print()
        print_wrapped(
            console, f"{names[outcome.ref]}: {outcome.status}  ({outcome.ref})", style="bold"
        )
        for scaler in outcome.recommendation.notes if outcome.recommendation else ():
            if scaler.code.startswith("keda"):  # what scales it, and what is kept
                print_wrapped(console, scaler.message, indent="  ")
        rows = value_rows(outcome)
        if rows:
            print_table(console, VALUES, rows)
        if rows and outcome.status == "error":  # why the edit was refused, and what to do
            for reason in outcome.reasons:
                print_wrapped(console, reason, indent="  ", style="red")
        elif not rows and outcome.reasons:
            print_table(
                console,
                (Column("reason", breaks=WORDS, flex=True),),
                [(r,) for r in outcome.reasons],
            )
        replayed = replay_rows(outcome, plan.prices)
        if replayed:
            console.print()
            columns = tuple(Column(h, breaks=WORDS) for h in replayed[0])
            print_table(console, columns, replayed[1:])
        for note in replay_notes(outcome, plan.prices):
            print_wrapped(console, note)
        for note in namespace_notes(outcome):
            print_wrapped(console, note, indent="  ")
        for vpa_note in outcome.recommendation.notes if outcome.recommendation else ():
            if vpa_note.code in VPA_NOTE_CODES | POD_NOTE_CODES:  # who sizes what, and how
                print_wrapped(console, f"note: {vpa_note.message}")
    for error in error_lines(plan.inventory.errors):
        print_wrapped(console, f"error: {visible(error)}", indent="  ", style="red")
    for w in plan.inventory.warnings:
        warning = visible(f"warning: {w.file}:{w.line}: {w.message}")
        print_wrapped(console, warning, indent="  ", style="yellow")
    if plan.edit.diff:
        console.print()
        if console.is_terminal:
            from rich.syntax import Syntax  # noqa: PLC0415 (pygments: for a terminal only)

            console.print(Syntax(plan.edit.diff, "diff", theme="ansi_dark"))
        else:
            console.print(plan.edit.diff, markup=False, highlight=False, end="", soft_wrap=True)
    elif not plan.outcomes:
        print_wrapped(console, nothing_found(plan), indent="  ")
    else:
        console.print("\nno changes to propose")


def namespace_notes(outcome: WorkloadOutcome) -> list[str]:
    """What the namespace and the runtime declare of the workload (quota, PDB, LimitRange
    defaults, heap settings), each ``note: [container: ]message``."""
    rec = outcome.recommendation
    return [
        f"note: {n.container + ': ' if n.container else ''}{n.message}"
        for n in (rec.notes if rec is not None else ())
        if n.code in NOTE_CODES
    ]
