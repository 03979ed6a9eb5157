"""`tortoise-bot run`: Serve every configured repository: plan, edit, branch, pull request, dashboard."""

from __future__ import annotations

import argparse
import sys

from bot.errors import EXIT_INTERNAL

HELP = "Serve every configured repository: plan, edit, branch, pull request, dashboard."


def configure(parser: argparse.ArgumentParser) -> None:
    del parser


def run(args: argparse.Namespace) -> int:
    del args
    print("tortoise-bot: this command is not available in this build yet", file=sys.stderr)
    return EXIT_INTERNAL
