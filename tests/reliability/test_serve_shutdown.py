"""``serve`` ends on SIGTERM within ``schedule.shutdown_grace_s``, even while its run waits on a
server that never finishes its answer; a run that finishes in time still ends it with code 0
(``test_serve_faults.py``).

A run stuck on a trickling answer behind a redirect ignored SIGTERM for 20 s and more: the
service waited for the run, however long it took.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import PROJECT
from tests.reliability.fleet import bot_env, python_module
from tests.reliability.hostile import Trickle, bot_config, repo_files, serve_repositories

pytestmark = [pytest.mark.github]

GRACE_S = 2.0


def _wait_for(check, timeout_s: float, what: str) -> None:
    end = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < end, f"no {what} within {timeout_s} s"
        time.sleep(0.05)


def test_sigterm_ends_a_run_stuck_in_a_wait_within_the_grace_period(tmp_path, github_emulator):
    gh = github_emulator
    serve_repositories(gh, {"octo/stuck": repo_files("stuck")})
    record = tmp_path / "runs.jsonl"
    with Trickle("body", interval_s=1.0) as prometheus:
        config = bot_config(
            tmp_path / "bot.yaml",
            {"url": prometheus.url, "timeout_s": 600, "retries": 0},
            gh.api_url,
            ("octo/stuck",),
            schedule={"shutdown_grace_s": GRACE_S},
        )
        argv = python_module(
            "tests.reliability.serving", str(config), "3600", str(time.time()), str(record)
        )
        with (tmp_path / "serve.log").open("w") as log:
            env = {**bot_env(), "PYTHONPATH": str(PROJECT)}
            proc = subprocess.Popen(argv, cwd=PROJECT, env=env, stdout=log, stderr=log)
            try:
                _wait_for(lambda: prometheus.seen > 0, 60, "request to Prometheus")
                time.sleep(0.5)  # the run now waits on the trickling answer
                began = time.monotonic()
                proc.send_signal(signal.SIGTERM)
                code = proc.wait(GRACE_S + 15)
                took = time.monotonic() - began
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
    output = Path(tmp_path / "serve.log").read_text()
    assert code == 1, output
    assert GRACE_S <= took < GRACE_S + 5, output  # the grace period, not the run's 600 s
    assert "still going 2 s after the signal (schedule.shutdown_grace_s)" in output
    assert "stopped, a run cut short" in output
    rows = [json.loads(line) for line in record.read_text().splitlines()]
    assert [r for r in rows if "start" in r] and not [r for r in rows if "end" in r]
    print(f"\nshutdown: SIGTERM during a stuck run, grace {GRACE_S:g} s: exited in {took:.1f} s")
