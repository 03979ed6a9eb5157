"""`tortoise-bot validate`: Check a repository's opt-in file and manifests and print the inventory."""

from __future__ import annotations

import argparse
import sys

from bot.errors import EXIT_INTERNAL

HELP = "Check a repository's opt-in file and manifests and print the inventory."


def configure(parser: argparse.ArgumentParser) -> None:
    del parser


def run(args: argparse.Namespace) -> int:
    del args
    print("tortoise-bot: this command is not available in this build yet", file=sys.stderr)
    return EXIT_INTERNAL
