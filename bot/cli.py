"""The ``tortoise-bot`` command line: argument parsing and the single error boundary.

Each command is one module in ``bot/commands/`` with ``configure(parser)`` and
``run(args) -> int``; the registry is the literal dict ``bot.commands.COMMANDS``.
Exit codes: see ``bot.errors``.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from bot import __version__
from bot.commands import COMMANDS
from bot.config.errors import ConfigError
from bot.errors import EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_USAGE, UsageError
from bot.logs import redact, setup_logging

log = logging.getLogger("bot.cli")


def build_parser() -> argparse.ArgumentParser:
    """The parser with one sub-command per entry of ``COMMANDS``."""
    parser = argparse.ArgumentParser(
        prog="tortoise-bot",
        description="Right-size Kubernetes workloads in GitOps repositories, one pull request at a time.",
    )
    parser.add_argument("--version", action="version", version=f"tortoise-bot {__version__}")
    parser.add_argument(
        "--log-format", choices=("text", "json"), default="text", help="Log format on stderr."
    )
    parser.add_argument("--log-level", default="WARNING", help="DEBUG, INFO, WARNING or ERROR.")
    parser.add_argument(
        "--color", choices=("auto", "always", "never"), default="auto", help="Coloured output."
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, command in COMMANDS.items():
        command.configure(sub.add_parser(name, help=command.HELP, description=command.HELP))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; return the process exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    setup_logging(args.log_format, args.log_level)
    try:
        code: int = COMMANDS[args.command].run(args)
        return code
    except ConfigError as exc:
        print(f"tortoise-bot: invalid configuration:\n{redact(str(exc))}", file=sys.stderr)
        return EXIT_USAGE
    except UsageError as exc:
        print(f"tortoise-bot: {redact(str(exc))}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("tortoise-bot: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return 0
    except Exception as exc:  # the one boundary: anything else is a bug
        log.exception("internal error")
        print(f"tortoise-bot: internal error: {redact(repr(exc))}", file=sys.stderr)
        return EXIT_INTERNAL
