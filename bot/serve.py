"""Long-running mode: run the bot on a cron schedule, with liveness and readiness endpoints.

- Schedule: a 5-field crontab expression in an IANA time zone, with random jitter
  (APScheduler's ``CronTrigger``).
- No overlapping runs: one job, ``max_instances=1``; a trigger that fires while a run is still
  going is skipped (``coalesce=True``) and counted in ``/readyz``.
- Graceful shutdown: SIGTERM or SIGINT stops the scheduler, waits for the current run to finish
  and exits 0; a run still going after ``shutdown_grace_s`` (a wait on a server that never
  answers, whatever it is) is left behind: the process exits 1 at once, before Kubernetes'
  SIGKILL (``terminationGracePeriodSeconds``). A run cut this way is like a killed one: its
  checkout is temporary and the next run picks up from what GitHub holds.
- Health: ``GET /healthz`` (liveness) answers 200 unless a run has exceeded ``max_run_s``;
  ``GET /readyz`` (readiness) answers 200 once the scheduler is running, with a JSON status body.
"""

from __future__ import annotations

import json
import logging
import os
import re
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import FrameType
from typing import Any
from zoneinfo import ZoneInfo

from apscheduler.events import EVENT_JOB_MAX_INSTANCES, JobEvent
from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.triggers.base import BaseTrigger
from apscheduler.triggers.cron import CronTrigger

from bot.config.bot import ScheduleConfig
from bot.model import SECONDS_PER_HOUR

log = logging.getLogger("bot.serve")

JOB_ID = "tortoise-bot-run"
"""The one scheduled job."""


CRONTAB_WEEKDAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat", "sun")
"""crontab(5) day-of-week numbers 0-7 (0 and 7 are Sunday) as names."""


def crontab_day_of_week(field: str) -> str:
    """The crontab day-of-week ``field`` with numbers replaced by names.

    APScheduler 3 reads numeric days of week as 0 = Monday, while crontab(5) reads 0 = Sunday
    (``CronTrigger.from_crontab`` passes the field through unchanged), so ``1-5`` would mean
    Tuesday to Saturday. Names are unambiguous in both.
    """
    return re.sub(r"(?<![/\d])([0-7])(?!\d)", lambda m: CRONTAB_WEEKDAYS[int(m.group(1))], field)


def cron_trigger(schedule: ScheduleConfig) -> CronTrigger:
    """The trigger for ``schedule``: crontab fields in ``schedule.timezone`` plus jitter."""
    minute, hour, day, month, day_of_week = schedule.cron.split()
    trigger = CronTrigger(
        minute=minute,
        hour=hour,
        day=day,
        month=month,
        day_of_week=crontab_day_of_week(day_of_week),
        timezone=ZoneInfo(schedule.timezone),
    )
    trigger.jitter = schedule.jitter_s or None
    return trigger


@dataclass
class RunStats:
    """What the health endpoints report; updated by the job wrapper."""

    started_at: float | None = None
    runs: int = 0
    failures: int = 0
    skipped_overlaps: int = 0
    last_exit_code: int | None = None
    last_finished_at: float | None = None
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def snapshot(self) -> dict[str, Any]:
        with self.lock:
            return {
                "running_since": self.started_at,
                "runs": self.runs,
                "failures": self.failures,
                "skipped_overlaps": self.skipped_overlaps,
                "last_exit_code": self.last_exit_code,
                "last_finished_at": self.last_finished_at,
            }


