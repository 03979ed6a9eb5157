"""``tortoise-bot serve``: run on the configured cron schedule, with health endpoints.

Each scheduled run does exactly what ``tortoise-bot run`` does. SIGTERM finishes the current
run, then exits 0; a run still going after ``schedule.shutdown_grace_s`` is cut: exit 1 (see
``bot.serve``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from apscheduler.triggers.base import BaseTrigger

from bot.commands import run as run_command
from bot.config.bot import BotSettings, load_bot_settings
from bot.model import SECONDS_PER_HOUR
from bot.serve import Service, cron_trigger


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", type=Path, help="Bot settings file (YAML).")
    parser.add_argument("--health-host", default="127.0.0.1", help="Health endpoint address.")
    parser.add_argument(
        "--health-port", type=int, default=8080, help="Health endpoint port (0 = any free port)."
    )
    parser.add_argument(
        "--max-run-s",
        type=float,
        default=6 * SECONDS_PER_HOUR,
        help="Liveness fails when one run takes longer than this many seconds.",
    )
    parser.add_argument("--run-now", action="store_true", help="Also run once at start-up.")


def make_service(
    settings: BotSettings,
    trigger: BaseTrigger,
    *,
    health_host: str = "127.0.0.1",
    health_port: int = 8080,
    max_run_s: float = 6 * SECONDS_PER_HOUR,
) -> Service:
    """The service: ``trigger`` fires one ``tortoise-bot run`` over ``settings``."""

    def job() -> int:
        return run_command.execute(settings)

    return Service(
        job,
        trigger,
        health_host=health_host,
        health_port=health_port,
        max_run_s=max_run_s,
        shutdown_grace_s=settings.schedule.shutdown_grace_s,
    )


def run(args: argparse.Namespace) -> int:
    settings = load_bot_settings(args.config)
    service = make_service(
        settings,
        cron_trigger(settings.schedule),
        health_host=args.health_host,
        health_port=args.health_port,
        max_run_s=args.max_run_s,
    )
    return service.serve_until_signalled(run_now=args.run_now)
