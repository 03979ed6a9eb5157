"""``tortoise-bot run``: serve every configured repository once (plan, edit, PR, dashboard)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bot.config.bot import BotSettings, load_bot_settings
from bot.errors import EXIT_INTERNAL

HELP = "Serve every configured repository: plan, edit, branch, pull request, dashboard."


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", type=Path, help="Bot settings file (YAML).")


def execute(settings: BotSettings, *, config_path: Path | None = None) -> int:
    """One run over every repository; the exit code of ``tortoise-bot run``."""
    del settings, config_path
    print("tortoise-bot: run is not available in this build yet", file=sys.stderr)
    return EXIT_INTERNAL


def run(args: argparse.Namespace) -> int:
    return execute(load_bot_settings(args.config), config_path=args.config)
