"""``tortoise-bot plan``: the whole recommendation for a local checkout (or the embedded demo).

Prints the recommendation table and the unified diff the bot would open as a pull request.
``--write`` applies the edits to the working tree (no git) and lists the files it wrote
(``written`` in JSON). ``--format json`` prints one object documented by
``docs/schemas/plan.schema.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from rich.console import Console
from rich.syntax import Syntax
from rich.table import Table

from bot.commands.common import (
    SourceChoice,
    add_settings_option,
    add_source_options,
    add_target_options,
    planning_target,
)
from bot.config.bot import BotSettings
from bot.console import make_console
from bot.errors import EXIT_FAILED, EXIT_OK
from bot.metrics.errors import MetricsError
from bot.pipeline import RepositoryPlan, plan_repository
from bot.planview import plan_document, plan_markdown, resource_rows

HELP = "Recommend for a local checkout (or --demo) and print the table and diff."


def configure(parser: argparse.ArgumentParser) -> None:
    add_target_options(parser)
    add_source_options(parser)
    add_settings_option(parser)
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
    display: str | None = None,
) -> int:
    try:
        plan = plan_repository(root, choice.source, settings, now_s=choice.now_s, write=args.write)
    except MetricsError as exc:
        print(
            f"tortoise-bot: history unavailable from {choice.description}: {exc}", file=sys.stderr
        )
        return EXIT_FAILED
    name = display or str(root)
    written = [f.path for f in plan.edit.files] if args.write else []
    if args.format == "json":
        document = plan_document(plan, repository=name)
        document["written"] = written
        json.dump(document, sys.stdout, indent=2)
        sys.stdout.write("\n")
    elif args.format == "markdown":
        sys.stdout.write(plan_markdown(plan, repository=name))
        if args.write:
            sys.stdout.write(_written_text(written, bullet="- "))
    else:
        console = make_console(color=getattr(args, "color", "auto"))
        print_table(plan, console, repository=name)
        if args.write:
            console.print(_written_text(written, bullet="  "), markup=False, end="")
    failed = any(o.status == "error" for o in plan.outcomes) or bool(plan.errors)
    return EXIT_FAILED if failed else EXIT_OK


def _written_text(written: list[str], *, bullet: str) -> str:
    """What ``--write`` wrote, one repository-relative path a line."""
    if not written:
        return "\nwrote no file\n"
    head = f"\nwrote {len(written)} file{'s' if len(written) != 1 else ''}:\n"
    return head + "".join(f"{bullet}{path}\n" for path in written)


def print_table(plan: RepositoryPlan, console: Console, *, repository: str) -> None:
    """The recommendation table, the per-workload statuses and the diff."""
    table = Table(title=f"tortoise-bot plan: {repository}", show_lines=False)
    for column in (
        "workload",
        "container",
        "res",
        "policy",
        "request",
        "limit",
        "usage p90/max",
        "rule",
    ):
        table.add_column(column, overflow="fold")
    for row in resource_rows(plan):
        table.add_row(*row)
    console.print(table)
    for outcome in plan.outcomes:
        reasons = "; ".join(outcome.reasons) or "-"
        console.print(f"{outcome.status:>14}  {outcome.ref}  {reasons}", markup=False)
    for error in plan.errors:
        console.print(f"{'error':>14}  {error}", markup=False)
    if plan.edit.diff:
        console.print()
        if console.is_terminal:
            console.print(Syntax(plan.edit.diff, "diff", theme="ansi_dark"))
        else:
            console.print(plan.edit.diff, markup=False, highlight=False, end="")
    else:
        console.print("\nno changes to propose")