class Service:
    """A scheduler running ``job`` (returns an exit code) plus the health endpoints."""

    def __init__(
        self,
        job: Callable[[], int],
        trigger: BaseTrigger,
        *,
        health_host: str = "127.0.0.1",
        health_port: int = 8080,
        max_run_s: float = 6 * SECONDS_PER_HOUR,
        shutdown_grace_s: float = 25.0,
    ) -> None:
        self.job = job
        self.trigger = trigger
        self.max_run_s = max_run_s
        self.shutdown_grace_s = shutdown_grace_s
        self.stats = RunStats()
        self.stopping = threading.Event()
        self.idle = threading.Event()
        """Set while no run is going."""
        self.idle.set()
        self.scheduler = BackgroundScheduler(
            job_defaults={"max_instances": 1, "coalesce": True, "misfire_grace_time": 60}
        )
        self.scheduler.add_listener(self._on_overlap, EVENT_JOB_MAX_INSTANCES)
        self.health = ThreadingHTTPServer((health_host, health_port), _health_handler(self))
        self.health.daemon_threads = True

    @property
    def health_port(self) -> int:
        return int(self.health.server_address[1])

    def _on_overlap(self, event: JobEvent) -> None:
        del event
        with self.stats.lock:
            self.stats.skipped_overlaps += 1
        log.warning("previous run still going: this trigger is skipped (no overlapping runs)")

    def _run_once(self) -> None:
        self.idle.clear()
        with self.stats.lock:
            self.stats.started_at = time.time()
        code = 3
        try:
            code = self.job()
        except Exception:  # a failed run must not stop the schedule
            log.exception("run failed")
        finally:
            with self.stats.lock:
                self.stats.runs += 1
                self.stats.failures += int(code != 0)
                self.stats.last_exit_code = code
                self.stats.started_at = None
                self.stats.last_finished_at = time.time()
            self.idle.set()

    def live(self) -> bool:
        """False when a run has been going for longer than ``max_run_s`` (stuck)."""
        started = self.stats.started_at
        return started is None or time.time() - started <= self.max_run_s

    def ready(self) -> bool:
        return bool(self.scheduler.running) and not self.stopping.is_set()

    def next_run_time(self) -> datetime | None:
        job = self.scheduler.get_job(JOB_ID)
        return None if job is None else job.next_run_time

    def start(self, *, run_now: bool = False) -> None:
        """Start the health server and the scheduler (both in background threads)."""
        threading.Thread(target=self.health.serve_forever, name="health", daemon=True).start()
        self.scheduler.add_job(self._run_once, self.trigger, id=JOB_ID, name="run")
        self.scheduler.start()
        if run_now:
            job = self.scheduler.get_job(JOB_ID)
            assert job is not None
            job.modify(next_run_time=datetime.now(job.next_run_time.tzinfo))
        log.info("scheduler started; next run at %s", self.next_run_time())

    def stop(self) -> bool:
        """Stop scheduling, wait up to ``shutdown_grace_s`` for a running job to finish, stop
        the health server; whether no run is left going."""
        self.stopping.set()
        finished = self.idle.wait(self.shutdown_grace_s)
        if self.scheduler.running:
            self.scheduler.shutdown(wait=finished)
        self.health.shutdown()
        self.health.server_close()
        return finished

    def serve_until_signalled(self, *, run_now: bool = False) -> int:
        """Run until SIGTERM/SIGINT, then shut down gracefully; returns 0."""

        def on_signal(signum: int, frame: FrameType | None) -> None:
            del frame
            log.warning(
                "received %s: finishing the current run, then exiting", signal.Signals(signum).name
            )
            self.stopping.set()

        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)
        self.start(run_now=run_now)
        print(f"tortoise-bot serve: health on port {self.health_port}", flush=True)
        self.stopping.wait()
        if not self.stop():
            log.error(
                "the run is still going %g s after the signal (schedule.shutdown_grace_s): "
                "exiting without it",
                self.shutdown_grace_s,
            )
            print("tortoise-bot serve: stopped, a run cut short", flush=True)
            logging.shutdown()
            sys.stderr.flush()
            os._exit(1)  # the run's thread cannot be stopped: end the process, as SIGKILL would
        print("tortoise-bot serve: stopped", flush=True)
        return 0


def _health_handler(service: Service) -> type[BaseHTTPRequestHandler]:
    class Health(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path == "/healthz":
                ok = service.live()
            elif self.path == "/readyz":
                ok = service.ready()
            else:
                self.send_error(404)
                return
            next_run = service.next_run_time() if service.scheduler.running else None
            body = json.dumps(
                {
                    "status": "ok" if ok else "unavailable",
                    "next_run": next_run.isoformat() if next_run else None,
                    **service.stats.snapshot(),
                }
            ).encode()
            self.send_response(200 if ok else 503)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            del format, args

    return Health
