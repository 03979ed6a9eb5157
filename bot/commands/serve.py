"""`tortoise-bot serve`: Long-running mode: run on a cron schedule, with a health endpoint."""

from __future__ import annotations

import argparse
import sys

from bot.errors import EXIT_INTERNAL

HELP = "Long-running mode: run on a cron schedule, with a health endpoint."


def configure(parser: argparse.ArgumentParser) -> None:
    del parser


def run(args: argparse.Namespace) -> int:
    del args
    print("tortoise-bot: this command is not available in this build yet", file=sys.stderr)
    return EXIT_INTERNAL
