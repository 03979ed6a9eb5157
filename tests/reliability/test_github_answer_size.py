"""An endless GitHub answer for one repository fails that repository only, with an error naming
the request, and the bot's memory stays within its bound (``github.max_response_bytes``): the
run is measured in its own process (peak resident memory, ``tests.forge.peak_rss``) against the
same run with every answer of normal size (measured: 85 MiB normal, 116 MiB flooded; without the
bound the reading never ends and grew past 10 GB within a minute)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from bot.model import MIB
from tests.conftest import PROJECT
from tests.forge.flood import FloodProxy
from tests.reliability.hostile import (
    TOKEN,
    bot_config,
    fake_prometheus,
    repo_files,
    serve_repositories,
    summary_lines,
)
from tests.support.github import GitHubEmulator

NAMES = ("octo/first", "octo/boom", "octo/last")
BOUND = 32 * MIB
"""The default of ``github.max_response_bytes``."""


def measured_run(config: Path) -> tuple[subprocess.CompletedProcess[str], int]:
    """``tortoise-bot run --config config`` in its own process: the process and its peak RSS."""
    env = {**os.environ, "GITHUB_TOKEN": TOKEN, "NO_COLOR": "1", "COLUMNS": "200"}
    done = subprocess.run(
        [sys.executable, "-m", "tests.forge.peak_rss", "run", "--config", str(config)],
        cwd=PROJECT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    found = re.findall(r"^peak_rss_kib=(\d+)$", done.stderr, re.MULTILINE)
    assert found, done.stdout + done.stderr
    return done, int(found[-1]) * 1024


def run_through(
    gh: GitHubEmulator, tmp: Path, path_regex: str
) -> tuple[subprocess.CompletedProcess[str], int, FloodProxy]:
    """A measured run of ``NAMES`` through a ``FloodProxy`` flooding ``path_regex``."""
    tmp.mkdir()
    with fake_prometheus() as prom, FloodProxy(gh.api_url, path_regex) as proxy:
        config = bot_config(tmp / "bot.yaml", {"url": prom.url}, proxy.api_url, NAMES)
        done, peak = measured_run(config)
    return done, peak, proxy


def test_an_endless_answer_fails_its_repository_within_the_memory_bound(tmp_path, github_emulator):
    gh = github_emulator
    serve_repositories(gh, {name: repo_files(name.split("/")[1]) for name in NAMES})
    calm, calm_peak, unused = run_through(gh, tmp_path / "calm", r"^/nothing$")
    assert calm.returncode == 0, calm.stdout + calm.stderr
    assert unused.flooded == 0
    done, peak, proxy = run_through(gh, tmp_path / "flood", r"/repos/octo/boom/pulls$")
    assert done.returncode == 1, done.stdout + done.stderr
    assert proxy.flooded == 1
    lines = summary_lines(done.stdout)
    assert lines["octo/first"].startswith("ok"), done.stdout
    assert lines["octo/last"].startswith("ok"), done.stdout
    assert lines["octo/boom"].startswith("FAILED"), done.stdout
    told = " ".join(done.stdout.split())  # the summary wraps its reasons
    assert (
        "octo/boom: list pull requests: the answer to GET /api/v3/repos/octo/boom/pulls?"
        "direction=desc&per_page=100&sort=created&state=all is larger than "
        "github.max_response_bytes (33,554,432 bytes): stopped reading there"
    ) in told
    (dashboard,) = gh.issues("octo/boom")
    assert "larger than github.max_response_bytes (33,554,432 bytes)" in (dashboard.body or "")
    assert TOKEN not in done.stdout + done.stderr + (dashboard.body or "")
    sys.stderr.write(f"peak RSS: calm {calm_peak / MIB:.0f} MiB, flooded {peak / MIB:.0f} MiB\n")
    assert peak < calm_peak + BOUND + 16 * MIB  # what was read up to the bound, and no more
    assert peak < 256 * MIB  # the memory of one shard's pod (docs/deployment.md)
    gh.assert_valid()
