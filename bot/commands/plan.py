"""``tortoise-bot plan``: the whole recommendation for a local checkout (or the embedded demo).

Prints the recommendation table and the unified diff the bot would open as a pull request.
``--write`` applies the edits to the working tree (no git). ``--format json`` prints one object
documented by ``docs/schemas/plan.schema.json``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from rich.console import Console
from rich.syntax import Syntax
from rich.table import Table

from bot.commands.common import (
    SourceChoice,
    add_settings_option,
    add_source_options,
    choose_source,
    load_settings,
    open_snapshot,
    parse_now,
)
from bot.config.bot import BotSettings
from bot.console import make_console
from bot.errors import EXIT_FAILED, EXIT_OK, UsageError
from bot.metrics.errors import MetricsError
from bot.pipeline import RepositoryPlan, plan_repository
from bot.planview import plan_document, plan_markdown, resource_rows

HELP = "Recommend for a local checkout (or --demo) and print the table and diff."

DEMO_DIR = Path(__file__).resolve().parent.parent / "demo"
"""The embedded demo: ``repo/`` (manifests) and ``snapshot.zip`` (recorded history)."""


def configure(parser: argparse.ArgumentParser) -> None:
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--repo", type=Path, metavar="PATH", help="Repository checkout to plan.")
    target.add_argument(
        "--demo", action="store_true", help="Plan the embedded demo shop (no cluster needed)."
    )
    add_source_options(parser)
    add_settings_option(parser)
    parser.add_argument(
        "--format", choices=("table", "json", "markdown"), default="table", help="Output format."
    )
    parser.add_argument(
        "--write", action="store_true", help="Apply the edits to the working tree (no git)."
    )


@contextmanager
def demo_checkout() -> Iterator[Path]:
    """A throw-away copy of the demo repository (so ``--write`` never touches the package)."""
    with tempfile.TemporaryDirectory(prefix="tortoise-bot-demo-") as tmp:
        root = Path(tmp) / "demo-shop"
        shutil.copytree(DEMO_DIR / "repo", root)
        yield root


def _demo_source(args: argparse.Namespace) -> SourceChoice:
    if args.prometheus or args.snapshot:
        raise UsageError("--demo brings its own history: drop --prometheus / --snapshot")
    source = open_snapshot(DEMO_DIR / "snapshot.zip")
    now_s = parse_now(args.now)
    return SourceChoice(source, now_s if now_s is not None else source.end_s, "embedded demo")


def run(args: argparse.Namespace) -> int:
    if args.demo and args.config is None:
        args.config = DEMO_DIR / "bot.yaml"
    settings = load_settings(args)
    if args.demo:
        choice = _demo_source(args)
        with demo_checkout() as root:
            return _plan_and_print(args, settings, root, choice, display="demo-shop")
    if not args.repo.is_dir():
        raise UsageError(f"--repo {args.repo}: not a directory")
    return _plan_and_print(args, settings, args.repo, choose_source(args, settings))


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
    if args.format == "json":
        json.dump(plan_document(plan, repository=name), sys.stdout, indent=2)
        sys.stdout.write("\n")
    elif args.format == "markdown":
        sys.stdout.write(plan_markdown(plan, repository=name))
    else:
        print_table(plan, make_console(color=getattr(args, "color", "auto")), repository=name)
    failed = any(o.status == "error" for o in plan.outcomes) or bool(plan.errors)
    return EXIT_FAILED if failed else EXIT_OK


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
