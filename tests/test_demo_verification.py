"""``plan --demo`` verifies the demo's recorded merged bot pull request (``bot/demo/pulls.json``)
from the embedded snapshot, which records what ran in the cluster: ``reviews``' CPU request went
from 600m to 165m in a rollout on the first day, and the seven days after it ran as predicted.
A snapshot recorded before those series existed replays the same plan and says why it cannot
verify."""

from __future__ import annotations

import json
import shutil
import zipfile
from datetime import datetime
from pathlib import Path

import jsonschema  # type: ignore[import-untyped]
import pytest

import bot.demo
from bot.demo.pulls import demo_pulls
from bot.demo.spec import REVIEWS_BEFORE_CPU, REVIEWS_CPU
from tests.support.demo_shop import console
from tests.support.snapshots import without_cluster_state

PROJECT = Path(__file__).resolve().parents[1]
SCHEMA = json.loads((PROJECT / "docs" / "schemas" / "plan.schema.json").read_text())
DEMO_DIR = Path(bot.demo.__file__).resolve().parent
REVIEWS = "default/shop/Deployment/reviews"


@pytest.fixture(scope="module")
def demo_json() -> dict:
    return json.loads(console("plan", "--demo", "--format", "json").stdout)


def _iso(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def test_the_demo_verifies_its_merged_pull_request_with_its_figures(demo_json):
    jsonschema.validate(demo_json, SCHEMA)
    verification = demo_json["verification"]
    assert verification["available"] is True and verification["reason"] is None
    (pull,) = verification["pulls"]
    assert pull["number"] == 42 and pull["restore"] == {}
    (workload,) = pull["workloads"]
    assert workload["workload"] == REVIEWS
    assert workload["status"] == "verified", workload
    assert workload["observed_days"] == pytest.approx(7.0)
    assert workload["findings"] == []
    # live after the merge, once the rollout replaced every pod (within the half hour after)
    live, merged = _iso(workload["live_at"]), _iso(pull["merged_at"])
    assert merged < live <= merged + 3600
    figures = {f["figure"]: f for f in workload["figures"]}
    cpu = figures["reviews: CPU minutes over request"]
    assert cpu["unit"] == "share" and cpu["predicted"] == 0.001
    before, after = cpu["before"], cpu["after"]
    assert before < after < 0.001 + 0.05  # at 600m nothing was over; at 165m a little, as predicted
    assert figures["OOM kills"] == {
        "figure": "OOM kills",
        "unit": "count",
        "predicted": 0,
        "before": 0,
        "after": 0,
    }
    assert figures["mean replicas"]["predicted"] is None  # nothing predicts it
    # the merged values are the manifests' and what the plan recommends again
    (reviews,) = [w for w in demo_json["workloads"] if w["name"] == "reviews"]
    assert reviews["status"] == "no-change", reviews["status"]


def test_the_recorded_pull_request_is_read_as_a_forge_lists_it():
    (pull,) = demo_pulls()
    assert pull.merged and pull.state is not None
    change = f"{REVIEWS}/reviews/requests.cpu"
    assert pull.state.changes == {change: REVIEWS_CPU}
    assert pull.state.previous == {change: REVIEWS_BEFORE_CPU}
    assert pull.state.predicted[REVIEWS].cpu_share == {"reviews": 0.001}


def test_a_broken_pull_request_file_is_a_clear_error(tmp_path):
    path = tmp_path / "pulls.json"
    path.write_text('{"pulls": [{"number": 1}]}')
    with pytest.raises(ValueError, match=r"pulls\.json: not a list of merged pull requests"):
        demo_pulls(path)


def test_the_table_and_the_markdown_show_the_verdict_and_its_figures():
    table = console("plan", "--demo", "--color", "never").stdout
    assert "verification: verified 1" in table
    assert f"#42 {REVIEWS}: verified: 7 days live, nothing worse than" in table
    assert "reviews: CPU minutes over request: predicted 0.1 %, before the merge 0.0 %" in table
    markdown = console("plan", "--demo", "--format", "markdown").stdout
    assert "### Verification" in markdown and "verified 1" in markdown
    assert "| reviews\\: CPU minutes over request | 0.1 % | 0.0 % |" in markdown


def test_an_older_snapshot_without_what_ran_plans_the_same_and_says_why(cli, tmp_path, demo_json):
    repo = tmp_path / "repo"
    shutil.copytree(DEMO_DIR / "repo", repo)
    old = tmp_path / "old.zip"
    without_cluster_state(DEMO_DIR / "snapshot.zip", old)
    done = cli(
        "plan", "--repo", str(repo), "--snapshot", str(old), "--config",
        str(DEMO_DIR / "bot.yaml"), "--format", "json", "--force",
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr
    document = json.loads(done.stdout)
    jsonschema.validate(document, SCHEMA)
    verification = document["verification"]
    assert verification["available"] is False and verification["pulls"] == []
    assert (
        "old.zip was recorded without the kube-state-metrics and cAdvisor series"
        in (verification["reason"])
    )
    assert "record it again with `tortoise-bot snapshot`" in verification["reason"]
    statuses = {w["name"]: w["status"] for w in document["workloads"]}
    assert statuses == {w["name"]: w["status"] for w in demo_json["workloads"]}


def test_a_damaged_cluster_member_is_a_corrupt_snapshot_naming_the_file(tmp_path):
    from bot.metrics.errors import SnapshotError
    from bot.metrics.snapshot import read_snapshot

    damaged = tmp_path / "damaged.zip"
    with zipfile.ZipFile(DEMO_DIR / "snapshot.zip") as src, zipfile.ZipFile(damaged, "w") as dst:
        members = [i for i in src.infolist() if i.filename.startswith("k")]
        assert members  # the demo records what ran in the cluster
        for info in src.infolist():
            if info is not members[0]:
                dst.writestr(info, src.read(info))
    with pytest.raises(SnapshotError, match="corrupt snapshot") as raised:
        read_snapshot(damaged)
    assert "damaged.zip" in str(raised.value)
