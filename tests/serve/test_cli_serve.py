"""``tortoise-bot serve`` as a process: health endpoint up, SIGTERM exits cleanly."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
import urllib.request

from tests.conftest import console_script


def test_serve_answers_health_and_stops_on_sigterm(tmp_path):
    config = tmp_path / "bot.yaml"
    config.write_text("schedule:\n  cron: '0 3 1 1 *'\n  timezone: Europe/Berlin\n  jitter_s: 0\n")
    proc = subprocess.Popen(
        [*console_script(), "serve", "--config", str(config), "--health-port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "NO_COLOR": "1"},
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        match = re.search(r"port (\d+)", line)
        assert match, line
        port = int(match.group(1))
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=5) as resp:
            body = json.loads(resp.read())
        assert resp.status == 200 and body["status"] == "ok"
        # 03:00 on 1 January in Berlin (UTC+1) is 02:00 UTC.
        assert body["next_run"].endswith("T03:00:00+01:00")
        time.sleep(0.2)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert "stopped" in out
    assert "SIGTERM" in err


def test_serve_rejects_a_bad_config_with_exit_2(cli, tmp_path):
    config = tmp_path / "bot.yaml"
    config.write_text("schedule:\n  cron: every day\n")
    result = cli("serve", "--config", str(config), "--health-port", "0")
    assert result.returncode == 2
    assert "schedule.cron" in result.stderr and "bot.yaml:2" in result.stderr
