"""`tortoise-bot snapshot`: Record the metrics a repository needs into one compressed file."""

from __future__ import annotations

import argparse
import sys

from bot.errors import EXIT_INTERNAL

HELP = "Record the metrics a repository needs into one compressed file."


def configure(parser: argparse.ArgumentParser) -> None:
    del parser


def run(args: argparse.Namespace) -> int:
    del args
    print("tortoise-bot: this command is not available in this build yet", file=sys.stderr)
    return EXIT_INTERNAL
