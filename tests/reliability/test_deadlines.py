"""Every wait on Prometheus is bounded: a request by ``timeout_s`` in total (connect, send and
the whole answer, even one byte per second), a fetch by ``fetch_timeout_s``, a repository by
``run.repository_timeout_s`` (checked before each file, overlay, object and workload edit, not
only between stages); while nothing answers, the bot says what it waits for.

With ``timeout_s: 3`` a server trickling one byte per second kept ``plan`` busy 137.8 s when the
timeout applied to each socket read.
"""

from __future__ import annotations

import logging
import re
import time
from pathlib import Path

import pytest

import bot.demo
from bot.config.bot import BotSettings
from bot.config.metrics import PrometheusConfig
from bot.config.repo import RepoConfig
from bot.manifests import discover
from bot.metrics import prometheus
from bot.metrics.errors import PrometheusUnavailableError
from bot.metrics.prometheus import PrometheusSource
from bot.metrics.snapshot import SnapshotSource
from bot.metrics.source import HistoryRequest
from bot.model import WorkloadRef
from bot.pipeline.failures import Budget, RepositoryTimeoutError
from bot.pipeline.plan import repository_outcome
from tests.metrics.faults import Reply
from tests.reliability.hostile import (
    TOKEN,
    Trickle,
    bot_config,
    deployment,
    empty,
    fake_prometheus,
    plan_against,
    repo_files,
    serve_repositories,
    summary_lines,
)

DEMO_SNAPSHOT = Path(bot.demo.__file__).parent / "snapshot.zip"
SLOW_FILES = 1500
"""Deployment files whose discovery takes seconds (0.6 s per 300 on the 2-core machine)."""
REQUEST = HistoryRequest(WorkloadRef("Deployment", "shop", "web", "default"), ("web",))


@pytest.mark.parametrize("stage", ["body", "headers"])
def test_a_trickling_prometheus_is_cut_off_by_the_request_deadline(cli, tmp_path, stage):
    with Trickle(stage) as server:
        done, took = plan_against(cli, tmp_path, server.url)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "timed out: no complete answer within 3 s" in done.stdout + done.stderr
    assert server.seen == 2  # the request and its one retry, each cut off
    assert took < 30  # 2 x 3 s and start-up; per-read timeouts never ended this
    print(f"\ndeadline: plan against a {stage} trickle, timeout_s 3, 1 retry: {took:.1f} s")


def test_a_fetch_ends_within_its_budget_and_says_what_it_waits_for(monkeypatch, caplog):
    monkeypatch.setattr(prometheus, "WAIT_NOTICE_S", 0.5)
    caplog.set_level(logging.WARNING, logger="bot.metrics")
    with Trickle("body", interval_s=0.2) as server:
        config = PrometheusConfig(
            url=server.url, timeout_s=60, fetch_timeout_s=2, retries=3, backoff_s=0.01
        )
        source = PrometheusSource(config, env={})
        began = time.monotonic()
        with pytest.raises(PrometheusUnavailableError, match="no time left for this fetch"):
            source.fetch([REQUEST], start_s=0, end_s=3600)
        took = time.monotonic() - began
    assert took < 10  # the budget is 2 s; a request alone would have had 60 s, 4 times
    print(f"\ndeadline: fetch with fetch_timeout_s 2 against a trickle: {took:.1f} s")
    notices = [r.getMessage() for r in caplog.records if "no answer for" in r.getMessage()]
    assert notices and "a request gives up after 60 s (timeout_s), this fetch in" in notices[0]


def test_a_repository_over_its_time_budget_is_reported_and_the_next_is_served(
    cli, tmp_path, github_emulator
):
    gh = github_emulator
    serve_repositories(gh, {"octo/slow": repo_files("slow"), "octo/fast": repo_files("fast")})

    def answer(seen):
        if 'namespace="slow"' in seen.form.get("query", ""):
            return Reply(200, b"{}", delay_s=40)
        return empty(seen)

    with fake_prometheus(answer) as prom:
        config = bot_config(
            tmp_path / "bot.yaml",
            {"url": prom.url, "timeout_s": 60, "retries": 0},
            gh.api_url,
            ("octo/slow", "octo/fast"),
            run={"repository_timeout_s": 4},
        )
        done = cli("run", "--config", str(config), env={"GITHUB_TOKEN": TOKEN}, timeout=60)
    assert done.returncode == 1, done.stdout + done.stderr
    lines = summary_lines(done.stdout)
    assert lines["octo/slow"].startswith("FAILED")
    assert "took longer than run.repository_timeout_s (4 s)" in lines["octo/slow"]
    assert lines["octo/fast"].startswith("ok"), done.stdout
    (dashboard,) = gh.issues("octo/slow")
    assert "took longer than run.repository_timeout_s (4 s)" in (dashboard.body or "")
    assert gh.pulls("octo/slow") == []
    gh.assert_valid()


def test_the_repository_deadline_holds_inside_discovery(tmp_path):
    """A discovery that takes longer than ``run.repository_timeout_s`` stops at the file the
    time ran out on, not after reading the whole repository (it was checked only between
    stages)."""
    for i in range(SLOW_FILES):
        (tmp_path / f"d{i:04}.yaml").write_bytes(deployment("shop", f"w{i}"))
    began = time.monotonic()
    assert len(discover(tmp_path, RepoConfig()).inventory.workloads) == SLOW_FILES
    whole_s = time.monotonic() - began
    settings = BotSettings()
    budget = Budget.start(whole_s / 10)
    began = time.monotonic()
    with pytest.raises(RepositoryTimeoutError) as stopped:
        repository_outcome(
            tmp_path, SnapshotSource(DEMO_SNAPSHOT), settings, now_s=0, budget=budget
        )
    took = time.monotonic() - began
    assert re.search(
        r"stopped before reading (d\d{4}\.yaml|Deployment w\d+ in default)", str(stopped.value)
    ), stopped.value
    assert "nothing written" in str(stopped.value)
    assert took < whole_s / 2, (took, whole_s)
    print(
        f"\ndeadline: discovery of {SLOW_FILES} files takes {whole_s:.1f} s; with a budget of "
        f"{budget.seconds:.2f} s it stopped after {took:.2f} s"
    )
