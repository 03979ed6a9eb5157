"""Init containers end to end on the demo shop with ``apps/raw/worker.yaml``: a Deployment with a
native sidecar (``shipper``, ``restartPolicy: Always``), an ordinary init container
(``migrate``) and a container without requests (``bare``), through discovery, ``plan`` and
``plan --write``."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from bot.config.bot import BotSettings
from bot.config.repo import RepoConfig
from bot.manifests import discover
from bot.metrics.snapshot import SnapshotSource
from bot.pipeline.plan import repository_outcome
from bot.pipeline.proposals import build_proposals
from bot.report import render_pull_request
from tests.conftest import PROJECT
from tests.support.demo_shop import NOW, copy_shop, plan, shop_with, simulated
from tests.support.demo_shop import console as _cli

WORKER = PROJECT / "tests" / "manifests" / "kinds" / "init-containers.yaml"
NOW_S = 1_793_491_200.0


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return shop_with(tmp_path_factory.mktemp("init") / "shop", {"worker.yaml": WORKER})


@pytest.fixture(scope="module")
def history(shop: Path) -> Path:
    return simulated(shop)


def _plan(shop: Path, history: Path, *more: str) -> subprocess.CompletedProcess[str]:
    return plan(_cli, shop, history, *more)


def test_discovery_tells_sidecars_from_init_containers(shop):
    inventory = discover(shop, RepoConfig()).inventory
    (worker,) = [w for w in inventory.workloads if w.ref.name == "worker"]
    shipper, migrate = worker.container("shipper"), worker.container("migrate")
    assert shipper is not None and shipper.sidecar and not shipper.init
    assert migrate is not None and migrate.init and not migrate.sidecar
    assert shipper.locations["requests.cpu"].line == 27


def test_plan_sizes_the_sidecar_and_skips_the_init_container(shop, history):
    doc = json.loads(_plan(shop, history, "--format", "json").stdout)
    (worker,) = [w for w in doc["workloads"] if w["name"] == "worker"]
    marks = {c["name"]: c.get("mark") for c in worker["containers"]}
    assert marks == {"shipper": "sidecar (init)", "app": None, "bare": None}
    assert worker["init_containers"] == [
        {"name": "migrate", "mark": "init", "status": "skipped: init container"}
    ]
    shipper = next(c for c in worker["containers"] if c["name"] == "shipper")
    assert shipper["cpu"]["usage"] is not None
    text = _plan(shop, history).stdout
    assert "shipper (sidecar (init))" in text
    assert "migrate (init)" in text and "skipped: init container" in text
    markdown = _plan(shop, history, "--format", "markdown").stdout
    assert r"| worker | migrate \(init\) | requests, limits |  |  | skipped\: init container |" in (
        markdown
    )


def test_write_edits_the_sidecar_never_the_init_container(shop, history, tmp_path):
    root = tmp_path / "shop"
    shutil.copytree(shop, root)
    before = (root / "apps" / "raw" / "worker.yaml").read_text().splitlines()
    _plan(root, history, "--write", "--force")
    after = (root / "apps" / "raw" / "worker.yaml").read_text().splitlines()
    changed = [(i + 1, a) for i, (b, a) in enumerate(zip(before, after, strict=False)) if a != b]
    assert [line for line, _ in changed if line < 22] == [], "the init container was edited"
    assert any(line == 27 for line, _ in changed), changed  # shipper's cpu request


def test_a_container_without_requests_gets_them_added(shop, history, tmp_path):
    doc = json.loads(_plan(shop, history, "--format", "json").stdout)
    (worker,) = [w for w in doc["workloads"] if w["name"] == "worker"]
    bare = next(c for c in worker["containers"] if c["name"] == "bare")
    for resource in ("cpu", "memory"):
        request, limit = bare[resource]["request"], bare[resource]["limit"]
        assert request["current"] is None and request["proposed"] > 0
        assert request["rule"] == "policy.add_missing"
        assert limit["current"] is None and limit["proposed"] is None
    root = tmp_path / "shop"
    shutil.copytree(shop, root)
    before = (root / "apps" / "raw" / "worker.yaml").read_text()
    _plan(root, history, "--write", "--force")
    after = (root / "apps" / "raw" / "worker.yaml").read_text()
    bare_before = before.split("- name: bare", 1)[1]
    bare_after = after.split("- name: bare", 1)[1]
    assert bare_after.startswith(bare_before.rstrip("\n"))  # the comment is kept
    added = bare_after[len(bare_before.rstrip("\n")) :].strip("\n").splitlines()
    assert [line.split(":")[0] for line in added] == [
        "        resources",
        "          requests",
        "            cpu",
        "            memory",
    ], added


def test_requests_add_missing_false_lists_the_container_as_skipped(shop, history, tmp_path):
    root = tmp_path / "shop"
    shutil.copytree(shop, root)
    config = root / ".tortoise-bot.yaml"
    config.write_text(config.read_text() + "requests:\n  add_missing: false\n")
    text = _plan(root, history, "--force").stdout
    block = text.split("worker: ", 1)[1].split("\n\n", 1)[0]
    assert "bare  cpu request" in block and "skipped: no request" in block
    _plan(root, history, "--write", "--force")
    assert (
        (root / "apps" / "raw" / "worker.yaml")
        .read_text()
        .endswith("image: ghcr.io/example/bare:1\n")
    )


def test_containers_init_propose_sizes_and_edits_the_init_container(tmp_path):
    root = copy_shop(tmp_path / "shop")
    shutil.copy(WORKER, root / "apps" / "raw" / "worker.yaml")
    config = root / ".tortoise-bot.yaml"
    config.write_text(config.read_text() + "containers:\n  init: propose\n")
    out = tmp_path / "history.zip"
    args = ("--repo", str(root), "--out", str(out), "--days", "14", "--seed", "3", "--now", NOW)
    assert _cli("simulate", *args).returncode == 0
    doc = json.loads(_plan(root, out, "--format", "json").stdout)
    (worker,) = [w for w in doc["workloads"] if w["name"] == "worker"]
    assert worker["init_containers"] == []
    migrate = next(c for c in worker["containers"] if c["name"] == "migrate")
    assert migrate["mark"] == "init" and migrate["cpu"]["usage"] is not None
    assert "--- a/apps/raw/worker.yaml" in doc["diff"]
    migrate_hunk = doc["diff"].split("+++ b/apps/raw/worker.yaml", 1)[1]
    assert '-            cpu: "2"\n+' in migrate_hunk.split("- name: shipper", 1)[0]


def test_the_pull_request_body_marks_the_sidecar(shop, history):
    """The body names the native sidecar with its mark in the change table, the rule lines
    and the usage table; the other containers by their name alone."""
    plan = repository_outcome(
        shop, SnapshotSource(history), BotSettings(), now_s=NOW_S, charts=False
    )
    (proposal,) = [p for p in build_proposals(plan) if "worker" in {w.name for w in p.workloads}]
    _, body = render_pull_request(proposal, prices=plan.prices)
    rows = [line for line in body.splitlines() if line.startswith("| ")]
    marked = r"shipper \(sidecar \(init\)\)"
    assert any(r.startswith(f"| worker | {marked} CPU request |") for r in rows), rows
    assert any(r.startswith(f"| {marked} | cpu |") for r in rows)  # the usage table
    assert any(f"{marked} CPU request: `" in line for line in body.splitlines())  # rules
    assert any(r.startswith("| worker | app ") for r in rows)
    assert r"app \(" not in body


def test_the_replay_per_container_rows_mark_the_sidecar(shop, history):
    """The replay's per-container rows name the native sidecar with its mark too."""
    plan = repository_outcome(
        shop, SnapshotSource(history), BotSettings(), now_s=NOW_S, charts=False
    )
    (proposal,) = [p for p in build_proposals(plan) if "worker" in {w.name for w in p.workloads}]
    _, body = render_pull_request(proposal, prices=plan.prices)
    rows = [line for line in body.splitlines() if line.startswith("| ")]
    marked = r"| shipper \(sidecar \(init\)\)\: "
    assert any(r.startswith(f"{marked}CPU p95 of the request |") for r in rows), rows
    assert any(r.startswith(f"{marked}memory peak ") for r in rows), rows
    assert any(r.startswith(r"| app\: memory peak ") for r in rows), rows
    assert not any(r.startswith(r"| shipper\: memory peak") for r in rows)


def test_explain_names_the_sidecar_with_its_mark_in_the_replay_rows(shop, history):
    """``explain``'s per-container replay rows carry the mark as the pull request's do."""
    explained = _cli(
        "explain", "--repo", str(shop), "--snapshot", str(history), "--now", NOW,
        "Deployment/shop/worker",
    )  # fmt: skip
    assert explained.returncode == 0, explained.stderr
    rows = [line.strip() for line in explained.stdout.splitlines()]
    assert any(r.startswith("shipper (sidecar (init)): memory peak ") for r in rows), rows
    assert not any(r.startswith("shipper: memory peak") for r in rows)
