"""``tortoise-bot serve`` on a short interval instead of its cron schedule, each run recorded.

``python -m tests.reliability.serving CONFIG INTERVAL_S NOW_S RECORD`` builds the service the
way ``tortoise-bot serve`` does (``bot.commands.serve.make_service``), with an APScheduler
``IntervalTrigger`` of ``INTERVAL_S`` seconds in place of the cron trigger (cron cannot fire
more than once a minute), and runs it until SIGTERM. Every run reads its history window up to
``NOW_S`` (what ``run --now`` does: the end of a recorded history). Each run appends two JSON
lines to RECORD: ``{"start": t}`` when it begins and, when it ends, ``{"end": t, "code": exit
code, "rss_kib": resident memory, "fds": open file descriptors, "threads": live threads}``
(``t`` monotonic seconds).

The bot's modules are imported inside ``main``, not at the top: each run parses the checkout
once in a worker process started from a ``forkserver``, and such a worker imports the main
module again (as ``__mp_main__``) before its call, so a heavy top level would cost every run
the bot's whole import (about 1 s, most of a run here).
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
import time
from pathlib import Path


def resident_kib() -> int:
    """VmRSS of this process, KiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS in /proc/self/status")


def _run_at(now_s: float) -> None:
    """Every ``tortoise-bot run`` of this process ends its window at ``now_s``."""
    from bot.commands import run as run_command
    from bot.config.bot import BotSettings

    execute = run_command.execute

    def at_now(settings: BotSettings) -> int:
        return execute(settings, now_s=now_s)

    run_command.execute = at_now  # type: ignore[assignment]


def main(config: str, interval_s: str, now_s: str, record: str) -> int:
    from apscheduler.triggers.interval import IntervalTrigger

    from bot.commands.serve import make_service
    from bot.config.bot import load_bot_settings
    from bot.logs import setup_logging

    setup_logging("text", "ERROR")
    # a trigger every few milliseconds finds a run going: APScheduler warns of each skip
    logging.getLogger("apscheduler").setLevel(logging.ERROR)
    _run_at(float(now_s))
    service = make_service(
        load_bot_settings(Path(config)), IntervalTrigger(seconds=float(interval_s)), health_port=0
    )
    job = service.job
    out = open(record, "a", buffering=1, encoding="utf-8")  # noqa: SIM115  (lives as long as we do)

    def recorded() -> int:
        out.write(json.dumps({"start": time.monotonic()}) + "\n")
        code = job()
        line = {
            "end": time.monotonic(),
            "code": code,
            "rss_kib": resident_kib(),
            "fds": len(os.listdir("/proc/self/fd")),
            "threads": threading.active_count(),
        }
        out.write(json.dumps(line) + "\n")
        return code

    service.job = recorded
    return service.serve_until_signalled(run_now=True)


if __name__ == "__main__":
    raise SystemExit(main(*sys.argv[1:]))
