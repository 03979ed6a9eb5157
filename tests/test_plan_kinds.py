"""validate, simulate and plan end to end on the demo shop with one of each new kind beside its
workloads: a canary Argo Rollout with its HPA, a Rollout running a Deployment's template
(``workloadRef``) and a DaemonSet."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

from tests.conftest import PROJECT
from tests.support.demo_shop import NOW, console, copy_shop, plan, simulate

KINDS = PROJECT / "tests" / "manifests" / "kinds" / "base"


@pytest.fixture(scope="module")
def kinds_shop(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo repository with ``apps/raw/rollout-canary.yaml`` (Rollout ``payments`` and its
    HPA), ``apps/raw/rollout-ref.yaml`` (Rollout ``catalog`` and its Deployment) and
    ``apps/raw/daemonset.yaml`` (DaemonSet ``log-shipper``), never changed: each test edits a
    copy (``shop``)."""
    root = copy_shop(tmp_path_factory.mktemp("kinds") / "shop")
    for name in ("rollout-canary", "rollout-ref", "daemonset"):
        text = (KINDS / f"{name}.yaml").read_text().replace("checkout", "payments")
        (root / "apps" / "raw" / f"{name}.yaml").write_text(text)
    return root


@pytest.fixture
def shop(kinds_shop: Path, tmp_path: Path) -> Path:
    """A copy of ``kinds_shop`` for this test alone."""
    return Path(shutil.copytree(kinds_shop, tmp_path / "shop"))


@pytest.fixture(scope="module")
def history(kinds_shop: Path) -> Path:
    """The simulated history of ``kinds_shop`` (once for the module: simulating reads only the
    manifests, which the tests change after it, if at all)."""
    out = kinds_shop.parent / "history.zip"
    result = simulate(console, kinds_shop, out)
    assert "simulated 8 workloads" in result.stdout
    return out


def _plan(cli, shop: Path, history: Path, *more: str) -> dict:
    return json.loads(plan(cli, shop, history, "--format", "json", *more).stdout)


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


KEDA = PROJECT / "tests" / "manifests" / "keda" / "base"


