"""CLI commands, one module each; the registry is this literal dict.

A command's module, and all it imports, is loaded only when that command is run or shows its
own help (``CommandEntry.load``): ``tortoise-bot --help`` reads only this file, and each
command pays for what it uses alone.
"""

from __future__ import annotations

import argparse
import importlib
from dataclasses import dataclass
from typing import Protocol, cast


class Command(Protocol):
    """What a command module provides."""

    def configure(self, parser: argparse.ArgumentParser) -> None: ...

    def run(self, args: argparse.Namespace) -> int: ...


@dataclass(frozen=True, slots=True)
class CommandEntry:
    """A command as the top-level help lists it, and where its module is."""

    module: str
    """Dotted module name: ``configure(parser)`` and ``run(args) -> int``."""
    help: str
    """One line, shown by ``tortoise-bot --help`` and as the command's description."""

    def load(self) -> Command:
        """The command's module (imported now, once)."""
        return cast(Command, importlib.import_module(self.module))


COMMANDS: dict[str, CommandEntry] = {
    "plan": CommandEntry(
        "bot.commands.plan",
        "Recommend for a local checkout (or --demo) and print the table and diff.",
    ),
    "run": CommandEntry(
        "bot.commands.run",
        "Serve every configured repository: plan, edit, branch, pull request, dashboard.",
    ),
    "explain": CommandEntry(
        "bot.commands.explain", "Every number for one workload and the rule behind it."
    ),
    "validate": CommandEntry(
        "bot.commands.validate",
        "Check a repository's opt-in file and manifests and print the inventory.",
    ),
    "serve": CommandEntry(
        "bot.commands.serve",
        "Long-running mode: run on a cron schedule, with a health endpoint.",
    ),
    "recommend": CommandEntry(
        "bot.commands.recommend", "Run the engine on one workload's history given as JSON."
    ),
    "set": CommandEntry(
        "bot.commands.set_values",
        "Pin explicit values through the manifest editor and print the diff.",
    ),
    "doctor": CommandEntry(
        "bot.commands.doctor",
        "Check that Prometheus has the series the bot reads; name what is missing and the fix.",
    ),
    "snapshot": CommandEntry(
        "bot.commands.snapshot",
        "Record the metrics a repository needs into one compressed file.",
    ),
    "simulate": CommandEntry(
        "bot.commands.simulate",
        "Write a simulated history of a repository's workloads (a snapshot for --snapshot).",
    ),
    "schema": CommandEntry(
        "bot.commands.schema",
        "Write the configuration JSON Schemas and the input document schemas, and refresh the "
        "tables in docs/configuration.md.",
    ),
}
