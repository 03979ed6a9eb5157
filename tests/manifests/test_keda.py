"""KEDA ScaledObjects: read as the HPA KEDA generates (replica counts, cpu/memory triggers,
behavior) in raw YAML, Kustomize and Helm values; other triggers kept and named; edits keep
comments and the quoting of ``metadata.value``; a second autoscaler is a finding."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import jsonschema  # type: ignore[import-untyped]
import pytest

from bot.config.repo import RepoConfig
from bot.manifests import discover
from bot.manifests.inventory_json import workload_json
from bot.model import HpaTarget
from tests.conftest import PROJECT
from tests.manifests.conftest import (
    changed_lines,
    edit,
    kustomize_tree,
    lost_comments,
    raw_base,
    workload,
)

KEDA = Path(__file__).parent / "keda"
"""Hand-made manifests: Deployment ``web`` scaled by ScaledObject ``web-scaler`` (cpu, memory of
one container, prometheus and cron triggers, a behavior) and Deployment ``worker`` scaled on
kafka alone from zero (``base/``); a prod overlay raising ``maxReplicaCount``; a chart whose
values hold a ``keda`` block (``chart/``)."""


@pytest.fixture
def raw(tmp_path: Path) -> Path:
    """The base manifests as raw YAML."""
    return raw_base(KEDA, tmp_path)


@pytest.fixture
def overlay(tmp_path: Path) -> Path:
    """The base and its prod overlay."""
    return kustomize_tree(KEDA, tmp_path, "base", "overlays")


@pytest.fixture
def chart(tmp_path: Path) -> Path:
    """The chart alone."""
    root = tmp_path / "helm"
    shutil.copytree(KEDA / "chart", root / "chart")
    return root


def test_raw_scaled_object_is_the_workloads_hpa(raw):
    inventory = discover(raw, RepoConfig()).inventory
    assert not inventory.errors, inventory.errors
    hpa = workload(inventory, "web").hpa
    assert hpa is not None and hpa.keda is not None
    assert hpa.name == "keda-hpa-web-scaler"
    assert hpa.scaler == "KEDA ScaledObject web-scaler"
    assert (hpa.min_replicas, hpa.max_replicas) == (2, 20)
    assert hpa.targets == (HpaTarget("cpu", 60), HpaTarget("memory", 75, "web"))
    assert hpa.keda.external == ("cron", "prometheus")
    assert hpa.other_metrics == 2 and hpa.container_resource
    assert hpa.behavior.scale_down.stabilization_s == 120
    assert hpa.locations["target.cpu"].line == 47
    assert hpa.locations["target.memory.web"].line == 51
    assert hpa.locations["minReplicas"].line == 36
    assert "web.yaml" in workload(inventory, "web").files


def test_external_only_scaled_from_zero(raw):
    hpa = workload(discover(raw, RepoConfig()).inventory, "worker").hpa
    assert hpa is not None and hpa.keda is not None
    assert hpa.external_only and hpa.keda.external == ("kafka",)
    assert hpa.keda.min_replica_count == 0  # KEDA's default
    assert (hpa.min_replicas, hpa.max_replicas) == (1, 100)  # the HPA KEDA generates


def test_edits_keep_comments_and_quoting(raw):
    before = (raw / "web.yaml").read_text()
    result = edit(
        raw,
        [
            ("web", "hpa.target.cpu", 70, None),
            ("web", "hpa.target.memory", 80, "web"),
            ("web", "hpa.minReplicas", 3, None),
            ("web", "hpa.maxReplicas", 24, None),
        ],
    )
    assert not result.errors, result.errors
    after = (raw / "web.yaml").read_text()
    assert not lost_comments(before, after)
    _, added = changed_lines(result.diff)
    assert '        value: "70" # percent of the request' in added
    assert "        value: '80'" in added
    assert "  minReplicaCount: 3 # never fewer than two" in added
    assert "  maxReplicaCount: 24" in added
    assert 'threshold: "100"' in after and 'desiredReplicas: "6"' in after  # untouched
    hpa = workload(discover(raw, RepoConfig()).inventory, "web").hpa
    assert hpa is not None and hpa.targets == (HpaTarget("cpu", 70), HpaTarget("memory", 80, "web"))


def test_scaled_object_and_hpa_on_one_workload_is_a_finding(raw):
    (raw / "hpa.yaml").write_text(
        "apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata:\n"
        "  name: web\n  namespace: shop\nspec:\n  scaleTargetRef:\n"
        "    apiVersion: apps/v1\n    kind: Deployment\n    name: web\n"
        "  minReplicas: 2\n  maxReplicas: 5\n"
    )
    inventory = discover(raw, RepoConfig()).inventory
    ref = workload(inventory, "web").ref
    assert "KEDA refuses a second autoscaler" in inventory.not_proposed[ref]
    assert "HorizontalPodAutoscaler web (hpa.yaml:1)" in inventory.not_proposed[ref]
    (warning,) = inventory.warnings
    assert (warning.file, warning.line) == ("hpa.yaml", 1)
    assert workload(inventory, "worker").ref not in inventory.not_proposed


def test_scaled_object_of_nothing_is_an_error_at_its_line(raw):
    path = raw / "worker.yaml"
    path.write_text(path.read_text().replace("    name: worker\n  #", "    name: gone\n  #"))
    inventory = discover(raw, RepoConfig()).inventory
    (error,) = inventory.errors
    assert (error.file, error.line) == ("worker.yaml", 31)
    assert "Deployment shop/gone" in error.message
    assert workload(inventory, "worker").hpa is None
    assert workload(inventory, "web").hpa is not None  # nothing else lost


def test_resource_trigger_without_metric_type_is_an_error(raw):
    path = raw / "web.yaml"
    path.write_text(path.read_text().replace("      metricType: Utilization\n", ""))
    inventory = discover(raw, RepoConfig()).inventory
    (error,) = inventory.errors
    assert error.file == "web.yaml" and "metricType" in error.message
    hpa = workload(inventory, "web").hpa
    assert hpa is not None and hpa.targets == (HpaTarget("memory", 75, "web"),)


def test_kustomize_overlay_patches_the_scaled_object(overlay):
    inventory = discover(overlay, RepoConfig()).inventory
    assert not inventory.errors, inventory.errors
    prod = workload(inventory, "web", "overlays/prod").hpa
    assert prod is not None and prod.keda is not None and prod.max_replicas == 40
    assert prod.locations["maxReplicas"].file == "overlays/prod/scaler.yaml"
    result = edit(
        overlay,
        [("web", "hpa.maxReplicas", 30, None), ("web", "hpa.target.cpu", 65, None)],
        environment="overlays/prod",
    )
    assert not result.errors, result.errors
    assert (
        "maxReplicaCount: 30 # prod peaks higher"
        in (overlay / "overlays/prod/scaler.yaml").read_text()
    )
    patch = (overlay / "overlays/prod/tortoise-bot-patch.yaml").read_text()
    assert 'value: "65"' in patch  # the trigger list copied whole (a JSON merge patch)
    assert 'threshold: "100"' in patch and "type: prometheus" in patch
    again = workload(discover(overlay, RepoConfig()).inventory, "web", "overlays/prod").hpa
    assert again is not None and again.targets[0] == HpaTarget("cpu", 65)
    assert again.keda is not None and again.keda.external == ("cron", "prometheus")


def test_helm_values_keda_block(chart):
    inventory = discover(chart, RepoConfig()).inventory
    assert not inventory.errors, inventory.errors
    api = workload(inventory, "api")
    assert api.hpa is not None and api.hpa.keda is not None
    assert (api.hpa.min_replicas, api.hpa.max_replicas) == (3, 12)
    assert api.hpa.targets == (HpaTarget("cpu", 70),)
    assert api.hpa.keda.external == ("rabbitmq",)
    result = edit(chart, [("api", "hpa.target.cpu", 60, None), ("api", "hpa.minReplicas", 2, None)])
    assert not result.errors, result.errors
    text = (chart / "chart/values.yaml").read_text()
    assert 'value: "60" # quoted, as KEDA reads strings' in text
    assert "minReplicaCount: 2" in text


def test_helm_values_with_hpa_and_keda_on_is_a_finding(chart):
    path = chart / "chart/values.yaml"
    path.write_text(
        path.read_text().replace(
            "autoscaling:\n  enabled: false", "autoscaling:\n  enabled: true\n  maxReplicas: 5"
        )
    )
    inventory = discover(chart, RepoConfig()).inventory
    ref = workload(inventory, "api").ref
    assert "both an HPA and a KEDA ScaledObject" in inventory.not_proposed[ref]
    (warning,) = inventory.warnings
    assert warning.file == "chart/values.yaml"


def test_inventory_json_names_the_scaled_object(raw):
    inventory = discover(raw, RepoConfig()).inventory
    schema = json.loads((PROJECT / "docs/schemas/inventory.schema.json").read_text())
    hpa_schema = {**schema["$defs"]["hpa"], "$defs": schema["$defs"]}
    worker = workload_json(workload(inventory, "worker"))["hpa"]
    jsonschema.validate(worker, hpa_schema)
    assert worker["keda"] == {
        "scaledObject": "worker",
        "minReplicaCount": 0,
        "externalTriggers": ["kafka"],
    }
    assert worker["name"] == "keda-hpa-worker"


SCALED = (
    "apiVersion: keda.sh/v1alpha1\nkind: ScaledObject\nmetadata:\n  name: {name}\n"
    "  namespace: shop\nspec:\n  scaleTargetRef:\n    apiVersion: {api}\n    kind: {kind}\n"
    "    name: {target}\n  maxReplicaCount: 6\n{advanced}  triggers:\n"
    "    - type: cpu\n      metricType: AverageValue\n      metadata:\n        value: 300m\n"
)


def _scaled(name: str, kind: str, target: str, api: str = "apps/v1", advanced: str = "") -> str:
    return SCALED.format(name=name, kind=kind, target=target, api=api, advanced=advanced)


def test_statefulsets_and_rollouts_are_scaled_a_daemonset_is_an_error(raw, tmp_path):
    kinds = Path(__file__).parent / "kinds" / "base"
    shutil.copy(kinds / "rollout-canary.yaml", raw / "rollout.yaml")
    shutil.copy(kinds / "daemonset.yaml", raw / "daemonset.yaml")
    text = (raw / "rollout.yaml").read_text()
    (raw / "rollout.yaml").write_text(text.split("\n---", 1)[0] + "\n")  # the Rollout alone
    (raw / "db.yaml").write_text(
        "apiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: db\n  namespace: shop\n"
        "spec:\n  replicas: 2\n  template:\n    spec:\n      containers:\n        - name: db\n"
    )
    named = "  advanced:\n    horizontalPodAutoscalerConfig:\n      name: db-hpa\n"
    (raw / "scalers.yaml").write_text(
        _scaled("db", "StatefulSet", "db", advanced=named)
        + "---\n"
        + _scaled("checkout", "Rollout", "checkout", api="argoproj.io/v1alpha1")
        + "---\n"
        + _scaled("shipper", "DaemonSet", "log-shipper")
    )
    inventory = discover(raw, RepoConfig()).inventory
    (error,) = inventory.errors
    assert (error.file, error.line) == ("scalers.yaml", 47)  # its scaleTargetRef.name
    assert "targets DaemonSet log-shipper" in error.message
    db = workload(inventory, "db").hpa
    assert db is not None and db.keda is not None
    assert db.name == "db-hpa"  # advanced.horizontalPodAutoscalerConfig.name
    assert db.external_only and db.keda.external == ("cpu (AverageValue)",)
    checkout = workload(inventory, "checkout")
    assert checkout.ref.kind == "Rollout"
    assert checkout.hpa is not None and checkout.hpa.scaler == "KEDA ScaledObject checkout"
    assert workload(inventory, "log-shipper").hpa is None


def test_two_scaled_objects_on_one_workload_is_a_finding(raw):
    (raw / "second.yaml").write_text(_scaled("web-again", "Deployment", "web"))
    inventory = discover(raw, RepoConfig()).inventory
    ref = workload(inventory, "web").ref
    why = inventory.not_proposed[ref]
    assert "KEDA ScaledObject web-again (second.yaml:1)" in why
    assert "KEDA ScaledObject web-scaler (web.yaml:" in why
    (warning,) = inventory.warnings  # at the second one found
    assert warning.file == "web.yaml" and "KEDA refuses a second autoscaler" in warning.message
