"""simulate and plan end to end on the demo shop with a public-style CronJob (an init container,
``concurrencyPolicy``, history limits, comments on its resources) and a bare Job beside its
workloads: each run a pod of its own, sized on the runs' peaks."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import PROJECT
from tests.support.demo_shop import NOW, console, copy_shop, plan, simulate

JOBS = PROJECT / "tests" / "manifests" / "jobs" / "base"


@pytest.fixture(scope="module")
def jobs_shop(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo repository with ``apps/raw/cronjob.yaml`` (CronJob ``nightly-report``) and
    ``apps/raw/job.yaml`` (Job ``reindex``), never changed: each test edits a copy
    (``shop``)."""
    root = copy_shop(tmp_path_factory.mktemp("jobs") / "shop")
    for name in ("cronjob", "job"):
        shutil.copy(JOBS / f"{name}.yaml", root / "apps" / "raw" / f"{name}.yaml")
    return root


@pytest.fixture
def shop(jobs_shop: Path, tmp_path: Path) -> Path:
    """A copy of ``jobs_shop`` for this test alone."""
    return Path(shutil.copytree(jobs_shop, tmp_path / "shop"))


@pytest.fixture(scope="module")
def history(jobs_shop: Path) -> Path:
    """The simulated history of ``jobs_shop``, once for the module (simulating reads only the
    manifests, which a test changes after it, if at all)."""
    out = jobs_shop.parent / "history.zip"
    result = simulate(console, jobs_shop, out)
    assert "simulated 7 workloads" in result.stdout
    return out


def _plan(cli, shop: Path, history: Path, *more: str):
    return plan(cli, shop, history, *more).stdout


def test_plan_sizes_a_cronjob_and_a_job_on_their_runs(cli, shop, history):
    doc = json.loads(_plan(cli, shop, history, "--format", "json"))
    by_name = {w["name"]: w for w in doc["workloads"]}
    report, reindex = by_name["nightly-report"], by_name["reindex"]
    assert (report["kind"], reindex["kind"]) == ("CronJob", "Job")
    assert report["hpa"] is None and report["status"] in ("changes", "no-change")
    notes = [n["message"] for n in report["notes"] if n["code"] == "job-runs"]
    # 14 days of a run every 4 hours (the simulator's default)
    assert notes and notes[0].startswith("CronJob nightly-report: sized on 84 runs (p95 of runs")
    assert [n for n in reindex["notes"] if n["code"] == "job-runs"]
    text = _plan(cli, shop, history)
    assert "CronJob nightly-report: sized on 84 runs" in text
    table = text.split("CronJob/shop/nightly-report")[1].split("backtest")[0]
    assert "CPU minutes over request, in the runs" in table
    assert "predicted OOM kills in the runs" in table
    assert "replicas" not in table and "mean with replicas" not in table
    assert "vertical.ideal: runs' p95 peak" in table and "VPA target" not in table


def test_too_few_runs_is_gathering_data_with_the_count(cli, shop, history):
    config = shop / ".tortoise-bot.yaml"
    text = config.read_text()
    assert text.count("workloads:\n") == 1
    override = "  - match: Job/shop/reindex\n    recommend: {jobs: {min_runs: 100}}\n"
    config.write_text(text.replace("workloads:\n", "workloads:\n" + override))
    by_name = {
        w["name"]: w for w in json.loads(_plan(cli, shop, history, "--format", "json"))["workloads"]
    }
    reindex = by_name["reindex"]
    assert reindex["status"] == "gathering-data"
    assert reindex["reasons"] == ["84 runs in the window; needs ≥ 100"]
    assert by_name["nightly-report"]["status"] == "changes"  # the default, 3, for the others


def test_set_refuses_replicas_of_a_cronjob(cli, shop):
    refused = cli("set", "--repo", str(shop), "cj/shop/nightly-report", "replicas=2")
    assert refused.returncode != 0
    assert "a CronJob runs pods to completion and has no replicas" in refused.stderr
    done = cli("set", "--repo", str(shop), "cronjob/shop/nightly-report", "report.requests.cpu=2")
    assert done.returncode == 0, done.stderr
    assert '+                  cpu: "2" # the aggregation is single-threaded' in done.stdout


def test_explain_says_what_a_cronjob_is_sized_on(cli, shop, history):
    result = cli(
        "explain", "--repo", str(shop), "--snapshot", str(history), "--now", NOW,
        "CronJob/shop/nightly-report",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "CronJob nightly-report: sized on 84 runs (p95 of runs' peaks: report cpu" in (
        result.stdout.replace("\n", " ")
    )
    assert "runs' p95 peak" in result.stdout
