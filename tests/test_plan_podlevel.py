"""Pod-level resources and ``resizePolicy`` end to end on the demo shop with
``apps/raw/pooled.yaml`` (``tests/manifests/podlevel``): a pod-level memory limit of 640 MiB
over containers whose proposed requests would sum past it, a container without a CPU request
under a pod-level CPU request, and a container restarted on an in-place memory resize."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import jsonschema  # type: ignore[import-untyped]
import pytest

from bot.config.bot import BotSettings
from bot.config.repo import RepoConfig
from bot.manifests import discover
from bot.manifests.quantities import bytes_from_quantity
from bot.metrics.snapshot import SnapshotSource
from bot.model import MIB, ResourceValues
from bot.pipeline.plan import repository_outcome
from bot.pipeline.proposals import build_proposals
from bot.report import render_pull_request
from tests.conftest import PROJECT
from tests.support.demo_shop import console as _cli
from tests.support.demo_shop import plan, shop_with, simulated

POOLED = PROJECT / "tests" / "manifests" / "podlevel" / "base" / "pooled.yaml"
NOW_S = 1_793_491_200.0
PLAN_SCHEMA = json.loads((PROJECT / "docs" / "schemas" / "plan.schema.json").read_text())
POD_LIMIT = 640 * MIB


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return shop_with(tmp_path_factory.mktemp("pod") / "shop", {"pooled.yaml": POOLED})


@pytest.fixture(scope="module")
def history(shop: Path) -> Path:
    return simulated(shop)


def _plan(shop: Path, history: Path, *more: str) -> subprocess.CompletedProcess[str]:
    return plan(_cli, shop, history, *more)


def test_discovery_reads_pod_level_resources_and_resize_policy(shop):
    inventory = discover(shop, RepoConfig()).inventory
    (pooled,) = [w for w in inventory.workloads if w.ref.name == "pooled"]
    assert pooled.pod_requests == ResourceValues(1.0, 1024 * MIB)
    assert pooled.pod_limits == ResourceValues(2.0, POD_LIMIT)
    app, helper = pooled.container("app"), pooled.container("helper")
    assert app is not None and app.restart_on_resize == ("memory",)
    assert helper is not None and helper.restart_on_resize == ()


def test_requests_are_clamped_within_the_pod_limit(shop, history):
    doc = json.loads(_plan(shop, history, "--format", "json").stdout)
    jsonschema.validate(doc, PLAN_SCHEMA)
    (pooled,) = [w for w in doc["workloads"] if w["name"] == "pooled"]
    memory = {c["name"]: c["memory"]["request"] for c in pooled["containers"]}
    assert memory["app"]["rule"] == "limits.pod_limits"
    assert memory["app"]["proposed"] < memory["app"]["current"]
    assert memory["app"]["proposed"] + memory["helper"]["proposed"] <= POD_LIMIT
    written = doc["diff"].split("+++ b/apps/raw/pooled.yaml", 1)[1].split("--- a/", 1)[0]
    app_memory = next(
        line.split(":", 1)[1] for line in written.splitlines() if line.startswith("+   ")
        and "memory:" in line
    )  # fmt: skip
    assert bytes_from_quantity(app_memory.strip()) + 256 * MIB <= POD_LIMIT
    codes = [n["code"] for n in pooled["notes"]]
    assert {"pod-limits", "pod-request-covers", "resize-restarts"} <= set(codes)
    helper_cpu = next(c for c in pooled["containers"] if c["name"] == "helper")["cpu"]
    assert helper_cpu["request"]["proposed"] is None  # covered by the pod: none added
    text = " ".join(_plan(shop, history).stdout.split())
    assert (
        "note: helper has no cpu request of its own: the pod-level request (1 core) covers it"
        in text
    )


def test_write_leaves_the_pod_resources_and_resize_policy_as_they_are(shop, history, tmp_path):
    root = tmp_path / "shop"
    shutil.copytree(shop, root)
    path = root / "apps" / "raw" / "pooled.yaml"
    before = path.read_text()
    _plan(root, history, "--write", "--force")
    after = path.read_text()
    assert after != before
    head = before.split("      containers:", 1)[0]
    assert after.startswith(head)  # pod-level spec.resources, byte for byte
    resize = before.split("        resizePolicy:", 1)[1].split("        resources:", 1)[0]
    assert resize in after
    helper = after.split("- name: helper", 1)[1]
    assert "cpu" not in helper


def test_the_pull_request_tells_of_the_restart_and_the_clamp(shop, history):
    plan = repository_outcome(
        shop, SnapshotSource(history), BotSettings(), now_s=NOW_S, charts=False
    )
    (proposal,) = [p for p in build_proposals(plan) if "pooled" in {w.name for w in p.workloads}]
    _, body = render_pull_request(proposal, prices=plan.prices)
    flat = " ".join(body.split())
    assert "restarts the container \\(RestartContainer\\) when its memory is resized" in flat
    assert "clamped to fit the pod-level limit 640 MiB" in flat