@pytest.fixture(scope="module")
def keda_base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo repository with ``apps/raw/web.yaml`` (Deployment ``web`` and ScaledObject
    ``web-scaler``: cpu, memory of one container, prometheus and cron triggers) and
    ``apps/raw/worker.yaml`` (Deployment ``worker`` scaled on kafka alone, from zero), never
    changed: each test edits a copy (``keda_shop``)."""
    root = copy_shop(tmp_path_factory.mktemp("keda") / "keda-shop")
    for name in ("web", "worker"):
        shutil.copy(KEDA / f"{name}.yaml", root / "apps" / "raw" / f"{name}.yaml")
    return root


@pytest.fixture
def keda_shop(keda_base: Path, tmp_path: Path) -> Path:
    """A copy of ``keda_base`` for this test alone."""
    return Path(shutil.copytree(keda_base, tmp_path / "keda-shop"))


@pytest.fixture(scope="module")
def keda_history(keda_base: Path) -> Path:
    """The simulated history of ``keda_base``, once for the module."""
    out = keda_base.parent / "keda-history.zip"
    simulate(console, keda_base, out)
    return out


@pytest.fixture(scope="module")
def keda_plan(keda_base: Path, keda_history: Path) -> dict:
    """The JSON plan of ``keda_base`` as it is, read by the tests that do not change it."""
    return _plan(console, keda_base, keda_history)


def test_plan_sizes_a_keda_scaled_workload_horizontally(cli, keda_base, keda_history, keda_plan):
    """The Deployment a ScaledObject scales is HPA-scaled: its CPU request moves only with its
    trigger's threshold (never cut alone, which would double the utilisation KEDA sees), the
    replica bounds and targets written into the ScaledObject, external triggers kept."""
    doc = keda_plan
    web = next(w for w in doc["workloads"] if w["name"] == "web")
    assert web["status"] == "changes", web["reasons"]
    cpu = next(c for c in web["containers"] if c["name"] == "web")["cpu"]["request"]
    assert cpu["rule"].startswith("tortoise.horizontal"), cpu
    assert cpu["proposed"] == cpu["current"] == 0.5
    assert web["hpa"]["max_replicas"]["reason"].startswith("KEDA ScaledObject web-scaler: ")
    notes = {n["code"]: n["message"] for n in web["notes"]}
    assert notes["keda"] == (
        "scaled by KEDA ScaledObject web-scaler (its HPA keda-hpa-web-scaler); "
        "also scaled by: cron, prometheus"
    )
    scaler = doc["diff"].split("+++ b/apps/raw/web.yaml", 1)[1].split("--- a/", 1)[0]
    bound = web["hpa"]["max_replicas"]  # the replayed peak × 1.5, rounded up
    assert bound["current"] == 20 < bound["proposed"] == math.ceil(bound["inputs"]["peak"] * 1.5)
    assert f"+  maxReplicaCount: {bound['proposed']}" in scaler
    assert "+        value: '85'" in scaler  # the memory trigger's value, its quoting kept
    assert "threshold" not in scaler and "desiredReplicas" not in scaler
    text = cli("plan", "--repo", str(keda_base), "--snapshot", str(keda_history), "--now", NOW)
    words = " ".join(text.stdout.split())
    assert f"(keda) maxReplicas 20 → {bound['proposed']}" in words
    assert "also scaled by: cron, prometheus" in words


def test_plan_keeps_external_only_keda_workloads_vertical(keda_plan):
    doc = keda_plan
    worker = next(w for w in doc["workloads"] if w["name"] == "worker")
    assert worker["hpa"] is None  # replicas never proposed
    cpu = worker["containers"][0]["cpu"]["request"]
    assert cpu["rule"].startswith("vertical"), cpu
    (note,) = [n for n in worker["notes"] if n["code"].startswith("keda")]
    assert note["message"] == (
        "KEDA ScaledObject worker scales it on external triggers (kafka): its replicas are "
        "not proposed; requests are sized vertically"
    )
    worker_diff = doc["diff"].split("+++ b/apps/raw/worker.yaml", 1)[1].split("--- a/", 1)[0]
    assert "minReplicaCount" not in worker_diff and "replicas" not in worker_diff


def test_plan_keeps_scale_to_zero(cli, keda_shop, keda_history):
    path = keda_shop / "apps" / "raw" / "web.yaml"
    path.write_text(path.read_text().replace("minReplicaCount: 2 #", "minReplicaCount: 0 #"))
    doc = _plan(cli, keda_shop, keda_history)
    web = next(w for w in doc["workloads"] if w["name"] == "web")
    notes = {n["code"]: n["message"] for n in web["notes"]}
    assert "minReplicaCount 0 (scale to zero) is kept" in notes["keda-scale-to-zero"]
    assert web["hpa"]["min_replicas"]["proposed"] == 1  # the HPA KEDA generates
    assert "+  minReplicaCount" not in doc["diff"]
    assert "-  minReplicaCount" not in doc["diff"]


def test_plan_refuses_a_scaled_object_beside_an_hpa(cli, keda_shop, keda_history):
    (keda_shop / "apps" / "raw" / "web-hpa.yaml").write_text(
        "apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata:\n"
        "  name: web\n  namespace: shop\nspec:\n  scaleTargetRef:\n"
        "    apiVersion: apps/v1\n    kind: Deployment\n    name: web\n"
        "  minReplicas: 2\n  maxReplicas: 5\n"
    )
    doc = _plan(cli, keda_shop, keda_history)
    web = next(w for w in doc["workloads"] if w["name"] == "web")
    assert web["status"] == "skipped"
    assert "KEDA refuses a second autoscaler" in " ".join(web["reasons"])
    assert "apps/raw/web.yaml" not in doc["diff"]


def test_validate_names_the_scaled_objects(cli, keda_base):
    text = cli("validate", str(keda_base)).stdout
    assert (
        "Deployment/shop/web@default  replicas=- keda web-scaler min=2 max=20 "
        "(also scaled by: cron, prometheus)"
    ) in text
    assert "Deployment/shop/worker@default  replicas=1 keda worker min=0 max=100" in text
