"""The demo's pull-request bodies, byte for byte (``tests/report/golden/*.md``).

A change to what a body says shows here as a diff to review. After a deliberate change,
rewrite the files with ``TORTOISE_BOT_UPDATE_GOLDEN=1 pytest tests/report/test_golden.py``
and read the diff before committing it.
"""

from __future__ import annotations

import difflib
import os
import re
import shutil
from pathlib import Path

import pytest

import bot.demo
from bot.config.bot import load_bot_settings
from bot.config.repo import load_repo_config
from bot.metrics.snapshot import SnapshotSource
from bot.pipeline.plan import RepositoryOutcome, repository_outcome
from bot.pipeline.proposals import build_proposals
from bot.report import Proposal, render_pull_request

DEMO_DIR = Path(bot.demo.__file__).resolve().parent
GOLDEN = Path(__file__).resolve().parent / "golden"
UPDATE = os.environ.get("TORTOISE_BOT_UPDATE_GOLDEN") == "1"
DASHBOARD = "https://github.com/octo/shop/issues/1"


@pytest.fixture(scope="module")
def demo_plan(tmp_path_factory: pytest.TempPathFactory) -> RepositoryOutcome:
    root = tmp_path_factory.mktemp("golden") / "demo-shop"
    shutil.copytree(DEMO_DIR / "repo", root)
    source = SnapshotSource(DEMO_DIR / "snapshot.zip")
    settings = load_bot_settings(DEMO_DIR / "bot.yaml")
    grouping = load_repo_config(root).pull_requests.grouping
    return repository_outcome(root, source, settings, now_s=source.end_s, grouping=grouping)


@pytest.fixture(scope="module")
def demo_proposals(demo_plan: RepositoryOutcome) -> dict[str, Proposal]:
    return {p.workloads[0].name: p for p in build_proposals(demo_plan)}


def _body(plan: RepositoryOutcome, proposal: Proposal) -> str:
    _, body = render_pull_request(proposal, prices=plan.prices, dashboard_url=DASHBOARD)
    return body


@pytest.mark.parametrize("name", ["frontend", "cart", "checkout", "redis"])
def test_demo_body_is_the_golden_one(demo_plan, demo_proposals, name):
    body = _body(demo_plan, demo_proposals[name])
    path = GOLDEN / f"{name}.md"
    if UPDATE:
        path.write_text(body, encoding="utf-8")
    expected = path.read_text(encoding="utf-8")
    diff = "".join(
        difflib.unified_diff(
            expected.splitlines(keepends=True),
            body.splitlines(keepends=True),
            f"golden/{name}.md",
            "rendered",
        )
    )
    assert body == expected, f"the {name} body changed:\n{diff}"


def test_the_frontend_body_tells_the_replica_aware_cost(demo_plan, demo_proposals):
    """Smaller pods, more of them: the cost with replicas is what the summary states."""
    body = _body(demo_plan, demo_proposals["frontend"])
    rec = demo_proposals["frontend"].change_set.recommendations[0]
    assert rec.replay is not None
    current, proposed = rec.replay.current, rec.replay.proposed
    assert proposed.core_hours < current.core_hours  # a smaller bill, replicas included
    summary = body.split("\n", 1)[0]
    assert "Monthly cost with replicas \\$" in summary and "\\(-\\$" in summary
    assert "| minReplicas |" not in body  # the floor of 3 stays


def test_the_redis_body_tells_its_oom_kills(demo_plan, demo_proposals):
    body = _body(demo_plan, demo_proposals["redis"])
    assert "| predicted OOM kills | 2 | 0 |" in body
    assert re.search(
        r"redis was OOM-killed twice at its 512 MiB memory limit; at the proposed \d+ MiB limit "
        r"the replay predicts none\.",
        body.split("\n", 1)[0],
    )
    assert "restarted" not in body


@pytest.mark.parametrize("name", ["frontend", "cart", "checkout", "redis"])
def test_a_reviewer_reads_the_demo_bodies_in_a_minute(demo_plan, demo_proposals, name):
    """Under 3,000 characters before the folded part; one clock, stated; each note once."""
    body = _body(demo_plan, demo_proposals[name])
    visible = body.split("<details>", 1)[0]
    assert len(visible) < 3000, len(visible)
    assert "Times are UTC (`report.time_zone`)" in body
    if "hour of the week" in body:  # hours of the week name their own clock, and its setting
        assert "Sunday 00:00 Asia/Tokyo" in body or "on the Asia/Tokyo clock" in body
        assert "on the Asia/Tokyo clock of the replica slots (`recommend.admin.time_zone`)" in body
    notes = [line for line in body.splitlines() if line.startswith("- ")]
    assert len(notes) == len(set(notes))


def test_times_are_shown_on_the_display_clock_apart_from_the_slots(demo_plan):
    """``report.time_zone`` moves the data window (and backtest) times; the hours of the week
    stay on the replica slots' clock (``recommend.admin.time_zone``), named beside them."""
    settings = load_bot_settings(DEMO_DIR / "bot.yaml")
    berlin = settings.model_copy(
        update={"report": settings.report.model_copy(update={"time_zone": "Europe/Berlin"})}
    )
    root = demo_plan.root
    source = SnapshotSource(DEMO_DIR / "snapshot.zip")
    plan = repository_outcome(root, source, berlin, now_s=source.end_s, grouping="workload")
    proposal = next(p for p in build_proposals(plan) if p.workloads[0].name == "frontend")
    assert (proposal.display_zone, proposal.time_zone) == ("Europe/Berlin", "Asia/Tokyo")
    body = _body(plan, proposal)
    assert "Times are Europe/Berlin (`report.time_zone`)" in body
    (window,) = [line for line in body.splitlines() if line.startswith("- Window: ")]
    utc = _body(demo_plan, {p.workloads[0].name: p for p in build_proposals(demo_plan)}["frontend"])
    (utc_window,) = [line for line in utc.splitlines() if line.startswith("- Window: ")]
    assert window.endswith("Europe/Berlin \\(8.0 days\\)")
    assert utc_window.endswith("UTC \\(8.0 days\\)")
    assert window.split(" → ")[0] != utc_window.split(" → ")[0]  # an hour apart
    assert "Sunday 00:00 Asia/Tokyo" in body or "on the Asia/Tokyo clock" in body
