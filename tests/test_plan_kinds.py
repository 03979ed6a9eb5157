"""validate, simulate and plan end to end on the demo shop with one of each new kind beside its
workloads: a canary Argo Rollout with its HPA, a Rollout running a Deployment's template
(``workloadRef``) and a DaemonSet."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import PROJECT

DEMO = PROJECT / "bot" / "demo"
KINDS = PROJECT / "tests" / "manifests" / "kinds" / "base"
NOW = "2026-11-01T00:00:00Z"


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    """The demo repository with ``apps/raw/rollout-canary.yaml`` (Rollout ``payments`` and its
    HPA), ``apps/raw/rollout-ref.yaml`` (Rollout ``catalog`` and its Deployment) and
    ``apps/raw/daemonset.yaml`` (DaemonSet ``log-shipper``)."""
    root = tmp_path / "shop"
    shutil.copytree(DEMO / "repo", root)
    for name in ("rollout-canary", "rollout-ref", "daemonset"):
        text = (KINDS / f"{name}.yaml").read_text().replace("checkout", "payments")
        (root / "apps" / "raw" / f"{name}.yaml").write_text(text)
    return root


@pytest.fixture
def history(cli, shop: Path, tmp_path: Path) -> Path:
    out = tmp_path / "history.zip"
    args = ("--repo", str(shop), "--out", str(out), "--days", "14", "--seed", "3", "--now", NOW)
    result = cli("simulate", *args)
    assert result.returncode == 0, result.stderr
    assert "simulated 7 workloads" in result.stdout
    return out


def _plan(cli, shop: Path, history: Path, *more: str) -> dict:
    result = cli(
        "plan", "--repo", str(shop), "--snapshot", str(history), "--now", NOW, "--format", "json",
        *more,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_validate_lists_both_kinds(cli, shop):
    result = cli("validate", str(shop), "--format", "json")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    kinds = {(w["kind"], w["name"]) for w in doc["workloads"] if w["environment"] == "default"}
    assert {("Rollout", "payments"), ("Rollout", "catalog"), ("DaemonSet", "log-shipper")} <= kinds
    assert ("Deployment", "catalog") not in kinds
    (note,) = doc["notes"]
    assert (note["file"], note["line"]) == ("apps/raw/rollout-ref.yaml", 21)
    assert not doc["errors"]
    text = cli("validate", str(shop)).stdout
    assert "Rollout/shop/payments@default  replicas=3 hpa min=3 max=12" in text
    assert "DaemonSet/shop/log-shipper@default  replicas=-" in text


def test_plan_proposes_for_rollouts_and_daemonsets(cli, shop, history):
    doc = _plan(cli, shop, history)
    by_name = {w["name"]: w for w in doc["workloads"]}
    assert by_name["payments"]["kind"] == "Rollout" and by_name["payments"]["hpa"] is not None
    assert by_name["catalog"]["kind"] == "Rollout"
    shipper = by_name["log-shipper"]
    assert shipper["kind"] == "DaemonSet" and shipper["hpa"] is None
    for name in ("payments", "catalog", "log-shipper"):
        assert by_name[name]["status"] == "changes", by_name[name]["reasons"]
    diff = doc["diff"]
    # the workloadRef Rollout is edited in its Deployment's template, its replicas left alone
    catalog = diff.split("+++ b/apps/raw/rollout-ref.yaml", 1)[1].split("--- a/", 1)[0]
    assert "+              cpu: 210m # edited for the Rollout" in catalog
    assert "replicas" not in catalog
    assert "+++ b/apps/raw/daemonset.yaml" in diff
    assert "+++ b/apps/raw/rollout-canary.yaml" in diff
    text = cli(
        "plan", "--repo", str(shop), "--snapshot", str(history), "--now", NOW
    ).stdout  # fmt: skip
    shipper_text = text.split("log-shipper: changes", 1)[1].split("\n\n", 2)[1]
    assert "pods (one per node) mean / p95 / max" in shipper_text


def test_plan_write_then_plan_rests(cli, shop, history):
    written = _plan(cli, shop, history, "--write")
    assert "apps/raw/rollout-ref.yaml" in written["written"]
    again = {w["name"]: w for w in _plan(cli, shop, history)["workloads"]}
    assert again["log-shipper"]["status"] == "no-change"
    assert again["catalog"]["status"] == "no-change"
    assert (
        "replicas: 0 # scaled down by Argo Rollouts"
        in (shop / "apps" / "raw" / "rollout-ref.yaml").read_text()
    )


def test_set_names_the_new_kinds_and_refuses_daemonset_replicas(cli, shop):
    refused = cli("set", "--repo", str(shop), "ds/shop/log-shipper", "replicas=3")
    assert refused.returncode != 0
    assert "a DaemonSet runs one pod per node and has no replicas" in refused.stderr
    catalog = cli("set", "--repo", str(shop), "rollout/shop/catalog", "catalog.requests.cpu=300m")
    assert catalog.returncode == 0, catalog.stderr
    assert "+              cpu: 300m # edited for the Rollout" in catalog.stdout
