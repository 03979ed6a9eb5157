"""The scheduler: no overlapping runs, time zones, health endpoints, graceful stop."""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from datetime import UTC, datetime

import pytest
from apscheduler.triggers.interval import IntervalTrigger

from bot.config.bot import ScheduleConfig
from bot.serve import Service, cron_trigger


def _get(port: int, path: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


@pytest.mark.parametrize(
    ("cron", "tz", "now_utc", "expected_utc"),
    [
        # 06:00 in Tokyo (UTC+9) is 21:00 UTC the day before.
        (
            "0 6 * * *",
            "Asia/Tokyo",
            datetime(2026, 11, 23, 12, 0, tzinfo=UTC),
            datetime(2026, 11, 23, 21, 0, tzinfo=UTC),
        ),
        # 06:00 in New York on 2026-11-24 (EST, UTC-5) is 11:00 UTC.
        (
            "0 6 * * *",
            "America/New_York",
            datetime(2026, 11, 23, 12, 0, tzinfo=UTC),
            datetime(2026, 11, 24, 11, 0, tzinfo=UTC),
        ),
        # Weekdays only: Saturday 2026-11-28 -> Monday 2026-11-30 06:00 UTC.
        (
            "0 6 * * 1-5",
            "UTC",
            datetime(2026, 11, 28, 12, 0, tzinfo=UTC),
            datetime(2026, 11, 30, 6, 0, tzinfo=UTC),
        ),
    ],
    ids=["tokyo", "new-york-dst-off", "weekdays"],
)
def test_cron_fires_in_its_time_zone(cron, tz, now_utc, expected_utc):
    trigger = cron_trigger(ScheduleConfig(cron=cron, timezone=tz, jitter_s=0))
    fire = trigger.get_next_fire_time(None, now_utc)
    assert fire is not None
    assert fire.astimezone(UTC) == expected_utc


def test_jitter_delays_within_bounds():
    trigger = cron_trigger(ScheduleConfig(cron="0 6 * * *", timezone="UTC", jitter_s=120))
    now = datetime(2026, 11, 23, 0, 0, tzinfo=UTC)
    base = datetime(2026, 11, 23, 6, 0, tzinfo=UTC)
    delays = {(trigger.get_next_fire_time(None, now) - base).total_seconds() for _ in range(30)}
    assert all(0 <= d <= 120 for d in delays)
    assert len(delays) > 1  # actually random


def test_runs_never_overlap_and_skips_are_counted():
    active, peak, lock = 0, 0, threading.Lock()

    def slow_job() -> int:
        nonlocal active, peak
        with lock:
            active += 1
            peak = max(peak, active)
        time.sleep(0.6)
        with lock:
            active -= 1
        return 0

    service = Service(slow_job, IntervalTrigger(seconds=0.1), health_port=0)
    service.start(run_now=True)
    time.sleep(1.5)
    service.stop()
    assert peak == 1
    assert service.stats.runs >= 2
    assert service.stats.skipped_overlaps >= 1


def test_health_endpoints_and_graceful_stop_waits_for_the_run():
    started, finished = threading.Event(), threading.Event()

    def job() -> int:
        started.set()
        time.sleep(0.5)
        finished.set()
        return 1

    service = Service(job, IntervalTrigger(hours=1), health_port=0, max_run_s=0.2)
    service.start(run_now=True)
    port = service.health_port
    assert started.wait(5)
    status, body = _get(port, "/readyz")
    assert status == 200 and body["status"] == "ok"
    time.sleep(0.3)  # the run now exceeds max_run_s: liveness fails
    status, body = _get(port, "/healthz")
    assert status == 503 and body["running_since"] is not None
    service.stop()  # returns only after the job has finished
    assert finished.is_set()
    assert service.stats.failures == 1 and service.stats.last_exit_code == 1
    assert not service.ready()


def test_failed_job_does_not_stop_the_schedule():
    calls = []

    def broken() -> int:
        calls.append(1)
        raise RuntimeError("boom")

    service = Service(broken, IntervalTrigger(seconds=0.2), health_port=0)
    service.start(run_now=True)
    time.sleep(0.7)
    service.stop()
    assert len(calls) >= 2
    assert service.stats.failures == len(calls)


@pytest.mark.parametrize(
    ("field", "expected"),
    [
        ("1-5", "mon-fri"),
        ("0", "sun"),
        ("7", "sun"),
        ("*", "*"),
        ("*/2", "*/2"),
        ("1,3,5", "mon,wed,fri"),
    ],
)
def test_crontab_weekdays_become_names(field, expected):
    from bot.serve import crontab_day_of_week

    assert crontab_day_of_week(field) == expected
