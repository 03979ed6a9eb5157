"""plan end to end on the demo shop with objects of kinds the bot does not right-size beside its
workloads: each is in the table, the markdown, the JSON (valid against the plan schema) and the
dashboard as ``skipped`` with ``unsupported kind <apiVersion>/<kind>``, its file and line."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import jsonschema  # type: ignore[import-untyped]
import pytest

from bot.config.bot import BotSettings
from bot.forge.dashboard import dashboard_body
from bot.forge.results import PublishReport
from bot.metrics.snapshot import SnapshotSource
from bot.pipeline.plan import repository_outcome
from bot.pipeline.proposals import workload_statuses
from bot.report import Prices
from tests.conftest import PROJECT
from tests.support.demo_shop import NOW, console, copy_shop, plan, simulate

OTHERS = PROJECT / "tests" / "manifests" / "unsupported" / "base" / "others.yaml"
PLAN_SCHEMA = json.loads((PROJECT / "docs" / "schemas" / "plan.schema.json").read_text())


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo repository with ``apps/raw/others.yaml`` (a ReplicaSet, a Pod, a Knative
    Service, a CloneSet... in namespace ``default``), read and never changed by the tests."""
    root = copy_shop(tmp_path_factory.mktemp("unsupported") / "shop")
    shutil.copy(OTHERS, root / "apps" / "raw" / "others.yaml")
    return root


@pytest.fixture(scope="module")
def history(shop: Path) -> Path:
    """The simulated history of ``shop``, once for the module."""
    out = shop.parent / "history.zip"
    simulate(console, shop, out)
    return out


def _plan(cli, shop: Path, history: Path, fmt: str) -> str:
    return plan(cli, shop, history, "--format", fmt).stdout


def test_plan_json_lists_them_skipped_and_valid(cli, shop, history):
    doc = json.loads(_plan(cli, shop, history, "json"))
    jsonschema.validate(doc, PLAN_SCHEMA)
    by_kind = {w["kind"]: w for w in doc["workloads"] if w["namespace"] == "default"}
    rs = by_kind["ReplicaSet"]
    assert rs["status"] == "skipped"
    assert rs["reasons"] == ["unsupported kind apps/v1/ReplicaSet (apps/raw/others.yaml:23)"]
    assert rs["unsupported"] == {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "file": "apps/raw/others.yaml",
        "line": 23,
        "reason": "unsupported kind apps/v1/ReplicaSet",
    }
    assert rs["files"] == ["apps/raw/others.yaml"]
    assert {"ReplicationController", "Service", "CloneSet", "Pod"} <= set(by_kind)
    assert "PodTemplate" not in by_kind and "ConfigMap" not in by_kind
    # the shop's own workloads are still proposed for, and nothing is written for the others:
    # in others.yaml only the Job (lines 45-58) and the CronJob (59-74), workloads, are edited
    assert any(w["status"] == "changes" for w in doc["workloads"])
    others = doc["diff"].split("+++ b/apps/raw/others.yaml", 1)[1].split("\n--- a/", 1)[0]
    starts = [int(m) for m in re.findall(r"^@@ -(\d+)", others, re.MULTILINE)]
    assert starts and all(45 <= start < 75 for start in starts), starts
    bad = json.loads(json.dumps(doc))
    next(w for w in bad["workloads"] if "unsupported" in w)["unsupported"]["line"] = "23"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, PLAN_SCHEMA)


def test_plan_table_and_markdown_show_them(cli, shop, history):
    table = " ".join(_plan(cli, shop, history, "table").split())
    assert "skipped sample unsupported kind apps.kruise.io/v1alpha1/CloneSet" in table
    assert "(apps/raw/others.yaml:88)" in table
    markdown = _plan(cli, shop, history, "markdown")
    assert (
        "| skipped | Pod/default/debug&#64;default | unsupported kind v1/Pod "
        r"\(apps/raw/others.yaml\:108\) |" in markdown
    )


def test_dashboard_lists_them_under_skipped(shop, history):
    plan = repository_outcome(
        shop,
        SnapshotSource(history),
        BotSettings(),
        now_s=1_793_491_200.0,  # NOW
        charts=False,
    )
    body = dashboard_body(workload_statuses(plan), PublishReport(), title="shop", prices=Prices())
    line = next(x for x in body.splitlines() if "ReplicaSet/default/frontend" in x)
    assert line.startswith("- **ReplicaSet/default/frontend** (default): ")
    assert r"unsupported kind apps/v1/ReplicaSet \(apps/raw/others.yaml\:23\)" in line
    heading = body[: body.index(line)].rsplit("## ", 1)[1].splitlines()[0]
    assert "kipped" in heading


def test_a_selection_leaves_out_the_objects_it_does_not_select(cli, shop, history):
    """``--namespace shop`` plans the shop alone: the objects of namespace ``default`` are
    neither fetched nor listed."""
    result = cli(
        "plan", "--repo", str(shop), "--snapshot", str(history), "--now", NOW,
        "--format", "json", "--namespace", "shop",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["workloads"] and all(w["namespace"] == "shop" for w in doc["workloads"])
    assert not [w for w in doc["workloads"] if "unsupported" in w]
