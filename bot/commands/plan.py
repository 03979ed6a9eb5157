"""`tortoise-bot plan`: Recommend for a local checkout (or --demo) and print the table and diff."""

from __future__ import annotations

import argparse
import sys

from bot.errors import EXIT_INTERNAL

HELP = "Recommend for a local checkout (or --demo) and print the table and diff."


def configure(parser: argparse.ArgumentParser) -> None:
    del parser


def run(args: argparse.Namespace) -> int:
    del args
    print("tortoise-bot: this command is not available in this build yet", file=sys.stderr)
    return EXIT_INTERNAL
